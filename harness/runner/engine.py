"""The async engine: per-model worker pools over (question, repeat) jobs.

Each model gets ``concurrency`` workers taking its jobs one at a time (made as they
are taken: a million-call plan is never held as a million jobs), so a slow or
rate-limited provider never holds up another. A finished call is written to the
cache first and then appended to ``responses.jsonl``: the rows finished in one turn
of the event loop in one write, before a worker sends its next call
(:class:`harness.core.files.TickAppender`), so a crash, a kill or Ctrl-C loses
nothing that was paid for beyond the calls in flight; the next run skips what is
done and retries what failed.

A model stops early, with one clear reason, when its endpoint refuses the key
(401/403) or does not know the model, when its first ``PERMANENT_AFTER`` calls
all fail permanently (an invalid request fails the same way every time), when
it cannot be reached ``BREAKER_AFTER`` times in a row (retrying a dead server to
the limit would take minutes per call), or when it accepts calls and answers
none: ``TIMEOUT_BREAKER_AFTER`` timeouts in a row that its queue cannot explain.
Its untried calls are written as error rows, so the next run asks them again; a
call waiting for its turn when the model stops is not sent.

Self-hosted servers queue what they cannot work on yet: where the server says
how many requests it serves at once (llama.cpp's slots), no more are sent; when
``TIMEOUT_CLUSTER`` calls in a row time out with several in flight, the model
goes on one call at a time and says so once, instead of retrying into the queue.
A timeout with several in flight may be the queue; one with a single call in
flight, or before the server has answered anything (a working server answers the
first call of its queue within the timeout), is the server itself: those are
what the timeout breaker counts.

Each call's time is recorded three ways (:mod:`harness.runner.server_queue`): how long it waited here for its turn
(``queue_ms``), from sending to answer (``latency_ms``), and the model's own time, the server's queue left out where
it can be told (``service_ms``). Each model's figures for its server (calls in flight, the server's slots, the span
of its calls, the answer tokens its server wrote) go to run.json: what a self-hosted model costs is its server's time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.core.clock import now
from harness.core.files import JsonlAppender
from harness.core.hashing import normalise, text_hash
from harness.prompts import JSON_SCHEMA, Template
from harness.providers import endpoint_of
from harness.providers.base import (
    MODEL_FATAL,
    Completion,
    ModelSpec,
    Provider,
    ProviderError,
    Request,
    RequestContext,
    RetrievedArticle,
    is_local_url,
)
from harness.providers.breakers import BREAKER_AFTER, TIMEOUT_BREAKER_AFTER
from harness.run_folder.run_records import CallError, ResponseRecord
from harness.runner.cache import ResponseCache, cache_key
from harness.runner.call_defaults import CONCURRENCY, MAX_ATTEMPTS
from harness.runner.collector import fewer_collections
from harness.runner.limits import RateLimiter, backoff_delay
from harness.runner.pricing import call_cost
from harness.runner.server_queue import Sent, ServerClock, Timing

if TYPE_CHECKING:  # harness.privacy is imported only by a run that redacts
    from harness.privacy import Redactor

PERMANENT_AFTER = 3  # permanent failures, before any success, that stop a model
TIMEOUT_CLUSTER = 3  # timeouts in a row (no success between) that send one call at a time
# Attempts of one call that may time out with nothing else in flight: the second says the server cannot answer
# this prompt within the timeout, and four more would cost four more timeouts (the call stays on file as a
# timeout, asked again by the next run). So a stuck server is stopped after 3 timeouts at one call at a time.
LONE_TIMEOUT_TRIES = 2
log = logging.getLogger("grace")


@dataclass
class AnswerJob:
    question_id: str
    question: str
    repeat: int
    articles: list[RetrievedArticle]


@dataclass
class PlanStats:
    total: int = 0
    done: int = 0
    cached: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    aborted: str | None = None
    not_tried: int = 0
    connection_failures_in_a_row: int = 0
    answered: int = 0  # calls the endpoint answered (not from the cache)
    permanent_failures: int = 0  # before the first answer
    timeouts_in_a_row: int = 0
    # of those, the ones the server's queue cannot explain (sent one at a time, or before the first answer),
    # from how many calls in turn (2 or more: not one slow prompt's own retries) and the last one's call
    server_timeouts_in_a_row: int = 0
    server_timeout_calls: int = 0
    last_server_timeout: Request | None = None
    retries: int = 0  # attempts beyond the first, over all calls
    timeouts: int = 0  # attempts that timed out
    in_flight_limit: int | None = None  # lowered from the worker count by the server's slots or a timeout cluster
    submitted: int = 0  # requests sent in new batches by this command (batch mode)
    pending: int = 0  # requests in batches the provider has not finished: collected by a later command
    batch_state: str = ""  # what the provider says of the open batches, for the progress line
    concurrency: int | None = None  # calls sent at once at most: its own setting or the run's, at most its calls
    server_slots: int | None = None  # what its server works on at once: said by /props, or measured
    slots_from: str | None = None  # props | measured | server timings
    first_sent: float | None = None  # time.perf_counter() of its first call sent, and of the last call back
    last_back: float | None = None
    served_output_tokens: int = 0  # answer tokens of the calls its server answered (not the cache's)

    @property
    def busy_s(self) -> float | None:
        """Seconds from its first call sent to its last call back: the time its server was kept busy."""
        if self.first_sent is None or self.last_back is None:
            return None
        return round(self.last_back - self.first_sent, 3)


class InFlight:
    """At most ``limit`` calls in flight; the limit can drop while calls run (timeouts cluster)."""

    def __init__(self, limit: int):
        self.limit, self.active = limit, 0
        self._changed = asyncio.Condition()

    async def __aenter__(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.active < self.limit)
            self.active += 1

    async def __aexit__(self, *exc: object) -> None:
        async with self._changed:
            self.active -= 1
            self._changed.notify_all()

    async def widen(self, limit: int) -> None:
        async with self._changed:
            self.limit = limit
            self._changed.notify_all()


@dataclass
class RunPlan:
    spec: ModelSpec
    provider: Provider
    jobs: Collection[Any]  # AnswerJobs (grace run: made as they are taken, harness.runner.session.PlannedJobs)
    stats: PlanStats = field(default_factory=PlanStats)
    batch: bool = False  # through the provider's batch API (harness.runner.batch_mode) instead of the engine
    loop: Any = None  # a model that searches for itself: its harness.runner.tool_loop.ToolLoop, which asks each job


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def build_request(spec: ModelSpec, template: Template, job: AnswerJob, redactor: Redactor | None = None) -> Request:
    """The call for one job; with a ``redactor`` (``--redact-pii``), the question and the articles redacted before
    the template is filled, in the messages and in the context a ``python:`` or ``http:`` system reads: the cache
    key, the fingerprint and what the model or system sees are all made from the redacted request, and the
    template's own text is never touched."""
    template = template.for_model(spec.search is not None)
    messages = template.render(job.question, job.articles)
    request = Request(
        messages=messages,
        params=dict(spec.params),
        output_mode=template.mode,  # type: ignore[arg-type]
        json_schema=JSON_SCHEMA if template.mode == "json" else None,
        context=RequestContext(job.question_id, job.question, job.articles, job.repeat),
    )
    if spec.search is not None:  # its first turn: the question, and the tools to find the articles with
        from harness.runner.tool_schema import tool_definitions

        request.tools, request.tool_choice = tool_definitions(spec.search), "auto"
    return redactor.request(request, render=template.render) if redactor is not None else request


def call_key(spec: ModelSpec, request: Request, template_hash: str, repeat: int, **salt: Any) -> str:
    """The cache key of one call: what determines the answer, never timeouts or concurrency.

    It is also the response row's ``fingerprint``: a resumed run counts a row
    as done only if asking now would send exactly this.
    """
    return cache_key({
        "provider": spec.provider,
        "model": spec.model,
        "endpoint": endpoint_of(spec),
        "messages": request.messages,
        "params": request.params,
        "output_mode": request.output_mode,
        "json_schema": request.json_schema,
        "options": spec.options,
        "template": template_hash,
        "repeat": repeat,
        **({"tools": request.tools, "tool_choice": request.tool_choice} if request.tools else {}),
        **salt,
    })


def request_key(spec: ModelSpec, template: Template, kb_hash: str, request: Request, repeat: int) -> str:
    return call_key(spec, request, template.for_model(spec.search is not None).sha256, repeat, kb=kb_hash)


@dataclass
class EngineSettings:
    """How calls are made; shared by ``grace run`` and the spot-check judge, never part of a cache key."""

    concurrency: int = CONCURRENCY
    max_attempts: int = MAX_ATTEMPTS
    backoff_base: float = 1.0
    use_cache: bool = True
    read_cache: bool = True
    redactor: Redactor | None = None  # --redact-pii: every request redacted before it is keyed and sent

    def open_cache(self) -> ResponseCache | None:
        return ResponseCache() if self.use_cache else None

    def engine_kwargs(self) -> dict[str, Any]:
        return {"read_cache": self.read_cache, "concurrency": self.concurrency,
                "max_attempts": self.max_attempts, "backoff_base": self.backoff_base}


@dataclass
class CallResult:
    """What one job came to: a completion (maybe from the cache) or the error that ended its retries."""

    completion: Completion | None
    latency_ms: float | None
    attempts: int
    error: CallError | None
    cached: bool
    cost_usd: float | None
    key: str | None = None  # the call's cache key, which is also its row's fingerprint
    queue_ms: float | None = None  # how long it waited here for its turn before it was sent
    timing: Timing = field(default_factory=Timing)  # the model's own time (server_queue)
    loop: Any = None  # a search loop's harness.run_folder.run_records.ToolLoopRecord: every turn of it

    def cache_row(self) -> dict[str, Any]:
        """What the cache keeps of the call: the completion and its times, so an answer taken from the cache later
        says how long the model took to give it."""
        assert self.completion is not None
        return {"completion": cached_completion(self.completion), "latency_ms": self.latency_ms,
                "queue_ms": self.queue_ms, "service_ms": self.timing.service_ms,
                "service_from": self.timing.service_from}


def cached_result(cache: ResponseCache | None, key: str) -> CallResult | None:
    """The call's answer from the cache, as a result that costs nothing now."""
    hit = cache.get(key) if cache is not None else None
    if hit is None:
        return None
    comp = Completion(**{k: v for k, v in hit["completion"].items() if k in _COMPLETION_FIELDS})
    return CallResult(comp, hit.get("latency_ms"), 0, None, True, None, key, hit.get("queue_ms"),
                      Timing(hit.get("service_ms"), hit.get("service_from")))


def cached_completion(comp: Completion) -> dict[str, Any]:
    """What the cache keeps of a completion: a system's citations, retrieval and cost only when it said them, so
    a model's cache rows read as they did before systems could say them."""
    return {k: v for k, v in comp.__dict__.items()
            if k not in _TIMES and (v is not None or k not in _SYSTEM_FIELDS)}


_SYSTEM_FIELDS = frozenset({"citations", "retrieved", "cost_usd", "tool_calls", "spans"})
_TIMES = frozenset({"service_ms"})  # kept beside the completion (CallResult.cache_row), as every call's times are
_COMPLETION_FIELDS = frozenset(Completion.__dataclass_fields__)


def account(plan: RunPlan, result: CallResult, price: tuple[float | None, float | None]) -> None:
    """Set the answered call's cost (at ``price``, USD per 1M input and output tokens) and add it to the
    model's figures; a cache hit is priced (what it would cost) but not added (nothing was paid now)."""
    comp, st = result.completion, plan.stats
    assert comp is not None
    if comp.cost_usd is not None:  # a system that says what its call cost (python:, http:)
        result.cost_usd = comp.cost_usd
    else:
        result.cost_usd = 0.0 if not plan.provider.needs_network else call_cost(
            comp.input_tokens, comp.output_tokens, *price)
    st.input_tokens += comp.input_tokens or 0
    st.output_tokens += comp.output_tokens or 0
    if not result.cached:
        st.served_output_tokens += comp.output_tokens or 0
    if result.cost_usd is None:
        st.cost_known = False
    elif not result.cached:
        st.cost_usd += result.cost_usd


class Engine:
    """Generic over what a job is: ``build`` makes its request, ``record`` turns the result into a row.

    ``grace run`` and the spot-check judge share this engine, and so share the
    cache, retries, rate limits, concurrency and cost accounting.
    """

    def __init__(
        self,
        plans: list[RunPlan],
        build: Callable[[ModelSpec, Any], Request],
        key: Callable[[ModelSpec, Request, Any], str],
        record: Callable[[RunPlan, Any, Request, CallResult], dict[str, Any]],
        out: JsonlAppender,
        cache: ResponseCache | None,
        *,
        read_cache: bool = True,
        concurrency: int = CONCURRENCY,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_base: float = 1.0,
        on_update: Callable[[RunPlan], None] | None = None,
        accept: Callable[[Any, Completion], bool] | None = None,
    ):
        self.plans, self.build, self.key, self.record, self.out = plans, build, key, record, out
        # accept(job, completion) -> False keeps a reply out of the cache (an unreadable verdict is asked
        # again next time instead of being answered from the cache forever); the row is still recorded
        self.accept = accept
        self.cache, self.read_cache = cache, read_cache
        self.concurrency, self.max_attempts, self.backoff_base = concurrency, max_attempts, backoff_base
        self.on_update = on_update or (lambda plan: None)

    async def run(self) -> None:
        with fewer_collections():  # hundreds of calls in flight: the loop stopped for ~1,000 collections
            try:
                await asyncio.gather(*(self._run_model(p) for p in self.plans))
            finally:
                for p in self.plans:
                    await p.provider.aclose()

    async def _run_model(self, plan: RunPlan) -> None:
        jobs = iter(plan.jobs)  # taken one at a time by the workers: a million jobs are never all made at once
        plan.stats.total = len(plan.jobs)
        limiter = RateLimiter(plan.spec.rpm, plan.spec.tpm)
        n = plan.stats.concurrency = min(max(1, plan.spec.concurrency or self.concurrency), max(1, len(plan.jobs)))
        slots = None
        if plan.jobs and plan.provider.needs_network and n > 1:
            slots = await plan.provider.parallel_slots()
            if slots is not None and slots < n:
                log.warning(f"{plan.spec.name}: the server works on {slots} request(s) at a time; sending {slots} "
                            f"at a time instead of {n} (more would only wait in its queue and time out)")
                n = plan.stats.in_flight_limit = slots
        # measured: one server on this machine or network (replicas: each has its own queue, not one of their sum)
        local = plan.provider.needs_network and not plan.spec.replicas and is_local_url(endpoint_of(plan.spec))
        clock = ServerClock(plan.spec.name, n, slots, local)
        gate = InFlight(1 if clock.probing else n)  # a server whose slots are measured: its first calls one at a time

        check = getattr(self.out, "check", None)  # a writer that writes rows a turn of the loop later (TickAppender)

        async def worker() -> None:
            for job in jobs:
                if plan.stats.aborted is None:
                    await self._one(plan, job, limiter, gate, clock)
                else:
                    self._not_tried(plan, job)
                if check is not None:  # this worker's row is written (or its write failed) before it sends another
                    await asyncio.sleep(0)
                    check()

        try:
            await asyncio.gather(*(worker() for _ in range(n)))
        finally:
            clock.close()  # rows held while the server's slots were measured: written, even when the run is stopped
            plan.stats.server_slots, plan.stats.slots_from = clock.slots, clock.slots_from

    def _not_tried(self, plan: RunPlan, job: Any) -> None:
        """A job left when its model was stopped: an error row, so the next run asks it again."""
        request = self.build(plan.spec, job)
        error = CallError(kind="not_tried", message=f"not tried: {plan.stats.aborted}", attempts=0)
        plan.stats.done += 1
        plan.stats.errors += 1
        plan.stats.not_tried += 1
        key = self.key(plan.spec, request, job)
        self.out.write(self.record(plan, job, request, CallResult(None, None, 0, error, False, None, key)))
        self.on_update(plan)

    async def _one(self, plan: RunPlan, job: Any, limiter: RateLimiter, gate: InFlight, clock: ServerClock) -> None:
        spec, provider = plan.spec, plan.provider
        if plan.loop is not None:  # a model that searches: one call per turn of its loop (harness.runner.tool_loop)
            await self._loop_one(plan, job, limiter, gate)
            return
        request = self.build(spec, job)
        use_cache = self.cache is not None and provider.needs_network
        key = self.key(spec, request, job)
        result = cached_result(self.cache, key) if use_cache and self.read_cache else None
        sent: Sent | None = None
        cache = use_cache and (result is None)
        if result is not None:
            comp = result.completion
        else:
            comp, sent, attempts, err, waited = await self._call(plan, request, limiter, gate)
            if attempts == 0:  # the model was stopped while this call waited for its turn: never sent
                self._not_tried(plan, job)
                return
            if not provider.needs_network:
                sent = waited = None  # an offline baseline's "latency" is event-loop noise, not a figure to compare
            latency = round(sent.latency_ms, 1) if sent is not None and comp is not None else None
            result = CallResult(comp, latency, attempts, err, False, None, key, waited)
            cache = cache and comp is not None and (self.accept is None or self.accept(job, comp))
            if cache and sent is None:
                self.cache.put(key, spec.name, result.cache_row())
        self._settle(plan, result)
        if sent is None or comp is None:
            self.out.write(self.record(plan, job, request, result))
        else:
            def write(timing: Timing) -> None:
                result.timing = timing
                if cache:  # the cache first, then the row
                    self.cache.put(key, spec.name, result.cache_row())
                self.out.write(self.record(plan, job, request, result))

            if clock.answered(sent, write) is None and cache:  # held until the server's slots are measured: the
                self.cache.put(key, spec.name, result.cache_row())  # answer is cached now, its time with its row
            if gate.limit < clock.workers and not clock.probing and plan.stats.in_flight_limit is None:
                await gate.widen(clock.workers)  # the probes are in: all the calls go
        self.on_update(plan)

    async def _loop_one(self, plan: RunPlan, job: Any, limiter: RateLimiter, gate: InFlight) -> None:
        """One question of a model that searches: its loop's turns each cached as it is answered, then its row."""
        request = self.build(plan.spec, job)
        result = await plan.loop.answer(self, plan, request, self.key(plan.spec, request, job), limiter, gate)
        if result is None:  # the model was stopped while the first turn waited: never sent
            self._not_tried(plan, job)
            return
        self._settle(plan, result)
        self.out.write(self.record(plan, job, request, result))
        self.on_update(plan)

    def _settle(self, plan: RunPlan, result: CallResult) -> None:
        """Count one finished job: its cost and tokens, or its error (and whether it stops the model)."""
        spec, st, comp = plan.spec, plan.stats, result.completion
        if comp is not None:
            account(plan, result, (spec.price_input_per_mtok, spec.price_output_per_mtok))
        else:
            st.errors += 1
            kind = result.error.kind if result.error is not None else None
            if kind in MODEL_FATAL and st.aborted is None:
                why = "the key was refused" if kind == "auth" else "the endpoint does not serve this model"
                st.aborted = f"{spec.name}: {result.error.message} ({why}; stopping this model)"
            elif result.error is not None and not result.error.retryable and st.answered == 0:
                st.permanent_failures += 1
                if st.permanent_failures >= PERMANENT_AFTER and st.aborted is None:
                    st.aborted = (f"{spec.name}: its first {st.permanent_failures} calls all failed and would fail the "
                                  f"same way again ({result.error.message[:300]}); stopping this model")
        st.done += 1
        st.cached += int(result.cached)

    async def _call(self, plan: RunPlan, request: Request, limiter: RateLimiter, gate: InFlight):
        spec, provider, st = plan.spec, plan.provider, plan.stats
        est_tokens = sum(len(m["content"]) for m in request.messages) // 4
        timeout = provider.timeout_s
        attempt, err, lone_timeouts = 0, None, 0
        while True:
            attempt += 1
            ready = time.perf_counter()
            await limiter.acquire(est_tokens)
            alone = False
            try:
                async with gate:
                    if st.aborted is not None:  # stopped while this call waited for its turn: not sent (again)
                        return None, None, attempt - 1, call_error(err, attempt - 1) if err is not None else None, None
                    st.retries += attempt > 1
                    alone = gate.limit == 1  # nothing else in flight: a timeout is the server's, not its queue's
                    t0 = time.perf_counter()
                    ahead = gate.active - 1
                    if st.first_sent is None:
                        st.first_sent = t0
                    # asyncio.timeout, not wait_for: no second task per call (wait_for was a tenth of the engine's
                    # own CPU per call at 500 in flight, in a profile of benchmarks/perf/bench_concurrency.py)
                    try:
                        async with asyncio.timeout(timeout * 1.5 + 1):
                            comp = await provider.complete(request)
                    finally:
                        st.last_back = time.perf_counter()
                st.connection_failures_in_a_row = st.timeouts_in_a_row = st.server_timeouts_in_a_row = 0
                st.server_timeout_calls, st.last_server_timeout = 0, None
                st.answered += 1
                sent = Sent(t0, st.last_back, ahead, comp.service_ms)
                return comp, sent, attempt, None, round((t0 - ready) * 1000, 1)
            except ProviderError as exc:
                err = exc
            except TimeoutError:
                err = ProviderError("timeout", f"no answer within {timeout:g}s", retryable=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an SDK or provider bug must become an error row, not a crashed run
                err = ProviderError.of(exc)
            if err.kind == "timeout":
                st.timeouts += 1
                st.timeouts_in_a_row += 1
                lone_timeouts += alone
                if alone or st.answered == 0:
                    st.server_timeouts_in_a_row += 1
                    st.server_timeout_calls += request is not st.last_server_timeout
                    st.last_server_timeout = request
                    if (st.server_timeouts_in_a_row >= TIMEOUT_BREAKER_AFTER and st.server_timeout_calls > 1
                            and st.aborted is None):
                        where = endpoint_of(spec) or spec.provider
                        how = ("none answered yet" if st.answered == 0
                               else f"the last {st.server_timeouts_in_a_row} sent one at a time")
                        st.aborted = (f"{spec.name}: {st.timeouts_in_a_row} timeouts in a row from {where} (no answer "
                                      f"within {timeout:g}s, {how}); is the server stuck, or slower than --timeout? "
                                      "Stopping this model")
                if st.timeouts_in_a_row >= TIMEOUT_CLUSTER and gate.limit > 1 and st.aborted is None:
                    log.warning(f"{spec.name}: {st.timeouts_in_a_row} calls in a row timed out after {timeout:g}s with "
                                f"up to {gate.limit} in flight: the server seems to answer one request at a time and "
                                "the rest wait in its queue; going on one call at a time (next time: --concurrency 1 "
                                "or a longer --timeout)")
                    gate.limit = st.in_flight_limit = 1
            if err.kind == "connection":
                st.connection_failures_in_a_row += 1
                if st.connection_failures_in_a_row >= BREAKER_AFTER and st.aborted is None:
                    where = endpoint_of(spec) or spec.provider
                    st.aborted = (f"{spec.name}: {st.connection_failures_in_a_row} connection failures in a row "
                                  f"to {where} ({err.message[:200]}); is the server running? Stopping this model")
            if (not err.retryable or attempt >= self.max_attempts or st.aborted is not None
                    or lone_timeouts >= LONE_TIMEOUT_TRIES):
                return None, None, attempt, call_error(err, attempt), None
            await asyncio.sleep(backoff_delay(attempt, err.retry_after, base=self.backoff_base))
            if st.aborted is not None:
                return None, None, attempt, call_error(err, attempt), None


def call_error(err: ProviderError, attempts: int) -> CallError:
    return CallError(kind=err.kind, message=err.message[:500], attempts=attempts, status=err.status,
                     retryable=err.retryable)


@dataclass
class ResponseRows:
    """How ``grace run`` turns a gold question into a request, a cache key and a ``responses.jsonl`` row;
    shared by the real-time engine and the batch runner, so both write the same rows."""

    template: Template
    kb_hash: str
    redactor: Redactor | None = None

    def build(self, spec: ModelSpec, job: AnswerJob) -> Request:
        return build_request(spec, self.template, job, self.redactor)

    def key(self, spec: ModelSpec, request: Request, job: AnswerJob) -> str:
        return request_key(spec, self.template, self.kb_hash, request, job.repeat)

    def record(self, plan: RunPlan, job: AnswerJob, request: Request, res: CallResult, batch: str | None = None) -> dict[str, Any]:
        comp = res.completion
        shown = job.articles if plan.provider.shows_articles and plan.spec.search is None else []
        row = ResponseRecord(
            question_id=job.question_id,
            model=plan.spec.name,
            repeat=job.repeat,
            retrieved_ids=[a.id for a in shown],
            retrieval_scores=[round(a.score, 6) for a in shown],
            prompt_hash=prompt_hash(request.messages),
            template_hash=self.template.sha256,
            fingerprint=res.key,
            question_hash=text_hash(job.question),
            params=normalise(request.params),
            cached=res.cached,
            attempts=res.attempts,
            latency_ms=res.latency_ms,
            queue_ms=res.queue_ms,
            service_ms=res.timing.service_ms,
            service_from=res.timing.service_from,
            error=res.error,
            cost_usd=res.cost_usd,
            batch=batch,
            created_at=now(),
        )
        if comp is not None:
            row.response, row.finish_reason = comp.text, comp.finish_reason
            if request.redactions:
                from harness.privacy import restore

                row.response = restore(comp.text, request.redactions)
            row.input_tokens, row.output_tokens = comp.input_tokens, comp.output_tokens
            row.json_mode = comp.json_mode
            row.citations, row.system_retrieved = comp.citations, comp.retrieved  # absent unless a system said them
        if comp is not None and comp.spans is not None:  # native citations: each span checked against its article
            from harness.runner.native_citations import checked_spans

            row.cited_spans = checked_spans(comp.spans, job.articles)
        if res.loop is not None:  # a model that searched: what its searches returned is what it was shown
            row.tool_loop, row.system_retrieved = res.loop, list(res.loop.retrieved)
        elif comp is not None and comp.tool_calls is not None and not plan.provider.supports_tools:
            from harness.run_folder.logged_loops import logged_loop  # a system's own loop, as it said it

            row.tool_loop = logged_loop(comp.tool_calls, comp.retrieved)
        return row.model_dump(mode="json", exclude_none=False)


def answer_engine(plans: list[RunPlan], rows: ResponseRows, out: JsonlAppender, cache: ResponseCache | None,
                    **kwargs: Any) -> Engine:
    """The engine for ``grace run``: gold questions in, ``responses.jsonl`` rows out."""
    return Engine(plans, rows.build, rows.key, rows.record, out, cache, **kwargs)
