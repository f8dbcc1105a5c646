"""Gemini through ``google-genai`` (the Gemini Developer API, not Vertex AI).

Notes on the SDK that shape this class:

* Key: the SDK prefers ``GOOGLE_API_KEY`` over ``GEMINI_API_KEY``; we resolve in
  the same order and pass the key explicitly.
* Base URL: ``spec.base_url`` goes in ``HttpOptions(base_url=...)``; without it
  the SDK itself honours ``GOOGLE_GEMINI_BASE_URL``.
* Retries: with no ``retry_options`` the SDK makes one attempt over httpx, but
  when aiohttp is installed it silently retries connection errors after a 1-10 s
  sleep. ``HttpRetryOptions(attempts=1)`` switches off both, leaving retries to
  the runner.
* ``HttpOptions.timeout`` is in milliseconds.
* ``vertexai=False`` is explicit so ``GOOGLE_GENAI_USE_VERTEXAI`` in the
  environment cannot reroute calls to a different API and credential scheme.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

from harness.providers import http_errors
from harness.providers.base import (
    Completion,
    ModelSpec,
    Provider,
    ProviderError,
    Request,
    missing_key,
    require_sdk,
    sdk_installed,
    tool_arguments,
)

KEY_ENVS = ["GOOGLE_API_KEY", "GEMINI_API_KEY"]
# Chat-completions names -> GenerateContentConfig fields, so one config drives every provider.
_RENAMES = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens", "stop": "stop_sequences"}



def _sdk() -> Any:
    return require_sdk("google.genai", "google-genai", "google")


class GoogleProvider(Provider):
    provider_name = "google"
    key_envs = KEY_ENVS
    sdk_module, sdk_install = "google.genai", "google-genai"
    batch_api = "harness.providers.google_batch:GeminiBatch"
    supports_tools = True

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: Any = None

    def check_ready(self) -> None:
        sdk_installed("google.genai", "google-genai", "google")
        if not self.spec.resolve_key(KEY_ENVS):
            raise missing_key(self.spec.name, [self.spec.api_key_env] if self.spec.api_key_env else KEY_ENVS)

    def _get_client(self) -> Any:
        if self._client is None:
            self.check_ready()
            types = require_sdk("google.genai.types", "google-genai", "google")
            http_options = types.HttpOptions(
                timeout=int(self.timeout_s * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),
            )
            if self.spec.base_url:
                http_options.base_url = self.spec.base_url
            self._client = self._new_client(_sdk(), http_options)
        return self._client

    def _new_client(self, genai: Any, http_options: Any) -> Any:
        """The SDK client for this API; the one thing a subclass serving another Gemini endpoint replaces."""
        return genai.Client(api_key=self.spec.resolve_key(KEY_ENVS), vertexai=False, http_options=http_options)

    def build_config(self, request: Request) -> dict[str, Any]:
        """The ``GenerateContentConfig`` fields; public so a dry run can show them."""
        params = {**self.spec.params, **request.params}
        for old, new in _RENAMES.items():
            if old in params:
                value = params.pop(old)
                params.setdefault(new, [value] if new == "stop_sequences" and isinstance(value, str) else value)
        config: dict[str, Any] = dict(params)
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        if system:
            config["system_instruction"] = system
        if request.output_mode == "json":
            config["response_mime_type"] = "application/json"
            if request.json_schema is not None:
                # response_json_schema takes standard JSON Schema as-is (additionalProperties
                # included), where response_schema only takes the OpenAPI subset.
                config["response_json_schema"] = request.json_schema
        if request.tools:  # declared as data, never run by the SDK: the loop is grace's (harness.runner.tool_loop)
            config["tools"] = [{"function_declarations": [
                {"name": t["name"], "description": t["description"], "parameters_json_schema": t["parameters"]}
                for t in request.tools]}]
            config["tool_config"] = {"function_calling_config": {"mode": (request.tool_choice or "auto").upper()}}
            config["automatic_function_calling"] = {"disable": True}
        return config

    @staticmethod
    def build_contents(request: Request) -> list[dict[str, Any]]:
        """The conversation as ``contents``; a search loop's calls as ``function_call`` parts of the model's turn and
        their results as ``function_response`` parts of one user turn."""
        out: list[dict[str, Any]] = []
        for m in request.messages:
            if m["role"] == "system":
                continue
            if m["role"] == "tool":
                part = {"function_response": {"id": m["tool_call_id"], "name": m.get("name") or "",
                                              "response": {"result": m["content"]}}}
                if out and out[-1]["role"] == "user" and "function_response" in out[-1]["parts"][0]:
                    out[-1]["parts"].append(part)
                else:
                    out.append({"role": "user", "parts": [part]})
            elif m.get("tool_calls"):
                parts: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
                parts += [{"function_call": {"id": c["id"], "name": c["name"], "args": tool_arguments(c["arguments"])}}
                          for c in m["tool_calls"]]
                out.append({"role": "model", "parts": parts})
            else:
                out.append({"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]})
        return out

    async def complete(self, request: Request) -> Completion:
        client = self._get_client()
        with self.sdk_errors():
            resp = await client.aio.models.generate_content(
                model=self.spec.model, contents=self.build_contents(request), config=self.build_config(request)
            )
        return self._to_completion(resp)

    def sdk_errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions as :class:`ProviderError`, for every call to this endpoint (batch ones too)."""
        errors = require_sdk("google.genai.errors", "google-genai", "google")

        def classify(exc: Exception) -> ProviderError | None:
            if isinstance(exc, errors.APIError):
                response = getattr(exc, "response", None)
                return http_errors.from_status(int(exc.code or 0), exc.message or str(exc),
                                               headers=getattr(response, "headers", None), body=exc.details)
            if isinstance(exc, json.JSONDecodeError):
                return http_errors.bad_response(f"response body is not valid JSON: {exc}")
            if type(exc).__name__ == "ValidationError":  # pydantic: an unknown or mistyped param
                return ProviderError("bad_request", f"invalid generation config: {exc}", retryable=False)
            return None

        return http_errors.mapped(classify)

    @staticmethod
    def _to_completion(resp: Any) -> Completion:
        candidates = getattr(resp, "candidates", None) or []
        feedback = getattr(resp, "prompt_feedback", None)
        if not candidates:
            block = getattr(feedback, "block_reason", None)
            raise http_errors.bad_response(f"response has no candidates (prompt block_reason={block!r})")
        parts = getattr(getattr(candidates[0], "content", None), "parts", None) or []
        texts = [p.text for p in parts if isinstance(getattr(p, "text", None), str) and not getattr(p, "thought", False)]
        finish = getattr(candidates[0], "finish_reason", None)
        finish_reason = getattr(finish, "value", finish)
        calls = [getattr(p, "function_call", None) for p in parts]
        tool_calls = [{"id": str(c.id or f"call_{n}"), "name": str(c.name or ""), "arguments": json.dumps(c.args or {})}
                      for n, c in enumerate(calls) if c is not None] or None
        if not texts and tool_calls:
            texts = [""]  # a turn that only calls tools
        if not texts:
            raise http_errors.bad_response(f"candidate has no text (finish_reason={finish_reason!r})")
        usage = getattr(resp, "usage_metadata", None)
        out = getattr(usage, "candidates_token_count", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        if out is not None and thoughts:
            out += thoughts  # thinking tokens are billed as output but counted separately
        return Completion(
            text="".join(texts),
            input_tokens=getattr(usage, "prompt_token_count", None),
            output_tokens=out,
            finish_reason=str(finish_reason) if finish_reason is not None else None,
            tool_calls=tool_calls,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aio.aclose()
