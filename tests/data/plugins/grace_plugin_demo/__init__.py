"""grace-plugin-demo: a provider plugin for grace, written as a third party would write one.

It calls an OpenAI-style ``/chat/completions`` endpoint with httpx, using only grace's public provider API
(``harness.providers.base``). Its package metadata (``grace_plugin_demo-0.2.0.dist-info/entry_points.txt``, what
``pip install`` writes from the ``[project.entry-points."grace.providers"]`` table of its pyproject.toml)
registers it as ``demo``, so ``grace run --model demo:MODEL`` uses it. The documentation's plugin example is
this file.
"""

from __future__ import annotations

import httpx

from harness.providers.base import (
    Completion,
    GraceError,
    ModelSpec,
    Provider,
    ProviderError,
    Request,
    http_client,
    missing_key,
)


class DemoProvider(Provider):
    provider_name = "demo"
    key_envs = ["DEMO_API_KEY"]  # shown by `grace providers`; read below
    base_url_env = "DEMO_BASE_URL"  # where calls go unless the model sets base_url; part of the cache key
    sdk_module, sdk_install = "httpx", "httpx"

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: httpx.AsyncClient | None = None

    def check_ready(self) -> None:
        """Fail before any question is sent: no key, or nowhere to send it."""
        if not self.spec.resolve_key(self.key_envs):
            raise missing_key(self.spec.name, self.key_envs)
        if not type(self).endpoint(self.spec):
            raise GraceError(f"{self.spec.name}: no endpoint; set DEMO_BASE_URL or give the model a base_url")

    async def complete(self, request: Request) -> Completion:
        if self._client is None:  # made on the first call, inside the run's event loop
            # httpx's interface on aiohttp's pool: flat CPU per call at hundreds of connections
            self._client = http_client(timeout=self.timeout_s)
        url = type(self).endpoint(self.spec).rstrip("/") + "/chat/completions"
        body = {"model": self.spec.model, "messages": request.messages, **self.spec.params, **request.params}
        headers = {"Authorization": f"Bearer {self.spec.resolve_key(self.key_envs)}"}
        try:
            reply = await self._client.post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise ProviderError("timeout", f"no answer within {self.timeout_s:g}s", retryable=True) from exc
        except httpx.TransportError as exc:
            raise ProviderError("connection", f"connection failed: {exc!r}", retryable=True) from exc
        status = reply.status_code
        if status == 429:  # the runner waits at least retry_after seconds, then retries
            wait = reply.headers.get("retry-after", "")
            raise ProviderError("rate_limit", f"HTTP 429: {reply.text[:200]}", retryable=True, status=status,
                                retry_after=float(wait) if wait.replace(".", "", 1).isdigit() else None)
        if status in (401, 403):  # stops the model: every call would fail the same way
            raise ProviderError("auth", f"HTTP {status}: key refused", retryable=False, status=status)
        if status >= 500:
            raise ProviderError("server", f"HTTP {status}: {reply.text[:200]}", retryable=True, status=status)
        if status >= 400:
            raise ProviderError("bad_request", f"HTTP {status}: {reply.text[:200]}", retryable=False, status=status)
        try:
            data = reply.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError("bad_response", f"unusable reply: {reply.text[:200]!r}", retryable=True) from exc
        usage = data.get("usage") or {}
        return Completion(text=text, input_tokens=usage.get("prompt_tokens"),
                          output_tokens=usage.get("completion_tokens"), finish_reason=choice.get("finish_reason"))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
