"""A comparison of two runs (:class:`~harness.scoring.run_comparison.Comparison`) for people: the terminal and Markdown.

The Markdown is written for a pull-request comment or ``$GITHUB_STEP_SUMMARY``:
one table (a row per model: both accuracies, the change with its 95% CI, the
McNemar p-value, how many questions improved and regressed), then the question
IDs that moved, folded per model. Model names and question IDs are user text:
escaped, never markup.
"""

from __future__ import annotations

from typing import Any

from harness.reports.leaderboard import pct
from harness.reports.markdown import cell
from harness.scoring.run_comparison import CitationComparison, Comparison, ModelComparison

# what a difference's kind says, once beside the list
DIFFERENCE_KINDS = ("answers: what was asked or how; scoring: how the same answers are scored; calls: how the calls "
                    "were made")
MARKDOWN_IDS = 50  # question IDs listed per direction and model; --json has them all
TERMINAL_IDS = 20
ALPHA = 0.05


def signed_pct(x: float) -> str:
    return f"{100 * x:+.1f} pp"


def delta_text(m: ModelComparison) -> str:
    ci = m.delta_ci
    return signed_pct(m.delta) + (f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "")


def verdict(m: ModelComparison) -> str:
    """One word a reviewer can act on: better, worse, or no significant change."""
    if not m.significant:
        return "no significant change"
    return "better" if m.delta > 0 else "worse" if m.delta < 0 else "changed"


def p_text(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def _ids(ids: list[str], limit: int) -> str:
    shown = ", ".join(f"`{q.replace('`', chr(39))}`" for q in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "") if ids else "none"


def citation_delta_text(c: CitationComparison) -> str:
    ci = c.delta_ci
    return signed_pct(c.delta) + (f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "")


def citation_verdict(c: CitationComparison) -> str:
    if not c.significant:
        return "no significant change"
    return "better" if c.delta > 0 else "worse" if c.delta < 0 else "changed"


def _arrow(a: float | None, b: float | None) -> str:
    return f"{pct(a)} → {pct(b)}"


def _cited(cmp: Comparison) -> list[tuple[ModelComparison, CitationComparison]]:
    """The models compared on citation F1 too (both sides read as references)."""
    return [(m, m.citations) for m in cmp.models if m.citations is not None]


CITATION_NOTE = ("Citation F1: per question, the mean over its repeats of each answer's citation F1 (precision: cited "
                 "articles that answer it, unmapped references counting as misses; recall: its gold articles cited), "
                 "over the questions both sides have it for; Δ with a paired bootstrap 95% CI, p from a paired "
                 "permutation test (signs flipped, alpha 0.05). Precision and recall: the same means, A → B.")


def comparison_markdown(cmp: Comparison) -> str:
    lines = [
        "## grace compare",
        "",
        f"Run A `{cmp.run_a.replace('`', chr(39))}` → run B `{cmp.run_b.replace('`', chr(39))}`"
        + (f" · gold `{cmp.gold_hash[:12]}`" if cmp.gold_hash else ""),
        "",
        *(["What differs, run A → run B:", "", *(f"- {cell(d.text())} ({d.kind})" for d in cmp.differences), "",
           f"({DIFFERENCE_KINDS})", ""] if cmp.differences else []),
        "| Model | A | B | Δ accuracy [95% CI] | McNemar p | Improved | Regressed | Verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in cmp.models:
        lines.append(f"| {cell(m.model)} | {pct(m.accuracy_a)} | {pct(m.accuracy_b)} | {delta_text(m)} | "
                     f"{p_text(m.mcnemar_p)} | {len(m.improved)} | {len(m.regressed)} | {verdict(m)} |")
    lines += ["", f"Questions both runs answered, {cmp.repeat_policy}. Δ: B − A in percentage points with a paired "
              f"bootstrap 95% CI over questions ({cmp.bootstrap_samples} resamples, seed {cmp.seed}); McNemar: exact "
              f"test on the improved and regressed counts (alpha {ALPHA})."]
    cited = _cited(cmp)
    if cited:  # only when both sides of some model were read as references: a GRACE comparison is as it was
        lines += ["", "| Model | Citation F1 A | B | Δ F1 [95% CI] | Permutation p | Precision | Recall | Verdict |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        lines += [f"| {cell(m.model)} | {pct(c.f1_a)} | {pct(c.f1_b)} | {citation_delta_text(c)} | {p_text(c.p_value)} | "
                  f"{_arrow(c.precision_a, c.precision_b)} | {_arrow(c.recall_a, c.recall_b)} | {citation_verdict(c)} |"
                  for m, c in cited]
        lines += ["", CITATION_NOTE]
    for m in cmp.models:
        if not (m.improved or m.regressed):
            continue
        lines += ["", f"<details><summary>{cell(m.model)}: {len(m.improved)} improved, {len(m.regressed)} regressed"
                  "</summary>", "", f"Improved: {_ids(m.improved, MARKDOWN_IDS)}", "",
                  f"Regressed: {_ids(m.regressed, MARKDOWN_IDS)}", "", "</details>"]
    if cmp.notes:
        lines += [""] + [f"- {cell(n)}" for n in cmp.notes]
    return "\n".join(lines) + "\n"


def print_comparison(cmp: Comparison, console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    console.print(Text(f"run A {cmp.run_a}  →  run B {cmp.run_b}"))
    if cmp.differences:
        console.print(Text("what differs, run A → run B:", style="bold"))
        for d in cmp.differences:  # Text: a value is user text (a path, a model name), never markup
            console.print(Text(f"  {d.text()}") + Text(f"  ({d.kind})", style="dim"), soft_wrap=True)
        console.print(Text(f"  ({DIFFERENCE_KINDS})", style="dim"), soft_wrap=True)
    table = Table(show_edge=False, header_style="bold")
    for name, right in (("Model", False), ("A", True), ("B", True), ("Δ [95% CI]", True), ("McNemar p", True),
                        ("Improved", True), ("Regressed", True), ("Verdict", False)):
        table.add_column(name, justify="right" if right else "left")
    for m in cmp.models:
        colour = "green" if m.significant and m.delta > 0 else "red" if m.significant and m.delta < 0 else None
        table.add_row(Text(m.model), pct(m.accuracy_a), pct(m.accuracy_b), delta_text(m), p_text(m.mcnemar_p),
                      str(len(m.improved)), str(len(m.regressed)), Text(verdict(m), style=colour or ""))
    from harness.reports.terminal import show_table, sized_terminal

    show_table(console, table)  # a CI log: the table at its natural width, as the leaderboard is printed
    soft = not sized_terminal(console)
    cited = _cited(cmp)
    if cited:
        more = Table(show_edge=False, header_style="bold")
        for name, right in (("Model", False), ("Citation F1 A", True), ("B", True), ("Δ F1 [95% CI]", True),
                            ("Permutation p", True), ("Precision", True), ("Recall", True), ("Verdict", False)):
            more.add_column(name, justify="right" if right else "left")
        for m, c in cited:
            colour = "green" if c.significant and c.delta > 0 else "red" if c.significant and c.delta < 0 else None
            more.add_row(Text(m.model), pct(c.f1_a), pct(c.f1_b), citation_delta_text(c), p_text(c.p_value),
                         _arrow(c.precision_a, c.precision_b), _arrow(c.recall_a, c.recall_b),
                         Text(citation_verdict(c), style=colour or ""))
        show_table(console, more)
        console.print(Text(CITATION_NOTE, style="dim"), soft_wrap=soft)
    for m in cmp.models:
        if m.improved or m.regressed:
            console.print(Text(f"{m.model}: improved {_plain(m.improved)}; regressed {_plain(m.regressed)}"),
                          soft_wrap=soft)
    for n in cmp.notes:
        console.print(Text(f"note: {n}", style="yellow"), soft_wrap=soft)


def _plain(ids: list[str]) -> str:
    if not ids:
        return "none"
    more = f" and {len(ids) - TERMINAL_IDS} more (--json lists them all)" if len(ids) > TERMINAL_IDS else ""
    return ", ".join(ids[:TERMINAL_IDS]) + more
