"""``leaderboard.md``: the leaderboard as a Markdown table, for a README or a PR comment."""

from __future__ import annotations

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import (
    COLUMNS,
    DETAIL_COLUMNS,
    DETAIL_LEGEND,
    LEGEND,
    detail_rows,
    error_note,
    errors_text,
    leaderboard_rows,
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


def render_markdown(inputs: ReportInputs) -> str:
    report = inputs.report
    gold, kb = report.get("gold") or {}, report.get("kb") or {}
    rows = leaderboard_rows(inputs.models, inputs.leaderboard)
    lines = [
        f"<!-- grace leaderboard.md schema_version {MARKDOWN_SCHEMA_VERSION} -->",
        "# grace leaderboard",
        "",
        f"Gold: {cell(str(gold.get('n_questions', '?')))} questions "
        f"({cell(str(gold.get('n_must_refuse', '?')))} must refuse), "
        f"hash `{_code(gold.get('hash'))}`; "
        f"KB: {cell(str(kb.get('n_articles', '?')))} articles, hash `{_code(kb.get('hash'))}`; "
        f"scored {cell(str(report.get('created_at', '?')))} with grace {cell(str(report.get('grace_version', '?')))}.",
        "",
        "| " + " | ".join(header for _, header in COLUMNS) + " |",
        "| " + " | ".join("---:" if key not in ("model", "group") else "---" for key, _ in COLUMNS) + " |",
    ]
    for row in rows:
        values = [cell(row.cells[key]) if key == "model" else row.cells[key] for key, _ in COLUMNS]
        if row.errors:
            values[1] += f" ({errors_text(row.errors)})"
        lines.append("| " + " | ".join(values) + " |")
    lines.append("")
    note = error_note(rows)
    if note:
        lines += [f"**Warning:** {cell(note)}", ""]
    cut = truncation_notes(inputs.models, inputs.leaderboard)
    lines += [f"**Warning:** {cell(c)}" for c in cut] + ([""] if cut else [])
    lines += [f"**Note:** {cell(str(w))}" for w in inputs.report.get("warnings") or []]
    if inputs.report.get("warnings"):
        lines.append("")
    lines += [f"- {item}" for item in LEGEND]
    lines += ["", "## Details", "",
              "| " + " | ".join(header for _, header in DETAIL_COLUMNS) + " |",
              "| " + " | ".join("---" if key == "model" else "---:" for key, _ in DETAIL_COLUMNS) + " |"]
    for detail in detail_rows(inputs.models, inputs.leaderboard):
        lines.append("| " + " | ".join(cell(detail[key]) if key == "model" else detail[key]
                                       for key, _ in DETAIL_COLUMNS) + " |")
    lines += ["", f"- {DETAIL_LEGEND}"]
    return "\n".join(lines) + "\n"
