"""``grace report OUT_DIR``: rewrite the leaderboard and HTML report of a scored run."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "report": "Write the leaderboard and HTML report for a scored run.",
}


@click.command("report")
@click.argument("out_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--kb", "kb_dir", type=click.Path(path_type=Path), default=None,
              help="KB folder, for article titles (default: the KB path recorded in report.json).")
def report(out_dir: Path, kb_dir: Path | None) -> None:
    """Write OUT_DIR/leaderboard.md and OUT_DIR/report.html from OUT_DIR/report.json, and print the leaderboard.

    Nothing is called or re-scored: run 'grace score' first if report.json is missing or stale.
    """
    from rich.console import Console

    from harness.workflows import score as workflow

    workflow.report(out_dir, kb=kb_dir, console=Console())
