"""Anthropic Messages API.

JSON mode, and why it has three settings (``options.json_mode``):

* ``structured`` (default when the request carries a JSON Schema): the API's
  structured outputs, ``output_config.format = {"type": "json_schema", ...}``.
  The output is constrained to the schema; supported by current models
  (Claude Sonnet 4.5, Opus 4.1, Haiku 4.5 and later).
* ``prefill``: end the conversation with an assistant turn ``"{"`` and put the
  ``"{"`` back in front of the reply (the API returns only the continuation).
  This is the classic trick for older models (Claude 3.x) that lack structured
  outputs, but Claude 4.6 and later reject a trailing assistant turn with a
  400, so it is opt-in, never the default.
* ``prompt`` (default without a schema): no API flag; the prompt's own
  instructions ask for JSON, which the scorer extracts leniently.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

from harness.core.errors import GraceError
from harness.providers import http_errors, transport
from harness.providers.base import (
    DEFAULT_MAX_TOKENS,
    Completion,
    ModelSpec,
    Provider,
    Request,
    missing_key,
    require_sdk,
    sdk_installed,
    tool_arguments,
)
from harness.providers.sdk_params import split_for_sdk

KEY_ENVS = ["ANTHROPIC_API_KEY"]
JSON_MODES = ("structured", "prefill", "prompt")
# Chat-completions names for the same knobs, so one leaderboard config can drive every provider.
_RENAMES = {"stop": "stop_sequences"}
# Accepted by other providers, rejected by the Messages API with a 400 ("extra inputs are not permitted").
_UNSUPPORTED = ("seed", "frequency_penalty", "presence_penalty", "n", "logprobs")


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A search loop's turns in the Messages API's shape: an assistant turn's calls as ``tool_use`` blocks (their
    arguments an object: text that is not one is sent as ``{}``, the model having been told why), the tool results
    that follow as one user turn of ``tool_result`` blocks."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "system":
            continue
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": tool_arguments(c["arguments"])}
                       for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": role, "content": m["content"]})
    return out


def _as_documents(messages: list[dict[str, Any]], articles: list[Any]) -> list[dict[str, Any]]:
    """Native citations: the articles as ``document`` blocks with citations enabled, before the question, in the
    order shown (the API's ``document_index`` is that order); the prompt's own article block, which would send them
    twice, replaced by a line saying where they are."""
    from harness.prompts import without_articles

    documents = [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": a.text},
                  "title": f"[ID: {a.id}] {a.title}", "citations": {"enabled": True}} for a in articles]
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i]["role"] == "user" and isinstance(out[i]["content"], str):
            text = without_articles(out[i]["content"], articles)
            out[i] = {"role": "user", "content": [*documents, {"type": "text", "text": text}]}
            break
    return out


def _spans(resp: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The citations the API returned, each as the article its document index names and the span it quotes
    (``char_location``: character offsets into the document's text); one the index does not name is kept with
    article None, so it is counted and never read as another article's."""
    out = []
    for block in getattr(resp, "content", None) or []:
        for c in getattr(block, "citations", None) or []:
            index = getattr(c, "document_index", None)
            out.append({"article": ids[index] if isinstance(index, int) and 0 <= index < len(ids) else None,
                        "text": str(getattr(c, "cited_text", "") or ""), "start": getattr(c, "start_char_index", None),
                        "end": getattr(c, "end_char_index", None)})
    return out



class AnthropicProvider(Provider):
    provider_name = "anthropic"
    key_envs = KEY_ENVS
    sdk_module, sdk_install = "anthropic", "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    batch_api = "harness.providers.anthropic_batch:AnthropicBatch"
    supports_tools = True

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: Any = None

    def check_ready(self) -> None:
        sdk_installed("anthropic", "anthropic", self.provider_name)
        if not self.spec.resolve_key(KEY_ENVS):
            raise missing_key(self.spec.name, [self.spec.api_key_env] if self.spec.api_key_env else KEY_ENVS)
        if not isinstance(self.spec.options.get("native_citations", False), bool):
            raise GraceError(f"{self.spec.name}: options.native_citations must be true or false")
        mode = self.spec.options.get("json_mode")
        if mode is not None and mode not in JSON_MODES:
            raise GraceError(f"{self.spec.name}: options.json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")

    def _get_client(self) -> Any:
        if self._client is None:
            self.check_ready()
            anthropic = require_sdk("anthropic", "anthropic", self.provider_name)
            kwargs: dict[str, Any] = {
                "api_key": self.spec.resolve_key(KEY_ENVS),
                "max_retries": 0,  # the runner retries, honouring Retry-After
                "timeout": self.timeout_s,
            }
            if self.spec.base_url:  # else the SDK reads ANTHROPIC_BASE_URL itself
                kwargs["base_url"], basic = transport.url_credentials(self.spec.base_url)
                if basic:  # a proxy's user:password@, sent as a header whatever the transport
                    kwargs["default_headers"] = {"Authorization": basic}
            http_client = transport.sdk_http_client(anthropic)  # aiohttp's pool when installed (transport.py)
            if http_client is not None:
                kwargs["http_client"] = http_client
            self._client = anthropic.AsyncAnthropic(**kwargs)
        return self._client

    def _json_mode(self, request: Request) -> str | None:
        if request.output_mode != "json":
            return None
        mode = self.spec.options.get("json_mode")
        if mode is None:
            return "structured" if request.json_schema is not None else "prompt"
        if mode == "structured" and request.json_schema is None:
            return "prompt"
        return mode

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The ``messages.create`` arguments; public so a dry run can show them."""
        params = {**self.spec.params, **request.params}
        for old, new in _RENAMES.items():
            if old in params:
                value = params.pop(old)
                params.setdefault(new, [value] if isinstance(value, str) else value)
        for name in _UNSUPPORTED:
            params.pop(name, None)
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        messages = (_wire_messages(request.messages) if request.tools else
                    [{"role": m["role"], "content": m["content"]} for m in request.messages if m["role"] != "system"])
        if self.spec.options.get("native_citations") and request.context is not None and request.context.articles:
            messages = _as_documents(messages, request.context.articles)
        mode = self._json_mode(request)
        if mode == "prefill":
            messages.append({"role": "assistant", "content": "{"})
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": messages, **params}
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                               for t in request.tools]
            kwargs["tool_choice"] = {"type": request.tool_choice or "auto"}
        if mode == "structured":
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": request.json_schema}}
        return kwargs

    def sdk_errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions as :class:`ProviderError`, for every call to this endpoint (batch ones too)."""
        return http_errors.stainless_errors(require_sdk("anthropic", "anthropic", self.provider_name), self.timeout_s)

    async def complete(self, request: Request) -> Completion:
        client = self._get_client()
        with self.sdk_errors():
            kwargs = split_for_sdk(client.messages.create, self.build_kwargs(request))
            resp = await client.messages.create(**kwargs)
        completion = self._to_completion(resp, prefilled=self._json_mode(request) == "prefill")
        if self.spec.options.get("native_citations") and request.context is not None:
            completion.spans = _spans(resp, [a.id for a in request.context.articles])
            # the articles it cited natively are its citations (none: it cited none), scored like any others
            completion.citations = list(dict.fromkeys(s["article"] for s in completion.spans if s["article"]))
        return completion

    @staticmethod
    def _to_completion(resp: Any, *, prefilled: bool) -> Completion:
        blocks = getattr(resp, "content", None)
        if not isinstance(blocks, list):
            raise http_errors.bad_response(f"response has no content blocks: {str(resp)[:200]!r}")
        texts = [b.text for b in blocks if getattr(b, "type", None) == "text" and isinstance(getattr(b, "text", None), str)]
        stop = getattr(resp, "stop_reason", None)
        calls = [{"id": str(getattr(b, "id", "") or f"toolu_{n}"), "name": str(getattr(b, "name", "") or ""),
                  "arguments": json.dumps(getattr(b, "input", None))}
                 for n, b in enumerate(blocks) if getattr(b, "type", None) == "tool_use"] or None
        if not texts and calls:
            texts = [""]  # a turn that only calls tools
        if not texts:
            raise http_errors.bad_response(f"response has no text block (stop_reason={stop!r})")
        text = "".join(texts)
        if prefilled:
            text = "{" + text  # the API returns only what follows the prefilled "{"
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            finish_reason=stop,
            tool_calls=calls,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
