"""One provider call from a test, start to finish: the provider tests of every vendor share it."""

from __future__ import annotations

import asyncio

import pytest

from harness.providers import make_provider
from harness.providers.base import Completion, ModelSpec, ProviderError, Request

MESSAGES = [
    {"role": "system", "content": "Answer from the articles only."},
    {"role": "user", "content": "Where is the office? [ID: 17] The office is in Oslo."},
]


def call(spec: ModelSpec, request: Request | None = None) -> Completion:
    async def go() -> Completion:
        provider = make_provider(spec)
        provider.check_ready()
        try:
            return await provider.complete(request or Request(messages=MESSAGES))
        finally:
            await provider.aclose()

    return asyncio.run(go())


def call_error(spec: ModelSpec, request: Request | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(spec, request)
    return info.value
