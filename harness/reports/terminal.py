"""The leaderboard as a rich table, printed at the end of ``grace report`` and ``grace run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import COLUMNS, error_note, leaderboard_rows

_RIGHT = {"rank", "accuracy", "strict", "calibration", "invalid", "cost", "latency"}


def leaderboard_table(inputs: ReportInputs) -> Any:
    from rich.table import Table
    from rich.text import Text

    gold = inputs.report.get("gold") or {}
    table = Table(
        title=f"grace leaderboard ({gold.get('n_questions', '?')} questions)",
        caption="Sig.: models sharing a letter are not significantly different (McNemar exact, Holm)",
    )
    for key, header in COLUMNS:
        table.add_column(header, justify="right" if key in _RIGHT else "left", no_wrap=key != "model")
    for row in leaderboard_rows(inputs.models, inputs.leaderboard):
        # Text(), not markup: a model name like "[bold]x" must print as written
        cells = [Text(row.cells[key]) for key, _ in COLUMNS]
        if row.errors:
            cells[1].append(f" ({row.errors} errors)", style="red")
        table.add_row(*cells)
    return table


def print_leaderboard(inputs: ReportInputs, console: Any, html_path: Path | None = None) -> None:
    from rich.text import Text

    console.print(leaderboard_table(inputs))
    note = error_note(leaderboard_rows(inputs.models, inputs.leaderboard))
    if note:
        console.print(Text(note, style="red"))
    if html_path is not None:
        console.print(Text("report: ") + Text(str(html_path), style="bold"))
