"""What the labeler and the question generator share around their calls: the model, the estimate, the progress.

Both ask one model a batch of prompts through :mod:`harness.runner.calls`, so
the cache, retries and cost accounting are the engine's. What is left here is
what a command shows around those calls: a dry-run estimate that makes no call
(cached answers counted apart, so a re-run is seen to be free), a progress bar,
and one summary line, worded the same way for both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec, Provider
from harness.runner.calls import CallSettings, Estimate, PromptStats
from harness.runner.model_options import ModelOptions


def make_model(text: str, *, role: str, timeout: float | None = None, prices: Path | None = None,
               offline: dict[str, Callable[[ModelSpec], Provider]] | None = None,
               options: ModelOptions | None = None, ready: bool = True) -> tuple[ModelSpec, Provider]:
    """``PROVIDER:MODEL`` -> (spec, ready provider), priced, at temperature 0 unless the spec says otherwise.

    ``options`` are the model options of ``grace run`` (``--max-tokens
    --json-mode --timeout --base-url --api-key-env``), applied by
    :func:`harness.runner.model_options.ready_model`; ``timeout`` is the older
    spelling of ``options.timeout``. ``baseline:*`` models answer grace's own
    prompt, not this one, so only the offline stand-ins a caller names in
    ``offline`` may play ``role``. ``ready=False`` (a dry run) warns of a missing key or SDK instead of refusing.
    """
    from harness.runner.model_options import ready_model

    opts = options or ModelOptions()
    if timeout and opts.timeout is None:
        opts = replace(opts, timeout=float(timeout))
    return ready_model(text, role=role, options=opts, prices=prices, offline=offline, ready=ready)


def call_settings(concurrency: int, max_attempts: int, read_cache: bool) -> CallSettings:
    if concurrency < 1 or max_attempts < 1:
        raise GraceError("--concurrency and --max-attempts must be 1 or more")
    return CallSettings(concurrency=concurrency, max_attempts=max_attempts, read_cache=read_cache)


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


def summary(what: str, model: str, stats: PromptStats) -> str:
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
