"""Provider registry: ``PROVIDER:MODEL`` -> a provider class, imported only when used.

Entries are ``"module:Class"`` strings so ``grace --help`` never imports an SDK.
"""

from __future__ import annotations

import importlib

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec, Provider

PROVIDERS: dict[str, str] = {
    "openai": "harness.providers.openai_chat:OpenAIChatProvider",
    "anthropic": "harness.providers.anthropic_messages:AnthropicProvider",
    "google": "harness.providers.google_genai:GoogleProvider",
    "baseline": "harness.providers.baseline:BaselineProvider",
    "scripted": "harness.providers.scripted:ScriptedProvider",
}


def parse_model_spec(text: str) -> ModelSpec:
    provider, sep, model = text.strip().partition(":")
    if not sep or not provider or not model:
        raise GraceError(f"model {text!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini or baseline:top1")
    if provider not in PROVIDERS:
        raise GraceError(f"model {text!r}: unknown provider {provider!r}; known: {', '.join(sorted(PROVIDERS))}")
    return ModelSpec(provider=provider, model=model)


def make_provider(spec: ModelSpec) -> Provider:
    try:
        target = PROVIDERS[spec.provider]
    except KeyError:
        raise GraceError(f"unknown provider {spec.provider!r}; known: {', '.join(sorted(PROVIDERS))}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(spec)
