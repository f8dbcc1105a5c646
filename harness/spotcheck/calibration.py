"""How far the judge can be trusted: its verdicts against human labels on the same segments.

The positive class is "unsupported", the thing the spot-check hunts:
precision says how many of the judge's alarms a human confirms, recall how
many of the human-found hallucinations the judge caught, and Cohen's kappa the
agreement beyond chance. Labels are matched on (model, question_id, repeat,
segment_index); a label whose segment text no longer matches what was judged
(the run changed since it was labelled) is stale and left out, never guessed.

A claims spot-check (``spotcheck.json`` says ``"mode": "claims"``) is
calibrated on its claims (``spotcheck_claims_review.csv``, where
``segment_index`` is the claim's index and a label may also be ``partial``):
besides the binary figures on "unsupported", Cohen's kappa over the three
classes and, per class, kappa of that class against the other two, so a judge
that agrees on supported claims but not on partial ones shows it.

Reading and figuring are apart from writing: :func:`judge_verdicts` reads, :func:`match`
pairs and :func:`figures` computes without touching a file, so a page (the team review's
calibration page, :mod:`annotations.review_team`) shows the same figures live that
:func:`calibrate` writes to ``calibration.json``. Every kappa is
:func:`harness.stats.kappa.cohen_kappa`'s, the one implementation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.core.hashing import file_hash
from harness.core.jsonl import iter_jsonl
from harness.run_folder.file_names import CALIBRATION
from harness.run_folder.run_dir import RunDir
from harness.spotcheck.passes import load_done
from harness.spotcheck.publish import update_report
from harness.spotcheck.review import HumanLabel, read_labels, same_text
from harness.spotcheck.spotcheck_records import (
    CalibrationFile,
    JudgeBlock,
    SpotcheckFile,
    read_spotcheck,
    write_spotcheck,
)
from harness.stats import kappa as agreement


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Kappa of two binary raters; None when there is nothing to compare or chance agreement is total (both raters
    constant and equal). The one formula is :func:`harness.stats.kappa.cohen_kappa`'s."""
    return multiclass_kappa([str(x) for x in a], [str(x) for x in b])


def multiclass_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two raters over any number of classes; None when empty or chance agreement is total."""
    if not a:
        return None
    k = agreement.cohen_kappa(a, b)
    return None if math.isnan(k) else k


def class_stats(human: list[str], judge: list[str], classes: tuple[str, ...]) -> dict[str, Any]:
    """Kappa over all classes, and per class (that class against the rest), with each class's counts."""
    r = lambda x: None if x is None else round(x, 6)  # noqa: E731
    per = {c: {"kappa": r(cohen_kappa([h == c for h in human], [j == c for j in judge])),
               "human": human.count(c), "judge": judge.count(c),
               "both": sum(h == c and j == c for h, j in zip(human, judge, strict=True))} for c in classes}
    confusion = {h: {j: sum(1 for x, y in zip(human, judge, strict=True) if x == h and y == j) for j in classes}
                 for h in classes}
    return {"kappa_multiclass": r(multiclass_kappa(human, judge)), "kappa_per_class": per,
            "confusion_classes": confusion}


def agreement_stats(human_unsupported: list[bool], judge_unsupported: list[bool]) -> dict[str, Any]:
    tp = sum(h and j for h, j in zip(human_unsupported, judge_unsupported, strict=True))
    fp = sum(j and not h for h, j in zip(human_unsupported, judge_unsupported, strict=True))
    fn = sum(h and not j for h, j in zip(human_unsupported, judge_unsupported, strict=True))
    tn = len(human_unsupported) - tp - fp - fn
    n = len(human_unsupported)
    r = lambda x: None if x is None else round(x, 6)  # noqa: E731
    return {
        "n": n,
        "agreement": r((tp + tn) / n) if n else None,
        "kappa": r(cohen_kappa(human_unsupported, judge_unsupported)),
        "precision_unsupported": r(tp / (tp + fp)) if tp + fp else None,
        "recall_unsupported": r(tp / (tp + fn)) if tp + fn else None,
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    }


def _judge_rows(spot: SpotcheckFile, spot_path: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """The judge's verdict (repeat 0) per segment, from the judgements file spotcheck.json points to."""
    rel = spot.judgements.get("path")
    if not rel:
        raise GraceError(f"{spot_path}: no judgements path; is this a spotcheck.json written by 'grace spotcheck run'?")
    path = spot_path.parent / rel
    if not path.exists():
        raise GraceError(f"{path}: judgements file not found (named by {spot_path})")
    judge, template_hash = spot.judge.name, spot.judge.template_hash
    out: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for row in load_done(path).values():  # already the latest row per judgement
        if row.get("judge") == judge and row.get("template_hash") == template_hash and row.get("judge_repeat") == 0:
            out[(row["model"], row["question_id"], int(row["repeat"]), int(row["segment_index"]))] = row
    return out


def _claim_rows(spot: SpotcheckFile, spot_path: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    """The judge's verdict (repeat 0) per claim, from the claims file spotcheck.json points to; each row's
    ``segment_text`` is its claim and ``supported`` whether the verdict is "supported"."""
    path = spot_path.parent / (spot.judgements.get("path") or "")
    if not path.is_file():
        raise GraceError(f"{path}: claims file not found (named by {spot_path})")
    out: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for _, row in iter_jsonl(path, hint="; run 'grace spotcheck run' again"):
        if row.get("kind") == "claim" and row.get("judge_repeat") == 0 and row.get("verdict") is not None:
            out[(row["model"], row["question_id"], int(row["repeat"]), int(row["claim_index"]))] = {
                **row, "segment_text": row["claim"], "supported": row["verdict"] == "supported"}
    return out


@dataclass
class Matched:
    """Human labels laid over the judge's verdicts: the pairs compared, and what was left out and why."""

    human: list[bool] = field(default_factory=list)  # per pair: the human said unsupported
    judge: list[bool] = field(default_factory=list)  # ... the judge did
    human3: list[str] = field(default_factory=list)  # claims: the human's verdict (supported, partial, unsupported)
    judge3: list[str] = field(default_factory=list)  # ... the judge's
    pairs: list[tuple[HumanLabel, dict[str, Any]]] = field(default_factory=list)  # each label with the judge's row
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    unmatched: int = 0  # labels of a segment the judge did not judge (or gave no verdict)
    stale: int = 0  # labels whose segment text changed since


def judge_verdicts(judge_json: Path) -> tuple[SpotcheckFile, dict[tuple[str, str, int, int], dict[str, Any]]]:
    """The spot-check and its judge's verdict per segment (or claim), read only: what a page shows and
    :func:`calibrate` writes from."""
    spot = read_spotcheck(judge_json)
    return spot, (_claim_rows(spot, judge_json) if spot.mode == "claims" else _judge_rows(spot, judge_json))


def match(labels: list[HumanLabel], verdicts: dict[tuple[str, str, int, int], dict[str, Any]],
          claims: bool) -> Matched:
    """Pair each label with the judge's verdict on the same, unchanged segment; nothing is read or written."""
    m = Matched()
    for lab in labels:
        row = verdicts.get(lab.key)
        if row is None or row.get("supported") is None:
            m.unmatched += 1
            continue
        if lab.segment_text is not None and lab.segment_text.strip() and not same_text(lab.segment_text, row["segment_text"]):
            m.stale += 1
            continue
        m.pairs.append((lab, row))
        if claims:
            m.human.append(lab.verdict == "unsupported")
            m.judge.append(row["verdict"] == "unsupported")
            m.human3.append(lab.verdict)
            m.judge3.append(row["verdict"])
            differ, said = lab.verdict != row["verdict"], (lab.verdict, row["verdict"])
        else:
            m.human.append(not lab.supported)
            m.judge.append(not row["supported"])
            differ = lab.supported != row["supported"]
            said = ("supported" if lab.supported else "unsupported", "supported" if row["supported"] else "unsupported")
        if differ:
            m.disagreements.append({
                "model": lab.model, "question_id": lab.question_id, "repeat": lab.repeat,
                "segment_index": lab.segment_index, "segment_text": row["segment_text"],
                "citations": row.get("citations"), "human": said[0], "judge": said[1],
                "judge_explanation": row.get("explanation"), "judge_source": row.get("source"),
                "note": lab.note, "reviewer": lab.reviewer, "line": lab.line,
            })
    return m


def figures(m: Matched, claims: bool) -> dict[str, Any]:
    """Agreement, kappa, precision and recall on "unsupported", the confusion; for claims also per class."""
    stats = agreement_stats(m.human, m.judge)
    if claims:
        from harness.spotcheck.claims import VERDICTS

        stats.update(class_stats(m.human3, m.judge3, VERDICTS))
        stats["agreement"] = round(sum(h == j for h, j in zip(m.human3, m.judge3, strict=True)) / len(m.human3), 6) \
            if m.human3 else None
    return stats


def calibrate(human_csv: Path, judge_json: Path, console: Any = None) -> dict[str, Any]:
    """Compare, write ``calibration.json`` next to ``judge_json``, and mark the judge calibrated there and in the report."""
    spot, verdicts = judge_verdicts(judge_json)
    judge = spot.judge
    labels = read_labels(human_csv)
    if not labels:
        raise GraceError(f"{human_csv}: no labelled rows (fill the 'supported' column with true or false)")
    claims = spot.mode == "claims"
    m = match(labels, verdicts, claims)
    if not m.human:
        raise GraceError(f"{human_csv}: none of the {len(labels)} labelled rows matches a segment judged by "
                         f"{judge.name} in {judge_json} ({m.unmatched} unknown, {m.stale} with changed text)")
    stats = figures(m, claims)
    calib = CalibrationFile(
        mode="claims" if claims else "segments",
        created_at=now(),
        human_csv={"path": str(human_csv), "hash": file_hash(human_csv), "labelled_rows": len(labels),
                   "reviewers": sorted({lab.reviewer for lab in labels if lab.reviewer})},
        judge=judge.name, template_hash=judge.template_hash, n_unmatched=m.unmatched, n_stale=m.stale,
        disagreements=m.disagreements, **stats,
    ).model_dump(mode="json")
    out_dir = judge_json.parent
    with RunDir(out_dir).lock():
        return _write_calibration(out_dir, judge_json, spot, judge, calib, stats, console)


def _write_calibration(out_dir: Path, judge_json: Path, spot: SpotcheckFile, judge: JudgeBlock,
                       calib: dict[str, Any], stats: dict[str, Any], console: Any) -> dict[str, Any]:
    atomic_write_text(RunDir(out_dir).calibration, json.dumps(calib, indent=2, ensure_ascii=False) + "\n")
    judge.calibrated, judge.kappa, judge.n = True, stats["kappa"], stats["n"]
    judge.precision_unsupported, judge.recall_unsupported = stats["precision_unsupported"], stats["recall_unsupported"]
    judge.calibration = CALIBRATION
    if "kappa_per_class" in stats:
        judge.kappa_multiclass = stats["kappa_multiclass"]
        judge.kappa_per_class = {c: v["kappa"] for c, v in stats["kappa_per_class"].items()}
    from harness.spotcheck.publish import notes_for

    spot.notes = notes_for(spot)
    write_spotcheck(judge_json, spot)
    calib["_report_html"] = update_report(out_dir, spot, console)
    return calib
