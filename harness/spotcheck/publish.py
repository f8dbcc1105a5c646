"""Putting spot-check results where the report reads them: ``report.json["spotcheck"]``, then re-render.

The report block is a compact copy of ``spotcheck.json`` (per-model rates with
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

from harness.rundir import SPOTCHECK, RunDir

_MODEL_KEYS = ("hits", "n", "n_segments", "groundedness", "groundedness_ci95", "hallucination_rate",
               "hallucination_rate_ci95", "hallucination_risk", "hallucination_risk_ci95", "groundedness_spread",
               "groundedness_n", "hallucination_rate_n", "hallucination_risk_n", "ci_note", "display",
               "n_incomplete", "n_verdicts", "n_unreadable", "n_failed_calls", "truncated_skipped")


def report_block(spot: dict[str, Any]) -> dict[str, Any]:
    judge = dict(spot["judge"])
    return {
        "schema_version": spot["schema_version"],
        "path": SPOTCHECK,
        "created_at": spot["created_at"],
        "judge": judge,
        "sample": {"per_model": spot["sample"].get("per_model"), "seed": spot["seed"],
                   "strategy": spot["sample"].get("strategy")},
        "repeats": spot["variance"].get("repeats"),
        "max_judge_spread": spot["variance"].get("max_spread"),
        "min_answers_for_ci": spot.get("min_answers_for_ci"),
        "models": {m: {k: v.get(k) for k in _MODEL_KEYS} for m, v in spot["models"].items()},
        "notes": spot.get("notes"),
    }


def notes_for(spot: dict[str, Any]) -> str:
    judge, variance = spot["judge"], spot["variance"]
    parts = []
    if judge.get("kind") == "lexical":
        parts.append("Judge baseline:lexical is an offline word-overlap check (every content word and number of a "
                     "segment must appear in its article), not an LLM: a cheap, lower-quality judge that misses "
                     "swapped entities and dropped conditions and fails correct paraphrases.")
    if not judge.get("calibrated"):
        parts.append("Judge not calibrated against human labels (grace spotcheck calibrate).")
    models = spot.get("models") or {}
    few = [m for m, v in models.items() if v.get("ci_note")]
    if few:
        shown = "; ".join(f"{m}: " + ", ".join(f"{k.replace('_', ' ')} {t}" for k, t in (models[m].get("display") or {}).items())
                          for m in few)
        parts.append(f"No interval is given from fewer than {spot.get('min_answers_for_ci')} checked answers ({shown}).")
    for m, v in models.items():
        if v.get("n_unreadable"):
            parts.append(f"{m}: {v['n_unreadable']} of {v.get('n_verdicts')} verdicts unreadable (asked twice); "
                         "their answers are left out.")
        if v.get("truncated_skipped"):
            n = v["truncated_skipped"]
            parts.append(f"{m}: {n} truncated answer{'' if n == 1 else 's'} skipped (cut off by max_tokens).")
    if (variance.get("repeats") or 1) > 1 and variance.get("max_spread") is not None:
        parts.append(f"Judge run-to-run spread over {variance['repeats']} repeats: up to "
                     f"{100 * variance['max_spread']:.1f} points of groundedness; smaller differences between "
                     "models are noise.")
    else:
        parts.append("Run-to-run spread of the judge not measured (use --repeats 3).")
    parts.append("Correct refusals count as safe in the hallucination risk.")
    return " ".join(parts)


def update_report(run_dir: Path, spot: dict[str, Any], console: Any = None) -> Path | None:
    """Write the block into ``run_dir/report.json`` (if there is one) and re-render the HTML; returns report.html."""
    run = RunDir(run_dir)
    if not run.report.exists():
        return None
    report = run.read_report()
    report["spotcheck"] = report_block(spot)
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
