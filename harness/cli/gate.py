"""``grace gate OUT_DIR/report.json``: pass/fail thresholds for CI (exit 1 on failure)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "gate": "Fail (exit 1) when a report misses thresholds; for CI.",
}


class Fraction(click.ParamType):
    """0.85 or 85%."""

    name = "fraction"

    def convert(self, value: Any, param, ctx) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"{value!r} is not a fraction (give 0.85 or 85%)", param, ctx)
        if not 0.0 <= x <= 1.0:
            self.fail(f"{value!r} is outside 0..1 (give 0.85 or 85%)", param, ctx)
        return x


@click.command("gate")
@click.argument("report_path", metavar="REPORT", type=click.Path(path_type=Path))
@click.option("--min-accuracy", type=Fraction(), default=None, help="Fail below this accuracy (0.85 or 85%).")
@click.option("--max-invalid-rate", type=Fraction(), default=None,
              help="Fail above this share of invalid citations (IDs not in the KB).")
@click.option("--max-forbidden-rate", type=Fraction(), default=None,
              help="Fail above this share of responses citing an article the user who asked may not see (needs a KB "
              "whose articles have an audience, and the asker's groups: the gold 'groups' column or user_groups).")
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="An earlier report.json to compare against (regression check).")
@click.option("--max-drop", type=Fraction(), default=None,
              help="Accuracy drop from the baseline tolerated before it counts (default 0; needs --baseline).")
@click.option("--max-hallucination-rate", type=Fraction(), default=None,
              help="Fail above this share of spot-checked answers with an unsupported claim (needs a spot-check in "
              "the report: 'grace spotcheck run').")
@click.option("--max-hallucination-rise", type=Fraction(), default=None,
              help="Hallucination-rate rise from the baseline tolerated before it counts (default 0; needs --baseline).")
@click.option("--min-citation-precision", type=Fraction(), default=None,
              help="Fail a model read as references (several citations per answer) below this mean citation precision "
              "(cited articles that answer the question, unmapped references counting as misses).")
@click.option("--min-citation-recall", type=Fraction(), default=None,
              help="Fail a model read as references below this mean citation recall (the gold's articles cited).")
@click.option("--min-citation-f1", type=Fraction(), default=None,
              help="Fail a model read as references below this mean per-answer citation F1.")
@click.option("--max-tool-calls", type=float, default=None,
              help="Fail a model that searches the KB itself when its tool calls per answer, at the 95th percentile, "
              "are above this (the report's funnel; 'cap the agent loop').")
@click.option("--min-gold-found", type=Fraction(), default=None,
              help="Fail a model whose searches returned a gold article for less than this share of answerable "
              "questions (the report's funnel).")
@click.option("--model", "models", multiple=True,
              help="Check only this model (repeatable; default: every model in the report).")
def gate(report_path: Path, min_accuracy, max_invalid_rate, max_forbidden_rate, baseline: Path | None, max_drop,
         max_hallucination_rate, max_hallucination_rise, min_citation_precision, min_citation_recall, min_citation_f1,
         max_tool_calls, min_gold_found, models: tuple[str, ...]) -> None:
    """Fail (exit 1) when a scored run misses its thresholds; exit 0 when all checks pass.

    REPORT is OUT_DIR/report.json (or OUT_DIR). Each selected model must have
    accuracy >= --min-accuracy and invalid-citation rate <= --max-invalid-rate.

    \b
    Permissions: --max-forbidden-rate F fails a model when more than F of its
    responses cite an article the user who asked may not see (outcome
    forbidden_citation). A report with no permission check (no article has an
    audience, or no response says who asked) is bad input, never a pass.

    \b
    Regression rule (with --baseline): a model fails only when its accuracy
    is BOTH more than --max-drop below the baseline's accuracy AND below the
    lower bound of the baseline's 95% bootstrap CI. A drop inside the
    baseline's CI is noise and passes. Models absent from the baseline are
    reported and skipped unless named with --model.

    
    Hallucination: --max-hallucination-rate F fails a model whose spot-check
    hallucination rate (answers with an unsupported claim) is above F. With
    --baseline, when both reports were spot-checked by the same judge, template,
    mode and scope, a model fails only when its rate rose by more than
    --max-hallucination-rise AND is above the upper bound of the baseline's 95% CI.
    Given by name, --max-hallucination-rise needs such a spot-check on both sides.

    The gate fails closed: every figure a check reads, in the report and in the
    baseline, must be a number from 0 to 1 as written (a CI: null or [low, high]).
    NaN, null, a string, true or a missing figure is bad input, named by file,
    model and figure.

    \b
    Citations: --min-citation-precision, --min-citation-recall and
    --min-citation-f1 fail a model whose citations are read as references
    (a system's own sources, several per answer) below that mean figure. A
    model read as GRACE IDs has no such figure: bad input, never a pass
    (pick models with --model).

    Exit codes: 0 all checks passed, 1 a check failed, 2 bad input (missing
    file, not a grace report, unknown model, no spot-check for a hallucination
    threshold, no permission check for a forbidden-citation threshold, a figure
    a check needs that is not a number).
    """
    from harness.workflows import gate as workflow

    result = workflow.check_gate(report_path, min_accuracy=min_accuracy, max_invalid_rate=max_invalid_rate,
                            baseline=baseline, max_drop=max_drop, max_hallucination_rate=max_hallucination_rate,
                            max_hallucination_rise=max_hallucination_rise, max_forbidden_rate=max_forbidden_rate,
                            min_citation_precision=min_citation_precision, min_citation_recall=min_citation_recall,
                            min_citation_f1=min_citation_f1, models=models, max_tool_calls=max_tool_calls,
                            min_gold_found=min_gold_found)
    for note in result.notes:
        click.echo(f"note  {note}")
    results, failed = result.checks, result.failed
    for ok, msg in results:
        click.echo(f"{'PASS' if ok else 'FAIL'}  {msg}")
    if failed:
        click.echo(f"gate failed: {len(failed)} of {len(results)} check(s) failed", err=True)
        sys.exit(1)  # not click's Exit: grace's main() runs click with standalone_mode=False
    click.echo(f"gate passed: {len(results)} check(s)")
