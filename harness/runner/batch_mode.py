"""Batch mode: the calls no cache or row answers go through the provider's batch API, at half price.

Each ``grace run --batch`` on a folder does, per batch model:

1. answer what the cache already holds (as in real time: same key, same row);
2. find batches a killed process left half-recorded (``submitting`` without an
   ID) at the provider by their label, so nothing is sent twice;
3. poll the open batches and collect those that ended: answers go to the cache
   and to ``responses.jsonl`` as ordinary rows (same fingerprint, cost at the
   batch price, ``batch`` naming the batch), failures (expired, cancelled, a
   rejected request, one the provider's results file lost) as error rows that
   the next run asks again;
4. submit the calls in no open batch, split within the provider's limits,
   recording each batch in ``batches.jsonl`` before and after the submit call;
5. with ``wait``, poll until every open batch has ended, collecting each as it
   ends; without it, return and leave the rest for the next command.

A batch's requests are keyed by their cache key (``custom_id``), so results map
back to calls without any other state, and an answer to a question that was
edited meanwhile still lands in the cache: it was paid for.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from harness.core.files import JsonlAppender
from harness.providers.base import MODEL_FATAL, ProviderError, Request
from harness.providers.batch import BatchAPI, BatchItem, BatchStatus, batch_api_of
from harness.run_folder.batches import BatchEntry, BatchLedger
from harness.run_folder.run_records import CallError
from harness.runner.cache import ResponseCache
from harness.runner.call_defaults import MAX_ATTEMPTS
from harness.runner.engine import (
    AnswerJob,
    CallResult,
    ResponseRows,
    RunPlan,
    account,
    cached_completion,
    cached_result,
    call_error,
)
from harness.runner.limits import backoff_delay
from harness.runner.pricing import batch_price

log = logging.getLogger("grace")
T = TypeVar("T")
POLL_SECONDS = 30.0  # between status checks while waiting; batches take minutes to hours


def split_batches(keys: list[str], size: Callable[[str], int], max_requests: int, max_bytes: int) -> list[list[str]]:
    """Consecutive chunks of ``keys``, each within the provider's request and byte limits."""
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for key in keys:
        n = size(key)
        if current and (len(current) >= max_requests or used + n > max_bytes):
            chunks.append(current)
            current, used = [], 0
        current.append(key)
        used += n
    if current:
        chunks.append(current)
    return chunks


class BatchRunner:
    def __init__(self, plans: list[RunPlan], rows: ResponseRows, out: JsonlAppender, cache: ResponseCache | None,
                 ledger: BatchLedger, *, read_cache: bool = True, wait: bool = False, poll_s: float = POLL_SECONDS,
                 max_attempts: int = MAX_ATTEMPTS, backoff_base: float = 1.0, cancel: bool = False,
                 on_update: Callable[[RunPlan], None] | None = None):
        self.plans, self.rows, self.out, self.cache, self.ledger = plans, rows, out, cache, ledger
        self.read_cache, self.wait, self.poll_s, self.cancel = read_cache, wait, poll_s, cancel
        self.max_attempts, self.backoff_base = max_attempts, backoff_base
        self.on_update = on_update or (lambda plan: None)

    async def run(self) -> None:
        try:
            await asyncio.gather(*(self._model(p) for p in self.plans))
        finally:
            for p in self.plans:
                await p.provider.aclose()

    async def _model(self, plan: RunPlan) -> None:
        api = batch_api_of(plan.provider)
        assert api is not None, f"{plan.spec.name}: no batch API"
        st, spec = plan.stats, plan.spec
        st.total = len(plan.jobs)
        todo: dict[str, list[AnswerJob]] = {}  # cache key -> the jobs it answers (identical prompts share one call)
        requests: dict[str, Request] = {}
        for job in plan.jobs:
            request = self.rows.build(spec, job)
            key = self.rows.key(spec, request, job)
            hit = cached_result(self.cache, key) if self.read_cache else None
            if hit is not None:
                account(plan, hit, (spec.price_input_per_mtok, spec.price_output_per_mtok))
                self._write(plan, job, request, hit, None)
                st.cached += 1
                continue
            todo.setdefault(key, []).append(job)
            requests[key] = request
        self.on_update(plan)
        for entry in self.ledger.open_entries(spec.name):
            if entry.batch_id is None:
                await self._recover(plan, api, entry)
        if self.cancel:
            await self._cancel(plan, api)
        await self._poll(plan, api, todo, requests)
        in_batches = {c for e in self.ledger.open_entries(spec.name) for c in e.custom_ids}
        fresh = [k for k in todo if k not in in_batches]
        if fresh and self.cancel:
            self._fail(plan, fresh, todo, requests, CallError(
                kind="not_tried", message="not sent: the run was cancelling its batches (--cancel-batches)", attempts=0))
        elif fresh:
            await self._submit(plan, api, fresh, todo, requests)
        while self.wait and st.aborted is None and self.ledger.open_entries(spec.name):
            await asyncio.sleep(self.poll_s)
            await self._poll(plan, api, todo, requests)
        st.pending = sum(len(todo.get(c, ())) for e in self.ledger.open_entries(spec.name) for c in e.custom_ids)
        self.on_update(plan)

    # -- one step each ----------------------------------------------------------------
    async def _recover(self, plan: RunPlan, api: BatchAPI, entry: BatchEntry) -> None:
        """A batch recorded as ``submitting`` without an ID: the process died during the submit call."""
        try:
            found = await self._retrying(plan, lambda: api.find(entry.label, entry.submitted_at, len(entry.custom_ids)))
        except ProviderError as exc:
            log.warning(f"{plan.spec.name}: cannot look up batch {entry.label} at the provider ({exc.message}); its "
                        "requests are not sent again until it is found: run the same command later")
            return
        if found is not None:
            log.info(f"{plan.spec.name}: found batch {entry.label} ({found}), submitted by a process that stopped")
            self.ledger.submitted(entry.label, found)
        else:
            self.ledger.unsubmitted(entry.label, "the submit call did not reach the provider (no batch by this label)")

    async def _cancel(self, plan: RunPlan, api: BatchAPI) -> None:
        """Ask the provider to stop the open batches; what they answered until then is still collected."""
        for entry in self.ledger.open_entries(plan.spec.name):
            if entry.batch_id is None:
                continue
            try:
                await self._retrying(plan, lambda b=entry.batch_id: api.cancel(b))
                log.info(f"{plan.spec.name}: cancelling batch {entry.batch_id}")
            except ProviderError as exc:
                log.warning(f"{plan.spec.name}: cannot cancel batch {entry.batch_id} ({exc.message})")

    async def _poll(self, plan: RunPlan, api: BatchAPI, todo: dict[str, list[AnswerJob]], requests: dict[str, Request]) -> None:
        states = []
        for entry in self.ledger.open_entries(plan.spec.name):
            if entry.batch_id is None:
                continue
            batch_id = entry.batch_id
            try:
                status = await self._retrying(plan, lambda b=batch_id: api.status(b))
            except ProviderError as exc:
                log.warning(f"{plan.spec.name}: cannot check batch {batch_id} ({exc.message}); it is checked again "
                            "next time")
                continue
            if status.ended:
                await self._collect(plan, api, entry, status, todo, requests)
            else:
                states.append(_describe(status, len(entry.custom_ids)))
        plan.stats.batch_state = "; ".join(states)
        self.on_update(plan)

    async def _collect(self, plan: RunPlan, api: BatchAPI, entry: BatchEntry, status: BatchStatus,
                       todo: dict[str, list[AnswerJob]], requests: dict[str, Request]) -> None:
        assert entry.batch_id is not None
        try:
            items = await self._retrying(plan, lambda: api.results(entry.batch_id, entry.custom_ids,
                                                                   self.rows.template.mode))
        except ProviderError as exc:
            log.warning(f"{plan.spec.name}: cannot download the results of batch {entry.batch_id} ({exc.message}); "
                        "they are downloaded next time")
            return
        spec, price = plan.spec, batch_price(plan.spec)
        answered = failed = 0
        for item in items:
            if item.completion is not None:
                answered += 1
                if self.cache is not None:  # first: the answer is paid for even if its question changed since
                    self.cache.put(item.custom_id, spec.name, {"completion": cached_completion(item.completion),
                                                               "latency_ms": None, "batch": entry.label})
            else:
                failed += 1
            for job in todo.pop(item.custom_id, []):
                self._answer(plan, job, requests[item.custom_id], item, price, entry.label)
        self.ledger.collected(entry.label, batch_id=entry.batch_id, state=status.state, answered=answered,
                              failed=failed)
        if failed:
            log.warning(f"{spec.name}: batch {entry.batch_id} ended {status.state} with {failed} of {len(items)} "
                        "request(s) unanswered; they are on file as errors and asked again by the next run")

    def _answer(self, plan: RunPlan, job: AnswerJob, request: Request, item: BatchItem, price: tuple, label: str) -> None:
        key = item.custom_id
        if item.completion is not None:
            result = CallResult(item.completion, None, 1, None, False, None, key)
            account(plan, result, price)
        else:
            err = item.error or ProviderError("other", "no result", retryable=True)
            result = CallResult(None, None, 1, call_error(err, 1), False, None, key)
            plan.stats.errors += 1
        self._write(plan, job, request, result, label)

    async def _submit(self, plan: RunPlan, api: BatchAPI, keys: list[str], todo: dict[str, list[AnswerJob]],
                      requests: dict[str, Request]) -> None:
        spec, st = plan.spec, plan.stats
        chunks = split_batches(keys, lambda k: api.size(k, requests[k]), api.max_requests, api.max_bytes)
        for chunk in chunks:
            if st.aborted is not None:
                self._fail(plan, chunk, todo, requests, CallError(kind="not_tried", message=f"not tried: {st.aborted}",
                                                                  attempts=0))
                continue
            label = f"grace-{_slug(spec.name)}-{time.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(3)}"
            entry = self.ledger.submitting(label, spec.name, spec.provider, chunk)
            items = [(k, requests[k]) for k in chunk]
            try:
                batch_id = await self._submit_once(plan, api, entry, items)
            except ProviderError as exc:
                self.ledger.unsubmitted(label, exc.message[:500])
                why = ("the endpoint has no batch API (HTTP 404); set batch = false for this model"
                       if exc.status == 404 else exc.message[:300])
                st.aborted = f"{spec.name}: could not submit a batch: {why}; stopping this model"
                self._fail(plan, chunk, todo, requests, call_error(exc, 1))
                continue
            self.ledger.submitted(label, batch_id)
            st.submitted += sum(len(todo[k]) for k in chunk)
            st.batch_state = f"{st.submitted:,} submitted"
            log.info(f"{spec.name}: submitted batch {batch_id} with {len(chunk)} request(s)")
            self.on_update(plan)

    async def _submit_once(self, plan: RunPlan, api: BatchAPI, entry: BatchEntry, items: list[tuple[str, Request]]) -> str:
        """Submit; after a failure, look for the batch before trying again (the call may have got through)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await api.submit(items, entry.label)
            except ProviderError as exc:
                err = exc
            try:
                found = await api.find(entry.label, entry.submitted_at, len(items))
            except ProviderError:
                found = None
            if found is not None:
                return found
            if not err.retryable or err.kind in MODEL_FATAL or attempt >= self.max_attempts:
                raise err
            plan.stats.retries += 1
            await asyncio.sleep(backoff_delay(attempt, err.retry_after, base=self.backoff_base))

    async def _retrying(self, plan: RunPlan, call: Callable[[], Awaitable[T]]) -> T:
        """A status, results or lookup call, retried on transient failures like any other call."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call()
            except ProviderError as exc:
                if not exc.retryable or attempt >= self.max_attempts:
                    raise
                plan.stats.retries += 1
                await asyncio.sleep(backoff_delay(attempt, exc.retry_after, base=self.backoff_base))

    def _fail(self, plan: RunPlan, keys: list[str], todo: dict[str, list[AnswerJob]], requests: dict[str, Request],
              error: CallError) -> None:
        for key in keys:
            for job in todo.pop(key, []):
                plan.stats.errors += 1
                plan.stats.not_tried += error.kind == "not_tried"
                self._write(plan, job, requests[key], CallResult(None, None, error.attempts, error, False, None, key), None)

    def _write(self, plan: RunPlan, job: AnswerJob, request: Request, result: CallResult, label: str | None) -> None:
        plan.stats.done += 1
        self.out.write(self.rows.record(plan, job, request, result, batch=label))
        self.on_update(plan)


def _describe(status: BatchStatus, size: int) -> str:
    total = status.total or size
    if status.answered is None:
        return f"{status.state} ({total:,} requests)"
    return f"{status.state} {status.answered:,}/{total:,}"


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")[:40] or "model"

