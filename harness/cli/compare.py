"""``grace compare RUN_A RUN_B``: two runs question by question, in the terminal, as JSON and as Markdown for CI."""

from __future__ import annotations

from pathlib import Path

import click

from harness.core.errors import GraceError

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "compare": "Compare two runs question by question: what improved, what regressed.",
}


_path = click.Path(path_type=Path)


@click.command("compare")
@click.argument("run_a", type=_path)
@click.argument("run_b", type=_path)
@click.option("--model", "-m", "models", multiple=True, help="Compare only this model (repeatable; default: every "
              "model in both runs).")
@click.option("--json", "json_out", type=_path, help="Write the comparison as JSON: per model accuracy_a, "
              "accuracy_b, delta, delta_ci, mcnemar_p, improved and regressed question IDs, per-article changes (and, for a "
              "model read as references on both sides, its change in citation F1).")
@click.option("--markdown", "markdown_out", type=_path, help="Write a Markdown summary for a pull-request comment or "
              "$GITHUB_STEP_SUMMARY (appended to when the file exists, as that file expects).")
@click.option("--force", is_flag=True, help="Replace an existing --json file (the old one is kept as .bak).")
def compare(run_a: Path, run_b: Path, models: tuple[str, ...], json_out: Path | None, markdown_out: Path | None,
            force: bool) -> None:
    """Compare RUN_B with RUN_A (e.g. today's run with last week's) question by question.

    For every model in both runs: both accuracies, the change with a paired bootstrap 95% CI, McNemar's exact
    p-value, and the questions that improved (wrong in A, right in B) and regressed. A question is right when
    more than half of its repeats are, as in the report. Both runs must be scored against the same gold set.
    Exit 0 whatever the change: gate on it with 'grace gate RUN_B/report.json --baseline RUN_A/report.json'.
    """
    from rich.console import Console

    from harness.core.outputs import check_output_file
    from harness.reports.comparison_table import comparison_markdown, print_comparison
    from harness.run_folder.run_dir import RunDir
    from harness.scoring.run_comparison import write_comparison
    from harness.workflows import compare as workflow

    inputs = {"run A": RunDir.input_files(run_a), "run B": RunDir.input_files(run_b)}
    if json_out is not None:
        check_output_file(json_out, inputs, force=force, option="--json")
    if markdown_out is not None:  # appended to, like $GITHUB_STEP_SUMMARY: only never an input
        check_output_file(markdown_out, inputs, owned=True, option="--markdown")
    with Console(stderr=True).status(f"reading the scores of {run_a} and {run_b}"):  # a million lines: seconds
        result = workflow.compare_runs(run_a, run_b, models)
    if not result.models:
        raise GraceError(f"no model is in both {run_a} and {run_b} (A: {', '.join(result.only_in_a) or 'none'}; "
                         f"B: {', '.join(result.only_in_b) or 'none'}); name one with --model")
    print_comparison(result, Console())
    if json_out is not None:
        write_comparison(json_out, result)
        click.echo(f"wrote {json_out}")
    if markdown_out is not None:
        with markdown_out.open("a", encoding="utf-8") as fh:
            fh.write(comparison_markdown(result))
        click.echo(f"wrote {markdown_out}")
