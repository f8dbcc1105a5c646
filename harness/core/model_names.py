"""The one rule for reading a model name: ``PROVIDER:MODEL``, split at the first colon.

A model's own name may hold colons (``ollama:llama3.1:8b``, ``bedrock:anthropic.claude-3-haiku-20240307-v1:0``),
so only the first colon separates; a name with nothing on either side of it names no provider. Everyone that
reads a model name reads it here: the provider registry (which also checks the provider exists), an export of an
imported log's models, the LLM splitter's ``llm:PROVIDER:MODEL`` and the reranker's ``cross-encoder[:MODEL]``.
It lives in the core because the KB builder, which may import nothing else of grace, reads one too.
"""

from __future__ import annotations

from typing import NamedTuple


class ModelName(NamedTuple):
    """``provider`` and ``model`` of a name as written; either may be empty (see :attr:`complete`)."""

    provider: str
    model: str

    @property
    def complete(self) -> bool:
        """Both parts given: ``openai:gpt-4o-mini``, not ``openai``, ``openai:`` or ``:gpt-4o-mini``."""
        return bool(self.provider and self.model)


def split_model(text: str) -> ModelName:
    """``"PROVIDER:MODEL"`` -> ``ModelName(PROVIDER, MODEL)``; without a colon the model part is empty.
    Nothing is stripped or checked: the caller says what a name without a provider means to it."""
    provider, _, model = text.partition(":")
    return ModelName(provider, model)
