"""Putting spot-check results where the report reads them: ``report.json["spotcheck"]``, then re-render.

The report block (``SpotcheckBlock.from_spotcheck``, built by the report model so
that re-scoring carries it over without the scorer importing the spot-check) is
a compact copy of ``spotcheck.json`` (per-model rates with
CIs, the judge block with its calibration mark, the judge's run-to-run spread),
so the HTML report needs no second file. ``spotcheck.json`` stays the full record.
Each model's block carries the n behind its figures, ``display`` (each rate
as printed, with its n), the unreadable-verdict and truncated-answer counts,
and the notes say the same in words, so a page shows "100.0% (n=1, too few
for an interval)" rather than a bare "100%".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.run_folder.report import SpotcheckBlock
from harness.run_folder.run_dir import RunDir
from harness.run_folder.spotcheck import SpotcheckFile


def notes_for(spot: SpotcheckFile) -> str:
    judge, variance = spot.judge, spot.variance
    parts = []
    if judge.kind == "lexical":
        parts.append("Judge baseline:lexical is an offline word-overlap check (every content word and number of a "
                     "segment must appear in its article), not an LLM: a cheap, lower-quality judge that misses "
                     "swapped entities and dropped conditions and fails correct paraphrases.")
    if not judge.calibrated:
        parts.append("Judge not calibrated against human labels (grace spotcheck calibrate).")
    models = spot.models
    few = [m for m, v in models.items() if v.ci_note]
    if few:
        shown = "; ".join(f"{m}: " + ", ".join(f"{k.replace('_', ' ')} {t}" for k, t in models[m].display.items())
                          for m in few)
        parts.append(f"No interval is given from fewer than {spot.min_answers_for_ci} checked answers ({shown}).")
    for m, v in models.items():
        if v.n_unreadable:
            parts.append(f"{m}: {v.n_unreadable} of {v.n_verdicts} verdicts unreadable (asked twice); "
                         "their answers are left out.")
        if v.truncated_skipped:
            n = v.truncated_skipped
            parts.append(f"{m}: {n} truncated answer{'' if n == 1 else 's'} skipped (cut off by max_tokens).")
    if (variance.get("repeats") or 1) > 1 and variance.get("max_spread") is not None:
        parts.append(f"Judge run-to-run spread over {variance['repeats']} repeats: up to "
                     f"{100 * variance['max_spread']:.1f} points of groundedness; smaller differences between "
                     "models are noise.")
    else:
        parts.append("Run-to-run spread of the judge not measured (use --repeats 3).")
    parts.append("Correct refusals count as safe in the hallucination risk.")
    if spot.citation_support is not None:
        kappa = spot.citation_support.meta_eval.get("kappa")
        parts.append("Citation support (models citing several sources): each cited sentence is judged against every "
                     "article its answer cites; own = backed by its own citation, other = only by another cited "
                     "article, none = by none; the judge's kappa on the multi-citation meta-eval cases is "
                     + (f"{kappa:.2f}." if kappa is not None else "not known (no readable verdicts, or chance "
                        "agreement total)."))
    return " ".join(parts)


def update_report(run_dir: Path, spot: SpotcheckFile, console: Any = None) -> Path | None:
    """Write the block into ``run_dir/report.json`` (if there is one) and re-render the HTML; returns report.html."""
    run = RunDir(run_dir)
    if not run.report.exists():
        return None
    report = run.read_report()
    report.spotcheck = SpotcheckBlock.from_spotcheck(spot)
    run.write_report(report)
    try:
        from harness.reports import write_reports
    except ImportError:
        return None
    from harness.core.errors import GraceError

    try:
        written = write_reports(run_dir)
    except GraceError as exc:  # the spot-check is saved; only the page is stale
        if console is not None:
            console.print(f"[yellow]report not re-rendered: {exc}[/]")
        return None
    return written.get("html")
