"""``grace export RUN --to TARGET``: a scored run out to Inspect, MLflow, Weights & Biases or a Parquet table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from harness.core.errors import GraceError
from harness.exports import TARGETS

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "export": "Send a scored run to Inspect, MLflow, W&B or a Parquet table.",
}


def _option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``, the value read as JSON where it is JSON (true, 3, 0.5, "x", [1, 2]), else as text."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise GraceError(f"--option {text!r}: give KEY=VALUE (e.g. --option nested=true)")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


@click.command("export")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--to", "targets", multiple=True, type=click.Choice(list(TARGETS)),
              help="Where to: inspect (an Inspect eval log per model), mlflow (an MLflow run per model), wandb (a "
              "W&B run), parquet (one tidy table). Repeatable.")
@click.option("--dest", default=None, help="Where exactly, as the target reads it: a file or folder (parquet: "
              "RUN/results.parquet; inspect: a log folder), an MLflow tracking URI (default MLFLOW_TRACKING_URI, else "
              "a local store), a W&B project (default WANDB_PROJECT). With one --to only.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A setting of the target, repeatable (e.g. --option compression=zstd for parquet); values are "
              "read as JSON where they are (true, 3), else as text.")
@click.option("--retry", is_flag=True, help="Try again every export of RUN whose last attempt failed (listed in "
              "RUN/exports.jsonl, e.g. a grace run --log-to whose tracker was down), as it was asked.")
def export(run: Path, targets: tuple[str, ...], dest: str | None, options: tuple[str, ...], retry: bool) -> None:
    """Export the scored run folder RUN through each target's own library (an optional extra each).

    Not the results viewer's static copy (that is 'grace view RUN --export DIR'): this writes the run into other
    tools' formats. Every attempt is recorded in RUN/exports.jsonl. Exits 0 when every export was written, 2 when
    one failed (the run is never changed; run the same command again).
    """
    from harness.workflows import export as workflow

    if retry:
        if targets or dest or options:
            raise GraceError("--retry tries the failed exports again as they were asked: give it without --to, "
                             "--dest and --option")
        attempts = workflow.retry_exports(run)
        if not attempts:
            click.echo(f"nothing to retry: no failed export in {run}")
            return
        for a in attempts:
            _say(a.target, a.exported, a.error, a.retry)
        if not all(a.ok for a in attempts):
            sys.exit(2)
        return
    if not targets:
        raise GraceError(f"give --to TARGET (one of {', '.join(TARGETS)}), or --retry")
    if dest is not None and len(targets) > 1:
        raise GraceError("--dest names one target's destination: give one --to with it")
    settings = dict(_option(o) for o in options)
    failed = 0
    for target in dict.fromkeys(targets):
        try:
            done = workflow.export_run(run, target, dest, **settings)
        except GraceError as exc:
            if len(targets) == 1:
                raise
            failed += 1
            _say(target, None, str(exc), "")
            continue
        _say(target, done, None, "")
    if failed:
        sys.exit(2)


def _say(target: str, done: Any, error: str | None, retry: str) -> None:
    if done is None:
        click.echo(f"error: export to {target} failed: {error}" + (f"; try again: {retry}" if retry else ""), err=True)
        return
    what = f"{done.rows:,} rows, {done.models} model(s)" if done.rows else f"{done.models} model(s)"
    click.echo(f"exported to {target}: {done.location} ({what})")
    for model, ident in done.ids.items():
        click.echo(f"  {model}: {ident}")
    for note in done.notes:
        click.echo(f"note  {note}")
