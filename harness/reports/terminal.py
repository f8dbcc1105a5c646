"""The leaderboard as a rich table, printed at the end of ``grace report`` and ``grace run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import COLUMNS, error_note, errors_text, leaderboard_rows, truncation_notes

_RIGHT = {"rank", "accuracy", "strict", "calibration", "invalid", "unshown", "cost", "latency"}


def leaderboard_table(inputs: ReportInputs, width: int = 200) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    gold = inputs.report.get("gold") or {}
    narrow = width < 140
    table = Table(
        title=Text(f"grace leaderboard ({gold.get('n_questions', '?')} questions)", style="bold"),
        caption="Sig.: models sharing a letter are not significantly different (McNemar exact, Holm)",
        box=None if narrow else box.HEAVY_HEAD, header_style="bold underline" if narrow else "bold",
        show_edge=not narrow, pad_edge=not narrow,
    )
    rows = leaderboard_rows(inputs.models, inputs.leaderboard)
    if narrow:
        for r in rows:
            r.cells["accuracy"] = r.cells["accuracy"].replace(" [", "\n[")
    widths = {key: _min_width(key, rows) for key, _ in COLUMNS}
    if narrow:  # give the model name whatever the other columns leave, so names wrap only when they must
        heads = {key: max(len(x) for x in ("#" if key == "rank" else h.replace(" ", "\n", 1)).splitlines())
                 for key, h in COLUMNS}
        others = sum(max(widths[k] or 0, heads[k]) for k, _ in COLUMNS if k != "model")
        spare = width - others - 2 * (len(COLUMNS) - 1)
        longest = max((len(r.model) for r in rows), default=5)
        widths["model"] = max(min(longest, spare), min(longest, 12))
    for key, header in COLUMNS:
        if narrow:  # a narrow terminal: two-line headers, the CI under the accuracy instead of beside it
            header = "#" if key == "rank" else header.replace(" ", "\n", 1)
        table.add_column(header, justify="right" if key in _RIGHT else "left", overflow="fold",
                         min_width=widths[key] if narrow else None)
    for row in rows:
        # Text(), not markup: a model name like "[bold]x" must print as written
        cells = [Text(row.cells[key]) for key, _ in COLUMNS]
        if row.errors:
            cells[1].append(f" ({errors_text(row.errors)})", style="red")
        table.add_row(*cells)
    return table


def _min_width(key: str, rows: list) -> int | None:
    """Rich crops the last columns when it cannot shrink the others: pin every value's width, let names wrap."""
    if key == "model":
        return min(max((len(r.model) for r in rows), default=5), 12)
    return max((len(line) for r in rows for line in r.cells[key].splitlines()), default=1)


def print_leaderboard(inputs: ReportInputs, console: Any, html_path: Path | None = None) -> None:
    from rich.text import Text

    console.print(leaderboard_table(inputs, console.width))
    note = error_note(leaderboard_rows(inputs.models, inputs.leaderboard))
    if note:
        console.print(Text(note, style="red"))
    for cut in truncation_notes(inputs.models, inputs.leaderboard):
        console.print(Text("warning: ", style="yellow") + Text(cut))  # Text: a model name is not markup
    for name, failed in (inputs.report.get("failed_models") or {}).items():
        console.print(Text(f"not ranked: {name}: {failed.get('reason')}", style="red"))
    if html_path is not None:
        console.print(Text("report: ") + Text(str(html_path), style="bold"))
