"""``litellm:PROVIDER/MODEL``: the hundred-odd APIs grace does not wrap itself, through LiteLLM (optional extra).

``litellm:cohere/command-r``, ``litellm:openai/gpt-4o-mini``, ``litellm:anthropic/claude-3-5-haiku-latest``: the
text after ``litellm:`` is LiteLLM's own model string, provider first, as its documentation spells it. LiteLLM
reads each provider's key from that provider's usual variable (``COHERE_API_KEY``...); ``api_key_env`` names
another, and ``base_url`` (``--base-url``) is passed as LiteLLM's ``api_base`` (an OpenAI-compatible gateway,
a proxy, a local server). ``options`` are passed to ``litellm.acompletion`` as written, so any of its own
arguments (``drop_params = true`` for a provider that rejects ``seed``, ``api_version``, ``extra_headers``)
can be set per model.

What this module keeps as grace does it everywhere else:

* Retries: LiteLLM's own are switched off (``num_retries=0`` and the SDK's ``max_retries=0``); the runner
  retries, honouring ``Retry-After``, and counts them.
* Errors: LiteLLM maps every provider's failures onto OpenAI-style exception classes carrying the HTTP status;
  those become :class:`~harness.providers.base.ProviderError` through the same classifier as grace's own
  providers (:mod:`harness.providers.http_errors`), so a 429 or a prompt too long means the same thing here.
* Import cost and the network: ``import litellm`` takes seconds and, by default, downloads a model price
  list from GitHub. The import happens on the first call only (never for ``grace --help``, a dry run or a
  run answered from the cache), and with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first (unless the user set
  it), so it reads the copy inside the package instead: grace prices calls from its own table anyway.
* JSON mode: ``response_format`` with the answer's JSON schema (``options.json_mode``: ``json_schema``, the
  default, ``json_object``, or ``prompt`` to rely on the prompt alone for a provider that takes neither).
"""

from __future__ import annotations

import os
from typing import Any

from harness.core.errors import GraceError
from harness.providers import http_errors
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, missing_key, sdk_installed

JSON_MODES = ("json_schema", "json_object", "prompt")
_OWN = frozenset({"json_mode"})  # options grace reads itself; every other option goes to litellm.acompletion


def _litellm() -> Any:
    """Import LiteLLM without its network fetch at import, quietly (it prints "Give Feedback" banners on errors)."""
    import warnings

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # pydantic's notes on LiteLLM's own TypedDicts (13 of them on the first call), nothing a user can act on;
    # a filter for the process, as they come while calls run concurrently, not only during the import
    warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning, module="pydantic")
    try:
        import litellm
    except ImportError:
        raise GraceError("the litellm provider needs the litellm package: pip install 'grace-eval[litellm]'") from None
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


class LiteLLMProvider(Provider):
    provider_name = "litellm"
    sdk_module, sdk_install = "litellm", "grace-eval[litellm]"
    key_envs = []  # LiteLLM reads the key its provider documents (OPENAI_API_KEY for openai/...); or api_key_env

    def check_ready(self) -> None:
        sdk_installed("litellm", "'grace-eval[litellm]'", self.provider_name)
        name = self.spec.name
        if "/" not in self.spec.model.strip("/"):
            raise GraceError(f"{name}: expected litellm:PROVIDER/MODEL, LiteLLM's model string with its provider "
                             f"first, e.g. litellm:openai/{self.spec.model or 'gpt-4o-mini'}")
        if self.spec.api_key_env and not os.environ.get(self.spec.api_key_env):
            raise missing_key(name, [self.spec.api_key_env])
        mode = self.spec.options.get("json_mode", "json_schema")
        if mode not in JSON_MODES:
            raise GraceError(f"{name}: options.json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The ``litellm.acompletion`` arguments; public so a dry run or a test can show them."""
        params = {**self.spec.params, **request.params}
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": list(request.messages), **params,
                                  **{k: v for k, v in self.spec.options.items() if k not in _OWN},
                                  "timeout": self.timeout_s, "num_retries": 0, "max_retries": 0}
        if self.spec.base_url:
            kwargs["api_base"] = self.spec.base_url
        key = self.spec.resolve_key([])
        if key:
            kwargs["api_key"] = key
        mode = self.spec.options.get("json_mode", "json_schema")
        if request.output_mode == "json" and mode != "prompt":
            if mode == "json_schema" and request.json_schema is not None:
                title = str(request.json_schema.get("title") or "answer")
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "".join(c if c.isalnum() or c in "_-" else "_" for c in title)[:64] or "answer",
                    "schema": request.json_schema, "strict": True}}
            else:
                kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._used = False

    async def complete(self, request: Request) -> Completion:
        litellm = _litellm()
        self._used = True
        try:
            resp = await litellm.acompletion(**self.build_kwargs(request))
        except Exception as exc:
            raise to_provider_error(exc, litellm, self.timeout_s) from exc
        choices = _field(resp, "choices")
        if not choices:
            raise http_errors.bad_response(f"response has no choices: {str(resp)[:200]!r}")
        message, finish = _field(choices[0], "message"), _field(choices[0], "finish_reason")
        text = _field(message, "content")
        if text is None and finish == "length":
            text = ""  # cut off before any text: an answer, not a fault
        if not isinstance(text, str):
            raise http_errors.bad_response(f"response message has no content (finish_reason={finish!r})")
        usage = _field(resp, "usage")
        return Completion(text=text, input_tokens=_field(usage, "prompt_tokens"),
                          output_tokens=_field(usage, "completion_tokens"), finish_reason=finish,
                          cost_usd=self._cost(resp))

    def _cost(self, resp: Any) -> float | None:
        """LiteLLM's price for the call, from its own price list, when grace's table has none for the model
        (a price in grace's table or the model's TOML wins: the runner prices the tokens with it)."""
        if self.spec.price_input_per_mtok is not None or self.spec.price_output_per_mtok is not None:
            return None
        cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
        return float(cost) if isinstance(cost, (int, float)) and cost >= 0 else None

    async def aclose(self) -> None:
        """Close LiteLLM's cached HTTP clients and stop its logging worker, which are bound to this event loop
        (left open, the next run's loop finds them and warns)."""
        if not self._used:
            return
        self._used = False
        import asyncio

        litellm = _litellm()
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await litellm.close_litellm_async_clients()
        try:
            await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout=5)
        except TimeoutError:
            pass
        await GLOBAL_LOGGING_WORKER.stop(discard_pending=True, timeout=1)


def _headers(exc: BaseException) -> dict[str, str]:
    """The upstream reply's headers (``Retry-After``): on the exception's ``response``, or where LiteLLM keeps them."""
    found: dict[str, str] = {}
    response = getattr(exc, "response", None)
    for source in (getattr(response, "headers", None), getattr(exc, "litellm_response_headers", None),
                   getattr(exc, "headers", None)):
        if source:
            found.update({str(k).lower(): str(v) for k, v in dict(source).items()})
    return found


def _underlying(exc: BaseException) -> ProviderError | None:
    """What LiteLLM's exception stands for, when it wrapped something other than an HTTP status: it reports a
    reply it could not parse, and a refused connection, as HTTP 500. The chain of exceptions it wrapped says
    which (a JSON decode error, a ConnectError); None when the chain holds a real HTTP status, or nothing known."""
    seen: set[int] = set()
    inner = exc.__cause__ or exc.__context__
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        names = [cls.__name__ for cls in type(inner).__mro__]
        if "APIStatusError" in names or "HTTPStatusError" in names:
            return None  # the server did answer with an error status: classified by that status
        if "APIResponseValidationError" in names:
            return http_errors.bad_response(f"unusable response: {inner}")
        mapped = http_errors.from_transport(inner)  # timeouts, connection failures, a body that is not JSON
        if mapped is not None:
            return mapped
        inner = inner.__cause__ or inner.__context__
    return None


def to_provider_error(exc: BaseException, litellm: Any, timeout_s: float) -> ProviderError:
    """One of LiteLLM's exceptions as grace's :class:`ProviderError`, kinds as grace's own providers give them.
    Subclasses first: LiteLLM's ContextWindowExceededError is a BadRequestError."""
    if isinstance(exc, ProviderError):
        return exc
    message = str(getattr(exc, "message", "") or exc)
    status = getattr(exc, "status_code", None)
    status = int(status) if isinstance(status, (int, str)) and str(status).isdigit() else None
    if isinstance(exc, litellm.ContextWindowExceededError):
        return ProviderError("context_length", message, retryable=False, status=status)
    if isinstance(exc, litellm.Timeout):
        return ProviderError("timeout", f"request timed out after {timeout_s:g}s: {message}", retryable=True)
    if isinstance(exc, litellm.AuthenticationError):
        return ProviderError("auth", message, retryable=False, status=status)
    if isinstance(exc, litellm.NotFoundError):
        return ProviderError("unknown_model", message, retryable=False, status=status)
    if isinstance(exc, litellm.APIResponseValidationError):
        return http_errors.bad_response(f"unusable response: {message}")
    underlying = _underlying(exc)
    if underlying is not None:
        return underlying
    if status is not None and status >= 400:
        return http_errors.from_status(status, message, headers=_headers(exc), body=getattr(exc, "body", None))
    return http_errors.from_transport(exc) or ProviderError("other", f"{type(exc).__name__}: {message}",
                                                            retryable=False, status=status)
