"""OpenAI-compatible services by name: ``openrouter:meta-llama/llama-3.1-8b-instruct``, ``ollama:llama3.1:8b``.

Each service speaks the OpenAI Chat Completions wire format, so a preset is the
OpenAI provider with two facts filled in: the documented base URL and the
variable its key is read from. Nothing else changes: the JSON-mode fallback,
error mapping and timeouts are the OpenAI provider's, and :meth:`endpoint`
always returns the preset's URL, so two services never share cache entries or
a learned JSON mode.

Where a preset's calls go, first match wins: the model's ``base_url`` (TOML or
``--base-url``), then ``<PRESET>_BASE_URL`` (``OPENROUTER_BASE_URL``,
``OLLAMA_BASE_URL``, ``LLAMACPP_BASE_URL``...), then the documented URL. The
key comes from ``api_key_env`` when the model names one, else from the
service's own variable. Hosted services require a key; local servers (Ollama,
vLLM, llama.cpp) take a placeholder when no key is set, since they only check
one when started with ``--api-key``. Local URLs get the 300 s self-hosted
timeout and the llama.cpp slot probe; hosted ones are never probed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.providers.base import ModelSpec
from harness.providers.openai_chat import OpenAIChatProvider

PLACEHOLDER_KEY = "no-key"  # the SDK insists on a key; local servers started without --api-key ignore it


@dataclass(frozen=True)
class Preset:
    name: str  # the spec's provider part; the base-URL variable is NAME_BASE_URL, upper-cased
    base_url: str  # from the service's own documentation
    key_env: str
    hosted: bool  # a paid service, which refuses calls without a key


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", hosted=True),
    Preset("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", hosted=True),
    Preset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", hosted=True),
    Preset("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", hosted=True),
    Preset("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY", hosted=True),
    Preset("ollama", "http://127.0.0.1:11434/v1", "OLLAMA_API_KEY", hosted=False),
    Preset("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", hosted=False),  # vllm serve --api-key reads it too
    Preset("llamacpp", "http://127.0.0.1:8080/v1", "LLAMA_API_KEY", hosted=False),  # so does llama-server's
)}


class PresetProvider(OpenAIChatProvider):
    """The OpenAI provider with a preset's URL and key variable; one subclass per preset, made below."""

    batch_api = None  # their batch APIs, where they have one, differ from OpenAI's in limits and paths

    preset: ClassVar[Preset]

    @classmethod
    def endpoint(cls, spec: ModelSpec) -> str:
        return super().endpoint(spec) or cls.preset.base_url  # base_url, else <PRESET>_BASE_URL, else the default

    def _api_key(self) -> str | None:
        key = super()._api_key()
        if key or self.preset.hosted or self.spec.api_key_env:  # a named variable that is unset is a mistake
            return key
        return PLACEHOLDER_KEY

    def _new_client(self, openai: Any, common: dict[str, Any]) -> Any:
        return openai.AsyncOpenAI(api_key=self._api_key(), base_url=type(self).endpoint(self.spec), **common)

    def _uses_max_completion_tokens(self) -> bool:
        return False  # max_tokens is the name every one of these services documents

    async def parallel_slots(self) -> int | None:
        return None if self.preset.hosted else await super().parallel_slots()


def _provider(preset: Preset) -> type[PresetProvider]:
    attrs = {"provider_name": preset.name, "base_url_env": f"{preset.name.upper()}_BASE_URL", "key_envs": [preset.key_env],
             "preset": preset, "__module__": __name__, "__doc__": f"{preset.name}: {preset.base_url}"}
    return type(f"{preset.name.title()}Provider", (PresetProvider,), attrs)


# The registry (harness.providers.PROVIDERS) names these as "harness.providers.presets:<preset>".
globals().update({name: _provider(preset) for name, preset in PRESETS.items()})
