"""The board workflows of ``grace report RUN_A RUN_B ...``: one leaderboard across run folders of one gold set, the
same model under each run's configuration (k, retriever, template, output mode, its parameters) as its own row,
with a paired test between every two rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: numpy and the scorer are not every command's to load
    from harness.scoring.run_board import Board

__all__ = ["Board", "combine_runs", "write_board"]

FORMATS = {".json": "json", ".md": "markdown"}


def combine_runs(runs: Sequence[str | Path], *, models: Sequence[str] = ()) -> Board:
    """One leaderboard of every model of ``runs`` (run folders, or folders holding them), or of ``models`` only.

    Each row is a model of one run, named by what sets its run apart from the others that have it (``gpt-x ·
    k=1``, ``gpt-x · k=3``; see :mod:`harness.scoring.run_board`), with its run's own figures; ranks, significance
    letters and ``Board.pairwise`` (McNemar exact, Holm over every pair) are the board's. ``board.pair(a, b)`` is the
    test between two rows. Raises ``GraceError`` when the runs were scored against different gold sets."""
    from harness.scoring.run_board import combine
    from harness.viewer.runs import find_runs, run_ids

    found = find_runs([Path(p) for p in runs])
    return combine(list(zip(run_ids(found), found, strict=True)), models)


def write_board(runs: Sequence[str | Path], out: str | Path, *, models: Sequence[str] = ()) -> tuple[Path, Board]:
    """Write the board of ``runs`` to ``out``: ``.json`` (the :class:`Board`, every figure) or ``.md`` (the tables,
    for a README or a pull request); returns the file and the board."""
    from harness.core.errors import GraceError
    from harness.core.files import atomic_write_text

    target = Path(out)
    fmt = FORMATS.get(target.suffix.lower())
    if fmt is None:
        raise GraceError(f"--out {target}: a board is written as {' or '.join(FORMATS)} (its extension picks which)")
    if target.is_dir():
        raise GraceError(f"--out {target} is a folder; give a file name, e.g. {target / 'board.json'}")
    board = combine_runs(runs, models=models)
    if fmt == "json":
        text = board.model_dump_json(indent=1) + "\n"
    else:
        from harness.reports.board import board_markdown

        text = board_markdown(board)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)
    return target, board


def __getattr__(name: str) -> Any:
    if name == "Board":
        from harness.scoring.run_board import Board

        return Board
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
