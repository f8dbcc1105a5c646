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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
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
class PromptStats:
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
                settings: CallSettings, stats: PromptStats, out: Any = None, label: str = "calls") -> list[dict[str, Any]]:
    """One batch of calls, start to finish; returns the recorded rows in completion order.

    ``record`` turns each finished call (answered, cached or failed) into a row;
    rows also go to ``out`` (an appender) when given, as each call finishes.
    """
    sink = Collector()
    cache = settings.open_cache()
    progress = settings.progress
    on_update = (lambda plan: progress(label, plan.stats.done, plan.stats.total)) if progress else None
    plan = RunPlan(who.spec, who.provider, jobs)
    redactor = settings.redactor

    def build(spec: ModelSpec, job: PromptJob) -> Request:
        request = who.request(job)
        return redactor.request(request) if redactor is not None else request

    def restored(job: PromptJob, request: Request, result: CallResult) -> dict[str, Any]:
        """The caller sees the reply with the originals back; the cache keeps what the model said."""
        comp = result.completion
        if request.redactions and comp is not None:
            from harness.privacy import restore

            result = replace(result, completion=replace(comp, text=restore(comp.text, request.redactions)))
        return record(job, request, result)

    try:
        engine = Engine([plan], build=build, key=lambda spec, request, job: who.key(request, job),
                        record=lambda plan, job, request, result: restored(job, request, result),
                        out=_Tee(sink, out), cache=cache, on_update=on_update,
                        accept=(lambda job, comp: who.accept(comp)) if who.accept else None, **settings.engine_kwargs())
        asyncio.run(engine.run())
        stats.add(plan)
    finally:
        if cache is not None:
            cache.close()
    return sink.rows


@dataclass
class Estimate:
    what: str
    model: str
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens_est: int = 0
    cost_usd_est: float | None = 0.0
    approximate: bool = False  # the calls themselves are guessed (they depend on answers not yet given)


def estimate_prompts(who: Prompted, jobs: list[PromptJob], settings: CallSettings, what: str, output_tokens: int,
             *, scale: float = 1.0) -> Estimate:
    """Calls to make, cached, tokens and cost for ``jobs``, as ``grace run --dry-run`` counts them; no call is made.

    ``scale`` stands for calls that cannot be planned yet: ``jobs`` are samples
    and the figures are multiplied up (and marked approximate).
    """
    from harness.runner.cache import ResponseCache
    from harness.runner.pricing import call_cost
    from kb_builder.tokens import count_tokens

    est = Estimate(what, who.spec.name, approximate=scale != 1.0)
    cache = ResponseCache.open_for_reading() if settings.use_cache and settings.read_cache else None
    try:
        for job in jobs:
            request = who.request(job)
            if settings.redactor is not None:
                request = settings.redactor.request(request)
            if cache is not None and who.provider.needs_network and cache.contains(who.key(request, job)):
                est.cached += 1
                continue
            est.calls += 1
            est.input_tokens += sum(count_tokens(m["content"]) + 4 for m in request.messages)
            est.output_tokens_est += output_tokens
    finally:
        if cache is not None:
            cache.close()
    if scale != 1.0:
        est.calls, est.cached = round(est.calls * scale), round(est.cached * scale)
        est.input_tokens, est.output_tokens_est = round(est.input_tokens * scale), round(est.output_tokens_est * scale)
    spec = who.spec
    est.cost_usd_est = 0.0 if not who.provider.needs_network else call_cost(
        est.input_tokens, est.output_tokens_est, spec.price_input_per_mtok, spec.price_output_per_mtok)
    return est


@contextmanager
def progress(settings: CallSettings, console: Any) -> Iterator[CallSettings]:
    """``settings`` with a rich progress bar on ``console``, one line per batch label (none without a console)."""
    if console is None:
        yield settings
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description:<22}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        tasks: dict[str, Any] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total or 1)
            bar.update(tasks[label], completed=done if total else 1, total=total or 1)

        settings.progress = update
        try:
            yield settings
        finally:
            settings.progress = None
