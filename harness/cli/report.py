"""``grace report OUT_DIR``: rewrite the leaderboard and HTML report of a scored run; ``grace report --trend RUNS``:
each model's accuracy across runs, as a chart."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "report": "Write the leaderboard and HTML report for a scored run, or a trend across runs (--trend).",
}


@click.command("report")
@click.argument("out_dir", type=click.Path(path_type=Path, file_okay=False), required=False)
@click.option("--kb", "kb_dir", type=click.Path(path_type=Path), default=None,
              help="KB folder, for article titles (default: the KB path recorded in report.json).")
@click.option("--trend", "trend_paths", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="Instead: chart each model's accuracy (95% CI) across the runs in this folder (run folders, or a "
              "folder holding them; repeatable), in the order they started, marking each significant change "
              "between a model's consecutive runs (grace compare's rule: McNemar exact, p < 0.05).")
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="With --trend: the file to write (default: RUNS/trend.svg); its extension picks the format.")
@click.option("--format", "fmt", type=click.Choice(["svg", "png", "json"]), default=None,
              help="With --trend: svg (default), png (needs the png extra: pip install 'grace-eval[png]') or json "
              "(the figures).")
@click.option("--metric", type=click.Choice(["accuracy", "strict", "citation-f1", "citation-precision",
                                              "citation-recall"]), default="accuracy", show_default=True,
              help="With --trend: the figure followed (strict: the strict reading's accuracy; citation-*: the "
              "citation figures of the models read as references).")
@click.option("--category", default=None, help="With --trend: the questions of this gold category only.")
@click.option("--model", "models", multiple=True, help="With --trend: only this model (repeatable).")
@click.option("--gold", default=None, help="With --trend: the gold set to follow when the runs were scored against "
              "several (its hash, or the start of it); default: the one with the most runs.")
def report(out_dir: Path | None, kb_dir: Path | None, trend_paths: tuple[Path, ...], out_file: Path | None,
           fmt: str | None, metric: str, category: str | None, models: tuple[str, ...], gold: str | None) -> None:
    """Write OUT_DIR/leaderboard.md and OUT_DIR/report.html from OUT_DIR/report.json, and print the leaderboard.

    Nothing is called or re-scored: run 'grace score' first if report.json is missing or stale.

    With --trend RUNS: write each model's accuracy across the runs under RUNS as a chart (SVG or PNG) or as
    figures (JSON). Runs scored against another gold set than the one followed are left out and named.
    """
    from harness.core.errors import GraceError

    if trend_paths:
        if out_dir is not None:
            raise GraceError(f"give OUT_DIR ({out_dir}) or --trend RUNS, not both: OUT_DIR rewrites one run's report, "
                             "--trend charts several runs")
        _trend(list(trend_paths), out_file, fmt, metric, category, list(models), gold)
        return
    if out_dir is None:
        raise GraceError("which run? grace report OUT_DIR (a scored run folder), or grace report --trend RUNS")
    for name, value in (("--out", out_file), ("--format", fmt), ("--category", category), ("--model", models),
                        ("--gold", gold)):
        if value:
            raise GraceError(f"{name} goes with --trend RUNS; grace report OUT_DIR writes OUT_DIR's own report files")
    from rich.console import Console

    from harness.workflows import score as workflow

    workflow.report(out_dir, kb=kb_dir, console=Console())


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
