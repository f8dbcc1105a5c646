"""Anthropic's Message Batches: ``POST /v1/messages/batches``, poll, stream the results file.

Each request's ``params`` are exactly what :meth:`AnthropicProvider.build_kwargs`
sends in real time. Results come as JSONL, one line per request, of type
``succeeded``, ``errored``, ``canceled`` or ``expired``. The API keeps no
metadata on a batch, so a batch whose ID was lost in a crash is recognised by
when it was created and how many requests it holds.

Limits: 100,000 requests or 256 MB per batch; custom IDs ``^[a-zA-Z0-9_-]{1,64}$``
(grace's are 64 hex digits). https://docs.anthropic.com/en/docs/build-with-claude/batch-processing
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from harness.providers import http_errors
from harness.providers.base import ProviderError, Request
from harness.providers.batch import (
    BATCH_CALL_TIMEOUT_S,
    BatchAPI,
    BatchItem,
    BatchStatus,
    batch_output,
    cancelled,
    expired,
    legible_custom_id,
    to_json_bytes,
)

# The error types of the Messages API and the status each stands for, so a failed request in a batch is
# classified (and retried, or not) exactly like the same failure in real time.
_STATUS_OF = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
              "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
              "overloaded_error": 529}


class AnthropicBatch(BatchAPI):
    max_requests: ClassVar[int] = 100_000
    max_bytes: ClassVar[int] = 256 * 1024 * 1024
    output: ClassVar[str] = "results file"

    def _client(self) -> Any:
        return self.provider._get_client().with_options(timeout=BATCH_CALL_TIMEOUT_S)

    def size(self, custom_id: str, request: Request) -> int:
        return len(to_json_bytes({"custom_id": custom_id, "params": self.provider.build_kwargs(request)})) + 1

    async def submit(self, items: list[tuple[str, Request]], label: str) -> str:
        requests = [{"custom_id": custom_id, "params": self.provider.build_kwargs(request)} for custom_id, request in items]
        with self.provider.sdk_errors():
            batch = await self._client().messages.batches.create(requests=requests)
        return batch.id

    async def status(self, batch_id: str) -> BatchStatus:
        with self.provider.sdk_errors():
            batch = await self._client().messages.batches.retrieve(batch_id)
        c = batch.request_counts
        failed = c.errored + c.canceled + c.expired
        return BatchStatus(ended=batch.processing_status == "ended", state=batch.processing_status,
                           total=c.processing + c.succeeded + failed, answered=c.succeeded + failed, failed=failed)

    async def results(self, batch_id: str, custom_ids: list[str], output_mode: str) -> list[BatchItem]:
        from anthropic.types.messages import MessageBatchIndividualResponse

        prefilled = output_mode == "json" and self.provider.spec.options.get("json_mode") == "prefill"
        items: dict[str, BatchItem] = {}
        unreadable: list[tuple[str, str | None]] = []
        with self.provider.sdk_errors():
            stream = await self._client().messages.batches.results(batch_id)
            try:  # line by line ourselves: the SDK's decoder raises at a torn line, losing every line after it
                n = 0
                async for line in stream.http_response.aiter_lines():
                    n += 1
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except ValueError:
                        row = None
                    if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
                        unreadable.append((f"line {n}", legible_custom_id(line)))
                        continue
                    items[row["custom_id"]] = self._item(MessageBatchIndividualResponse.construct(**row), prefilled)
            finally:
                await stream.close()
        return self.collate(batch_id, custom_ids, items, unreadable)

    def _item(self, entry: Any, prefilled: bool) -> BatchItem:
        result = entry.result
        kind = getattr(result, "type", None)
        if kind == "succeeded":
            try:
                return BatchItem(entry.custom_id, completion=self.provider._to_completion(result.message, prefilled=prefilled))
            except ProviderError as exc:
                return BatchItem(entry.custom_id, error=exc)
        if kind == "errored":
            inner = getattr(getattr(result, "error", None), "error", None)
            etype = getattr(inner, "type", None) or "api_error"
            message = getattr(inner, "message", None) or etype
            return BatchItem(entry.custom_id, error=http_errors.from_status(_STATUS_OF.get(etype, 500), message))
        if kind == "canceled":
            return BatchItem(entry.custom_id, error=cancelled())
        if kind == "expired":
            return BatchItem(entry.custom_id, error=expired())
        return BatchItem(entry.custom_id, error=batch_output(f"the provider's {self.output} had a result of unknown "
                                                             f"type {kind!r} for this request"))

    async def cancel(self, batch_id: str) -> None:
        with self.provider.sdk_errors():
            await self._client().messages.batches.cancel(batch_id)

    async def find(self, label: str, since: float, count: int) -> str | None:
        """The one batch created within a minute of the submission with as many requests (newest first)."""
        found = []
        with self.provider.sdk_errors():
            async for batch in self._client().messages.batches.list(limit=100):
                created = batch.created_at.timestamp()
                if created < since - 60:
                    break
                c = batch.request_counts
                if created <= since + 600 and c.processing + c.succeeded + c.errored + c.canceled + c.expired == count:
                    found.append(batch.id)
        return found[0] if len(found) == 1 else None
