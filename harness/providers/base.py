"""The provider contract: one small class with one async method. Also the public API for provider plugins.

A provider turns a :class:`Request` into a :class:`Completion` and nothing more.
Concurrency, retries, caching, cost and timing live once, in the runner
(``harness.runner``). Providers translate their SDK's failures into
:class:`ProviderError` so the runner can decide what to retry; they create their
SDK clients with the SDK's own retries switched off, so a 429 is retried once,
by the runner, honouring ``Retry-After``.

A provider in another package (a plugin) subclasses :class:`Provider` and names
its class in the package's metadata, in the ``grace.providers`` entry-point
group (``acme = "grace_acme:AcmeProvider"`` makes ``--model acme:MODEL``);
``grace providers`` lists it with its package. What a plugin may import from
here is :data:`__all__`: :class:`Provider`, :class:`Request` (with
:class:`RequestContext`), :class:`Completion`, :class:`ModelSpec`,
:class:`ProviderError` (with :data:`ErrorKind`), :class:`RunContext`,
:class:`~harness.core.errors.GraceError` (what :meth:`Provider.check_ready`
raises), and the helpers :func:`require_sdk`, :func:`sdk_installed`,
:func:`missing_key`, :func:`http_client` and :func:`sdk_http_client` (the HTTP
clients grace's own providers use: flat CPU per call at hundreds of connections). The rest of this module is grace's own and may change.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from harness.core.errors import GraceError
from harness.prompts import RetrievedArticle  # noqa: F401 - where the providers' callers have long found it

OutputMode = Literal["inline", "json"]
DEFAULT_TIMEOUT_S = 60.0
# Output tokens per call unless a model or run says otherwise: a grounded answer with one citation needs a
# few hundred, and without a cap one rambling answer (8,000 tokens, 10 minutes on a small local server)
# stalls a single-slot server. Recorded in every row's params; raise it for reasoning models.
DEFAULT_MAX_TOKENS = 1024
# A self-hosted server on a laptop or a small GPU answers one long prompt in tens of seconds and queues the
# rest; 60 s would time requests out while they wait their turn, and each retry joins the back of the queue.
# Measured on the 2-core development machine (llama.cpp's Python server, SmolLM2-135M Q4, other jobs sharing
# the cores): grace's prompts (~1,100 tokens, k=3) 15 s per answer; a 1,662-token prompt with a full 1,024-token
# answer (DEFAULT_MAX_TOKENS) 77 s; a 3,116-token prompt 48 s. The slowest answer that fits its 4,096-token
# context, ~3,000 prompt tokens plus 1,024 answer tokens, is about 100 s; 300 s leaves three times that for a
# larger model or a busier machine, and eight queued 15-s answers (120 s) still fit. It is also what a stuck
# server costs before the timeout breaker stops the model (harness.runner.engine): one timeout when it never
# answered, three or four when it stops mid-run, where 600 s and six attempts per call took hours.
LOCAL_TIMEOUT_S = 300.0

__all__ = ["Completion", "ErrorKind", "GraceError", "ModelSpec", "Provider", "ProviderError", "Request", "RequestContext",
           "RunContext", "http_client", "missing_key", "require_sdk", "sdk_http_client", "sdk_installed"]


@dataclass
class ModelSpec:
    """One model in a run, from ``--model PROVIDER:MODEL`` or a leaderboard TOML entry.

    A provider reads ``model`` (the text after the first colon, as written), ``params`` (the generation
    parameters to send), ``base_url``, the key (:meth:`resolve_key`), ``timeout_s`` (through
    :attr:`Provider.timeout_s`) and its own ``options`` (the TOML's ``options`` table); the runner reads the rest.
    """

    provider: str
    model: str
    name: str = ""  # display name, unique within a run; defaults to "provider:model"
    params: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, top_p, seed, ...
    base_url: str | None = None
    # several base URLs of one model, its replicas (harness.providers.replicas); base_url is then the first
    replicas: list[str] = field(default_factory=list)
    api_key: str | None = None
    api_key_env: str | None = None  # read the key from this variable instead of the SDK default
    price_input_per_mtok: float | None = None  # USD per 1M input tokens
    price_output_per_mtok: float | None = None
    price_batch_input_per_mtok: float | None = None  # through the batch API; None: half the real-time price
    price_batch_output_per_mtok: float | None = None
    price_server_hour: float | None = None  # USD per hour of one server of a self-hosted model (its replicas: each)
    concurrency: int | None = None
    batch: bool | None = None  # through the provider's batch API; None: as the run says (--batch). Not in any key
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float | None = None  # None: 60 s, or 300 s for a server on this machine or network
    options: dict[str, Any] = field(default_factory=dict)  # provider-specific (e.g. baseline threshold)
    # how its citations are read and scored (a harness.run_folder.run_records.CitationSettings: the TOML's
    # [models.citations]); None: GRACE's reading. Scoring only: never sent, never part of a cache key
    citations: Any = None
    # a model that searches the KB for itself (a harness.run_folder.run_records.SearchSettings: the TOML's search,
    # --search); None: shown the top k in its prompt. The runner runs its loop (harness.runner.tool_loop)
    search: Any = None

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"{self.provider}:{self.model}"

    def resolve_key(self, default_envs: list[str]) -> str | None:
        """The API key: the spec's own, else the variable ``api_key_env`` names, else the first of
        ``default_envs`` that is set; None when there is none (say so in ``check_ready`` with :func:`missing_key`)."""
        from harness.core.secrets import remember

        if self.api_key:
            remember(self.api_key)
            return self.api_key
        for env in [self.api_key_env] if self.api_key_env else default_envs:
            if env and os.environ.get(env):
                remember(os.environ[env])
                return os.environ[env]
        return None


@dataclass
class RunContext:
    """What a provider may look at before a run: the questions and their retrieved articles."""

    questions: list[Any]  # GoldQuestion
    retrieved: dict[str, list[RetrievedArticle]]
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)  # run-wide provider options (e.g. a baseline threshold)
    k: int | None = None  # articles shown per question (--k)
    language: str | None = None  # the prompt's language: the KB's, unless --template names another


def tool_arguments(arguments: str) -> dict[str, Any]:
    """A tool call's arguments (the JSON text of :attr:`Request.messages`' ``tool_calls``) as the object an API that
    takes them as data sends back (Anthropic, Gemini, Bedrock); text that is not one (the model was told why) as {}."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class RequestContext:
    """What the prompt was built from. Never sent to an API; baselines and scripted models read it."""

    question_id: str
    question: str
    articles: list[RetrievedArticle]
    repeat: int = 0  # which repeat of the question this call is (--repeats)


@dataclass
class Request:
    """One call: send ``messages`` with ``params`` (merged over the spec's ``params``, the request's winning).

    ``output_mode`` ``"json"`` asks for the answer as JSON matching ``json_schema``, where the API has a way
    to ask (a provider without one may ignore it: the prompt asks too, and the scorer reads JSON leniently).
    ``context`` is what the prompt was built from (question and articles), for providers that do not send a
    prompt anywhere (baselines, a plugin wrapping a whole RAG system); never send it on its own.
    """

    # [{"role": "system"|"user"|"assistant", "content": "..."}]; in a search loop (harness.runner.tool_loop) also an
    # assistant turn's "tool_calls" ([{"id", "name", "arguments"}], arguments the JSON text) and "tool" turns
    # ({"role": "tool", "tool_call_id", "name", "content"}): one neutral shape each provider writes in its wire format
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    output_mode: OutputMode = "inline"
    json_schema: dict[str, Any] | None = None  # JSON Schema for structured output (json mode)
    context: RequestContext | None = None
    # a redacted request (harness.privacy): placeholder -> original, to put the reply back; in memory only, never sent
    redactions: dict[str, str] | None = None
    # the tools the model may call ([{"name", "description", "parameters": JSON Schema}]) and whether it may call them
    # now ("auto") or must answer ("none": the loop's last turn); None: a plain call, as every call was before tools
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | None = None


@dataclass
class Completion:
    """The answer: its text as the model wrote it (grace parses the citations out of it), the tokens the
    API counted (None when it does not say; cost is worked out from them unless ``cost_usd`` says what the call
    cost), and the API's finish reason."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    json_mode: str | None = None  # how JSON was asked for, when the server made us fall back from a schema
    # a system under test (python:, http:) may say more than its text: the IDs it cites as data, the IDs it
    # retrieved itself (rank order) and what the call cost; None: not said (read from the text / priced by tokens)
    citations: list[str] | None = None
    retrieved: list[str] | None = None
    cost_usd: float | None = None
    # the time the server says it worked on the call, milliseconds, its queue left out (llama.cpp's ``timings``);
    # None: not said (harness.runner.server_queue tells it another way where it can)
    service_ms: float | None = None
    # the tools the model called in this turn, [{"id", "name", "arguments"}] (arguments: the JSON text as sent, an
    # object the API parsed written back as JSON); None: none called
    tool_calls: list[dict[str, str]] | None = None
    # the spans the API cited natively (Anthropic's citations of document blocks): [{"article", "text", "start",
    # "end"}], article None when the document index names none; None: none returned, or not asked for
    spans: list[dict[str, Any]] | None = None


ErrorKind = Literal["rate_limit", "server", "timeout", "connection", "bad_response", "auth", "bad_request",
                    "invalid_request", "context_length", "unknown_model", "expired", "cancelled", "batch_output", "other"]
# Failures that will repeat on every call of a model, whatever the question: stop the model at once.
MODEL_FATAL = frozenset({"auth", "unknown_model"})


@functools.lru_cache(maxsize=256)  # asked for every call (Provider.timeout_s); a handful of URLs per process
def is_local_url(url: str | None) -> bool:
    """A server on this machine or a private network: self-hosted, so slow and queueing rather than broken."""
    if not url:
        return False
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith((".local", ".localhost", ".internal", ".lan")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_unspecified or ip.is_link_local


class ProviderError(Exception):
    """A failed call, classified so the runner knows whether to retry and when.

    ``kind`` is one of :data:`ErrorKind`; it is recorded in the error row and decides what the runner does:
    ``auth`` and ``unknown_model`` stop the model at once (every call would fail the same way); ``timeout`` and
    ``connection`` count towards the breakers that stop a model whose server is down or stuck. ``retryable``
    says whether the same call may succeed later (a 429, a 5xx, a timeout, a garbled body: True; a bad key, a
    bad request, a prompt too long for the context: False); the runner retries retryable errors with backoff,
    waiting at least ``retry_after`` seconds when the server said (``Retry-After``). ``status`` is the HTTP
    status, if any. :mod:`harness.providers.http_errors` classifies HTTP statuses the way grace's own providers do.
    Any other exception from :meth:`Provider.complete` becomes a non-retryable ``other`` error row.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        from harness.core.secrets import mask

        message = mask(message, uris=True)  # a server's words: a 401 page may quote the key it was sent
        super().__init__(message)
        self.kind, self.message, self.retryable = kind, message, retryable
        self.retry_after, self.status = retry_after, status

    @classmethod
    def of(cls, exc: BaseException) -> ProviderError:
        """``exc`` as a failed call: itself when a ProviderError, else (an SDK's or a provider's own bug) a
        non-retryable ``other`` error naming it, which becomes an error row rather than a crashed run."""
        return exc if isinstance(exc, ProviderError) else cls("other", f"{type(exc).__name__}: {exc}", retryable=False)


class Provider(ABC):
    """A model behind an API: subclasses set ``provider_name`` and write :meth:`complete`; the rest is optional.

    The contract, for grace's own providers and for plugins alike:

    * ``__init__(spec)``: one object per model of a run, made before any call; keep it cheap and import the
      SDK on the first call, so ``grace --help``, dry runs and cache-answered runs never pay for it.
    * :meth:`check_ready`: raise :class:`~harness.core.errors.GraceError` for what would fail every call (SDK
      not installed, no key, an unknown option), before any question is sent.
    * :meth:`complete`: ``async``, one call, ``Request -> Completion``. No retries, no sleeping, no cache: the
      runner does those once for every provider. Raise :class:`ProviderError` with the right ``kind`` and
      ``retryable``; create SDK clients with their own retries off. It may be called many times at once
      (``--concurrency``), so keep per-call state local.
    * :meth:`endpoint`: where calls go; part of every cache key, so two servers never share answers. The
      default is ``spec.base_url``, else the variable ``base_url_env`` names.
    * :meth:`aclose`: release clients once the run ends.

    Class attributes say what ``grace providers`` shows and what the runner assumes: ``provider_name`` (the
    name before the colon), ``key_envs`` (the variables the key is read from), ``sdk_module`` and
    ``sdk_install`` (the module the provider imports, and what to ``pip install`` when it is missing),
    ``needs_network`` (False for offline baselines: no cost, no latency recorded).
    """

    provider_name: ClassVar[str]
    needs_network: ClassVar[bool] = True
    base_url_env: ClassVar[str | None] = None  # the variable the SDK reads its endpoint from, if any
    key_envs: ClassVar[list[str]] = []  # the variables the key is read from, first set wins (shown by grace providers)
    sdk_module: ClassVar[str | None] = None  # the module its calls import (None: nothing beyond grace)
    sdk_install: ClassVar[str | None] = None  # what to pip install when sdk_module is missing
    # "module:Class" of its harness.providers.batch.BatchAPI, when the endpoint has a batch API (half price)
    batch_api: ClassVar[str | None] = None
    # False: grace's retrieved articles never reach the model (an http: system whose body sends neither articles nor
    # messages), so its rows record none and its citations are judged only against what it says it retrieved
    shows_articles: bool = True
    # True: complete() sends Request.tools and returns the model's tool calls (a search loop can run on it)
    supports_tools: ClassVar[bool] = False

    @classmethod
    def endpoint(cls, spec: ModelSpec) -> str | None:
        """Where calls go: part of every cache key, so two servers never share answers."""
        if spec.base_url:
            return spec.base_url
        return os.environ.get(cls.base_url_env) if cls.base_url_env else None

    def prepare_run(self, context: RunContext) -> None:  # noqa: B027 (an optional hook: most providers need none)
        """Called once before any call, with the run's questions and retrieval (baselines fit on them)."""

    def __init__(self, spec: ModelSpec):
        from harness.core import secrets

        self.spec = _with_environment(spec)
        # the secrets this provider (or its SDK) may read, masked in everything grace writes or prints from now on
        spec = self.spec
        secrets.remember(spec.api_key)
        for env in [spec.api_key_env, *type(self).key_envs]:  # a plugin's key variable may have any name
            if env:
                secrets.remember(os.environ.get(env))
        secrets.remember_uri(spec.base_url)
        try:
            secrets.remember_uri(type(self).endpoint(spec))  # an http: system's url, a base_url from the environment
        except GraceError:
            pass  # a bad table: the subclass says what is wrong with it
        secrets.remember_environment()

    def learned(self) -> dict[str, Any]:
        """What the run taught us about the endpoint (e.g. the JSON mode it fell back to, and why);
        recorded with the model in run.json and shown in the report."""
        return {}

    @property
    def timeout_s(self) -> float:
        """Seconds per call: the spec's, else 60, or 300 for a self-hosted server (see LOCAL_TIMEOUT_S)."""
        if self.spec.timeout_s is not None:
            return float(self.spec.timeout_s)
        return LOCAL_TIMEOUT_S if is_local_url(type(self).endpoint(self.spec)) else DEFAULT_TIMEOUT_S

    async def parallel_slots(self) -> int | None:
        """How many requests the server works on at once, where it says so (llama.cpp ``/props``); else None."""
        return None

    def check_ready(self) -> None:  # noqa: B027 (an optional hook)
        """Raise ``GraceError`` (missing SDK, missing key) before any call is made."""

    @abstractmethod
    async def complete(self, request: Request) -> Completion:
        """Send one request and return the answer, or raise :class:`ProviderError` (see the class docstring)."""

    async def aclose(self) -> None:  # noqa: B027 (an optional hook)
        """Release network clients; called once when the run ends."""


def _with_environment(spec: ModelSpec) -> ModelSpec:
    """The spec a provider calls with: its ``base_url`` (and replicas) and options with each ``${VAR}`` filled from
    the environment, the values remembered as secrets. The runner keeps the spec as written, so run.json and the
    cache key hold ``${VAR}`` (harness.core.literal_secrets); an http: table fills its own when calling."""
    from dataclasses import replace

    from harness.core.literal_secrets import fill_env, fill_env_in, uses_env

    if not uses_env([spec.base_url, spec.replicas, {k: v for k, v in spec.options.items() if k != "http"}]):
        return spec
    where = f"{spec.name}: base_url"
    return replace(spec, base_url=fill_env(spec.base_url, where, url=True) if spec.base_url else spec.base_url,
                   replicas=[fill_env(u, where, url=True) for u in spec.replicas],
                   options=fill_env_in(spec.options, f"{spec.name}: options", skip=("http",)))


def ensure_ready(provider: Provider, who: str, *, ready: bool = True) -> None:
    """``provider.check_ready()``; with ``ready=False`` (a dry run, which sends nothing) a missing key or SDK is
    a warning about the real run instead of a refusal."""
    try:
        provider.check_ready()
    except GraceError as exc:
        if ready:
            raise
        import logging

        logging.getLogger("grace").warning(f"{who}: not ready for a real run: {exc}")


def require_sdk(module: str, package: str, provider: str):
    """Import an SDK lazily, turning ImportError into an install hint."""
    from harness.core.registry import resolve

    return resolve(module, missing=f"the {provider} provider needs the {package} package: pip install {package}")


def sdk_installed(module: str, package: str, provider: str) -> None:
    """Fail fast when the SDK is missing, without importing it: ``openai`` alone takes half a second to import,
    and a run answered wholly from the cache never needs it."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise GraceError(f"the {provider} provider needs the {package} package: pip install {package}")


def missing_key(provider: str, envs: list[str]) -> GraceError:
    names = " or ".join(envs)
    return GraceError(f"{provider}: no API key; set {names} (or api_key_env in the leaderboard config)")


def http_client(**kwargs: Any) -> Any:
    """An ``httpx.AsyncClient`` (httpx's keywords) for a provider that calls its API without an SDK: on aiohttp's
    connection pool (unless ``GRACE_HTTP_TRANSPORT=httpx``), whose CPU per call does not grow with the connections
    as httpx's does (:mod:`harness.providers.transport`); httpx's own otherwise. Same interface and exceptions."""
    from harness.providers.transport import httpx_client

    return httpx_client(**kwargs)


def sdk_http_client(sdk: Any) -> Any | None:
    """The ``http_client=`` for an SDK generated by Stainless (``openai``, ``anthropic`` and others with a
    ``DefaultAioHttpClient``): its aiohttp client unless ``GRACE_HTTP_TRANSPORT=httpx``, else None (its default)."""
    from harness.providers.transport import sdk_http_client as make

    return make(sdk)
