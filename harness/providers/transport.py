"""The HTTP clients grace's providers, ``http:`` systems and plugins call through: flat at a thousand connections.

Why not the SDKs' default: their async client is httpx, whose connection pool (httpcore) looks at every connection
for every queued request. Measured through grace's engine against a fake server in another process (latency 0.5 s,
2 cores; benchmarks/perf/bench_concurrency.py, docs/measurements.md): at 500 connections most of grace's CPU went
to the pool's bookkeeping, 4 ms per call, and the run reached a quarter of the ideal throughput. aiohttp's pool
hands a free connection out of a deque, so its cost per call does not grow with the connections.

The SDKs keep every other part: openai and anthropic take an ``http_client`` that is httpx's interface on an
aiohttp transport (their own ``DefaultAioHttpClient``), so requests, errors, ``Retry-After`` headers and timeouts
reach grace exactly as before; ``http:`` systems and plugins get an ``httpx.AsyncClient`` on the same kind of
transport (the ``httpx-aiohttp`` package, whose code the SDKs vendor). Both are in every install of grace (they were
the ``fast`` extra, now empty); with ``GRACE_HTTP_TRANSPORT=httpx`` (a proxy or TLS set-up aiohttp does not handle),
or where an install left them out (``pip install --no-deps``), grace uses httpx's pool.
"""

from __future__ import annotations

import importlib.util
import os
import ssl
from typing import Any

ENV = "GRACE_HTTP_TRANSPORT"  # "httpx": the SDKs' own httpx pool, whatever is installed
# connections per client: the SDKs' own ceiling (openai, anthropic: 1,000); grace's --concurrency is the real limit
MAX_CONNECTIONS = 1000


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def use_aiohttp(*, for_httpx: bool = False) -> bool:
    """True when calls should go through aiohttp: it is installed (and, for a plain httpx client,
    httpx-aiohttp too), and ``GRACE_HTTP_TRANSPORT`` does not say ``httpx``."""
    if os.environ.get(ENV, "").strip().lower() == "httpx":
        return False
    return _installed("aiohttp") and (not for_httpx or _installed("httpx_aiohttp"))


def name() -> str:
    """The transport calls go through, for messages and benchmarks."""
    return "aiohttp" if use_aiohttp() else "httpx"


def sdk_http_client(sdk: Any, *, verify: ssl.SSLContext | None = None) -> Any | None:
    """The ``http_client`` for a Stainless SDK client (``openai``, ``anthropic``): its ``DefaultAioHttpClient`` when
    aiohttp is installed, else its ``DefaultAsyncHttpxClient`` when ``verify`` is given, else None (the SDK's default).

    ``verify`` is a TLS context to use instead of the default one (see ``openai_chat._plain_http_context``).
    """
    kwargs: dict[str, Any] = {"verify": verify} if verify is not None else {}
    if use_aiohttp():
        aio = getattr(sdk, "DefaultAioHttpClient", None)
        if aio is not None:
            try:
                return aio(**kwargs)
            except RuntimeError:  # the SDK says its aiohttp client is not installed (an old vendored copy)
                pass
    return sdk.DefaultAsyncHttpxClient(**kwargs) if kwargs else None


def url_credentials(url: str) -> tuple[str, str | None]:
    """The URL without its ``user:password@``, and that pair as a Basic ``Authorization`` header, for grace to send
    as a header: HTTP clients disagree on credentials in a URL (httpx sends them in place of an SDK's own
    ``Authorization``; aiohttp refuses them beside it, "Cannot combine AUTHORIZATION header")."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    import base64

    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    host = parts.netloc.rpartition("@")[2]
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return urlunsplit(parts._replace(netloc=host)), f"Basic {pair}"


def httpx_client(**kwargs: Any) -> Any:
    """An ``httpx.AsyncClient`` (keywords as httpx takes them) whose transport is aiohttp: for ``http:`` systems and
    plugins that call an API without an SDK. With ``GRACE_HTTP_TRANSPORT=httpx``, httpx's own.

    Its errors are httpx's, as a plugin written for httpx expects: a refused connection is ``httpx.ConnectError``
    (httpx-aiohttp alone would raise it as ``ConnectTimeout``, see :func:`aiohttp_kind`)."""
    import httpx

    if use_aiohttp(for_httpx=True):
        # aiohttp's pool takes only the ceiling (httpx's default, 100, would cap an http: system's --concurrency)
        kwargs.setdefault("limits", httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=100))
        return _aiohttp_client_class()(**kwargs)
    return httpx.AsyncClient(**kwargs)


_CLIENT: Any = None


def _aiohttp_client_class() -> Any:
    """``httpx_aiohttp.HttpxAiohttpClient`` on a transport that keeps a failed connection a connection error."""
    global _CLIENT
    if _CLIENT is not None:
        return _CLIENT
    import httpx
    from httpx_aiohttp import AiohttpTransport, HttpxAiohttpClient

    class Transport(AiohttpTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                return await super().handle_async_request(request)
            except httpx.ConnectTimeout as exc:
                if aiohttp_kind(exc) != "connection":
                    raise
                raise httpx.ConnectError(str(exc), request=request) from exc.__cause__

    class Client(HttpxAiohttpClient):
        def _init_transport(self, **kwargs: Any) -> httpx.AsyncBaseTransport:  # httpx passes them all by name
            given = kwargs.pop("transport", None)
            return given if given is not None else Transport(**kwargs)

    _CLIENT = Client
    return Client


def aiohttp_kind(exc: BaseException) -> str | None:
    """``timeout`` or ``connection``, from the aiohttp error under an httpx one, when calls go through aiohttp
    (:mod:`harness.providers.transport`); None when there is none.

    httpx-aiohttp (and the SDKs' copy of it) raises every ``aiohttp.ClientConnectionError`` as httpx's
    ``ConnectTimeout``: a refused connection or a server that hung up would read as a timeout, and count towards
    the timeout breaker and the one-call-at-a-time fallback instead of the connection breaker. Its cause says
    which it was."""
    cause = exc.__cause__
    for _ in range(8):  # a short chain: SDK error <- httpx error <- aiohttp error <- OSError
        if cause is None:
            return None
        if type(cause).__module__.partition(".")[0] == "aiohttp":
            timed_out = isinstance(cause, TimeoutError) or any(
                part in cls.__name__ for cls in type(cause).__mro__ for part in ("Timeout", "TimedOut"))
            return "timeout" if timed_out else "connection"
        cause = cause.__cause__
    return None
