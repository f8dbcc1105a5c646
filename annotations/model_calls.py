"""What the labeler and the question generator share around their calls: the model, the estimate, the progress.

Both ask one model a batch of prompts through :mod:`harness.runner.calls`, so
the cache, retries and cost accounting are the engine's. What is left here is
what a command shows around those calls: a dry-run estimate that makes no call
(cached answers counted apart, so a re-run is seen to be free), a progress bar,
and one summary line, worded the same way for both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec, Provider
from harness.runner.calls import CallSettings, CallStats, Prompted, PromptJob
from harness.runner.model_options import ModelOptions


def make_model(text: str, *, role: str, timeout: float | None = None, prices: Path | None = None,
               offline: dict[str, Callable[[ModelSpec], Provider]] | None = None,
               options: ModelOptions | None = None) -> tuple[ModelSpec, Provider]:
    """``PROVIDER:MODEL`` -> (spec, ready provider), priced, at temperature 0 unless the spec says otherwise.

    ``options`` are the model options of ``grace run`` (``--max-tokens
    --json-mode --timeout --base-url --api-key-env``), applied by
    :func:`harness.runner.model_options.ready_model`; ``timeout`` is the older
    spelling of ``options.timeout``. ``baseline:*`` models answer grace's own
    prompt, not this one, so only the offline stand-ins a caller names in
    ``offline`` may play ``role``.
    """
    from harness.runner.model_options import ready_model

    opts = options or ModelOptions()
    if timeout and opts.timeout is None:
        opts = replace(opts, timeout=float(timeout))
    return ready_model(text, role=role, options=opts, prices=prices, offline=offline)


def call_settings(concurrency: int, max_attempts: int, read_cache: bool) -> CallSettings:
    if concurrency < 1 or max_attempts < 1:
        raise GraceError("--concurrency and --max-attempts must be 1 or more")
    return CallSettings(concurrency=concurrency, max_attempts=max_attempts, read_cache=read_cache)


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


def estimate(who: Prompted, jobs: list[PromptJob], settings: CallSettings, what: str, output_tokens: int,
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


def print_estimates(console: Any, rows: list[Estimate]) -> None:
    from rich.table import Table

    table = Table("calls for", "model", "calls", "cached", "input tokens", "output tokens (est.)", "cost USD (est.)",
                  title="Dry run: no calls made")
    for r in rows:
        cost = "unknown price (--prices FILE)" if r.cost_usd_est is None else f"{r.cost_usd_est:.4f}"
        mark = "~" if r.approximate else ""
        table.add_row(r.what, r.model, f"{mark}{r.calls}", f"{mark}{r.cached}", f"{mark}{r.input_tokens:,}",
                      f"{mark}{r.output_tokens_est:,}", f"{mark}{cost}" if r.cost_usd_est is not None else cost)
    console.print(table)
    if any(r.approximate for r in rows):
        console.print("~ approximate: those calls depend on answers not given yet", highlight=False)


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


def summary(what: str, model: str, stats: CallStats) -> str:
    """One line: calls, cache hits, failures and cost, so a re-run visibly costs nothing."""
    if stats.cost_known:
        cost = f"${stats.cost_usd:.4f}"
    else:
        cost = f"cost unknown (no price for {model}; --prices FILE)"
    line = (f"{what} ({model}): {stats.calls} call(s), {stats.cached} cached, {stats.errors} error(s), {cost}")
    for reason in stats.aborted:
        line += f"\n  stopped: {reason}"
    if stats.errors:
        line += "\n  failed calls are not cached: run the same command again to retry them"
    return line
