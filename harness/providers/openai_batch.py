"""OpenAI's Batch API (and Azure OpenAI's, which is the same API on other paths).

A batch is a JSONL file of ``{"custom_id", "method", "url", "body"}`` lines
uploaded to ``/v1/files`` (purpose ``batch``), then ``POST /v1/batches``. When
it ends (completed, expired, cancelled or failed) answers are in its output
file and failures in its error file; an expired batch has both, the answered
part and ``batch_expired`` lines for the rest. Each body is exactly what
:meth:`OpenAIChatProvider.build_kwargs` sends in real time, so an answer is the
same call whichever way it was made.

Limits: 50,000 requests and 200 MB per input file (Azure: 100,000 requests).
https://platform.openai.com/docs/guides/batch
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
    cancelled,
    expired,
    legible_custom_id,
    to_json_bytes,
)

_ENDED = ("completed", "expired", "cancelled", "failed")
LABEL_KEY = "grace_batch"  # the metadata key holding grace's name for the batch


class OpenAIBatch(BatchAPI):
    max_requests: ClassVar[int] = 50_000
    max_bytes: ClassVar[int] = 200 * 1024 * 1024
    url: ClassVar[str] = "/v1/chat/completions"  # the line's "url" and the batch's "endpoint"

    def _client(self) -> Any:
        return self.provider._get_client().with_options(timeout=BATCH_CALL_TIMEOUT_S)

    def _line(self, custom_id: str, request: Request) -> bytes:
        body = self.provider.build_kwargs(request)
        return to_json_bytes({"custom_id": custom_id, "method": "POST", "url": self.url, "body": body}) + b"\n"

    def size(self, custom_id: str, request: Request) -> int:
        return len(self._line(custom_id, request))

    async def submit(self, items: list[tuple[str, Request]], label: str) -> str:
        data = b"".join(self._line(custom_id, request) for custom_id, request in items)
        client = self._client()
        with self.provider.sdk_errors():
            file = await client.files.create(file=(f"{label}.jsonl", data, "application/jsonl"), purpose="batch")
            batch = await client.batches.create(input_file_id=file.id, endpoint=self.url, completion_window="24h",
                                                metadata={LABEL_KEY: label})
        return batch.id

    async def _batch(self, batch_id: str) -> Any:
        with self.provider.sdk_errors():
            return await self._client().batches.retrieve(batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self._batch(batch_id)
        counts = batch.request_counts
        return BatchStatus(
            ended=batch.status in _ENDED, state=batch.status, total=getattr(counts, "total", None),
            answered=None if counts is None else (counts.completed or 0) + (counts.failed or 0),
            failed=getattr(counts, "failed", None),
        )

    async def results(self, batch_id: str, custom_ids: list[str], output_mode: str) -> list[BatchItem]:
        batch = await self._batch(batch_id)
        items: dict[str, BatchItem] = {}
        unreadable: list[tuple[str, str | None]] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for n, line in enumerate((await self._download(file_id)).splitlines(), 1):
                    if not line.strip():
                        continue
                    item = self._item(line, output_mode)
                    if item is None:
                        unreadable.append((f"line {n} of {file_id}", legible_custom_id(line)))
                    elif item.custom_id not in items or items[item.custom_id].completion is None:
                        items[item.custom_id] = item  # an answer wins over an error line for the same request
        # a completed batch lists every request; an expired or cancelled one may leave the rest out
        failure = {"cancelled": cancelled(), "expired": expired()}.get(batch.status)
        if batch.status == "failed":  # rejected as a whole (bad input file): nothing was answered
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            why = "; ".join(f"line {e.line}: {e.message}" if getattr(e, "line", None) else str(e.message) for e in errors[:3])
            failure = ProviderError("bad_request", f"the batch was rejected: {why or 'no reason given'}", retryable=False)
        return self.collate(batch_id, custom_ids, items, unreadable, failure)

    async def _download(self, file_id: str) -> str:
        with self.provider.sdk_errors():
            content = await self._client().files.content(file_id)
        return content.text

    def _item(self, line: str, output_mode: str) -> BatchItem | None:
        try:
            row = json.loads(line)
        except ValueError:
            return None  # a torn line: its request, if any, is reported as lost with the line's number
        custom_id = row.get("custom_id") if isinstance(row, dict) else None
        if not isinstance(custom_id, str):
            return None
        response, error = row.get("response"), row.get("error")
        if isinstance(response, dict) and response.get("status_code") == 200:
            try:
                from openai.types.chat import ChatCompletion

                completion = self.provider._to_completion(ChatCompletion.model_validate(response.get("body")))
            except ProviderError as exc:
                return BatchItem(custom_id, error=exc)
            except ValueError as exc:
                return BatchItem(custom_id, error=http_errors.bad_response(f"unparseable answer in the batch: {exc}"))
            mode = self.provider.json_mode() if output_mode == "json" else None
            if mode not in (None, "json_schema"):
                completion.json_mode = mode
            return BatchItem(custom_id, completion=completion)
        if isinstance(response, dict):
            body = response.get("body")
            message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
            return BatchItem(custom_id, error=http_errors.from_status(int(response.get("status_code") or 0),
                                                                       str(message or body), body=body))
        code = (error or {}).get("code") if isinstance(error, dict) else None
        message = str((error or {}).get("message") or code or "failed") if isinstance(error, dict) else "failed"
        if code == "batch_expired":
            return BatchItem(custom_id, error=expired(message))
        if code == "batch_cancelled":
            return BatchItem(custom_id, error=cancelled(message))
        return BatchItem(custom_id, error=ProviderError("other", f"{code}: {message}" if code else message, retryable=True))

    async def cancel(self, batch_id: str) -> None:
        with self.provider.sdk_errors():
            await self._client().batches.cancel(batch_id)

    async def find(self, label: str, since: float, count: int) -> str | None:
        with self.provider.sdk_errors():
            async for batch in self._client().batches.list(limit=100):
                if (batch.metadata or {}).get(LABEL_KEY) == label:
                    return batch.id
                if batch.created_at < since - 60:
                    return None  # newest first: everything further is older than the submission
        return None


class AzureOpenAIBatch(OpenAIBatch):
    """Azure's global batch deployments: the same API under ``/openai``; lines name ``/chat/completions``."""

    max_requests: ClassVar[int] = 100_000
    url: ClassVar[str] = "/chat/completions"
