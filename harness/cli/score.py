"""``grace score RESPONSES.jsonl --gold GOLD.csv --kb KB_DIR --out OUT_DIR``."""

from __future__ import annotations

import time
from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "score": "Score a responses file against a gold set.",
}


@click.command("score")
@click.argument("responses", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--gold", "gold_path", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Gold CSV: question_id, question, expected_citations, must_refuse; or questions alone "
              "(question_id, question): scored without accuracy.")
@click.option("--kb", "kb_dir", required=True, type=click.Path(path_type=Path),
              help="KB folder (only articles.jsonl is needed).")
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for scores.jsonl and report.json (default: the responses file's folder).")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option("--bootstrap", "n_bootstrap", default=2000, show_default=True,
              help="Bootstrap resamples (of questions) for the 95% intervals of means such as citation F1 (a share such as accuracy gets Wilson's interval); 0: no intervals.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes sharing a large responses file (default: one per core, up to 8, above 32 MB).")
@click.option("--machine-gold", "machine_gold", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Machine labels for every question (a suggestions CSV from 'grace annotations suggest', or a "
              "gold-format CSV of model or LLM labels): --gold is then the human-labelled random subset ('grace "
              "annotations sample'), and accuracy, refusal calibration and model differences are also given "
              "prediction-powered (PPI++) over every question.")
def score(responses: Path, gold_path: Path, kb_dir: Path, out_dir: Path | None, seed: int, n_bootstrap: int,
          workers: int | None, machine_gold: Path | None) -> None:
    """Score a responses file against a gold set.

    Each response is read twice: strictly (only the prompt's own format: [ID: x]
    and the exact refusal sentence) and leniently (also [ID:x], (ID: x), [x] for
    a KB ID, ID lists, JSON answers and refusal paraphrases), and judged as one
    of: correct, correct_refusal, false_refusal, invalid_citation,
    unshown_citation, answered_unanswerable, no_citation, multiple_citations,
    wrong_citation, error, and forbidden_citation (an article the user who
    asked may not see: the KB gives it an audience, the gold's groups column or
    the row's user_groups say who asked). Writes OUT_DIR/scores.jsonl (one line
    per response) and OUT_DIR/report.json (accuracy with bootstrap CIs, per
    gold category when the gold file has a category column, per-article
    precision/recall/F1, refusal calibration, retrieval vs model errors,
    repeat agreement, McNemar significance, cost and latency).
    """
    from rich.console import Console
    from rich.text import Text

    from harness.workflows import score as workflow
    from kb_builder.loader import load_kb

    console = Console()
    out_dir = out_dir or responses.parent
    kb = load_kb(kb_dir, write_missing=False)
    start = time.perf_counter()
    report = workflow.score(responses, gold_path, kb, out_dir, seed=seed, bootstrap=n_bootstrap, workers=workers,
                            machine_gold=machine_gold).report
    took = time.perf_counter() - start
    soft = not console.is_terminal  # a log line is not broken at 80 columns
    console.print(Text(f"scored {report.responses.n:,} responses from {len(report.models)} model(s) in {took:.1f}s "
                       f"-> {out_dir}"), soft_wrap=soft)
    for warning in report.warnings:
        console.print(Text("warning: ", style="yellow") + Text(warning), soft_wrap=soft)  # Text: names are not markup
    workflow.report(out_dir, kb=kb, console=console)
