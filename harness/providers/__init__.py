"""Provider registry: ``PROVIDER:MODEL`` -> a provider class, imported only when used.

Entries are ``"module:Class"`` strings (:mod:`harness.core.registry`) so ``grace --help`` never imports an SDK. Names not built in are
looked up in other packages' ``grace.providers`` entry points (:mod:`harness.providers.plugins`); a built-in
name always wins.
"""

from __future__ import annotations

from harness.core.errors import GraceError
from harness.core.hashing import normalise_url
from harness.core.model_names import split_model
from harness.core.registry import resolve
from harness.providers import plugins
from harness.providers.base import ModelSpec, Provider

PROVIDERS: dict[str, str] = {
    "openai": "harness.providers.openai_chat:OpenAIChatProvider",
    "anthropic": "harness.providers.anthropic_messages:AnthropicProvider",
    "google": "harness.providers.google_genai:GoogleProvider",
    "vertex": "harness.providers.vertex_ai:VertexProvider",
    "bedrock": "harness.providers.bedrock_converse:BedrockProvider",
    "azure": "harness.providers.azure_openai:AzureOpenAIProvider",
    # OpenAI-compatible services by name; URLs and key variables in harness/providers/presets.py
    "openrouter": "harness.providers.presets:openrouter",
    "together": "harness.providers.presets:together",
    "groq": "harness.providers.presets:groq",
    "mistral": "harness.providers.presets:mistral",
    "deepseek": "harness.providers.presets:deepseek",
    "ollama": "harness.providers.presets:ollama",
    "vllm": "harness.providers.presets:vllm",
    "llamacpp": "harness.providers.presets:llamacpp",
    # the providers grace does not wrap itself, through LiteLLM (optional extra: grace-eval[litellm])
    "litellm": "harness.providers.litellm_provider:LiteLLMProvider",
    # your own system under test: a Python function, or a deployed HTTP endpoint (a [[models]] table's http = {...})
    "python": "harness.providers.python_system:PythonSystem",
    "http": "harness.providers.http_system:HttpSystem",
    "baseline": "harness.providers.baseline:BaselineProvider",
    "scripted": "harness.providers.scripted:ScriptedProvider",
}
# working, but for grace's own tests: never offered in a message or the documentation
INTERNAL = frozenset({"scripted"})


def public_providers() -> list[str]:
    """The provider names a user is told about (the README documents each)."""
    return sorted(set(PROVIDERS) - INTERNAL)


def parse_model_spec(text: str) -> ModelSpec:
    """``PROVIDER:MODEL`` (:func:`harness.core.model_names.split_model`'s rule), its provider built in or a plugin's."""
    provider, model = split_model(text.strip())
    if not provider or not model:
        raise GraceError(f"model {text!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini or baseline:top1")
    if provider not in PROVIDERS and plugins.find(provider, PROVIDERS) is None:
        raise GraceError(f"model {text!r}: unknown provider {provider!r}; known: {_known()}")
    return ModelSpec(provider=provider, model=model)


def _known() -> str:
    """The names to offer: the documented built-ins, then the plugins' (``grace providers`` lists them all)."""
    extra = sorted({p.name for p in plugins.discover(PROVIDERS) if not p.shadowed_by})
    return ", ".join(public_providers()) + (f"; from plugins: {', '.join(extra)}" if extra else "")


_CLASSES: dict[str, type[Provider]] = {}


def provider_class(spec: ModelSpec) -> type[Provider]:
    """The provider's class; its module imports no SDK (they are imported on the first call).

    Looked up once per provider name: every call's cache key asks for its endpoint."""
    cls = _CLASSES.get(spec.provider)
    if cls is not None:
        return cls
    target = PROVIDERS.get(spec.provider)
    if target is None:
        plugin = plugins.find(spec.provider, PROVIDERS)
        if plugin is None:
            raise GraceError(f"unknown provider {spec.provider!r}; known: {_known()}")
        cls = _CLASSES[spec.provider] = plugins.load(plugin)
        return cls
    cls = _CLASSES[spec.provider] = resolve(target)
    return cls


def make_provider(spec: ModelSpec) -> Provider:
    """The spec's provider; for a model with several ``base_url`` s, one per replica behind
    :class:`~harness.providers.replicas.Replicas`, which spreads the calls over them."""
    if len(spec.replicas) > 1:
        from harness.providers.replicas import Replicas

        return Replicas(spec, lambda one: provider_class(one)(one))
    return provider_class(spec)(spec)


def sdk_modules(specs: list[ModelSpec]) -> list[str]:
    """The modules the specs' first calls import (their SDKs, and aiohttp for the transport), for
    :func:`harness.core.preload.preload` to import while a run loads its KB and retrieves; none for a model that calls
    no API, or a provider name that is not known (the run's own checks say so)."""
    from harness.providers import transport

    found: list[str] = []
    for spec in specs:
        try:
            cls = provider_class(spec)
        except GraceError:
            continue
        if cls.needs_network and cls.sdk_module and cls.sdk_module not in found:
            found.append(cls.sdk_module)
    if found and transport.use_aiohttp():
        found.append("aiohttp")
    return found


def endpoint_of(spec: ModelSpec) -> str | None:
    """The endpoint a spec's calls go to, normalised (``.../v1/`` and ``.../v1`` are one endpoint)."""
    return normalise_url(provider_class(spec).endpoint(spec))


def plugin_of(spec: ModelSpec) -> str | None:
    """The package (and version) of the plugin a spec's provider comes from, for run.json; None for a built-in."""
    if spec.provider in PROVIDERS:
        return None
    plugin = plugins.find(spec.provider, PROVIDERS)
    return plugin.where if plugin is not None else None
