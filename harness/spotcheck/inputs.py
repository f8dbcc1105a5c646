"""What a spot-check reads: the scored run (hits and per-model counts) joined to the answers' text.

Scores say which answers are correct-citation hits; the text lives in the
responses file, joined on (model, question_id, repeat), from the same folder or
the path ``report.json`` recorded. A hit whose text cannot be found is an error,
not a skip: a silently smaller sample would bias every rate.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.jsonl import iter_jsonl
from harness.core.errors import GraceError, where

SCORES, RESPONSES, REPORT = "scores.jsonl", "responses.jsonl", "report.json"


@dataclass(frozen=True)
class Hit:
    model: str
    question_id: str
    repeat: int
    cited_ids: tuple[str, ...]
    text: str

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.model, self.question_id, self.repeat)

    @property
    def answer_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Counts:
    """Per model: responses scored, correct answers, correct refusals (the two kinds of accuracy hit)."""

    n: int = 0
    correct: int = 0
    correct_refusal: int = 0


@dataclass
class RunInputs:
    run_dir: Path
    scores_path: Path
    responses_path: Path
    report: dict[str, Any] | None
    hits: list[Hit]
    counts: dict[str, Counts] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        board = (self.report or {}).get("leaderboard") or []
        return [m for m in board if m in self.counts] + [m for m in self.counts if m not in board]


def run_folder(path: Path) -> Path:
    path = Path(path)
    if path.is_file():
        path = path.parent
    if not (path / SCORES).exists():
        raise GraceError(f"{path}: no {SCORES} here; give a run folder scored by 'grace run' or 'grace score'")
    return path


def _responses_path(run_dir: Path, report: dict[str, Any] | None) -> Path:
    local = run_dir / RESPONSES
    if local.exists():
        return local
    recorded = ((report or {}).get("responses") or {}).get("path")
    if recorded and Path(recorded).exists():
        return Path(recorded)
    raise GraceError(f"{run_dir}: no {RESPONSES} here and none at the path report.json records ({recorded}); "
                     "the answers' text is needed to check them")


def load_run(path: Path, models: tuple[str, ...] = ()) -> RunInputs:
    run_dir = run_folder(path)
    report = None
    if (run_dir / REPORT).exists():
        try:
            report = json.loads((run_dir / REPORT).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise GraceError(f"{run_dir / REPORT}: not valid JSON ({exc.msg}); run 'grace score' again") from None
    scores_path = run_dir / SCORES
    counts: dict[str, Counts] = {}
    wanted: dict[tuple[str, str, int], tuple[str, ...]] = {}
    for n, row in iter_jsonl(scores_path):
        try:
            model, qid, rep, outcome = str(row["model"]), str(row["question_id"]), int(row.get("repeat") or 0), row["outcome"]
        except (KeyError, TypeError, ValueError):
            raise GraceError(f"{where(scores_path, n)}: a scores line needs model, question_id, repeat and outcome") from None
        if models and model not in models:
            continue
        c = counts.setdefault(model, Counts())
        c.n += 1
        c.correct += outcome == "correct"
        c.correct_refusal += outcome == "correct_refusal"
        if outcome == "correct":
            wanted[(model, qid, rep)] = tuple(str(i) for i in row.get("cited_ids") or ())
    if models:
        unknown = sorted(set(models) - set(counts))
        if unknown:
            raise GraceError(f"{scores_path}: no responses from {', '.join(unknown)}; models here: {', '.join(counts)}")
    responses_path = _responses_path(run_dir, report)
    texts: dict[tuple[str, str, int], str] = {}
    for _, row in iter_jsonl(responses_path, torn_tail_ok=True):
        key = (str(row.get("model")), str(row.get("question_id")), int(row.get("repeat") or 0))
        if key in wanted and isinstance(row.get("response"), str) and not row.get("error"):
            texts[key] = row["response"]  # the last row wins, as in the scorer
    missing = [k for k in wanted if k not in texts]
    if missing:
        shown = ", ".join(f"{m}/{q}/repeat {r}" for m, q, r in missing[:5])
        raise GraceError(f"{len(missing)} hit(s) in {scores_path} have no answer text in {responses_path} ({shown}); "
                         "score the responses file again ('grace score') so the two match")
    hits = [Hit(m, q, r, wanted[(m, q, r)], texts[(m, q, r)]) for (m, q, r) in wanted]
    return RunInputs(run_dir, scores_path, responses_path, report, hits, counts)
