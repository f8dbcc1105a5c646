"""The HTTP transport: aiohttp's pool in every install, httpx's when told, and the same errors on both.

httpx-aiohttp raises every failed connection as httpx's ``ConnectTimeout``; grace must still see a refused connection
as a connection failure (the connection breaker, not the timeout breaker and its one-call-at-a-time fallback).
"""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from harness.providers import make_provider
from harness.providers.base import ModelSpec, ProviderError, Request, RequestContext, http_client
from harness.testing import FakeAPIServer, Reply

TRANSPORTS = ["aiohttp", "httpx"]


@pytest.fixture(params=TRANSPORTS)
def transport(request, monkeypatch):
    monkeypatch.setenv("GRACE_HTTP_TRANSPORT", request.param)
    return request.param


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spec_for(provider: str, url: str, **kw) -> ModelSpec:
    if provider == "http":
        return ModelSpec("http", url + "/bot/answer", **kw)
    return ModelSpec(provider, "m", base_url=url + ("/v1" if provider == "openai" else ""), api_key="k", **kw)


def ask(spec: ModelSpec):
    async def go():
        provider = make_provider(spec)
        try:
            request = Request(messages=[{"role": "user", "content": "hi"}],
                              context=RequestContext("q1", "hi", []))
            return await provider.complete(request), provider
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", ["openai", "anthropic", "http"])
def test_a_refused_connection_is_a_connection_failure_on_either_transport(transport, provider):
    port = free_port()
    with pytest.raises(ProviderError) as err:
        ask(spec_for(provider, f"http://127.0.0.1:{port}"))
    assert err.value.kind == "connection" and err.value.retryable, err.value.message
    # in grace's words, the same on both transports: where, and why (issue 47: aiohttp's said "ssl:default" of a
    # plain http:// URL, httpx's "All connection attempts failed")
    assert err.value.message == f"connection to 127.0.0.1:{port} failed: connection refused (nothing listens on that port)"


@pytest.mark.parametrize("provider", ["openai", "http"])
def test_an_https_url_for_a_plain_http_server_says_so(transport, provider):
    with FakeAPIServer() as srv:
        host = srv.base_url.split("//")[1].split("/")[0]
        with pytest.raises(ProviderError) as err:
            ask(spec_for(provider, srv.base_url.replace("http://", "https://")))
    assert err.value.kind == "connection", err.value.message
    assert err.value.message == (f"connection to {host} failed: the TLS handshake failed: the server does not speak "
                                 "TLS there (an http:// URL?)")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "http"])
def test_a_slow_server_is_a_timeout_and_an_answer_is_an_answer_on_either_transport(transport, provider):
    with FakeAPIServer() as srv:
        srv.enqueue(Reply.ok("late", delay=2.0), Reply.ok("Paris [ID: 4]"))
        with pytest.raises(ProviderError) as err:
            ask(spec_for(provider, srv.base_url, timeout_s=0.3))
        assert err.value.kind == "timeout", err.value.message
        completion, _ = ask(spec_for(provider, srv.base_url))
    assert completion.text == "Paris [ID: 4]"


def test_aiohttp_and_its_httpx_adapter_are_plain_dependencies_of_grace():
    """A plain ``pip install grace-eval`` (no extra) brings the fast transport: both packages are required without an
    ``extra ==`` marker in the installed metadata, and the ``fast`` extra is still accepted (empty)."""
    import re
    from importlib.metadata import metadata, requires

    plain = {re.match(r"[A-Za-z0-9._-]+", r)[0].lower() for r in requires("grace-eval") or [] if ";" not in r}
    assert {"aiohttp", "httpx-aiohttp", "openai", "anthropic"} <= plain
    assert "fast" in metadata("grace-eval").get_all("Provides-Extra")


def test_the_sdk_client_is_aiohttp_by_default_and_httpx_when_told(monkeypatch):
    monkeypatch.delenv("GRACE_HTTP_TRANSPORT", raising=False)
    async def client_of() -> str:
        provider = make_provider(ModelSpec("openai", "m", base_url="http://127.0.0.1:1/v1", api_key="k"))
        try:
            return type(provider._get_client()._client).__name__
        finally:
            await provider.aclose()

    assert "Aio" in asyncio.run(client_of())
    monkeypatch.setenv("GRACE_HTTP_TRANSPORT", "httpx")
    assert "Aio" not in asyncio.run(client_of())


def test_a_plugins_http_client_raises_httpx_exceptions_as_httpx_would(transport):
    async def go():
        async with http_client(timeout=5) as client:
            await client.get(f"http://127.0.0.1:{free_port()}/")

    with pytest.raises(httpx.ConnectError):  # not ConnectTimeout: a plugin written for httpx reads it right
        asyncio.run(go())
