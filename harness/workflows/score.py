"""The scoring workflows: ``grace score`` (a responses file into scores and a report) and ``grace report``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from harness.workflows.results import Run
    from kb_builder.gold import GoldSet
    from kb_builder.store import KB

__all__ = ["report", "score"]


def score(responses: str | Path, gold: str | Path | GoldSet, kb: str | Path | KB, out: str | Path | None = None, *,
          seed: int = 0,
          bootstrap: int = 2000, workers: int | None = None, machine_gold: str | Path | None = None) -> Run:
    """Score a responses file (a run folder's, or any file in the format) into ``out`` (default: its folder).

    ``gold`` is a gold CSV, or a gold set already read (a ``GoldSet``: ``grace import-logs`` hands over its
    questions, labelled or not); ``kb`` a KB folder or a loaded KB. ``machine_gold`` (a suggestions CSV of
    ``grace annotations suggest``, or a gold-format CSV of model or LLM labels) labels every question by machine:
    ``gold`` is then the human-labelled subset, and the report adds prediction-powered figures (``report.ppi``)."""
    from harness.core.outputs import check_output_folder
    from harness.run_folder.file_names import LEADERBOARD_MD, REPORT, REPORT_HTML, SCORES
    from harness.run_folder.run_dir import RunDir
    from harness.runner.citation_settings import for_scoring
    from harness.scoring import score_responses
    from harness.workflows.results import load_run

    responses = Path(responses)
    if responses.is_dir():
        responses = RunDir(responses).responses
    # each model's citation settings, as the run folder the responses are in recorded them (run.json)
    citations = for_scoring(RunDir(responses.parent).read_run_info()) if (responses.parent / "run.json").is_file() \
        else {}
    out = Path(out) if out is not None else responses.parent
    check_output_folder(out, {"responses file": responses, "gold CSV": gold if isinstance(gold, str | Path) else gold.path,
                              "KB folder": kb if isinstance(kb, str | Path) else getattr(kb, "path", None),
                              "machine-label file": machine_gold},
                        [SCORES, REPORT, LEADERBOARD_MD, REPORT_HTML])
    machine = None
    if machine_gold is not None:
        from annotations.machine_labels import read_machine_labels
        from kb_builder.gold import load_gold, require_labels

        gold = require_labels(load_gold(gold) if isinstance(gold, str | Path) else gold,
                              "--machine-gold (its human labels of a random subset)")
        machine = read_machine_labels(machine_gold)
    score_responses(responses, gold, kb, out, seed=seed, bootstrap=bootstrap, workers=workers, machine_gold=machine,
                    citations=citations)
    return load_run(out)


def report(out: str | Path, kb: str | Path | KB | None = None, console: Console | None = None) -> dict[str, Path]:
    """Write ``leaderboard.md`` and ``report.html`` from a scored folder; print the table if given a console."""
    from harness.reports import write_reports

    return write_reports(Path(out), kb=kb, console=console)
