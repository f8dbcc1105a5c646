"""Gemini batch mode (``client.batches`` of ``google-genai``), with the requests inline.

Each inline request holds exactly the contents and config that
:meth:`GoogleProvider.complete` sends in real time, and the call's custom ID in
its metadata. Answers come back in the job's ``dest.inlined_responses``, in
input order; a request that failed carries an ``error`` instead of a response.
The batch's display name is grace's label for it, so a batch whose name was
lost in a crash is found again by listing.

Limit: inline requests up to 20 MB per batch (larger inputs would need an
uploaded file). https://ai.google.dev/gemini-api/docs/batch-mode
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.providers import http_errors
from harness.providers.base import ProviderError, Request
from harness.providers.batch import BatchAPI, BatchItem, BatchStatus, cancelled, expired, to_json_bytes

_ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
          "JOB_STATE_PARTIALLY_SUCCEEDED"}

_HTTP_OF = {3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 11: 400, 12: 501, 13: 500, 14: 503, 16: 401}


def _state(job: Any) -> str:
    state = getattr(job, "state", None)
    return str(getattr(state, "value", state) or "JOB_STATE_UNSPECIFIED")


class GeminiBatch(BatchAPI):
    max_requests: ClassVar[int] = 100_000
    max_bytes: ClassVar[int] = 20 * 1000 * 1000
    output: ClassVar[str] = "inline results"

    def _inline(self, custom_id: str, request: Request) -> dict[str, Any]:
        return {"contents": self.provider.build_contents(request), "config": self.provider.build_config(request),
                "metadata": {"key": custom_id}}

    def size(self, custom_id: str, request: Request) -> int:
        return len(to_json_bytes(self._inline(custom_id, request))) + 64  # plus the request envelope

    async def submit(self, items: list[tuple[str, Request]], label: str) -> str:
        client = self.provider._get_client()
        with self.provider.sdk_errors():
            job = await client.aio.batches.create(model=self.provider.spec.model,
                                                  src=[self._inline(c, r) for c, r in items],
                                                  config={"display_name": label})
        return job.name

    async def _job(self, batch_id: str) -> Any:
        with self.provider.sdk_errors():
            return await self.provider._get_client().aio.batches.get(name=batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        job = await self._job(batch_id)
        stats = getattr(job, "completion_stats", None)
        ok, failed = getattr(stats, "successful_count", None), getattr(stats, "failed_count", None)
        answered = None if ok is None and failed is None else (ok or 0) + (failed or 0)
        return BatchStatus(ended=_state(job) in _ENDED, state=_state(job), answered=answered, failed=failed)

    async def results(self, batch_id: str, custom_ids: list[str], output_mode: str) -> list[BatchItem]:
        job = await self._job(batch_id)
        state = _state(job)
        answers = list(getattr(getattr(job, "dest", None), "inlined_responses", None) or [])
        found: dict[str, BatchItem] = {}
        for i, answer in enumerate(answers):  # by the key in its metadata; by position only where it has none
            key = (getattr(answer, "metadata", None) or {}).get("key")
            key = key if key is not None else (custom_ids[i] if i < len(custom_ids) else f"#{i}")
            found[str(key)] = self._item(str(key), answer, state)
        unanswered = {"JOB_STATE_CANCELLED": cancelled(), "JOB_STATE_EXPIRED": expired()}.get(state)
        if state == "JOB_STATE_FAILED":
            error = getattr(job, "error", None)
            unanswered = ProviderError("bad_request", f"the batch failed: {getattr(error, 'message', None) or state}",
                                       retryable=False)
        return self.collate(batch_id, custom_ids, found, [], unanswered)

    def _item(self, custom_id: str, answer: Any, state: str) -> BatchItem:
        error = getattr(answer, "error", None)
        if error is not None:
            code = int(getattr(error, "code", None) or 13)
            message = str(getattr(error, "message", "") or code)
            if code == 1 or (state == "JOB_STATE_CANCELLED" and code in (1, 4, 10)):
                return BatchItem(custom_id, error=cancelled(message))  # google.rpc CANCELLED
            if code == 4 and state == "JOB_STATE_EXPIRED":
                return BatchItem(custom_id, error=expired(message))  # DEADLINE_EXCEEDED with the batch's deadline
            # a google.rpc.Status code (INVALID_ARGUMENT, RESOURCE_EXHAUSTED...) as the HTTP status it maps to
            status = code if code >= 100 else _HTTP_OF.get(code, 500)
            return BatchItem(custom_id, error=http_errors.from_status(status, message))
        try:
            return BatchItem(custom_id, completion=self.provider._to_completion(answer.response))
        except ProviderError as exc:
            return BatchItem(custom_id, error=exc)

    async def cancel(self, batch_id: str) -> None:
        with self.provider.sdk_errors():
            await self.provider._get_client().aio.batches.cancel(name=batch_id)

    async def find(self, label: str, since: float, count: int) -> str | None:
        with self.provider.sdk_errors():
            async for job in await self.provider._get_client().aio.batches.list(config={"page_size": 100}):
                if getattr(job, "display_name", None) == label:
                    return job.name
        return None
