"""The batch contract: what a provider with a batch API adds to its one ``complete`` method.

OpenAI's Batch API, Anthropic's Message Batches and Gemini's batch mode take
thousands of requests at once at half the price and answer within a day. Each
provider that has one names its :class:`BatchAPI` class (``Provider.batch_api``)
and that class owns everything about the endpoint: the input format, the
provider's limits per batch, its status words and its result format. The runner
(``harness.runner.batch_mode``) owns the rest, once: what to submit, recording it in
the run folder before and after submitting, polling, and writing the answers as
ordinary response rows.

Every request carries a ``custom_id``: the call's cache key, so a result maps
back to the call (and the cache) without any other state.

Results are read line by line: a provider's results file can come back damaged
(a torn line, a request left out, a line for an ID never sent), and a damaged
line must lose only itself, never the answers around it that were paid for.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.core.registry import resolve
from harness.providers.base import Completion, ProviderError, Request

if TYPE_CHECKING:
    from harness.providers.base import Provider

log = logging.getLogger("grace")

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
    """One request's outcome: an answer, or the error that ended it (expired, cancelled, rejected, lost by the
    provider's results)."""

    custom_id: str
    completion: Completion | None = None
    error: ProviderError | None = None


def expired(message: str = "the batch expired before this request was answered") -> ProviderError:
    return ProviderError("expired", message, retryable=True)


def cancelled(message: str = "the batch was cancelled before this request was answered") -> ProviderError:
    return ProviderError("cancelled", message, retryable=True)


def batch_output(message: str) -> ProviderError:
    """The provider's results lost this request (its batch did not): retryable, so the next run asks again."""
    return ProviderError("batch_output", message, retryable=True)


class BatchAPI(ABC):
    """One provider's batch endpoint, driving that provider's own SDK client and request format."""

    max_requests: ClassVar[int]  # the provider's documented limits per batch
    max_bytes: ClassVar[int]
    output: ClassVar[str] = "output file"  # where the provider hands back results, named in errors

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

    def collate(self, batch_id: str, custom_ids: list[str], found: dict[str, BatchItem],
                unreadable: list[tuple[str, str | None]], unanswered: ProviderError | None = None) -> list[BatchItem]:
        """Every request's outcome in submission order, from the results ``found`` by custom ID.

        ``unreadable`` lines of the results are (where, the custom ID still legible on it, or None). A request
        with no result is lost on such a line, or to the batch's end where that explains it (``unanswered``:
        expired, cancelled, rejected), or else lost by the results; each error says which. A result for an ID
        the batch never held is only a warning: attributing it to any request would file another's answer.
        """
        where = f"{self.provider.spec.name}: batch {batch_id}"
        unknown = sorted(set(found) - set(custom_ids))
        if unknown:
            log.warning(f"{where}: ignored {len(unknown)} result(s) for request(s) not in this batch: "
                        f"{', '.join(unknown[:5])}")
        if unreadable:
            log.warning(f"{where}: the provider's {self.output} had {len(unreadable)} unreadable line(s): "
                        f"{', '.join(w for w, _ in unreadable[:5])}")
        on_line = {c: w for w, c in unreadable if c is not None}
        anonymous = [w for w, c in unreadable if c is None]

        def lost(custom_id: str) -> ProviderError:
            if custom_id in on_line:
                return batch_output(f"the provider's {self.output} had this request's result on an unreadable line "
                                    f"({on_line[custom_id]})")
            if anonymous:
                return batch_output(f"the provider's {self.output} had an unreadable line ({', '.join(anonymous[:3])}) "
                                    "and no other result for this request")
            return unanswered or batch_output(f"the provider's {self.output} had no result for this request")

        return [found.get(c) or BatchItem(c, error=lost(c)) for c in custom_ids]


def legible_custom_id(line: str) -> str | None:
    """The custom ID on a torn result line, where its start survived: so the loss is pinned on one request."""
    match = re.search(r'"custom_id"\s*:\s*"([^"\\]+)"', line)
    return match.group(1) if match else None


def batch_api_of(provider: Provider) -> BatchAPI | None:
    """The provider's batch endpoint, or None when it has none (imported only when asked for)."""
    target = type(provider).batch_api
    if not target:
        return None
    return resolve(target)(provider)


def to_json_bytes(value: Any) -> bytes:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
