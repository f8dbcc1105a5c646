"""The retrieval funnel as the terminal shows it (report.json's ``funnel``, harness.scoring.funnel): one line a model,
found then cited, with what the loop cost; a pushed-top-k model of the same run beside the ones that searched."""

from __future__ import annotations

from typing import Any

from harness.run_folder.report import FunnelShare, SearchFunnel


def _pct(share: FunnelShare) -> str:
    if share.rate is None:
        return "-"
    ci = f" [{share.ci[0]:.0%}-{share.ci[1]:.0%}]" if share.ci else ""
    return f"{share.rate:.0%}{ci} ({share.k}/{share.n})"


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def funnel_table(funnel: dict[str, SearchFunnel]) -> Any:
    """A rich table: each model's tool calls, gold found, cited given found, found not cited, cited unseen, coverage,
    loops that hit the cap or went wrong, latency and cost over every turn."""
    from rich.table import Table
    from rich.text import Text

    table = Table("model", "how", "tool calls mean/p95", "gold found", "cited | found", "found, not cited",
                  "cited unseen", "coverage", "loop problems", "latency p95 ms", "cost USD",
                  title="Retrieval funnel (models that search; 95% intervals)")
    for name, f in funnel.items():
        problems = ", ".join(f"{o} {s.k}" for o, s in f.loop_outcomes.items() if o != "completed" and s.k) or "-"
        table.add_row(Text(name), "search" if f.searches else "top k",
                      f"{_num(f.tool_calls_mean)}/{_num(f.tool_calls_p95, '{:g}')}",
                      _pct(f.gold_found), _pct(f.cited_given_found), _pct(f.found_not_cited), _pct(f.cited_unseen),
                      _num(f.coverage, "{:.2f}"), Text(problems), _num(f.latency_ms_p95, "{:.0f}"),
                      _num(f.cost_usd, "{:.4f}"))
    return table
