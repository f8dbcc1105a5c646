"""OpenAI Chat Completions, and every server that speaks it (vLLM, Ollama, LM Studio...).

The SDK reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` itself; we only pass a
base URL when the model spec names one, so the environment keeps working
exactly as the SDK documents. The key is resolved here too, so a missing key
fails in :meth:`check_ready`, before any question is sent.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from harness.core.errors import GraceError
from harness.providers import http_errors
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, missing_key, require_sdk
from harness.providers.sdk_params import split_for_sdk

KEY_ENVS = ["OPENAI_API_KEY"]
JSON_MODES = ("json_schema", "json_object", "none")


def _schema_name(schema: dict[str, Any]) -> str:
    """The API wants ``^[a-zA-Z0-9_-]{1,64}$`` as the schema's name."""
    raw = str(schema.get("title") or "answer")
    return (re.sub(r"[^a-zA-Z0-9_-]+", "_", raw).strip("_") or "answer")[:64]


class OpenAIChatProvider(Provider):
    provider_name = "openai"
    base_url_env = "OPENAI_BASE_URL"

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: Any = None

    def _key_envs(self) -> list[str]:
        return [self.spec.api_key_env] if self.spec.api_key_env else KEY_ENVS

    def check_ready(self) -> None:
        require_sdk("openai", "openai", self.provider_name)
        if not self.spec.resolve_key(KEY_ENVS):
            raise missing_key(self.spec.name, self._key_envs())
        mode = self.spec.options.get("json_mode", "json_schema")
        if mode not in JSON_MODES:
            raise GraceError(f"{self.spec.name}: options.json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")

    def _get_client(self) -> Any:
        if self._client is None:
            self.check_ready()
            openai = require_sdk("openai", "openai", self.provider_name)
            kwargs: dict[str, Any] = {
                "api_key": self.spec.resolve_key(KEY_ENVS),
                "max_retries": 0,  # the runner retries, honouring Retry-After
                "timeout": self.spec.timeout_s,
            }
            if self.spec.base_url:
                kwargs["base_url"] = self.spec.base_url
            self._client = openai.AsyncOpenAI(**kwargs)
        return self._client

    def _official_api(self) -> bool:
        return not (self.spec.base_url or os.environ.get("OPENAI_BASE_URL"))

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments; public so a dry run can show them."""
        params = {**self.spec.params, **request.params}
        if "max_tokens" in params and self._official_api() and "max_completion_tokens" not in params:
            # api.openai.com accepts max_completion_tokens on every chat model, while
            # reasoning models (o-series, gpt-5) reject max_tokens; local servers keep
            # the older name, which is all many of them understand.
            params["max_completion_tokens"] = params.pop("max_tokens")
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": list(request.messages), **params}
        if request.output_mode == "json":
            mode = self.spec.options.get("json_mode", "json_schema")
            if mode == "json_schema" and request.json_schema is not None:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(request.json_schema), "schema": request.json_schema, "strict": True},
                }
            elif mode != "none":
                kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def complete(self, request: Request) -> Completion:
        client = self._get_client()
        openai = require_sdk("openai", "openai", self.provider_name)
        try:
            kwargs = split_for_sdk(client.chat.completions.create, self.build_kwargs(request))
            resp = await client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise http_errors.from_status(
                exc.status_code, exc.message, headers=exc.response.headers, body=exc.body
            ) from exc
        except openai.APITimeoutError as exc:
            raise ProviderError("timeout", f"request timed out after {self.spec.timeout_s}s", retryable=True) from exc
        except openai.APIConnectionError as exc:
            raise ProviderError("connection", f"connection failed: {exc.__cause__ or exc}", retryable=True) from exc
        except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
            raise http_errors.bad_response(f"unparseable response: {exc}") from exc
        except Exception as exc:
            mapped = http_errors.from_transport(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return self._to_completion(resp)

    @staticmethod
    def _to_completion(resp: Any) -> Completion:
        choices = getattr(resp, "choices", None)
        if not choices:  # also a plain str: the SDK returns the text of a non-JSON body as-is
            raise http_errors.bad_response(f"response has no choices: {str(resp)[:200]!r}")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None)
        finish = getattr(choice, "finish_reason", None)
        if text is None and getattr(message, "refusal", None):
            # A safety refusal is the model's answer; retrying would only repeat it.
            text, finish = message.refusal, finish or "refusal"
        if text is None:
            raise http_errors.bad_response(f"response message has no content (finish_reason={finish!r})")
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            finish_reason=finish,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
