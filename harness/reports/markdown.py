"""``leaderboard.md``: the leaderboard as a Markdown table, for a README or a PR comment."""

from __future__ import annotations

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import (
    CATEGORY_LEGEND,
    CITATION_COLUMNS,
    CITATION_LEGEND,
    CITATION_PAIR_HEADERS,
    CITATION_PAIRS_LEGEND,
    DETAIL_COLUMNS,
    DETAIL_LEGEND,
    PPI_TITLE,
    Column,
    Row,
    category_table,
    citation_models,
    citation_pairs,
    columns_for,
    error_note,
    errors_text,
    leaderboard_rows,
    legend_for,
    ppi_note,
    run_size,
    truncation_notes,
)

MARKDOWN_SCHEMA_VERSION = 2  # 2: the Unshown cit. column and the Details table


def cell(text: str) -> str:
    """Model names are user text: keep them from breaking the table or injecting markup."""
    out = " ".join(str(text).split())
    for ch in ("\\", "|", "`", "*", "_", "[", "]", "<", ">"):
        out = out.replace(ch, "\\" + ch)
    return out


def _code(value: object) -> str:
    return str(value if value is not None else "?")[:12].replace("`", "'")


def _table(columns: list[Column], rows: list[Row], errors: bool = True) -> list[str]:
    """Numeric columns right-aligned; the others hold user text (model names), escaped."""
    lines = ["| " + " | ".join(c.header for c in columns) + " |",
             "| " + " | ".join("---:" if c.numeric else "---" for c in columns) + " |"]
    for row in rows:
        values = [row.cells[c.key] if c.numeric else cell(row.cells[c.key]) for c in columns]
        if errors and row.errors:
            values[[c.key for c in columns].index("model")] += f" ({errors_text(row.errors)})"
        lines.append("| " + " | ".join(values) + " |")
    return lines


def render_markdown(inputs: ReportInputs) -> str:
    report = inputs.report
    gold, kb = report.gold, report.kb
    columns = columns_for(inputs.ranked)
    rows = leaderboard_rows(inputs.ranked, columns)
    lines = [
        f"<!-- grace leaderboard.md schema_version {MARKDOWN_SCHEMA_VERSION} -->",
        "# grace leaderboard",
        "",
        (f"Scored: {cell(scored)}. Gold (human labels): {cell(str(gold.n_questions))} questions "
         if (scored := run_size(report)) else f"Gold: {cell(str(gold.n_questions))} questions ")
        + (f"(asked: {cell(report.sample.describe())}) " if report.sample is not None else "")
        + f"({cell(str(gold.n_must_refuse))} must refuse), hash `{_code(gold.hash)}`; "
        f"KB: {cell(str(kb.n_articles))} articles, hash `{_code(kb.hash)}`; "
        f"scored {cell(report.created_at)} with grace {cell(report.grace_version)}.",
        "",
        *([f"**{PPI_TITLE}:** {cell(ppi)}", ""] if (ppi := ppi_note(report)) else []),
        *_table(columns, rows),
        "",
    ]
    if inputs.out_of_date:
        lines[5:5] = [f"**Warning:** {cell(inputs.out_of_date)}", ""]  # under the gold line, above the table
    note = error_note(rows)
    if note:
        lines += [f"**Warning:** {cell(note)}", ""]
    cut = truncation_notes(inputs.ranked)
    lines += [f"**Warning:** {cell(c)}" for c in cut] + ([""] if cut else [])
    lines += [f"**Note:** {cell(w)}" for w in report.warnings]
    if report.warnings:
        lines.append("")
    lines += [f"- {item}" for item in legend_for(columns)]
    headers, by_category = category_table(report.categories, inputs.ranked)
    if by_category:
        lines += ["", "## By category", "", "| " + " | ".join(map(cell, headers)) + " |",
                  "| --- | " + " | ".join("---:" for _ in headers[1:]) + " |"]
        lines += ["| " + " | ".join([cell(r[0]), *r[1:]]) + " |" for r in by_category]
        lines += ["", f"- {CATEGORY_LEGEND}"]
    lines += ["", "## Details", "", *_table(DETAIL_COLUMNS, leaderboard_rows(inputs.ranked, DETAIL_COLUMNS), errors=False)]
    lines += ["", f"- {DETAIL_LEGEND}"]
    cited = citation_models(inputs.ranked)
    if cited:  # only a run with a model read as references has the section: a GRACE run's file is as it was
        lines += ["", "## Citations", "", *_table(CITATION_COLUMNS, leaderboard_rows(cited, CITATION_COLUMNS),
                                                  errors=False), "", f"- {CITATION_LEGEND}"]
        pairs = citation_pairs(inputs.report)
        if pairs:
            lines += ["", "| " + " | ".join(CITATION_PAIR_HEADERS) + " |",
                      "| --- | --- | " + " | ".join("---:" for _ in CITATION_PAIR_HEADERS[2:-1]) + " | --- |"]
            lines += ["| " + " | ".join([cell(r[0]), cell(r[1]), *r[2:]]) + " |" for r in pairs]
            lines += ["", f"- {CITATION_PAIRS_LEGEND}"]
    if report.funnel:  # a model searched the KB itself: what it found and cited (a run without one: as it was)
        from harness.reports.funnel_table import funnel_markdown

        lines += funnel_markdown(report.funnel, cell)
    return "\n".join(lines) + "\n"
