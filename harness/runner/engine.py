"""The async engine: per-model worker pools over (question, repeat) jobs.

Each model gets ``concurrency`` workers pulling from its own queue, so a slow or
rate-limited provider never holds up another. A finished call is written to the
cache first and then appended to ``responses.jsonl`` and flushed, so a crash or
Ctrl-C loses nothing that was paid for; the next run skips what is done and
retries what failed.

A model stops early, with one clear reason, when its endpoint refuses the key
(401/403) or cannot be reached ``BREAKER_AFTER`` times in a row: retrying a dead
server to the limit would take minutes per call. Its untried calls are written
as error rows, so the next run asks them again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.core.files import JsonlAppender
from harness.core.hashing import normalise, text_hash
from harness.prompts import JSON_SCHEMA, Template
from harness.providers import endpoint_of
from harness.providers.base import (
    Completion,
    ModelSpec,
    Provider,
    ProviderError,
    Request,
    RequestContext,
    RetrievedArticle,
)
from harness.rundir.records import CallError, ResponseRecord
from harness.runner.cache import ResponseCache, cache_key
from harness.runner.limits import RateLimiter, backoff_delay
from harness.runner.pricing import call_cost

BREAKER_AFTER = 8  # connection failures in a row (no success between) that stop a model


@dataclass
class Job:
    question_id: str
    question: str
    repeat: int
    articles: list[RetrievedArticle]


@dataclass
class ModelStats:
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


@dataclass
class RunPlan:
    spec: ModelSpec
    provider: Provider
    jobs: list[Job]
    stats: ModelStats = field(default_factory=ModelStats)


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def build_request(spec: ModelSpec, template: Template, job: Job) -> Request:
    messages = template.render(job.question, job.articles)
    return Request(
        messages=messages,
        params=dict(spec.params),
        output_mode=template.mode,  # type: ignore[arg-type]
        json_schema=JSON_SCHEMA if template.mode == "json" else None,
        context=RequestContext(job.question_id, job.question, job.articles),
    )


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
        **salt,
    })


def request_key(spec: ModelSpec, template: Template, kb_hash: str, request: Request, repeat: int) -> str:
    return call_key(spec, request, template.sha256, repeat, kb=kb_hash)


@dataclass
class EngineSettings:
    """How calls are made; shared by ``grace run`` and the spot-check judge, never part of a cache key."""

    concurrency: int = 8
    max_attempts: int = 6
    backoff_base: float = 1.0
    use_cache: bool = True
    read_cache: bool = True

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
        concurrency: int = 8,
        max_attempts: int = 6,
        backoff_base: float = 1.0,
        on_update: Callable[[RunPlan], None] | None = None,
    ):
        self.plans, self.build, self.key, self.record, self.out = plans, build, key, record, out
        self.cache, self.read_cache = cache, read_cache
        self.concurrency, self.max_attempts, self.backoff_base = concurrency, max_attempts, backoff_base
        self.on_update = on_update or (lambda plan: None)

    async def run(self) -> None:
        try:
            await asyncio.gather(*(self._run_model(p) for p in self.plans))
        finally:
            for p in self.plans:
                await p.provider.aclose()

    async def _run_model(self, plan: RunPlan) -> None:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        for job in plan.jobs:
            queue.put_nowait(job)
        plan.stats.total = len(plan.jobs)
        limiter = RateLimiter(plan.spec.rpm, plan.spec.tpm)
        n = max(1, plan.spec.concurrency or self.concurrency)

        async def worker() -> None:
            while not queue.empty():
                job = queue.get_nowait()
                if plan.stats.aborted is None:
                    await self._one(plan, job, limiter)
                else:
                    self._not_tried(plan, job)

        await asyncio.gather(*(worker() for _ in range(min(n, max(1, len(plan.jobs))))))

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

    async def _one(self, plan: RunPlan, job: Any, limiter: RateLimiter) -> None:
        spec, provider = plan.spec, plan.provider
        request = self.build(spec, job)
        use_cache = self.cache is not None and provider.needs_network
        key = self.key(spec, request, job)
        hit = self.cache.get(key) if use_cache and self.read_cache else None
        if hit is not None:
            comp = Completion(**hit["completion"])
            result = CallResult(comp, hit.get("latency_ms"), 0, None, True, None, key)
        else:
            comp, latency, attempts, err = await self._call(plan, request, limiter)
            if not provider.needs_network:
                latency = None  # an offline baseline's "latency" is event-loop noise, not a figure to compare
            if comp is not None and use_cache:
                self.cache.put(key, spec.name, {"completion": comp.__dict__, "latency_ms": latency})
            result = CallResult(comp, latency, attempts, err, False, None, key)
        st = plan.stats
        if comp is not None:
            result.cost_usd = 0.0 if not provider.needs_network else call_cost(
                comp.input_tokens, comp.output_tokens, spec.price_input_per_mtok, spec.price_output_per_mtok
            )
            st.input_tokens += comp.input_tokens or 0
            st.output_tokens += comp.output_tokens or 0
            if result.cost_usd is None:
                st.cost_known = False
            elif not result.cached:
                st.cost_usd += result.cost_usd
        else:
            st.errors += 1
            if result.error is not None and result.error.kind == "auth" and st.aborted is None:
                st.aborted = f"{spec.name}: {result.error.message} (the key was refused; stopping this model)"
        st.done += 1
        st.cached += int(result.cached)
        self.out.write(self.record(plan, job, request, result))
        self.on_update(plan)

    async def _call(self, plan: RunPlan, request: Request, limiter: RateLimiter):
        spec, provider, st = plan.spec, plan.provider, plan.stats
        est_tokens = sum(len(m["content"]) for m in request.messages) // 4
        attempt = 0
        while True:
            attempt += 1
            await limiter.acquire(est_tokens)
            t0 = time.perf_counter()
            try:
                comp = await asyncio.wait_for(provider.complete(request), timeout=spec.timeout_s * 1.5 + 1)
                st.connection_failures_in_a_row = 0
                return comp, round((time.perf_counter() - t0) * 1000, 1), attempt, None
            except ProviderError as exc:
                err = exc
            except TimeoutError:
                err = ProviderError("timeout", f"no answer within {spec.timeout_s:.0f}s", retryable=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an SDK or provider bug must become an error row, not a crashed run
                err = ProviderError("other", f"{type(exc).__name__}: {exc}", retryable=False)
            if err.kind == "connection":
                st.connection_failures_in_a_row += 1
                if st.connection_failures_in_a_row >= BREAKER_AFTER and st.aborted is None:
                    where = endpoint_of(spec) or spec.provider
                    st.aborted = (f"{spec.name}: {st.connection_failures_in_a_row} connection failures in a row "
                                  f"to {where} ({err.message[:200]}); is the server running? Stopping this model")
            if not err.retryable or attempt >= self.max_attempts or st.aborted is not None:
                return None, None, attempt, CallError(kind=err.kind, message=err.message[:500], attempts=attempt, status=err.status)
            await asyncio.sleep(backoff_delay(attempt, err.retry_after, base=self.backoff_base))
            if st.aborted is not None:
                return None, None, attempt, CallError(kind=err.kind, message=err.message[:500], attempts=attempt, status=err.status)


def response_engine(plans: list[RunPlan], template: Template, kb_hash: str, out: JsonlAppender,
                    cache: ResponseCache | None, **kwargs: Any) -> Engine:
    """The engine for ``grace run``: gold questions in, ``responses.jsonl`` rows out."""

    def build(spec: ModelSpec, job: Job) -> Request:
        return build_request(spec, template, job)

    def key(spec: ModelSpec, request: Request, job: Job) -> str:
        return request_key(spec, template, kb_hash, request, job.repeat)

    def record(plan: RunPlan, job: Job, request: Request, res: CallResult) -> dict[str, Any]:
        comp = res.completion
        row = ResponseRecord(
            question_id=job.question_id,
            model=plan.spec.name,
            repeat=job.repeat,
            retrieved_ids=[a.id for a in job.articles],
            retrieval_scores=[round(a.score, 6) for a in job.articles],
            prompt_hash=prompt_hash(request.messages),
            template_hash=template.sha256,
            fingerprint=res.key,
            question_hash=text_hash(job.question),
            params=normalise(request.params),
            cached=res.cached,
            attempts=res.attempts,
            latency_ms=res.latency_ms,
            error=res.error,
            cost_usd=res.cost_usd,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        if comp is not None:
            row.response, row.finish_reason = comp.text, comp.finish_reason
            row.input_tokens, row.output_tokens = comp.input_tokens, comp.output_tokens
        return row.model_dump(mode="json")

    return Engine(plans, build, key, record, out, cache, **kwargs)
