"""One place that turns an HTTP failure into a :class:`ProviderError`, transient or permanent.

The SDKs raise different exception classes for the same HTTP facts (a
status code, a ``Retry-After`` header, a body that does not parse). Each
provider unpacks its SDK's exception into those facts and hands them here, so a
429 means the same thing — and is retried after the same delay — whichever API
produced it: around its calls, a provider's ``sdk_errors()`` is :func:`mapped`
with its SDK's classifier (the openai and anthropic SDKs share one,
:func:`stainless_errors`), and what the classifier does not know, a timeout or
a refused connection below the SDK, is :func:`from_transport`'s. A failure is permanent when retrying cannot help: a 4xx, or any
status whose body says the request is invalid, too long for the context, or
names a model the server does not have; those fail the call at once with the
server's own message instead of six times.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from email.utils import parsedate_to_datetime
from typing import Any

from harness.providers.base import ProviderError
from harness.providers.transport import aiohttp_kind

# The name fragments of transport exceptions, matched along the MRO so httpx,
# httpx2 and aiohttp (google-genai may use any of them) need no import here.
_TIMEOUT_NAMES = ("Timeout", "TimedOut")
_CONNECTION_NAMES = (
    "ConnectError", "ConnectionError", "NetworkError", "RemoteProtocolError", "ReadError",
    "WriteError", "ClientConnectorError", "ClientOSError", "ServerDisconnectedError", "TransportError",
)


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (preferred: finer) or ``Retry-After``.

    ``Retry-After`` may be delta-seconds or an HTTP date; a date in the past
    gives 0. Unparseable values give None rather than an exception, because a
    bad header must never turn a retryable error into a crash.
    """
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_delay_from_body(body: Any) -> float | None:
    """Gemini puts the wait in the body: ``error.details[].retryDelay`` (``"37s"``)."""
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, dict):
        return None
    error = body.get("error", body)
    details = error.get("details") if isinstance(error, dict) else None
    for item in details if isinstance(details, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        match = re.fullmatch(r"\s*([0-9.]+)s\s*", delay) if isinstance(delay, str) else None
        if match:
            try:
                return float(match.group(1))
            except ValueError:
                return None
    return None


def error_code(body: Any) -> str | None:
    """The machine code in an error body (``insufficient_quota``...), if any."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            code = err.get("code") or err.get("type")
            return str(code) if code is not None else None
    return None


# What a server says when the request itself is wrong: it will fail the same way on every attempt, so it is
# never retried, whatever the status (llama.cpp's Python server answers a rejected field with HTTP 500).
_CONTEXT_LENGTH = re.compile(
    r"context[ _-]?length|context[ _-]?window|maximum context|n_ctx|exceeds? (?:the )?(?:model'?s? )?(?:maximum|max|context)"
    r"|too many tokens|prompt is too long|input is too long|too long for (?:the )?(?:model|context)|max_model_len",
    re.IGNORECASE,
)
_UNKNOWN_MODEL = re.compile(
    r"model[_ ]not[_ ]found|deployment[_ ]?not[_ ]?found|unknown model|no such model"  # Azure: DeploymentNotFound
    r"|model\b[^.\n]{0,80}\b(?:not found|does not exist|is not available|not supported|isn't available|doesn't exist)"
    r"|(?:not found|does not exist)[^.\n]{0,40}\bmodel\b",
    re.IGNORECASE,
)
_VALIDATION = re.compile(
    r"validation error|validationerror|input should be|extra (?:inputs|fields) (?:are )?not permitted|field required"
    r"|unprocessable|invalid[_ ]request|invalid (?:value|type|parameter|argument|schema)|unrecognized (?:request )?argument"
    r"|unexpected keyword|(?:is|are) not supported|unsupported (?:parameter|value|field|response_format|type)"
    r"|must be one of|not a valid",
    re.IGNORECASE,
)


def _body_text(body: Any) -> str:
    if body is None:
        return ""
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(body)


def permanent_kind(status: int, text: str) -> str | None:
    """``context_length``, ``unknown_model`` or ``invalid_request`` when the server's words say the request
    itself cannot succeed; None when nothing in them does (a bare 500 is taken as transient)."""
    if _CONTEXT_LENGTH.search(text):
        return "context_length"
    if (status in (400, 404, 422) or status >= 500) and _UNKNOWN_MODEL.search(text):
        return "unknown_model"
    if _VALIDATION.search(text):
        return "invalid_request"
    return None


def from_status(
    status: int,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
) -> ProviderError:
    """Classify an HTTP error status. The runner retries exactly the retryable kinds."""
    retry_after = parse_retry_after(headers)
    if retry_after is None:
        retry_after = retry_delay_from_body(body)
    text = f"HTTP {status}: {message}".strip()
    if status == 429:
        if error_code(body) == "insufficient_quota":
            # OpenAI reports an empty balance as a 429; waiting will not refill it.
            return ProviderError("bad_request", f"quota exhausted: {text}", retryable=False, status=status)
        return ProviderError("rate_limit", text, retryable=True, retry_after=retry_after, status=status)
    if status == 408:
        return ProviderError("timeout", text, retryable=True, retry_after=retry_after, status=status)
    if status in (401, 403):
        return ProviderError("auth", text, retryable=False, status=status)
    said = f"{message} {_body_text(body)}"
    permanent = permanent_kind(status, said) if status >= 400 and status not in (502, 503, 504, 529) else None
    if permanent == "invalid_request" and status < 500:
        permanent = "bad_request"  # every other 4xx is one already
    if permanent is not None:
        return ProviderError(permanent, text, retryable=False, status=status)  # type: ignore[arg-type]
    if status >= 500:  # includes Anthropic's 529 "overloaded"
        return ProviderError("server", text, retryable=True, retry_after=retry_after, status=status)
    if 400 <= status < 500:
        return ProviderError("bad_request", text, retryable=False, status=status)
    return ProviderError("other", text, retryable=False, status=status)


def bad_response(message: str) -> ProviderError:
    """A body we could not use; retryable because a proxy or a busy server may garble one reply."""
    return ProviderError("bad_response", message, retryable=True)


def _mro_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from (its cause, else its context), a short chain."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen and len(seen) < 12:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


def _where(chain: list[BaseException]) -> str | None:
    """``host:port`` of the failed connection: aiohttp's error says it, an httpx error's request has its URL."""
    for e in chain:
        host, port = getattr(e, "host", None), getattr(e, "port", None)
        if isinstance(host, str) and isinstance(port, int):
            return f"{host}:{port}"
    for e in chain:
        try:
            url = e.request.url  # type: ignore[attr-defined]  # httpx's and the SDKs' errors; raises without one
        except (AttributeError, RuntimeError):
            continue
        if getattr(url, "host", None):
            return f"{url.host}:{url.port or {'https': 443, 'http': 80}.get(url.scheme, '')}".rstrip(":")
    return None


def _reason(chain: list[BaseException]) -> str:
    names = {name for e in chain for name in _mro_names(e)}
    tls = [e for e in chain if isinstance(e, ssl.SSLError)]
    if tls or names & {"ClientSSLError", "ClientConnectorCertificateError"}:
        why = (getattr(tls[-1], "reason", None) or getattr(tls[-1], "verify_message", None)) if tls else None
        if why == "WRONG_VERSION_NUMBER":  # an https:// URL for a server that speaks plain http
            return "the TLS handshake failed: the server does not speak TLS there (an http:// URL?)"
        return f"the TLS handshake failed ({why or 'see the server certificate'})"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "Connection refused" in " ".join(map(str, chain)):
        return "connection refused (nothing listens on that port)"
    if any(type(e).__name__ == "gaierror" for e in chain) or "Name or service not known" in " ".join(map(str, chain)):
        return "the host name could not be resolved"
    if "ServerDisconnectedError" in names or "RemoteProtocolError" in names:
        return "the server closed the connection before it answered"
    if any(isinstance(e, ConnectionResetError) for e in chain):
        return "the connection was reset"
    if any(isinstance(e, (TimeoutError, asyncio.TimeoutError)) for e in chain):
        return "no answer to the connection attempt"
    os_error = next((e for e in chain if isinstance(e, OSError) and e.strerror), None)
    if os_error is not None:
        return str(os_error.strerror).rstrip(".").lower()
    return "the connection could not be made or was lost"


def connection_failure(exc: BaseException) -> str:
    """A failed connection in grace's words, whichever transport failed: ``connection to 127.0.0.1:8080 failed:
    connection refused (nothing listens on that port)``. aiohttp's own words name its SSL setting
    (``ssl:default``) even for a plain http:// URL, and httpx's say only "All connection attempts failed"; this
    says where and why."""
    chain = list(_chain(exc))
    where = _where(chain)
    return f"connection to {where} failed: {_reason(chain)}" if where else f"connection failed: {_reason(chain)}"


def from_transport(exc: BaseException) -> ProviderError | None:
    """Timeouts and connection failures raised below the SDK (or by an SDK without wrapping)."""
    if aiohttp_kind(exc) == "connection":
        return ProviderError("connection", connection_failure(exc), retryable=True)
    names = _mro_names(exc)
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or any(
        part in name for name in names for part in _TIMEOUT_NAMES
    ):
        return ProviderError("timeout", f"request timed out: {exc!r}", retryable=True)
    if isinstance(exc, ConnectionError) or any(name in _CONNECTION_NAMES for name in names):
        return ProviderError("connection", connection_failure(exc), retryable=True)
    if isinstance(exc, ValueError) and ("JSONDecodeError" in names or "UnknownApiResponseError" in names):
        return bad_response(f"response body is not valid JSON: {exc}")
    return None


@contextmanager
def mapped(classify: Callable[[Exception], ProviderError | None]) -> Iterator[None]:
    """Every exception of the block as a :class:`ProviderError`: what ``classify`` makes of it (the SDK's own
    classes), else what :func:`from_transport` does (a timeout, a connection failure, a body that is not JSON,
    raised below the SDK). A ProviderError goes up as it is; anything neither knows is a bug, and keeps its
    traceback."""
    try:
        yield
    except ProviderError:
        raise
    except Exception as exc:
        error = classify(exc) or from_transport(exc)
        if error is None:
            raise
        raise error from exc


def stainless_errors(sdk: Any, timeout_s: float) -> AbstractContextManager[None]:
    """:func:`mapped` for the ``openai`` and ``anthropic`` SDKs (``sdk``: the imported module), both generated by
    Stainless, with the same exception classes under the same names: a status, a timeout after ``timeout_s``, a
    failed connection, a reply the SDK could not read."""

    def classify(exc: Exception) -> ProviderError | None:
        if isinstance(exc, sdk.APIStatusError):  # Anthropic's api_message is the server's words without the status
            message = getattr(exc, "api_message", None) or exc.message
            return from_status(exc.status_code, message, headers=exc.response.headers, body=exc.body)
        if isinstance(exc, sdk.APITimeoutError) and aiohttp_kind(exc.__cause__ or exc) == "connection":
            return ProviderError("connection", connection_failure(exc), retryable=True)
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderError("timeout", f"request timed out after {timeout_s}s", retryable=True)
        if isinstance(exc, sdk.APIConnectionError):
            return ProviderError("connection", connection_failure(exc), retryable=True)
        if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError)):
            return bad_response(f"unparseable response: {exc}")
        return None

    return mapped(classify)
