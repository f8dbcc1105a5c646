"""``grace gate``'s checks of a search loop (report.json ``funnel``): the guidance's "cap the agent loop" as a
threshold on tool calls per answer, and a floor on how often a model's searches find the gold article."""

from __future__ import annotations

import math
from typing import Any

from harness.core.errors import GraceError

_FIX = "re-score the run ('grace score RUN') with a grace that writes the funnel"


def check_funnel(read: Any, name: str, max_tool_calls: float | None,
                 min_gold_found: float | None) -> list[tuple[bool, str]]:
    """``--max-tool-calls N``: a model fails when its 95th percentile of tool calls per answer is above N (most
    answers' loops, not one runaway); ``--min-gold-found F``: when its searches returned a gold article for less
    than F of the answerable questions. A report without a funnel, or a model missing from it, is bad input."""
    if max_tool_calls is None and min_gold_found is None:
        return []
    options = " and ".join(o for o, v in (("--max-tool-calls", max_tool_calls), ("--min-gold-found", min_gold_found))
                           if v is not None)
    funnel = read.report.funnel
    if funnel is None or name not in funnel:
        raise GraceError(f"{read.path}: no retrieval funnel for {name!r} (it is written when a model of the run "
                         f"searched the KB itself: grace run --search), so {options} cannot be checked; "
                         f"{_FIX}, or pick models with --model")
    f, out = funnel[name], []
    if max_tool_calls is not None:
        p95 = read.data.get("funnel", {}).get(name, {}).get("tool_calls_p95")
        if not isinstance(p95, int | float) or isinstance(p95, bool) or not math.isfinite(p95):
            raise GraceError(f"{read.path}: funnel.{name}.tool_calls_p95 is {p95!r}, not a number, so --max-tool-calls "
                             f"cannot be checked; {_FIX}")
        ok = p95 <= max_tool_calls
        out.append((ok, f"{name}: tool calls per answer p95 {p95:g} (mean {f.tool_calls_mean:g}) "
                        f"{'<=' if ok else '>'} maximum {max_tool_calls:g}"))
    if min_gold_found is not None:
        share = f.gold_found
        if share.rate is None:
            raise GraceError(f"{read.path}: {name!r} has no answerable question in its funnel, so --min-gold-found "
                             "cannot be checked")
        ok = share.rate >= min_gold_found
        ci = f" [95% CI {share.ci[0]:.1%}-{share.ci[1]:.1%}]" if share.ci else ""
        out.append((ok, f"{name}: gold article found by its searches {share.rate:.1%}{ci} ({share.k}/{share.n}) "
                        f"{'>=' if ok else '<'} minimum {min_gold_found:.1%}"))
    return out
