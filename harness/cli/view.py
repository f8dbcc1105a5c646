"""``grace view [RUN_OR_FOLDER ...]``: browse runs in a local web app; ``--export DIR``: a static copy of one run."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "view": "Browse runs in a local web app: every question, every answer, runs compared.",
}


_path = click.Path(path_type=Path)


@click.command("view")
@click.argument("paths", nargs=-1, type=_path)
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Any other address than localhost requires the printed token.")
@click.option("--no-browser", "--no-open", "no_browser", is_flag=True,
              help="Print the URL only, as annotate, curate and review say it (--no-open: the same, its old name).")
@click.option("--export", "export_dir", type=_path,
              help="Write a static copy of one run into this folder (index.html plus data files, opened from "
              "file:// with no server) instead of serving. Given a folder holding runs: all of them on the Runs, "
              "Leaderboard and Trends pages, the newest one's questions.")
@click.option("--force", is_flag=True, help="With --export: write into a folder that is not empty. Only the files "
              "an earlier export wrote (listed in DIR/.grace-export.json) are replaced; any other file at a name it "
              "writes is kept as NAME.bak, and nothing else is touched.")
def view(paths: tuple[Path, ...], port: int, host: str, no_browser: bool, export_dir: Path | None, force: bool) -> None:
    """Browse runs: leaderboard, every question and answer, runs compared. Read-only on the run folders.

    RUN_OR_FOLDER is a run folder ('grace run --out') or a folder holding several (default: the current
    folder). Pages: Runs, Leaderboard, Questions (a grid with filters whose state is in the URL, so a link
    can go into a ticket), Question, Compare, Trends (each model's accuracy across the runs of one gold set).
    Each run is indexed once into grace's cache folder ($GRACE_CACHE_DIR), and again when it changes.
    """
    from harness.core.errors import GraceError
    from harness.workflows import view as workflow

    if export_dir is not None:
        if len(paths) != 1:
            raise GraceError("--export takes exactly one run folder (or one folder holding runs, for their trend): "
                             "grace view RUN --export DIR")
        index = workflow.export_view(paths[0], export_dir, force=force)
        click.echo(f"wrote {index} (open it in a browser; no server needed)")
        return
    workflow.view(list(paths) or ["."], host=host, port=port, open_browser=not no_browser)
