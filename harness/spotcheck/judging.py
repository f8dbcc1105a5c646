"""Judge calls through the same engine as ``grace run``.

So the spot-check inherits the response cache, retries with Retry-After,
rate limits, per-model concurrency and cost accounting: checking 200 answers
is one judge pass, and checking them again costs nothing. The cache key holds
everything that determines a verdict, including the judge template's hash and
the judge repeat (so ``--repeats`` makes fresh calls, not cache hits).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.providers.base import ModelSpec, Provider, Request, RequestContext, RetrievedArticle
from harness.runner.cache import ResponseCache
from harness.runner.engine import CallResult, Engine, EngineSettings, RunPlan, call_key
from harness.spotcheck.judge import JUDGE_SCHEMA, JudgeTemplate, SourceArticle


@dataclass
class JudgeSettings(EngineSettings):
    progress: Callable[[str, int, int], None] | None = None  # (label, done, total), after every call


@dataclass
class Judge:
    spec: ModelSpec
    provider: Provider
    template: JudgeTemplate

    @property
    def kind(self) -> str:
        if self.spec.provider == "baseline":
            return "lexical"
        return "scripted" if self.spec.provider == "scripted" else "llm"


@dataclass
class JudgeJob:
    """One call: a claim, what it is checked against, and the judge repeat."""

    context_id: str  # RequestContext.question_id: how scripted judges find their reply
    claim: str
    messages: list[dict[str, str]]
    sources: list[SourceArticle]
    judge_repeat: int = 0
    payload: Any = None  # the caller's own data, handed back in record()


@dataclass
class CallStats:
    calls: int = 0
    cached: int = 0
    errors: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    input_tokens: int = 0
    output_tokens: int = 0
    aborted: list[str] = field(default_factory=list)

    def add(self, plan: RunPlan) -> None:
        st = plan.stats
        self.calls += st.done - st.cached
        self.cached += st.cached
        self.errors += st.errors
        self.cost_usd = round(self.cost_usd + st.cost_usd, 8)
        self.cost_known = self.cost_known and st.cost_known
        self.input_tokens += st.input_tokens
        self.output_tokens += st.output_tokens
        if st.aborted:
            self.aborted.append(st.aborted)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached": self.cached, "errors": self.errors,
                "cost_usd": self.cost_usd if self.cost_known else None,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "aborted": self.aborted}


def judge_request(spec: ModelSpec, job: JudgeJob) -> Request:
    articles = [RetrievedArticle(a.id, a.title, a.text, 0.0) for a in job.sources]
    return Request(messages=job.messages, params=dict(spec.params), output_mode="json", json_schema=JUDGE_SCHEMA,
                   context=RequestContext(job.context_id, job.claim, articles))


def judge_key(spec: ModelSpec, template: JudgeTemplate, request: Request, judge_repeat: int) -> str:
    return call_key(spec, request, template.sha256, judge_repeat, kind="grace-spotcheck-judge")


class Collector:
    """An in-memory stand-in for the engine's appender (meta-eval keeps no file)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def close(self) -> None:
        pass


def judge_engine(judge: Judge, jobs: list[JudgeJob], record: Callable[[JudgeJob, Request, CallResult], dict[str, Any]],
                 out: Any, cache: ResponseCache | None, settings: JudgeSettings,
                 on_update: Callable[[RunPlan], None] | None = None) -> tuple[Engine, RunPlan]:
    plan = RunPlan(judge.spec, judge.provider, jobs)
    engine = Engine(
        [plan],
        build=lambda spec, job: judge_request(spec, job),
        key=lambda spec, request, job: judge_key(spec, judge.template, request, job.judge_repeat),
        record=lambda plan, job, request, result: record(job, request, result),
        out=out, cache=cache, on_update=on_update, **settings.engine_kwargs(),
    )
    return engine, plan


def run_jobs(judge: Judge, jobs: list[JudgeJob], record: Callable[[JudgeJob, Request, CallResult], dict[str, Any]],
             settings: JudgeSettings, stats: CallStats, out: Any = None, label: str = "judging") -> list[dict[str, Any]]:
    """One batch of judge calls, start to finish; returns the recorded rows in completion order."""
    sink = Collector()
    cache = settings.open_cache()
    progress = settings.progress
    on_update = (lambda plan: progress(label, plan.stats.done, plan.stats.total)) if progress else None
    try:
        engine, plan = judge_engine(judge, jobs, record, _Tee(sink, out), cache, settings, on_update)
        asyncio.run(engine.run())
        stats.add(plan)
    finally:
        if cache is not None:
            cache.close()
    return sink.rows


class _Tee:
    def __init__(self, *outs: Any) -> None:
        self.outs = [o for o in outs if o is not None]

    def write(self, row: dict[str, Any]) -> None:
        for o in self.outs:
            o.write(row)
