"""OpenAI Chat Completions, and every server that speaks it (vLLM, Ollama, LM Studio, llama.cpp, TGI...).

The SDK reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` itself; we only pass a
base URL when the model spec names one, so the environment keeps working
exactly as the SDK documents. The key is resolved here too, so a missing key
fails in :meth:`check_ready`, before any question is sent.

JSON mode (``options.json_mode``): ``auto`` (the default) asks for the answer's
JSON schema (``response_format`` ``json_schema``); servers that reject that
(llama.cpp's Python server accepts only ``text`` and ``json_object``) get
``json_object_schema``: ``{"type": "json_object", "schema": ...}``, the form in
which llama-cpp-python (and llama.cpp's ``llama-server``, Together, Fireworks)
take a schema and compile it into a grammar, so even a tiny model's reply has
the keys asked for; servers that reject that get plain ``json_object`` (any JSON
object: measured on SmolLM2-135M through llama-cpp-python, 43 of 46 judge
replies were ``{"explanation": ...}`` with no verdict key), and servers that
reject every form get the prompt's own instructions only. The answer is parsed
the same way whichever was used. The first rejection decides for the endpoint
and model, once per process: the other calls wait for that first one instead of
each being rejected. ``json_schema``, ``json_object_schema``, ``json_object``
and ``prompt`` force a mode.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from harness.core.errors import GraceError
from harness.providers import http_errors, transport
from harness.providers.base import (
    Completion,
    ModelSpec,
    Provider,
    ProviderError,
    Request,
    missing_key,
    require_sdk,
    sdk_installed,
)

KEY_ENVS = ["OPENAI_API_KEY"]
JSON_MODES = ("auto", "json_schema", "json_object_schema", "json_object", "prompt", "none")  # none: the old name of prompt
_FALLBACK = ("json_schema", "json_object_schema", "json_object", "prompt")
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar|\bjson\b", re.IGNORECASE)
# (endpoint, model) -> (mode, why); shared by every provider object of the process, so the spot-check judge
# and the answering model learn it once
_DECIDED: dict[tuple[str, str], tuple[str, str]] = {}


def forget_json_modes() -> None:
    """Forget what endpoints taught this process (tests reuse ports)."""
    _DECIDED.clear()


def _rejects_format(exc: ProviderError) -> bool:
    """A permanent error that names the response format: the server does not support it, nothing else is wrong."""
    return exc.kind in ("invalid_request", "bad_request") and bool(_FORMAT_WORDS.search(exc.message))


def _schema_name(schema: dict[str, Any]) -> str:
    """The API wants ``^[a-zA-Z0-9_-]{1,64}$`` as the schema's name."""
    raw = str(schema.get("title") or "answer")
    return (re.sub(r"[^a-zA-Z0-9_-]+", "_", raw).strip("_") or "answer")[:64]


def _get_json(url: str, key: str, timeout: float) -> Any:
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - the user's own endpoint
        return json.loads(resp.read(1_000_000))


def _slots_of(root: str, key: str, timeout: float = 3.0) -> int | None:
    """``/props`` ``total_slots``, else the length of ``/slots``; None when the server says neither, or does not
    answer (a server that lets ``/props`` time out is not asked ``/slots`` too: its calls will say the rest)."""
    for path in ("/props", "/slots"):
        try:
            data = _get_json(root + path, key, timeout)
        except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
            if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
                return None
            continue
        value = data.get("total_slots") if isinstance(data, dict) else (len(data) if isinstance(data, list) else None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _plain_http_context() -> ssl.SSLContext:
    """For a plain-HTTP endpoint (a server on this machine or network): a TLS context that trusts no
    certificate, instead of the default one that loads the system's CA bundle (35-50 ms at start-up) for
    connections that never use TLS. A redirect to https fails verification rather than going unchecked."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname on, CERT_REQUIRED, no CA loaded


def _field(obj: Any, name: str) -> Any:
    """A field of the reply, whether the plain JSON (real-time calls) or the SDK's typed object (batch files);
    None when the field, or the object itself, is missing."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _server_time(timings: Any) -> float | None:
    """llama.cpp's ``timings`` (``prompt_ms`` reading the prompt, ``predicted_ms`` writing the answer): the time it
    worked on the call, its queue left out; None when the server sends none, or numbers that are not times."""
    if not isinstance(timings, dict):
        return None
    parts = [timings.get("prompt_ms"), timings.get("predicted_ms")]
    if not all(isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p < 1e9 for p in parts):
        return None
    return float(parts[0] + parts[1])


class OpenAIChatProvider(Provider):
    """Subclasses for other endpoints of the same wire format (named presets, Azure) override only the
    hooks below the constructor: where the key is read, how the client is made, which output-limit name
    the endpoint takes. Requests, responses, the JSON-mode fallback and error mapping stay here, once."""

    provider_name = "openai"
    base_url_env = "OPENAI_BASE_URL"
    batch_api = "harness.providers.openai_batch:OpenAIBatch"
    key_envs: ClassVar[list[str]] = KEY_ENVS  # where the key is read from unless the spec names api_key_env
    json_fallback: ClassVar[tuple[str, ...]] = _FALLBACK  # the JSON modes ``auto`` tries, in order
    sdk_module, sdk_install = "openai", "openai"

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: Any = None
        self._sdk: Any = None
        self._probe: asyncio.Lock | None = None

    def _key_envs(self) -> list[str]:
        return [self.spec.api_key_env] if self.spec.api_key_env else list(self.key_envs)

    def _api_key(self) -> str | None:
        """The key sent with every call; None when there is none."""
        return self.spec.resolve_key(list(self.key_envs))

    def _check_credentials(self) -> None:
        if not self._api_key():
            raise missing_key(self.spec.name, self._key_envs())

    def _new_client(self, openai: Any, common: dict[str, Any]) -> Any:
        """The SDK client; ``common`` holds the timeout and the retries switched off."""
        if self.spec.base_url:
            # a proxy's user:password@ goes as a Basic Authorization header, in place of the key's Bearer one (as
            # httpx sends it), whatever the transport
            common["base_url"], basic = transport.url_credentials(self.spec.base_url)
            if basic:
                common["default_headers"] = {**common.get("default_headers", {}), "Authorization": basic}
        return openai.AsyncOpenAI(api_key=self._api_key(), **common)

    def _uses_max_completion_tokens(self) -> bool:
        """True for api.openai.com (no base URL named): see :meth:`build_kwargs`."""
        return not (self.spec.base_url or os.environ.get("OPENAI_BASE_URL"))

    def check_ready(self) -> None:
        sdk_installed("openai", "openai", self.provider_name)
        self._check_credentials()
        mode = self.spec.options.get("json_mode", "auto")
        if mode not in JSON_MODES:
            raise GraceError(f"{self.spec.name}: options.json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")

    def _get_client(self) -> Any:
        if self._client is None:
            self.check_ready()
            openai = require_sdk("openai", "openai", self.provider_name)
            # max_retries 0: the runner retries, honouring Retry-After
            common: dict[str, Any] = {"max_retries": 0, "timeout": self.timeout_s}
            plain = str(type(self).endpoint(self.spec) or "").startswith("http://")
            # aiohttp's pool when installed: httpx's costs CPU per call that grows with the connections (transport.py)
            http_client = transport.sdk_http_client(openai, verify=_plain_http_context() if plain else None)
            if http_client is not None:
                common["http_client"] = http_client
            self._client = self._new_client(openai, common)
        return self._client

    def _format_key(self) -> tuple[str, str]:
        return (str(type(self).endpoint(self.spec) or "https://api.openai.com/v1"), self.spec.model)

    def json_mode(self) -> str:
        """The JSON mode calls use now: forced by the spec, decided for the endpoint, or the first to try."""
        mode = self.spec.options.get("json_mode", "auto")
        if mode == "none":
            return "prompt"
        if mode != "auto":
            return mode
        return _DECIDED.get(self._format_key(), ("json_schema", ""))[0]

    def build_kwargs(self, request: Request, mode: str | None = None) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments; public so a dry run can show them."""
        params = {**self.spec.params, **request.params}
        if "max_tokens" in params and self._uses_max_completion_tokens() and "max_completion_tokens" not in params:
            # api.openai.com accepts max_completion_tokens on every chat model, while
            # reasoning models (o-series, gpt-5) reject max_tokens; local servers keep
            # the older name, which is all many of them understand.
            params["max_completion_tokens"] = params.pop("max_tokens")
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": list(request.messages), **params}
        if request.output_mode == "json":
            mode = mode or self.json_mode()
            if mode == "json_schema" and request.json_schema is not None:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(request.json_schema), "schema": request.json_schema, "strict": True},
                }
            elif mode == "json_object_schema" and request.json_schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
            elif mode in ("json_schema", "json_object_schema", "json_object"):
                kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def complete(self, request: Request) -> Completion:
        auto = self.spec.options.get("json_mode", "auto") == "auto"
        if request.output_mode != "json" or not auto or self._format_key() in _DECIDED:
            return await self._send(request, self.json_mode() if request.output_mode == "json" else None)
        if self._probe is None:
            self._probe = asyncio.Lock()
        async with self._probe:  # the first JSON call finds out what the server takes; the others wait for it
            if self._format_key() in _DECIDED:
                return await self._send(request, self.json_mode())
            return await self._find_json_mode(request)

    async def _find_json_mode(self, request: Request) -> Completion:
        rejected: list[str] = []
        first: ProviderError | None = None
        for mode in self.json_fallback:
            try:
                completion = await self._send(request, mode)
            except ProviderError as exc:
                if not _rejects_format(exc):
                    raise
                rejected.append(mode)
                first = first or exc
                continue
            why = f"server rejected {' and '.join(rejected)}: {first.message[:300]}" if first else ""
            _DECIDED[self._format_key()] = (mode, why)
            return completion
        raise first  # type: ignore[misc]  # every mode rejected: the error was not about the format after all

    def learned(self) -> dict[str, Any]:
        mode, why = _DECIDED.get(self._format_key(), (None, ""))
        return {"json_mode": mode, "json_mode_reason": why} if why else {}

    async def parallel_slots(self) -> int | None:
        """llama.cpp's server says how many requests it works on at once (``/props`` ``total_slots``, or the
        length of ``/slots``); hosted APIs and servers that do not say give None."""
        endpoint = type(self).endpoint(self.spec)
        if not endpoint:
            return None
        root = re.sub(r"/v1/?$", "", endpoint.rstrip("/"))
        key = self._api_key() or ""
        return await asyncio.to_thread(_slots_of, root, key, min(3.0, self.timeout_s))

    def sdk_errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions as :class:`ProviderError`, for every call to this endpoint (batch ones too)."""
        if self._sdk is None:  # looked up once: the registry's resolve is 20 us, on every call at 1,000 a second
            self._sdk = require_sdk("openai", "openai", self.provider_name)
        return http_errors.stainless_errors(self._sdk, self.timeout_s)

    async def _send(self, request: Request, mode: str | None) -> Completion:
        client = self._get_client()
        with self.sdk_errors():
            # The body goes through the SDK client's ``post`` as built, not through ``chat.completions.create``
            # (its walk over the typed parameters cost 3 ms of CPU per call), and the reply comes back as the
            # plain JSON (``cast_to=object``), not a typed ChatCompletion (0.3 ms more per call): the same wire
            # body, errors, headers and timeouts as the SDK's own.
            resp = await client.post("/chat/completions", body=self.build_kwargs(request, mode), cast_to=object)
        completion = self._to_completion(resp)
        if request.output_mode == "json" and mode != "json_schema":
            completion.json_mode = mode
        return completion

    @staticmethod
    def _to_completion(resp: Any) -> Completion:
        choices = _field(resp, "choices") if not isinstance(resp, str) else None
        if not choices or not isinstance(choices, list):  # also a plain str: the SDK gives a non-JSON body as-is
            raise http_errors.bad_response(f"response has no choices: {str(resp)[:200]!r}")
        choice = choices[0]
        message = _field(choice, "message")
        text = _field(message, "content")
        finish = _field(choice, "finish_reason")
        refusal = _field(message, "refusal")
        if text is None and refusal:
            # A safety refusal is the model's answer; retrying would only repeat it.
            text, finish = refusal, finish or "refusal"
        if text is None and finish == "length":
            text = ""  # the limit cut it off before any text (a reasoning model's budget): an answer, not a fault
        if not isinstance(text, str):
            raise http_errors.bad_response(f"response message has no content (finish_reason={finish!r})")
        usage = _field(resp, "usage")
        return Completion(
            text=text,
            input_tokens=_field(usage, "prompt_tokens"),
            output_tokens=_field(usage, "completion_tokens"),
            finish_reason=finish,
            service_ms=_server_time(_field(resp, "timings")),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
