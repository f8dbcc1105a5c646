"""A leaderboard across runs (:class:`~harness.scoring.run_board.Board`) for people: the terminal and Markdown.

The table is the run leaderboard's (:data:`~harness.reports.leaderboard.COLUMNS`, fitted to the terminal the same
way), a row per model of each run named by what sets its run apart; under it the runs, the settings they differ in,
and the paired test of every two rows, which a run's own leaderboard only sums up in its significance letters:
here the pairs are the point (is k=3 better than k=1 for this model?). Row names and values are user text: escaped
in Markdown, never markup in the terminal.
"""

from __future__ import annotations

from typing import Any

from harness.reports.leaderboard import columns_for, leaderboard_rows, legend_for
from harness.reports.markdown import _table, cell
from harness.scoring.run_board import Board

PAIR_HEADERS = ["Row A", "Row B", "Paired n", "A only", "B only", "p (McNemar)", "p (Holm)", "Significant"]
PAIRS_LEGEND = ("Paired tests: every two rows on the questions both answered (a question counts as right when more "
                "than half of its repeats are): McNemar's exact test on the questions only one of them got right, "
                "Holm-corrected over all the pairs, alpha 0.05. A and B only: the questions only that row got right.")


def title(board: Board) -> str:
    return (f"grace leaderboard across {len(board.runs)} run{'s' if len(board.runs) != 1 else ''} (gold "
            f"{board.gold_path or 'in memory'}, {board.gold_hash[:12]})")


def pair_rows(board: Board) -> list[list[str]]:
    return [[p.a, p.b, f"{p.n:,}", f"{p.a_only:,}", f"{p.b_only:,}", f"{p.p_value:.3g}", f"{p.p_adjusted:.3g}",
             "yes" if p.significant else "no"] for p in board.pairwise]


def run_lines(board: Board) -> list[str]:
    """``k1: runs/k1 (30 of 90 questions, sampled ...)`` per run."""
    return [f"{r.id}: {r.path}" + (f" ({r.sample})" if r.sample else "") for r in board.runs]


def varying_lines(board: Board) -> list[str]:
    """``k: 1 (k1), 3 (k3); answers`` per setting the runs differ in."""
    return [f"{v.setting}: " + ", ".join(f"{value if value is not None else 'not set'} ({rid})"
                                         for rid, value in v.values.items()) + f"; {v.kind}" for v in board.varying]


def print_board(board: Board, console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from harness.reports.terminal import fitted_table, show_table, sized_terminal

    terminal = sized_terminal(console)
    soft = not terminal
    table, left_out = fitted_table(title(board), [r.figures for r in board.rows], console,
                                   console.width if terminal else None)
    show_table(console, table)
    if left_out:
        console.print(Text(f"left out for the terminal's width: {', '.join(left_out)} (widen it, or write "
                           "--out BOARD.md)", style="dim"), soft_wrap=soft)
    console.print(Text("runs:", style="bold"))
    for line in run_lines(board):
        console.print(Text(f"  {line}"), soft_wrap=soft)
    if board.varying:
        console.print(Text("the runs differ in:", style="bold"))
        for line in varying_lines(board):
            console.print(Text(f"  {line}"), soft_wrap=soft)
    if board.pairwise:
        pairs = Table(show_edge=False, header_style="bold", title=Text("Paired tests", style="bold"))
        for i, name in enumerate(PAIR_HEADERS):
            pairs.add_column(name, justify="left" if i < 2 or i == len(PAIR_HEADERS) - 1 else "right")
        for row in pair_rows(board):
            pairs.add_row(*(Text(c) for c in row))
        show_table(console, pairs)
        console.print(Text(PAIRS_LEGEND, style="dim"), soft_wrap=soft)
    for note in board.notes:
        console.print(Text(f"note: {note}", style="yellow"), soft_wrap=soft)


def board_markdown(board: Board) -> str:
    models = [r.figures for r in board.rows]
    columns = columns_for(models)
    lines = [f"# {cell(title(board))}", "", *_table(columns, leaderboard_rows(models, columns)), ""]
    lines += [f"- {item}" for item in legend_for(columns)]
    lines += ["", "## Runs", "", *(f"- {cell(line)}" for line in run_lines(board))]
    if board.varying:
        lines += ["", "The runs differ in:", "", *(f"- {cell(line)}" for line in varying_lines(board))]
    if board.pairwise:
        lines += ["", "## Paired tests", "", "| " + " | ".join(PAIR_HEADERS) + " |",
                  "| --- | --- | " + " | ".join("---:" for _ in PAIR_HEADERS[2:-1]) + " | --- |"]
        lines += ["| " + " | ".join([cell(r[0]), cell(r[1]), *r[2:]]) + " |" for r in pair_rows(board)]
        lines += ["", f"- {PAIRS_LEGEND}"]
    if board.notes:
        lines += ["", *(f"**Note:** {cell(n)}" for n in board.notes)]
    return "\n".join(lines) + "\n"
