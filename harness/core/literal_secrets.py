"""Secrets written out in a config file: refused for what they are, whatever they are called.

Why by value: a config's values are recorded (``run.json`` keeps each model's
endpoint and options, so a run can be read and asked again; exports copy
``run.json``; the Inspect log shows an ``http:`` system's URL), and teams share
those files. A rule on names (``Authorization``, ``*key*``) lets the next name
through: ``Ocp-Apim-Subscription-Key``, ``X-Functions-Key``, ``?code=``. So a value
may be written out in the file only where grace knows it is no secret; anything
else comes from the environment as ``${VAR}``, filled in only when calling (the
file, ``run.json`` and the cache key keep ``${VAR}``) and masked in everything
grace writes or prints (:mod:`harness.core.secrets`).

What may be written out:

- a header's value, for the standard headers that never carry a credential
  (:data:`SAFE_HEADERS`: ``Accept``, ``Content-Type``, ``User-Agent`` ...) and
  for those a ``[models.http]`` table names in ``not_secret``; any other header
  takes ``${VAR}``, framed by words if it needs them (``Bearer ${TOKEN}``);
- in a URL (an ``http:`` system's ``url``, a model's ``base_url``): the scheme,
  host and path, a user name, and the query parameters that carry no credential
  (:data:`SAFE_PARAMS`: ``api-version``, ``format`` ...; those named in
  ``not_secret``; a ``{{placeholder}}``); a password (``user:password@``) or any
  other query value takes ``${VAR}``;
- a provider option, unless its name says it is a secret (``api_key``,
  ``token`` ...).

Beside a ``${VAR}``, or in a user name or an option, a written-out part that
looks like a key (20 or more letters and digits in a row, both present: an API
key, a signature) is refused too: that is what a key is, whatever it is called.
A URL's path part of that shape (a webhook's key, a gateway's account ID) is
masked instead, since it is often the documented address itself.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, quote

from harness.core.errors import GraceError
from harness.core.secrets import ENV, SECRET_NAME, looks_like_key

__all__ = ["ENV", "PLACEHOLDER", "LiteralSecrets", "fill_env", "fill_env_in", "header_problem", "looks_like_key",
           "option_problems", "url_problems", "uses_env", "variable_for"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+)\s*\}\}")  # an http: template's {{question}}: filled by grace, no secret

# request headers that, by their standard, carry no credential: a value written out under them is recorded as is
SAFE_HEADERS = frozenset({
    "accept", "accept-charset", "accept-encoding", "accept-language", "cache-control", "content-language",
    "content-type", "dnt", "pragma", "prefer", "user-agent", "x-requested-with",
})
# query parameters that select a version, format or language, never authenticate
SAFE_PARAMS = frozenset({"api-version", "api_version", "version", "format", "lang", "language", "locale", "stream"})
_SCHEMES = ("Bearer", "Basic", "Token", "ApiKey", "Digest", "Key")  # an Authorization value's first word


def written_out(value: str) -> str:
    """What of ``value`` is written in the file: the value less its ``${VAR}`` and ``{{placeholder}}`` parts."""
    return PLACEHOLDER.sub(" ", ENV.sub(" ", value))


def referenced(value: str) -> bool:
    """Is ``value`` filled from the environment or by grace, with nothing key-like written beside it?"""
    return bool(ENV.search(value) or PLACEHOLDER.search(value)) and not looks_like_key(written_out(value))


def variable_for(name: str) -> str:
    """A variable name to suggest for a header or parameter: ``X-Functions-Key`` -> ``X_FUNCTIONS_KEY``."""
    word = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() or "SECRET"
    return word if not word[0].isdigit() else f"V_{word}"


class LiteralSecrets(GraceError):
    """Values a config writes out that must come from the environment: one ``(key, problem)`` per value, the key as
    written in the file (a header's or option's name, ``url``), so the caller can name the file's line."""

    def __init__(self, where: str, problems: list[tuple[str, str]]):
        self.where, self.problems = where, problems
        super().__init__("\n".join(f"{where}: {text}" for _, text in problems))


def header_problem(name: str, value: str, not_secret: set[str]) -> str | None:
    """Why a header's value cannot be recorded as written, with how to pass it instead; None when it can.
    ``not_secret``: the lowercased names the table says carry no secret."""
    lowered = name.lower()
    if lowered in SAFE_HEADERS or lowered in not_secret or (ENV.search(value) and referenced(value)):
        return None
    var = variable_for(name)
    first = value.split(" ", 1)[0]
    scheme = next((s for s in _SCHEMES if s.lower() == first.lower() and value.strip() != first), None)
    written = f'{scheme} ${{{var}}}' if scheme else f'${{{var}}}'
    plain = not (ENV.search(value) or scheme or looks_like_key(value))  # might be no secret (a team's name)
    return (f"header {name!r} has its value written out in the file, and what is written there is recorded in "
            f"run.json and every export; put the value in an environment variable and write {name} = "
            f"\"{written}\" (export {var}=...)" + (f", or, if its value is no secret, list the header in "
                                                    f"not_secret = [\"{name}\"]" if plain else ""))


def url_problems(url: str, key: str, not_secret: set[str] | None = None) -> list[str]:
    """Why a URL cannot be recorded as written: a password in it (or a user name shaped like a key), a query value
    that may be a credential; each with how to pass it from the environment. Empty when it can. ``not_secret``: the
    lowercased parameter names an http: table says carry no secret (None: the URL's key has no such list)."""
    out = []
    scheme, sep, rest = url.partition("://")
    if not sep:
        return out
    authority, tail = _split_authority(rest)
    userinfo, at, _ = authority.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        if colon and password and not (ENV.fullmatch(password) or referenced(password)):
            out.append(f"{key} holds a password written out (user:password@), and what is written there is recorded "
                       "in run.json and every export; write the password as ${PASSWORD_VAR} (user:${PASSWORD_VAR}@host) "
                       "and set PASSWORD_VAR in the environment")
        elif looks_like_key(written_out(user)):
            out.append(f"{key} holds a user name shaped like a key (user@); write it as {scheme}://${{USER_VAR}}@... "
                       "and set USER_VAR in the environment")
    # a path part shaped like a key is masked, not refused (secrets.remember_uri): a gateway's account ID (32 hex
    # digits at Cloudflare) has that shape and is part of the documented address
    query = tail.partition("?")[2]
    for name, value in parse_qsl(query.partition("#")[0], keep_blank_values=True):
        if not value.strip():
            if looks_like_key(name):
                out.append(f"{key}: a query parameter's name is shaped like a key; write it as ${{VAR}}")
            continue
        if name.lower() in SAFE_PARAMS or name.lower() in (not_secret or ()) or referenced(value):
            continue
        var = variable_for(name)
        out.append(f"{key}: query parameter {name!r} has its value written out, and what is written there is recorded "
                   f"in run.json and every export; write {name}=${{{var}}} and set {var} in the environment"
                   + (f", or, if its value is no secret, list it in not_secret = [\"{name}\"]"
                      if not_secret is not None and not looks_like_key(value) else ""))
    return out


def _split_authority(rest: str) -> tuple[str, str]:
    """``user:pw@host:1/path?q`` -> (``user:pw@host:1``, ``/path?q``)."""
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    return rest[:cut], rest[cut:]


def option_problems(options: Any, key: str = "options") -> list[tuple[str, str]]:
    """Why a provider's options cannot be recorded as written: a value under a secret's name (``api_key``,
    ``token``), or one shaped like a key, written out, and the headers of an option that sends headers
    (LiteLLM's ``extra_headers``) by the header rule; each as (the option's name, the problem, with how to pass it
    from the environment)."""
    out: list[tuple[str, str]] = []

    def walk(value: Any, where: str, name: str) -> None:
        if isinstance(value, dict) and name.lower().endswith("headers"):
            out.extend((str(k), f"{where}: {problem}") for k, v in value.items() if isinstance(v, str)
                       for problem in [header_problem(str(k), v, set())] if problem)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}.{k}", str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]", name)
        elif isinstance(value, str) and value.strip() and not referenced(value) \
                and (SECRET_NAME.search(name) or looks_like_key(written_out(value))):
            var = variable_for(name)
            out.append((name, f"{where} has its value written out in the file, and what is written there is recorded in "
                       f"run.json; write {name} = \"${{{var}}}\" and set {var} in the environment"))

    walk(options, key, key)
    return out


def fill_env(value: str, where: str, *, url: bool = False) -> str:
    """``value`` with each ``${VAR}`` filled from the environment, every value filled in remembered as a secret
    (masked in all grace writes or prints from now on); an unset variable is a GraceError naming it. In a URL
    (``url``) a value filled into its user, password or query is URL-encoded, as those parts need."""
    from harness.core import secrets

    if not ENV.search(value):
        return value
    query_at, at = (value.find("?"), -1) if url else (-1, -1)
    if url and "://" in value:
        start = value.find("://") + 3
        authority = _split_authority(value[start:])[0]
        at = start + authority.rfind("@") if "@" in authority else -1

    def one(m: re.Match[str]) -> str:
        got = os.environ.get(m.group(1))
        if got is None:
            raise GraceError(f"{where} needs ${{{m.group(1)}}}; set the environment variable {m.group(1)}")
        secrets.remember(got)
        encode = url and ((query_at >= 0 and m.start() > query_at) or m.start() < at)
        return quote(got, safe="") if encode else got

    filled = ENV.sub(one, value)
    if url:
        secrets.remember_uri(filled)
    return filled


def fill_env_in(value: Any, where: str, skip: tuple[str, ...] = ()) -> Any:
    """:func:`fill_env` through a JSON-like value (a provider's options), leaving the top-level keys ``skip``."""
    if isinstance(value, str):
        return fill_env(value, where)
    if isinstance(value, dict):
        return {k: v if k in skip else fill_env_in(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [fill_env_in(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def uses_env(value: Any) -> bool:
    """Does a JSON-like value hold any ``${VAR}``?"""
    if isinstance(value, str):
        return bool(ENV.search(value))
    if isinstance(value, dict):
        return any(uses_env(v) for v in value.values())
    if isinstance(value, list):
        return any(uses_env(v) for v in value)
    return False
