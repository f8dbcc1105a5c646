"""What the review page shows besides the labels: the question, the full answer, the KB.

Everything is found from the run folder the way ``grace spotcheck run`` found it
(``report.json`` and ``run.json`` record the gold, responses and KB paths), and a
missing piece degrades the page instead of refusing to start: without the gold file
the question text is absent, without the responses the segments are listed alone.
The judge's verdicts (``spotcheck/judgements.jsonl``) are never read here: the
reviewer must not see them (see :mod:`harness.spotcheck.review`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import GraceError
from harness.core.files import spreadsheet_unsafe
from harness.run_folder.file_names import RESPONSES, REVIEW_CSV, RUN_INFO, SPOTCHECK
from harness.run_folder.report import Report
from harness.run_folder.run_dir import RunDir
from kb_builder.kb_dir import KbDir


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_report(run_dir: Path) -> Report | None:
    """Only where the run's KB, gold and responses were: a missing or unreadable report means asking for them."""
    try:
        return RunDir(run_dir).read_report()
    except GraceError:
        return None


def _recorded(run_dir: Path, candidates: list[str | None]) -> Path | None:
    """The first recorded path that exists: absolute, from the working folder, or from the run folder."""
    for rec in candidates:
        if not rec:
            continue
        p = Path(rec)
        for cand in ([p] if p.is_absolute() else [p, run_dir / p, run_dir.parent / p]):
            if cand.is_file() or (cand.is_dir() and KbDir(cand).articles.exists()):
                return cand
    return None


@dataclass
class RunSources:
    run_dir: Path
    review_csv: Path
    kb_dir: Path
    questions: dict[str, str] = field(default_factory=dict)
    answers: dict[tuple[str, str, int], str] = field(default_factory=dict)
    gold: Path | None = None
    responses: Path | None = None
    kb_hash: str | None = None  # of the KB the segments were judged against
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def find(cls, run: Path, *, kb_dir: Path | None = None, gold: Path | None = None) -> RunSources:
        run = Path(run)
        if run.is_file():  # the review CSV itself
            run_dir, review_csv = run.parent, run
        else:  # the CSV of the last spot-check: segments or, for --mode claims, claims
            named = (_read_json(run / SPOTCHECK).get("review_csv") or REVIEW_CSV) if run.is_dir() else REVIEW_CSV
            run_dir, review_csv = run, run / Path(str(named)).name
            if not review_csv.exists() and (run / REVIEW_CSV).exists():
                review_csv = run / REVIEW_CSV
        if not run_dir.exists():
            raise GraceError(f"{run_dir}: run folder not found")
        if not review_csv.exists():
            raise GraceError(f"{review_csv}: not found; run 'grace spotcheck run {run_dir} --kb KB_DIR --judge MODEL' "
                             "first, it writes the segments to review")
        report = _read_report(run_dir)
        runinfo = _read_json(run_dir / RUN_INFO)
        spot = _read_json(run_dir / SPOTCHECK)
        warnings: list[str] = []
        if kb_dir is None:
            kb_dir = _recorded(run_dir, [((spot.get("run") or {}).get("kb") or {}).get("path"),
                                         report.kb.path if report else None, (runinfo.get("kb") or {}).get("path")])
            if kb_dir is None:
                raise GraceError(f"{run_dir}: give --kb KB_DIR (the articles the answers cite); "
                                 "the run names no KB folder that exists")
        if gold is None:
            recorded = [report.gold.path if report else None, (runinfo.get("gold") or {}).get("path")]
            gold = _recorded(run_dir, recorded)
            if gold is None:
                shown = next((r for r in recorded if r), None)
                warnings.append(f"question text not shown: the gold file the run names ({shown or 'none'}) is not "
                                "found from here; pass --gold GOLD.csv")
        elif not gold.exists():
            raise GraceError(f"{gold}: gold file not found")
        src = cls(run_dir, review_csv, Path(kb_dir), gold=gold, warnings=warnings,
                  kb_hash=((spot.get("run") or {}).get("kb") or {}).get("hash"))
        if gold is not None:
            from kb_builder.gold import read_questions

            src.questions = {q.question_id: q.question for q in read_questions(gold)}
        responses = run_dir / RESPONSES
        src.responses = responses if responses.exists() else _recorded(run_dir, [report.responses.path if report else None])
        if src.responses is None:
            warnings.append(f"answers shown as their segments only: no {RESPONSES} in {run_dir} or where report.json says")
        return src

    def load_answers(self, keys: set[tuple[str, str, int]]) -> None:
        """The answer text of each reviewed answer; the last line wins, as in the scorer."""
        if self.responses is None:
            return
        with self.responses.open(encoding="utf-8") as fh:
            for raw in fh:
                try:
                    row = json.loads(raw)
                    key = (str(row["model"]), str(row["question_id"]), int(row.get("repeat") or 0))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # the scorer already reported it; the page falls back to the segments
                if key in keys and isinstance(row.get("response"), str) and not row.get("error"):
                    self.answers[key] = row["response"]
        missing = len(keys - set(self.answers))
        if missing:
            self.warnings.append(f"{missing} answer(s) not found in {self.responses}: shown as their segments only")


def locate(answer: str, segments: list[str]) -> list[tuple[int, int] | None]:
    """Where each segment sits in the answer, in reading order (``None``: not found verbatim).

    Segments are cut from the answer as written, so an exact search from the end of the
    previous one finds them; whitespace is matched loosely in case the cut re-flowed it. A segment as
    stored in the review CSV (``'=...``, escaped against spreadsheet formulas) is matched as the model wrote it.
    """
    out: list[tuple[int, int] | None] = []
    pos = 0
    for text in segments:
        text = (spreadsheet_unsafe(text) or "").strip()
        span = None
        if text:
            at = answer.find(text, pos)
            if at >= 0:
                span = (at, at + len(text))
            else:
                pattern = r"\s+".join(re.escape(w) for w in text.split())
                m = re.compile(pattern).search(answer, pos)
                span = m.span() if m else None
        out.append(span)
        if span:
            pos = span[1]
    return out


def answer_pieces(answer: str, spans: list[tuple[int, int] | None]) -> list[list]:
    """``[text, segment_position]`` pieces of the whole answer; -1 for text outside every segment."""
    pieces: list[list] = []
    pos = 0
    for n, span in enumerate(spans):
        if span is None:
            continue
        a, b = span
        if a > pos:
            pieces.append([answer[pos:a], -1])
        pieces.append([answer[a:b], n])
        pos = b
    if pos < len(answer):
        pieces.append([answer[pos:], -1])
    return pieces
