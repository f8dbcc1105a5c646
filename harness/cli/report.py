"""``grace report OUT_DIR``: rewrite the leaderboard and HTML report of a scored run; ``grace report RUN_A RUN_B ...``:
one leaderboard across runs (the same model under each run's configuration, a row each, with paired tests);
``grace report --trend RUNS``: each model's accuracy across runs, as a chart."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "report": "Write a scored run's leaderboard and HTML report, one leaderboard across runs, or a trend (--trend).",
}


@click.command("report")
@click.argument("out_dirs", metavar="OUT_DIR...", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("--kb", "kb_dir", type=click.Path(path_type=Path), default=None,
              help="KB folder, for article titles (default: the KB path recorded in report.json).")
@click.option("--trend", "trend_paths", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="Instead: chart each model's accuracy (95% CI) across the runs in this folder (run folders, or a "
              "folder holding them; repeatable), in the order they started, marking each significant change "
              "between a model's consecutive runs (grace compare's rule: McNemar exact, p < 0.05).")
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="With --trend: the file to write (default: RUNS/trend.svg); its extension picks the format. With "
              "several runs: the board's file, .json (every figure) or .md.")
@click.option("--format", "fmt", type=click.Choice(["svg", "png", "json"]), default=None,
              help="With --trend: svg (default), png (needs the png extra: pip install 'grace-eval[png]') or json "
              "(the figures).")
@click.option("--metric", type=click.Choice(["accuracy", "strict", "citation-f1", "citation-precision",
                                              "citation-recall"]), default="accuracy", show_default=True,
              help="With --trend: the figure followed (strict: the strict reading's accuracy; citation-*: the "
              "citation figures of the models read as references).")
@click.option("--category", default=None, help="With --trend: the questions of this gold category only.")
@click.option("--model", "models", multiple=True, help="With --trend or several runs: only this model (repeatable).")
@click.option("--gold", default=None, help="With --trend: the gold set to follow when the runs were scored against "
              "several (its hash, or the start of it); default: the one with the most runs.")
def report(out_dirs: tuple[Path, ...], kb_dir: Path | None, trend_paths: tuple[Path, ...], out_file: Path | None,
           fmt: str | None, metric: str, category: str | None, models: tuple[str, ...], gold: str | None) -> None:
    """Write OUT_DIR/leaderboard.md and OUT_DIR/report.html from OUT_DIR/report.json, and print the leaderboard.

    Nothing is called or re-scored: run 'grace score' first if report.json is missing or stale.

    With several run folders (or a folder holding runs) of one gold set: one leaderboard across them, a row per
    model of each run, named by what sets its run apart (gpt-x · k=1, gpt-x · k=3), with a paired McNemar test
    between every two rows (Holm-corrected); --out BOARD.json or BOARD.md writes it too.

    With --trend RUNS: write each model's accuracy across the runs under RUNS as a chart (SVG or PNG) or as
    figures (JSON). Runs scored against another gold set than the one followed are left out and named.
    """
    from harness.core.errors import GraceError

    if trend_paths:
        if out_dirs:
            raise GraceError(f"give OUT_DIR ({out_dirs[0]}) or --trend RUNS, not both: OUT_DIR rewrites one run's "
                             "report, --trend charts several runs")
        _trend(list(trend_paths), out_file, fmt, metric, category, list(models), gold)
        return
    if not out_dirs:
        raise GraceError("which run? grace report OUT_DIR (a scored run folder), grace report RUN_A RUN_B (one "
                         "leaderboard across runs), or grace report --trend RUNS")
    board = len(out_dirs) > 1 or _holds_runs(out_dirs[0])
    what = ("a leaderboard across runs takes --out and --model" if board
            else "grace report OUT_DIR writes OUT_DIR's own report files")
    for name, value in (("--format", fmt), ("--category", category), ("--gold", gold)):
        if value:
            raise GraceError(f"{name} goes with --trend RUNS; {what}")
    for name, value in () if board else (("--out", out_file), ("--model", models)):
        if value:
            raise GraceError(f"{name} goes with --trend RUNS or several runs; {what}")
    if board and kb_dir:
        raise GraceError(f"--kb goes with one OUT_DIR (its article titles); {what}")
    from rich.console import Console

    if board:
        _board(list(out_dirs), out_file, list(models))
        return
    from harness.workflows import score as workflow

    workflow.report(out_dirs[0], kb=kb_dir, console=Console())


def _holds_runs(path: Path) -> bool:
    """A folder that is not a run folder but holds some (``grace report runs/``): the board of them."""
    from harness.core.errors import GraceError
    from harness.viewer.runs import find_runs, is_run_folder

    if not path.is_dir() or is_run_folder(path):
        return False
    try:
        return bool(find_runs([path]))
    except GraceError:  # an empty folder: grace report OUT_DIR says what it misses
        return False


def _board(paths: list[Path], out: Path | None, models: list[str]) -> None:
    from rich.console import Console

    from harness.reports.board import print_board
    from harness.workflows import board as workflow

    if out is None:
        result = workflow.combine_runs(paths, models=models)
    else:
        out, result = workflow.write_board(paths, out, models=models)
    print_board(result, Console())
    if out is not None:
        click.echo(f"wrote {out}")


def _trend(paths: list[Path], out: Path | None, fmt: str | None, metric: str, category: str | None,
           models: list[str], gold: str | None) -> None:
    from harness.workflows.trend import write_trend

    written, trend = write_trend(paths, out, format=fmt, gold=gold, category=category, models=models,
                                 metric={"strict": "strict_accuracy"}.get(metric, metric.replace("-", "_")))
    click.echo(f"wrote {written}: {len(trend.series)} model(s) across {len(trend.runs)} run(s) of gold set "
               f"{trend.gold_path or 'in memory'} ({trend.gold_hash[:12]})")
    for model, point in trend.changes():
        c = point.change
        click.echo(f"  significant: {model}: {c.since} -> {point.run}: {c.delta * 100:+.1f} pp "
                   f"({c.regressed} regressed, {c.improved} improved, McNemar p = {c.mcnemar_p:.3g})")
    for left in trend.left_out:
        click.echo(f"  left out: {left.run} ({left.path}): {left.reason}")
