"""The secrets grace expanded or read in this process, and the one function that masks them in text.

Why one registry: a key leaks wherever text that a server, a bot or a library
produced is written or printed (a 401 body that quotes the key, a bot that echoes
its token, an SDK's log line with a tracking URI). Patching each message misses
the next one; instead every value grace reads as a secret is remembered here when
it is read (:func:`remember`): the ``${VAR}`` values a config names (:mod:`harness.core.literal_secrets`),
the API keys providers resolve, every environment variable whose name says it is a secret
(``*_API_KEY``, ``*_TOKEN``, ``*_SECRET*``, ``*_PASSWORD`` ...: what SDKs such as
LiteLLM read on their own), and the password or key inside a URI (``user:pass@``,
``?api_key=``, a path part shaped like a key). Every writer then passes its text through :func:`mask`: the run
folder's files (:mod:`harness.core.files`), the response cache, the exports log,
a provider's error message, and the terminal (the CLI wraps stdout and stderr in
:class:`MaskedStream`). Messages (the terminal, errors, the exports log) also
lose the password of any ``scheme://user:password@`` URI, remembered or not.

A secret is masked in the forms it travels in: as it is, JSON-escaped,
URL-encoded, HTML-escaped, and, for a ``user:password`` pair, as the base64 of
an HTTP Basic header. A value shorter than :data:`MIN_LENGTH` characters is not
masked: it would turn every such word of every answer into ``***``, and is too
short to be a key worth stealing.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import threading
from typing import Any, TextIO
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

MASK = "***"
MIN_LENGTH = 8

# an environment variable named like a secret (OPENAI_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY, MLFLOW_TRACKING_PASSWORD)
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_NOT_SECRET_NAME = re.compile(r"_(FILE|PATH|DIR|URL|URI|HOST|ENDPOINT|REGION|ID|SOCK|TYPE|NAME|MODE)$", re.IGNORECASE)
# a query parameter or option whose name says it holds a credential (?api_key=, &sig=, access_token, client_secret)
SECRET_NAME = re.compile(r"(?:^|[_-])(?:key|apikey|token|secret|password|passwd|pwd|sig|signature|auth|credentials?|"
                         r"cookie)$", re.IGNORECASE)
# a key's shape: a long run of letters and digits, both present (hex, base64, an sk-/ghp_ key's body, a JWT part)
_KEY_RUN = re.compile(r"[A-Za-z0-9]{20,}")
# a reference to an environment variable in a config (harness.core.literal_secrets): filled when calling
ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# scheme://user:password@host anywhere in text: the password is masked even when grace never read it
_USERINFO = re.compile(r"://([^/@\s:]*):[^/\s]*@")  # starts with a literal: a fast scan of a long text

_lock = threading.Lock()
_known: set[str] = set()  # the secrets, as read
_forms: set[str] = set()  # every form they are masked in
_pattern: re.Pattern[str] | None = None
_env_seen: dict[str, str] = {}  # variable -> the value scanned last, so a scan is cheap when nothing changed


def forms_of(secret: str) -> set[str]:
    """The ways ``secret`` appears in text grace writes: raw, JSON-escaped, URL-encoded, HTML-escaped."""
    out = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe=""),
           quote(secret), quote_plus(secret), html.escape(secret)}
    return {f for f in out if len(f) >= MIN_LENGTH}


def remember(secret: str | None, *, user: str | None = None) -> None:
    """Mask ``secret`` from now on in everything grace writes or prints; with ``user``, also the Basic-auth
    header that ``user:secret`` makes. Shorter than :data:`MIN_LENGTH`: not masked (see the module docstring)."""
    global _pattern
    if not secret or not isinstance(secret, str):
        return
    secret = secret.strip()
    if len(secret) < MIN_LENGTH and user is None:
        return
    new: set[str] = set()
    if len(secret) >= MIN_LENGTH and secret not in _known:
        new |= forms_of(secret)
    if user is not None:
        pair = f"{user}:{secret}"
        new |= forms_of(pair) | forms_of(base64.b64encode(pair.encode()).decode())
        if len(secret) >= MIN_LENGTH:
            new |= forms_of(secret)
    with _lock:
        _known.add(secret)
        if new - _forms:
            _forms.update(new)
            # longest first, so a form that contains another is masked whole
            _pattern = re.compile("|".join(re.escape(f) for f in sorted(_forms, key=len, reverse=True)))


def remember_uri(uri: str | None) -> None:
    """The password in ``uri``'s ``user:password@`` and the values of its credential query parameters."""
    if not uri or "://" not in uri:
        return
    try:
        parts = urlsplit(uri.strip())
        password, username = parts.password, parts.username
    except ValueError:
        return
    if password and not ENV.fullmatch(password):  # a ${VAR} is what the file says, not a secret: filled when calling
        remember(unquote(password), user=unquote(username or ""))
        remember(password)
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if SECRET_NAME.search(name) and not ENV.fullmatch(value):
            remember(value)
    for part in parts.path.split("/"):  # a webhook's key, a token in the path: what a key looks like
        if looks_like_key(part) and not ENV.search(part):
            remember(unquote(part))


def looks_like_key(text: str) -> bool:
    """Does ``text`` hold something shaped like a key: 20+ letters and digits in a row, mixing both."""
    return any(re.search(r"[A-Za-z]", run) and re.search(r"[0-9]", run) for run in _KEY_RUN.findall(text))


def secret_variable(name: str) -> bool:
    """Is an environment variable of this name a secret grace (or an SDK it runs) may read?"""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def remember_environment() -> None:
    """Every environment variable named like a secret, and every password inside a URI in the environment:
    called when a provider is made, since SDKs (LiteLLM, boto3, MLflow) read their own variables."""
    for name, value in list(os.environ.items()):
        if _env_seen.get(name) == value:
            continue
        _env_seen[name] = value
        if secret_variable(name):
            remember(value)
        if "://" in value and "@" in value or "?" in value and "://" in value:
            remember_uri(value)


def mask(text: str, *, uris: bool = False) -> str:
    """``text`` with every remembered secret (in each of its forms) replaced by ``***``.

    ``uris``: also the password of any ``scheme://user:password@`` in it, remembered or not; for messages (the
    terminal, an error, the exports log), not for data files, where a KB article may show such a URI as an example
    and its recorded hash must stay true.
    """
    if not text:
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if uris and "://" in text:
        text = _USERINFO.sub(rf"://\1:{MASK}@", text)
    return text


def mask_value(value: Any) -> Any:
    """A JSON-like value with :func:`mask` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(k) if isinstance(k, str) else k: mask_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(v) for v in value]
    return value


class MaskedStream:
    """A text stream (stdout, stderr) that masks what is written to it; everything else is the stream's own.

    Installed by the CLI around ``sys.stdout`` and ``sys.stderr``, so what grace, rich, click, logging and a
    library print all pass through :func:`mask`.
    """

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(mask(text, uris=True) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def forget_all() -> None:
    """Forget every secret (tests that check what a fresh process would mask)."""
    global _pattern
    with _lock:
        _known.clear()
        _forms.clear()
        _env_seen.clear()
        _pattern = None
