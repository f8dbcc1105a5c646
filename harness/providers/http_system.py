"""``http:`` systems: a deployed bot behind an HTTP endpoint, evaluated like any model.

A ``[[models]]`` table of the leaderboard TOML describes the endpoint::

    [[models]]
    spec = "http:support-bot"
    timeout = 30
    concurrency = 4

    [models.http]
    url = "https://bot.example.com/api/answer"
    headers = { Authorization = "Bearer ${BOT_TOKEN}" }
    body = { question = "{{question}}", id = "{{question_id}}" }
    answer = "reply.text"                 # JMESPath into the JSON reply
    citations = "reply.sources[].id"
    retrieved = "debug.retrieved_ids"

``--model http:URL`` alone posts ``{"question": ..., "question_id": ...}`` and reads ``answer``.

Why these choices: the request is a plain-data template (no code in config),
filled with ``{{question}}``, ``{{question_id}}``, ``{{articles}}`` and
``{{messages}}``; a value that is exactly one placeholder becomes that JSON value
(the articles as ``[{"id", "title", "text", "score"}]``, the messages as grace
would send them), one inside a longer string becomes text. Replies are read with
JMESPath (the path syntax the AWS CLI uses), not a hand-written one. Headers and
the URL get ``${VAR}`` from the environment at call time only, so a secret is
never in the spec, ``run.json``, a cache key or a cache row; a value that may be a
secret written out in the table is refused, whatever its header or parameter is
called (:mod:`harness.core.literal_secrets`; ``not_secret`` names the ones that
are not). The templates (with ``${VAR}`` unexpanded), the URL and the paths are
part of the cache key, so changing what is asked or read re-asks. Failures map to the same error kinds as grace's own
providers (:mod:`harness.providers.http_errors`): a 429 waits for
``Retry-After``, a 5xx is retried, a refused key stops the model. A reply that is
not JSON, or where a path matches nothing, is an error row that says which path
and what the reply holds.

A reply is read as any input grace did not write: streaming, with a size cap
(``max_reply_mb``, default :data:`MAX_REPLY_MB`). A longer reply is an error row
that says the cap and how to raise it; no byte of it reaches responses.jsonl or
the cache, and one call never holds more than the cap in memory.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.core.errors import GraceError
from harness.core.literal_secrets import ENV, PLACEHOLDER, LiteralSecrets, fill_env, header_problem, url_problems
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a header value may hold tabs, never a line break
PLACES = ("question", "question_id", "articles", "messages")
DEFAULT_BODY = {"question": "{{question}}", "question_id": "{{question_id}}"}
MAX_REPLY_MB = 4.0  # a reply (its body) longer than this, in MB, is an error row: raise max_reply_mb per model


class HttpTable(BaseModel):
    """A ``[models.http]`` table: where the bot is, what to send it, where its reply holds what grace reads."""

    model_config = ConfigDict(extra="forbid", strict=True)

    url: str | None = None  # required unless the spec is http:URL
    method: Literal["POST", "PUT", "GET"] = "POST"
    headers: dict[str, str] = {}  # ${VAR} filled from the environment when calling
    # header and query parameter names whose values are no secret: written out, recorded as written
    not_secret: list[str] = []
    body: Any = None  # JSON template (a table); default {"question": "{{question}}", "question_id": "{{question_id}}"}
    answer: str = "answer"  # JMESPath to the answer text
    citations: str | None = None  # JMESPath to the cited IDs (None: read [ID: x] from the answer text)
    retrieved: str | None = None  # JMESPath to the IDs the bot retrieved, best first
    input_tokens: str | None = None  # JMESPath to token counts and cost, when the bot reports them
    output_tokens: str | None = None
    cost_usd: str | None = None
    max_reply_mb: float = MAX_REPLY_MB  # a longer reply body is an error row (read no further than this)


REQUIRED_PATHS = ("answer", "citations", "retrieved")  # matching nothing is an error row
USAGE_PATHS = ("input_tokens", "output_tokens", "cost_usd")  # matching nothing: not reported


def read_http_table(table: Any, where: str, model: str = "") -> dict[str, Any]:
    """Check a ``[models.http]`` table; every problem is a GraceError naming the table and key."""
    if not isinstance(table, dict):
        raise GraceError(f"{where}: key 'http' must be a table ([models.http] or http = {{ url = ... }})")
    try:
        checked = HttpTable.model_validate(table)
    except ValidationError as exc:
        lines = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                lines.append(f"{where}: unknown key 'http.{key}'; known: {', '.join(HttpTable.model_fields)}")
            elif err["loc"][0] in ("headers", "url"):  # never shown: it may be a secret
                lines.append(f"{where}: key 'http.{key}': {err['msg']}")
            else:
                lines.append(f"{where}: key 'http.{key}': {err['msg']}, got {err.get('input')!r}")
        raise GraceError("\n".join(lines)) from None
    url = checked.url or (model if model.startswith(("http://", "https://")) else None)
    if not url:
        raise GraceError(f"{where}: key 'http.url' is missing; give the endpoint's URL (url = \"https://...\")")
    check_url(url, where)
    if not checked.max_reply_mb > 0:
        raise GraceError(f"{where}: key 'http.max_reply_mb' must be a size in MB above 0, got {checked.max_reply_mb}")
    for key in (*REQUIRED_PATHS, *USAGE_PATHS):
        compile_path(getattr(checked, key), f"{where}: key 'http.{key}'")
    check_template(checked.body if checked.body is not None else DEFAULT_BODY, f"{where}: key 'http.body'")
    check_template(url, f"{where}: key 'http.url'")
    plain = {n.lower() for n in checked.not_secret}
    if "@" in url.partition("://")[2].split("/", 1)[0] and any(h.lower() == "authorization" for h in checked.headers):
        raise GraceError(f"{where}: key 'http.url' holds a user and password (user:password@), which are sent as the "
                         "Authorization header, and 'http.headers' sets Authorization too; keep one of them")
    problems = [("url", text) for text in url_problems(url, "http.url", plain)]
    for name, value in checked.headers.items():
        check_template(value, f"{where}: key 'http.headers.{name}'", allowed=())
        if _CONTROL.search(value) or _CONTROL.search(name):
            raise GraceError(f"{where}: header {name!r} holds a line break or another control "
                             "character, which would end the header and start another; write the value on one line")
        problem = header_problem(name, value, plain)
        if problem:
            problems.append((name, problem))
    if problems:  # every one at once: a config with five written-out keys is fixed in one go
        raise LiteralSecrets(where, problems)
    return checked.model_dump(exclude_defaults=True)


def check_url(url: str, where: str) -> None:
    if not url.startswith(("http://", "https://")):  # the URL is not shown: it may hold a password
        raise GraceError(f"{where}: key 'http.url' must start with http:// or https://")


def compile_path(expr: str | None, where: str) -> Any:
    if expr is None:
        return None
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(expr)
    except JMESPathError as exc:
        raise GraceError(f"{where}: {expr!r} is not a JMESPath expression ({str(exc).splitlines()[0]}); e.g. "
                         "\"answer\", \"data.reply.text\" or \"sources[].id\"") from None


def check_template(value: Any, where: str, allowed: tuple[str, ...] = PLACES) -> None:
    """Every ``{{name}}`` must be one grace fills (a typo would be sent to the bot as it is)."""
    if isinstance(value, str):
        for name in PLACEHOLDER.findall(value):
            if name not in allowed:
                known = ", ".join("{{" + p + "}}" for p in allowed) or "none here"
                raise GraceError(f"{where}: unknown placeholder {{{{{name}}}}}; known: {known}")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_template(v, f"{where}.{k}", allowed)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_template(v, f"{where}[{i}]", allowed)


def uses(value: Any, names: tuple[str, ...]) -> bool:
    """Does the template send any of ``names``?"""
    if isinstance(value, str):
        return any(n in names for n in PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return any(uses(v, names) for v in value.values())
    if isinstance(value, list):
        return any(uses(v, names) for v in value)
    return False


def fill(template: Any, values: dict[str, Any], texts: dict[str, str]) -> Any:
    """The template with its placeholders filled: a string that is one placeholder becomes its JSON value,
    a placeholder inside a longer string its text."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template.strip())
        if whole:
            return values[whole.group(1)]
        return PLACEHOLDER.sub(lambda m: texts[m.group(1)], template)
    if isinstance(template, dict):
        return {k: fill(v, values, texts) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values, texts) for v in template]
    return template


def _env(value: str, name: str) -> str:
    """A header's value with its ``${VAR}`` filled (:func:`fill_env`: each value filled in is a secret from now on,
    masked in all grace writes or prints). A line break or other control character is refused, naming the
    variable, never showing the value: it would end the header and start another (header injection)."""
    from harness.core import secrets

    for variable in ENV.findall(value):
        got = os.environ.get(variable)
        if got is not None and _CONTROL.search(got):
            secrets.remember(got)
            raise GraceError(f"{name}: the environment variable {variable} holds a line break or another control "
                             "character, which cannot be sent in a header; set it to the value alone (check for "
                             "a trailing newline, e.g. from a file read with $(cat ...))")
    filled = fill_env(value, f"{name}: header")
    scheme, _, credentials = filled.partition(" ")
    if scheme.lower() == "basic" and credentials:  # the user:password inside, in case the bot echoes it decoded
        import base64
        import binascii

        try:
            user, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
            secrets.remember(password, user=user)
        except (binascii.Error, UnicodeDecodeError):
            pass
    return filled


async def refuse_other_origin(response: Any) -> None:
    """httpx response hook: a redirect to another origin (scheme, host or port) is refused, not followed.

    httpx drops only ``Authorization`` on such a redirect; the table's other headers (``X-Api-Key``, a cookie)
    would go to the new host. A redirect on the same origin (and http -> https on the same host) is followed.
    """
    if not response.has_redirect_location:
        return
    old = response.request.url
    new = old.join(response.headers["location"])
    upgrade = (old.scheme, new.scheme) == ("http", "https") and old.port in (None, 80) and new.port in (None, 443)
    if new.host == old.host and (upgrade or (new.scheme, new.port) == (old.scheme, old.port)):
        return
    where = f"{new.scheme}://{new.host}" + (f":{new.port}" if new.port else "")
    raise ProviderError("bad_response", f"the bot redirected (HTTP {response.status_code}) to another origin, "
                        f"{where}; grace does not follow it, since the request's headers may hold secrets; set "
                        "http.url to the address that answers", retryable=False, status=response.status_code)


def shape(reply: Any) -> str:
    """What the reply holds, for an error row: its top-level keys, or what it is instead."""
    if isinstance(reply, dict):
        keys = list(reply)
        return ("its top-level keys: " + ", ".join(keys[:20]) + (" ..." if len(keys) > 20 else "")) if keys \
            else "it is an empty object"
    if isinstance(reply, list):
        return f"it is a JSON array of {len(reply)} item(s), not an object"
    return f"it is a JSON {type(reply).__name__}: {json.dumps(reply)[:100]}"


class HttpSystem(Provider):
    """A deployed bot: ``http:NAME`` with a ``[models.http]`` table, or ``http:https://...`` with the defaults."""

    provider_name = "http"

    @classmethod
    def config(cls, spec: ModelSpec) -> dict[str, Any]:
        table = spec.options.get("http")
        if table is None:  # --model http:URL: every setting its default
            if not spec.model.startswith(("http://", "https://")):
                raise GraceError(f"{spec.name}: an http: model needs its endpoint: --model http:https://HOST/PATH, or a "
                                 "[[models]] table in the leaderboard TOML with [models.http] url = \"https://...\"")
            return {"url": spec.model}
        return table

    @classmethod
    def endpoint(cls, spec: ModelSpec) -> str | None:
        return cls.config(spec).get("url") or spec.model

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        # named without the URL's credentials and query: --model http:URL makes the URL its name
        who = re.sub(r"\?\S*", "?...", re.sub(r"://[^/?#\s]*@", "://...@", spec.name))
        conf = read_http_table(type(self).config(spec), who, spec.model)
        self.table = HttpTable.model_validate(conf)
        self.url = self.table.url or spec.model
        self.body = self.table.body if self.table.body is not None else DEFAULT_BODY
        self.paths = {k: compile_path(getattr(self.table, k), k) for k in (*REQUIRED_PATHS, *USAGE_PATHS)}
        # a bot sent neither articles nor messages never saw grace's retrieval: its rows record none
        self.shows_articles = uses(self.body, ("articles", "messages")) or uses(self.url, ("articles", "messages"))
        self._client: Any = None

    def check_ready(self) -> None:
        fill_env(self.url, f"{self.spec.name}: http.url", url=True)
        for name, value in self.table.headers.items():
            _env(value, f"{self.spec.name}: {name}")

    def _values(self, request: Request) -> tuple[dict[str, Any], dict[str, str]]:
        ctx = request.context
        articles = [{"id": a.id, "title": a.title, "text": a.text, "score": a.score} for a in (ctx.articles if ctx else [])]
        values = {"question": ctx.question if ctx else "", "question_id": ctx.question_id if ctx else "",
                  "articles": articles, "messages": request.messages}
        block = "\n\n".join(f"[ID: {a['id']}] {a['title']}\n{a['text']}" for a in articles)
        texts = {"question": values["question"], "question_id": values["question_id"], "articles": block,
                 "messages": json.dumps(request.messages, ensure_ascii=False)}
        return values, texts

    async def complete(self, request: Request) -> Completion:
        import httpx

        from harness.providers import http_errors, transport

        values, texts = self._values(request)
        from urllib.parse import quote

        url = fill_env(self.url, f"{self.spec.name}: http.url", url=True)  # before the question, which may hold ${...}
        url, basic = transport.url_credentials(fill(url, values, {k: quote(v, safe="") for k, v in texts.items()}))
        headers = {name: _env(value, f"{self.spec.name}: {name}") for name, value in self.table.headers.items()}
        if basic:
            headers["Authorization"] = basic
        if self._client is None:
            # aiohttp's pool when installed
            self._client = transport.httpx_client(timeout=self.timeout_s, follow_redirects=True,
                                                  event_hooks={"response": [refuse_other_origin]})
        body = None if self.table.method == "GET" else fill(self.body, values, texts)
        try:
            request_ = self._client.build_request(self.table.method, url, json=body, headers=headers)
            response = await self._client.send(request_, stream=True)
            try:
                # an error's body only says why: its first bytes are enough, and its status decides the retry
                raw = await read_capped(response, self.table.max_reply_mb, cut=response.status_code >= 400)
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            err = http_errors.from_transport(exc)
            raise err if err is not None else ProviderError("other", f"{type(exc).__name__}: {exc}", retryable=False) \
                from None
        text = raw.decode(response.encoding or "utf-8", errors="replace")
        if response.status_code >= 400:
            try:
                said: Any = json.loads(text)
            except (ValueError, RecursionError):
                said = text
            raise http_errors.from_status(response.status_code, " ".join(text.split())[:300],
                                          headers=response.headers, body=said)
        try:
            reply = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: a reply nested deeper than json reads
            kind = response.headers.get("content-type", "no content-type")
            raise ProviderError("bad_response", f"the reply is not JSON ({kind}, HTTP {response.status_code}): "
                                f"{' '.join(text.split())[:200]!r}", retryable=False, status=response.status_code) \
                from None
        return self.read(reply)

    def read(self, reply: Any) -> Completion:
        """The completion in a JSON reply; a path that matches nothing (or the wrong kind of value) is an error."""
        from harness.providers.python_system import ids

        got: dict[str, Any] = {}
        for key in REQUIRED_PATHS:
            path = self.paths[key]
            if path is None:
                continue
            value = path.search(reply)
            if value is None:
                raise ProviderError("bad_response", f"reply path {key} = {path.expression!r} matched nothing; "
                                    f"{shape(reply)}", retryable=False)
            got[key] = value
        answer = got["answer"]
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(answer, str):
            raise ProviderError("bad_response", f"reply path answer = {self.paths['answer'].expression!r} matched "
                                f"{type(answer).__name__}, not text", retryable=False)
        usage = {k: self.paths[k].search(reply) if self.paths[k] is not None else None for k in USAGE_PATHS}
        return Completion(
            text=answer,
            citations=ids(got.get("citations"), f"= {self.table.citations!r} matched a value that", "reply path citations"),
            retrieved=ids(got.get("retrieved"), f"= {self.table.retrieved!r} matched a value that", "reply path retrieved"),
            input_tokens=_whole(usage["input_tokens"]), output_tokens=_whole(usage["output_tokens"]),
            cost_usd=float(usage["cost_usd"]) if isinstance(usage["cost_usd"], int | float)
            and not isinstance(usage["cost_usd"], bool) and usage["cost_usd"] >= 0 else None,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


async def read_capped(response: Any, max_mb: float, *, cut: bool = False) -> bytes:
    """The body of a streamed httpx response, read no further than ``max_mb`` MB: a longer one (said by its
    Content-Length, or found while reading) is a ``bad_response`` error row naming the cap and how to raise it, or
    with ``cut``, its first ``max_mb`` MB."""
    cap = int(max_mb * (1 << 20))

    def too_long(size: str) -> ProviderError:
        return ProviderError("bad_response", f"the reply is {size}, over the limit of {max_mb:g} MB (HTTP "
                             f"{response.status_code}); not read further. If replies this long are expected, raise "
                             "it with max_reply_mb in the model's [models.http] table", retryable=False,
                             status=response.status_code)

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap and not cut:
        raise too_long(f"{int(declared):,} bytes")
    chunks, held = [], 0
    async for chunk in response.aiter_bytes():
        if held + len(chunk) > cap:
            if cut:
                chunks.append(chunk[:cap - held])
                break
            raise too_long(f"more than {cap:,} bytes")
        held += len(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


def _whole(value: Any) -> int | None:
    from harness.run_folder.responses import MAX_COUNT  # a count no scorer column holds (10**30) is not a count

    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None
