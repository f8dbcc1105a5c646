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


HEADERS = ("Model", "How", "Tool calls mean/p95", "Gold found", "Cited given found", "Found, not cited",
           "Cited unseen", "Coverage", "Loop problems", "Latency p95 ms", "Cost USD")
LEGEND = ("Gold found: of answerable questions, a search returned a gold article (a top-k model: its top k held one); "
          "cited given found: of those, the answer cites a gold article; cited unseen: of answers citing a KB article, "
          "one no search returned; coverage: mean |cited ∩ retrieved| / |retrieved|; shares with 95% Wilson intervals; "
          "latency and cost over every turn of an answer")


def funnel_rows(funnel: dict[str, SearchFunnel]) -> list[list[str]]:
    """One row of text cells a model, in :data:`HEADERS` order (the model's name as written: escape it to show it)."""
    rows = []
    for name, f in funnel.items():
        problems = ", ".join(f"{o} {s.k}" for o, s in f.loop_outcomes.items() if o != "completed" and s.k) or "-"
        rows.append([name, "search" if f.searches else "top k", f"{_num(f.tool_calls_mean)}/{_num(f.tool_calls_p95, '{:g}')}",
                     _pct(f.gold_found), _pct(f.cited_given_found), _pct(f.found_not_cited), _pct(f.cited_unseen),
                     _num(f.coverage, "{:.2f}"), problems, _num(f.latency_ms_p95, "{:.0f}"), _num(f.cost_usd, "{:.4f}")])
    return rows


def funnel_markdown(funnel: dict[str, SearchFunnel], cell: Any) -> list[str]:
    """The leaderboard.md section: the same rows, user text escaped by ``cell``."""
    lines = ["", "## Retrieval funnel", "", "| " + " | ".join(HEADERS) + " |",
             "| --- | --- | " + " | ".join("---:" for _ in HEADERS[2:]) + " |"]
    lines += ["| " + " | ".join([cell(r[0]), r[1], *r[2:8], cell(r[8]), *r[9:]]) + " |" for r in funnel_rows(funnel)]
    return [*lines, "", f"- {LEGEND}"]


def funnel_table(funnel: dict[str, SearchFunnel]) -> Any:
    """A rich table: each model's tool calls, gold found, cited given found, found not cited, cited unseen, coverage,
    loops that hit the cap or went wrong, latency and cost over every turn."""
    from rich.table import Table
    from rich.text import Text

    table = Table(*(h.lower() if i < 2 else h for i, h in enumerate(HEADERS)),
                  title="Retrieval funnel (models that search; 95% intervals)")
    for row in funnel_rows(funnel):
        table.add_row(Text(row[0]), *row[1:8], Text(row[8]), *row[9:])
    return table
