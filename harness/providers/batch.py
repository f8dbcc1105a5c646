"""The batch contract: what a provider with a batch API adds to its one ``complete`` method.

OpenAI's Batch API, Anthropic's Message Batches and Gemini's batch mode take
thousands of requests at once at half the price and answer within a day. Each
provider that has one names its :class:`BatchAPI` class (``Provider.batch_api``)
and that class owns everything about the endpoint: the input format, the
provider's limits per batch, its status words and its result format. The runner
(``harness.runner.batch``) owns the rest, once: what to submit, recording it in
the run folder before and after submitting, polling, and writing the answers as
ordinary response rows.

Every request carries a ``custom_id``: the call's cache key, so a result maps
back to the call (and the cache) without any other state.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.providers.base import Completion, ProviderError, Request

if TYPE_CHECKING:
    from harness.providers.base import Provider

# Seconds for one batch endpoint call: uploading 200 MB of requests takes far longer than one answer.
BATCH_CALL_TIMEOUT_S = 600.0


@dataclass
class BatchStatus:
    """A batch as the provider sees it now."""

    ended: bool  # nothing more will be answered: its results can be collected
    state: str  # the provider's own word (in_progress, ended, JOB_STATE_RUNNING...), shown to the user
    total: int | None = None
    answered: int | None = None  # requests finished so far (succeeded or failed), where the provider says
    failed: int | None = None


@dataclass
class BatchItem:
    """One request's outcome: an answer, or the error that ended it (expired, cancelled, rejected)."""

    custom_id: str
    completion: Completion | None = None
    error: ProviderError | None = None


def expired(message: str = "the batch expired before this request was answered") -> ProviderError:
    return ProviderError("expired", message, retryable=True)


def cancelled(message: str = "the batch was cancelled before this request was answered") -> ProviderError:
    return ProviderError("cancelled", message, retryable=True)


class BatchAPI(ABC):
    """One provider's batch endpoint, driving that provider's own SDK client and request format."""

    max_requests: ClassVar[int]  # the provider's documented limits per batch
    max_bytes: ClassVar[int]

    def __init__(self, provider: Provider):
        self.provider = provider

    @abstractmethod
    def size(self, custom_id: str, request: Request) -> int:
        """Bytes this request adds to a batch's input, to split within ``max_bytes``."""

    @abstractmethod
    async def submit(self, items: list[tuple[str, Request]], label: str) -> str:
        """Create one batch of ``(custom_id, request)``; returns the provider's batch ID.

        ``label`` is stored with the batch where the API allows (metadata,
        display name), so :meth:`find` can recognise it after a crash.
        """

    @abstractmethod
    async def status(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def results(self, batch_id: str, custom_ids: list[str], output_mode: str) -> list[BatchItem]:
        """Every request's outcome once the batch has ended; ``custom_ids`` in submission order."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> None: ...

    @abstractmethod
    async def find(self, label: str, since: float, count: int) -> str | None:
        """The ID of a batch submitted as ``label`` at or after ``since`` (epoch seconds) with ``count``
        requests, when a process died before it could record the ID; None if the provider has none."""


def batch_api_of(provider: Provider) -> BatchAPI | None:
    """The provider's batch endpoint, or None when it has none (imported only when asked for)."""
    target = type(provider).batch_api
    if not target:
        return None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(provider)


def to_json_bytes(value: Any) -> bytes:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
