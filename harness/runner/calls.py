"""One model, a list of prompts, through the same engine as ``grace run``.

The spot-check judge, the gold labeler (``grace annotations suggest --labeler``)
and the question generator (``grace gold generate``) are all "ask one model
these prompts": each inherits the response cache, retries with Retry-After, rate
limits, concurrency, the circuit breaker and cost accounting from the engine, so
asking again costs nothing and a dead endpoint stops early. The cache key holds
everything that determines an answer, including the caller's template hash, a
``kind`` naming the caller, and the repeat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.providers.base import Completion, ModelSpec, Provider, Request, RequestContext, RetrievedArticle
from harness.runner.engine import CallResult, Engine, EngineSettings, RunPlan, call_key


@dataclass
class CallSettings(EngineSettings):
    progress: Callable[[str, int, int], None] | None = None  # (label, done, total), after every call


@dataclass
class PromptJob:
    """One call: the messages to send and what they were built from."""

    context_id: str  # RequestContext.question_id: how scripted models and baselines find their reply
    text: str  # RequestContext.question: the question, claim or article the prompt is about
    messages: list[dict[str, str]]
    articles: list[RetrievedArticle] = field(default_factory=list)
    repeat: int = 0
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


@dataclass
class Prompted:
    """Who is asked and how: the model, its provider, and the JSON schema and template hash of the caller."""

    spec: ModelSpec
    provider: Provider
    kind: str  # names the caller in the cache key: a judge verdict never answers a labeler's prompt
    template_hash: str
    json_schema: dict[str, Any] | None = None
    accept: Callable[[Completion], bool] | None = None  # False: the reply is recorded but never cached

    def request(self, job: PromptJob) -> Request:
        return Request(messages=job.messages, params=dict(self.spec.params),
                       output_mode="json" if self.json_schema else "inline", json_schema=self.json_schema,
                       context=RequestContext(job.context_id, job.text, job.articles))

    def key(self, request: Request, job: PromptJob) -> str:
        return call_key(self.spec, request, self.template_hash, job.repeat, kind=self.kind)


class Collector:
    """An in-memory stand-in for the engine's appender, for callers that keep no file."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def close(self) -> None:
        pass


class _Tee:
    def __init__(self, *outs: Any) -> None:
        self.outs = [o for o in outs if o is not None]

    def write(self, row: dict[str, Any]) -> None:
        for o in self.outs:
            o.write(row)


def run_prompts(who: Prompted, jobs: list[PromptJob], record: Callable[[PromptJob, Request, CallResult], dict[str, Any]],
                settings: CallSettings, stats: CallStats, out: Any = None, label: str = "calls") -> list[dict[str, Any]]:
    """One batch of calls, start to finish; returns the recorded rows in completion order.

    ``record`` turns each finished call (answered, cached or failed) into a row;
    rows also go to ``out`` (an appender) when given, as each call finishes.
    """
    sink = Collector()
    cache = settings.open_cache()
    progress = settings.progress
    on_update = (lambda plan: progress(label, plan.stats.done, plan.stats.total)) if progress else None
    plan = RunPlan(who.spec, who.provider, jobs)
    try:
        engine = Engine([plan], build=lambda spec, job: who.request(job), key=lambda spec, request, job: who.key(request, job),
                        record=lambda plan, job, request, result: record(job, request, result),
                        out=_Tee(sink, out), cache=cache, on_update=on_update,
                        accept=(lambda job, comp: who.accept(comp)) if who.accept else None, **settings.engine_kwargs())
        asyncio.run(engine.run())
        stats.add(plan)
    finally:
        if cache is not None:
            cache.close()
    return sink.rows
