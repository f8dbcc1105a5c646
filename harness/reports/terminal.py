"""The leaderboard as a rich table, printed at the end of ``grace report``, ``grace score`` and ``grace run``.

Its columns are :data:`~harness.reports.leaderboard.COLUMNS`, as in
``leaderboard.md`` and ``report.html``. Where the table goes decides its shape:

- not a terminal (a pipe, a CI log, a file): the whole table at its natural
  width. A log has no width to fit; squeezing the table into 80 columns cut
  headers ("p5 / latenc"), dropped the significance letters and wrapped
  model names mid-word.
- a terminal wide enough for it: the same table.
- a narrower terminal: a compact table (no frame, two-line headers, the CI
  under the accuracy); while that is still too wide, the columns a reader
  misses least go first (``Column.drop``: latency, cost, ...) and are named
  under the table. Rank, model names, accuracy and the significance letters
  always stay and no cell wraps; only when even those do not fit are model
  names folded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import (
    PPI_TITLE,
    Column,
    Row,
    asked_text,
    columns_for,
    error_note,
    errors_text,
    leaderboard_rows,
    ppi_note,
    truncation_notes,
)

CAPTION = "Sig.: models sharing a letter are not significantly different (McNemar exact, Holm)"
_UNLIMITED = 100_000


def sized_terminal(console: Any) -> bool:
    """Whether ``console`` is a terminal whose width is known, so a table is fitted to it. A dumb one
    (``TERM=dumb``: an editor's shell, some CI runners) is not: rich takes it for 80 columns whatever its width (and
    ``COLUMNS``), so fitting would leave columns out and ask to widen a terminal that is wide already; it gets the
    whole table at its natural width, as a pipe or a log does."""
    return console.is_terminal and not console.is_dumb_terminal


def _header(column: Column, compact: bool) -> str:
    if not compact:
        return column.header
    return "#" if column.key == "rank" else column.header.replace(" ", "\n", 1)


def break_name(name: str, width: int) -> str:
    """``name`` in lines of at most ``width`` cells, broken after ':', '/', '-', '_' or '.' (a provider, an org, a
    version); a part longer than a line is cut, the last resort."""
    from rich.cells import cell_len

    lines = [""]
    for part in re.findall(r"[^:/\-_.]+[:/\-_.]*|[:/\-_.]+", name):
        while part:
            if lines[-1] and cell_len(lines[-1] + part) > width:
                lines.append("")
            room = width - cell_len(lines[-1])
            head = part if cell_len(part) <= room else _cut(part, max(room, 1))
            lines[-1] += head
            part = part[len(head):]
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    """The longest start of ``text`` at most ``width`` cells wide (one character at least)."""
    from rich.cells import cell_len

    end = 1
    while end < len(text) and cell_len(text[:end + 1]) <= width:
        end += 1
    return text[:end]


def _cell(row: Row, column: Column, compact: bool, name_width: int | None = None) -> Any:
    from rich.text import Text

    value = row.cells[column.key]
    if compact and column.key == "accuracy":
        value = value.replace(" [", "\n[")
    if column.key == "model" and name_width is not None:
        value = break_name(value, name_width)
    cell = Text(value)  # Text, not markup: a model name like "[bold]x" must print as written
    if column.key == "model" and row.errors:
        cell.append(("\n" if compact else " ") + f"({errors_text(row.errors)})", style="red")
    return cell


def _title(inputs: ReportInputs) -> str:
    ppi = inputs.report.ppi
    asked = (asked_text(inputs.report) if ppi is None
             else f"{ppi.questions} questions, {ppi.human_labels} human-labelled, prediction-powered")
    return f"grace leaderboard ({asked})"


def _table(title: str, rows: list[Row], columns: list[Column], compact: bool, name_width: int | None = None) -> Any:
    """``name_width``: break model names into lines that wide (the last resort on a narrow terminal)."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(title, style="bold"), caption=CAPTION,
        box=None if compact else box.HEAVY_HEAD, header_style="bold underline" if compact else "bold",
        show_edge=not compact, pad_edge=not compact,
    )
    cells = [[_cell(row, c, compact, name_width) for c in columns] for row in rows]
    for i, c in enumerate(columns):  # each column as wide as its widest line: rich never wraps or cuts a cell
        header = _header(c, compact)
        lines = header.splitlines() + [line for r in cells for line in r[i].plain.splitlines()]
        table.add_column(header, justify="right" if c.numeric else "left", no_wrap=True, overflow="fold",
                         min_width=max(map(cell_len, lines), default=1))
    for r in cells:
        table.add_row(*r)
    return table


def _width(console: Any, table: Any) -> int:
    return console.measure(table, options=console.options.update_width(_UNLIMITED)).maximum


def leaderboard_table(inputs: ReportInputs, console: Any, width: int | None = None) -> tuple[Any, list[str]]:
    """The table for ``width`` columns (None: its natural width) and the headers of the columns left out."""
    return fitted_table(_title(inputs), inputs.ranked, console, width)


def fitted_table(title: str, models: list[Any], console: Any, width: int | None = None) -> tuple[Any, list[str]]:
    """The leaderboard table of ``models`` (typed ModelReport rows, best first) under ``title``, fitted to
    ``width`` as the module says, and the headers of the columns left out."""
    columns = columns_for(models)
    rows = leaderboard_rows(models, columns)
    table = _table(title, rows, columns, compact=False)
    if width is None or _width(console, table) <= width:
        return table, []
    shown, droppable = list(columns), sorted((c for c in columns if c.drop), key=lambda c: -c.drop)
    table = _table(title, rows, shown, compact=True)
    while _width(console, table) > width and droppable:
        shown.remove(droppable.pop(0))
        table = _table(title, rows, shown, compact=True)
    too_wide = _width(console, table) - width
    if too_wide > 0:  # model names on as few lines as the other columns leave room for
        from rich.cells import cell_len

        longest = max(cell_len(r.cells["model"]) for r in rows)
        table = _table(title, rows, shown, compact=True, name_width=max(longest - too_wide, 8))
    return table, [c.header for c in columns if c not in shown]


def show_table(console: Any, table: Any) -> None:
    """On a terminal, as fitted; anywhere else (a pipe, a CI log) at the table's own width, which may be wider than
    the console's idea of a width."""
    from rich.segment import Segments

    if sized_terminal(console):
        console.print(table)
    else:
        options = console.options.update_width(_width(console, table))
        console.print(Segments(console.render(table, options)), crop=False)


def print_leaderboard(inputs: ReportInputs, console: Any, html_path: Path | None = None) -> None:
    from rich.text import Text

    terminal = sized_terminal(console)
    table, left_out = leaderboard_table(inputs, console, console.width if terminal else None)
    show_table(console, table)
    soft = not terminal  # a log line is not broken at 80 columns either
    if inputs.report.funnel:  # a model searched the KB itself: what it found and cited
        from harness.reports.funnel_table import funnel_table

        show_table(console, funnel_table(inputs.report.funnel))
    if left_out:
        console.print(Text(f"left out for the terminal's width: {', '.join(left_out)} "
                           "(widen it, or read leaderboard.md)", style="dim"), soft_wrap=soft)
    ppi = ppi_note(inputs.report)
    if ppi:
        console.print(Text(f"{PPI_TITLE}: ", style="bold") + Text(ppi), soft_wrap=soft)
    note = error_note(leaderboard_rows(inputs.ranked))
    if note:
        console.print(Text(note, style="red"), soft_wrap=soft)
    for cut in truncation_notes(inputs.ranked):
        console.print(Text("warning: ", style="yellow") + Text(cut), soft_wrap=soft)  # Text: a name is not markup
    for name, failed in inputs.report.failed_models.items():
        console.print(Text(f"not ranked: {name}: {failed.reason}", style="red"), soft_wrap=soft)
    if html_path is not None:
        console.print(Text("report: ") + Text(str(html_path), style="bold"), soft_wrap=soft)
