"""What a spot-check reads: the scored run (answers in scope and per-model counts) joined to the answers' text.

Scores say which answers are in scope (``hits``: correct citations, the
default; ``answered``: every answer that is not a refusal; ``all``: refusals
too), with their gold and shown articles (for coverage and answer quality);
the text lives in the
responses file, joined on (model, question_id, repeat), from the same folder or
the path ``report.json`` recorded. A hit whose text cannot be found is an error,
not a skip: a silently smaller sample would bias every rate.

A hit whose answer was cut off by the output limit (``finish_reason`` "length",
"max_tokens" or "MAX_TOKENS" in the responses file, or ``truncated`` in its
score row) is not checked: its last claim is half a sentence.
It is counted per model (``truncated``) and reported, never silently dropped;
the rates are then those of the answers that were not cut off.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import GraceError
from harness.run_folder.file_names import RESPONSES, SCORES
from harness.run_folder.outcome_table import OUTCOME_KINDS
from harness.run_folder.report import Report
from harness.run_folder.responses import read_response_lines
from harness.run_folder.run_dir import RunDir
from harness.scoring.outcomes import is_cut_off

SCOPES = ("hits", "answered", "all")


def in_scope(outcome: str, scope: str) -> bool:
    """``hits``: correct citations (in a run with no labels, imported logs without gold: the answers citing one
    shown article, ``unjudged_citation``); ``answered``: every answer that is no refusal; ``all``: refusals too.
    Each outcome's table entry says which it is (``spot_checked``, ``refusal``, ``failed``)."""
    kind = OUTCOME_KINDS.get(outcome)
    if kind is None:  # an outcome this grace does not know: an answer, in the wider scopes only
        return scope != "hits"
    if scope == "hits":
        return kind.spot_checked
    if scope == "answered":
        return not kind.refusal and not kind.failed
    return not kind.failed


@dataclass(frozen=True)
class Hit:
    """One checked answer (a hit in the default scope; any answer in scope ``answered`` or ``all``)."""

    model: str
    question_id: str
    repeat: int
    cited_ids: tuple[str, ...]
    text: str
    outcome: str = "correct"
    expected: tuple[str, ...] = ()  # the gold article IDs
    retrieved: tuple[str, ...] = ()  # the articles shown to the model
    citations: tuple[str, ...] = ()  # the citations a system returned as data (responses.jsonl "citations")

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
    report: Report | None
    hits: list[Hit]
    counts: dict[str, Counts] = field(default_factory=dict)
    truncated: dict[str, int] = field(default_factory=dict)  # per model: hits skipped, cut off by max_tokens

    @property
    def models(self) -> list[str]:
        board = self.report.leaderboard if self.report is not None else []
        return [m for m in board if m in self.counts] + [m for m in self.counts if m not in board]


def run_folder(path: Path) -> Path:
    path = Path(path)
    if path.is_file():
        path = path.parent
    if not RunDir(path).scores.exists():
        raise GraceError(f"{path}: no {SCORES} here; give a run folder scored by 'grace run' or 'grace score'")
    return path


def _responses_path(run_dir: Path, report: Report | None) -> Path:
    local = RunDir(run_dir).responses
    if local.exists():
        return local
    recorded = report.responses.path if report is not None else None
    if recorded and Path(recorded).exists():
        return Path(recorded)
    raise GraceError(f"{run_dir}: no {RESPONSES} here and none at the path report.json records ({recorded}); "
                     "the answers' text is needed to check them")


def load_run(path: Path, models: tuple[str, ...] = (), scope: str = "hits") -> RunInputs:
    run_dir = run_folder(path)
    files = RunDir(run_dir)
    report = files.read_report() if files.report.exists() else None
    scores_path = files.scores
    counts: dict[str, Counts] = {}
    if scope not in SCOPES:
        raise GraceError(f"--scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    wanted: dict[tuple[str, str, int], tuple[str, ...]] = {}
    detail: dict[tuple[str, str, int], tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    scored_cut: set[tuple[str, str, int]] = set()
    for _, row in files.iter_scores():
        model, qid, rep, outcome = row["model"], row["question_id"], row["repeat"], row["outcome"]
        if models and model not in models:
            continue
        c = counts.setdefault(model, Counts())
        c.n += 1
        kind = OUTCOME_KINDS.get(outcome)
        if kind is not None and kind.correct:  # an accuracy hit: a right refusal, or a right citation to check
            if kind.refusal:
                c.correct_refusal += 1
            else:
                c.correct += 1
        if in_scope(outcome, scope):
            wanted[(model, qid, rep)] = tuple(str(i) for i in row.get("cited_ids") or ())
            detail[(model, qid, rep)] = (outcome, tuple(str(i) for i in row.get("expected_citations") or ()),
                                         tuple(str(i) for i in row.get("retrieved_ids") or ()))
            if row.get("truncated") is True:
                scored_cut.add((model, qid, rep))
    if models:
        unknown = sorted(set(models) - set(counts))
        if unknown:
            raise GraceError(f"{scores_path}: no responses from {', '.join(unknown)}; models here: {', '.join(counts)}")
    responses_path = _responses_path(run_dir, report)
    texts: dict[tuple[str, str, int], str] = {}
    structured: dict[tuple[str, str, int], tuple[str, ...]] = {}
    cut: set[tuple[str, str, int]] = set()
    for row in read_response_lines(responses_path):
        key = (row["model"], row["question_id"], row["repeat"])
        if key in wanted and isinstance(row.get("response"), str) and not row.get("error"):
            texts[key] = row["response"]  # the last row wins, as in the scorer
            structured[key] = tuple(str(c) for c in row.get("citations") or () if isinstance(c, (str, int)))
            (cut.add if is_cut_off(row.get("finish_reason")) else cut.discard)(key)
    missing = [k for k in wanted if k not in texts]
    if missing:
        shown = ", ".join(f"{m}/{q}/repeat {r}" for m, q, r in missing[:5])
        raise GraceError(f"{len(missing)} hit(s) in {scores_path} have no answer text in {responses_path} ({shown}); "
                         "score the responses file again ('grace score') so the two match")
    cut |= scored_cut
    hits = [Hit(m, q, r, wanted[(m, q, r)], texts[(m, q, r)], *detail[(m, q, r)], citations=structured[(m, q, r)])
            for (m, q, r) in wanted if (m, q, r) not in cut]
    truncated = {m: sum(1 for k in cut if k[0] == m) for m in counts}
    return RunInputs(run_dir, scores_path, responses_path, report, hits, counts, truncated)
