"""What the models of a run say answers each question: one vote per model.

GRACE turns answers into citations, so a run of several models is also a panel
of annotators: where most of them cite one article, that article probably
answers the question. Suggestions (``grace annotations suggest --run``) and the
gold audit (``grace annotations audit``, the report's "labels to check") both
start from these votes.

A model's vote is the article it cites (exactly one ID that is in the KB and,
when the row says which articles the model was shown, one of those) or
``REFUSE``; a failed call, no citation, several citations or an unshown article
is no vote (the same rule as the predicted label in
:mod:`harness.scoring.outcomes`, which the scorer's integer codes carry). With
repeats, a model votes its most frequent answer, and abstains on a tie, so a
model asked five times still counts once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError

REFUSE = "REFUSE"


@dataclass
class QuestionVotes:
    question_id: str
    by_model: dict[str, str] = field(default_factory=dict)  # model -> article ID or REFUSE
    asked: set[str] = field(default_factory=set)  # models with a row for this question, voting or not
    top_score: float | None = None  # the best retrieval score the run saw for this question

    @property
    def counts(self) -> Counter[str]:
        return Counter(self.by_model.values())

    @property
    def voters(self) -> int:
        return len(self.by_model)

    def top(self) -> tuple[str | None, int]:
        """The most voted label and its votes; ``None`` on a tie for first place."""
        ranked = self.counts.most_common(2)
        if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
            return None, ranked[0][1] if ranked else 0
        return ranked[0]

    def tally(self) -> str:
        """``17:4 REFUSE:1``: every label's votes, most first, for a CSV cell a person can read."""
        return " ".join(f"{label}:{n}" for label, n in sorted(self.counts.items(), key=lambda x: (-x[1], x[0])))


def row_vote(cited_ids: list[str], refused: bool, kb_ids: Collection[str],
             shown: Collection[str] | None = None) -> str | None:
    if refused:
        return REFUSE
    if len(cited_ids) == 1 and cited_ids[0] in kb_ids and (not shown or cited_ids[0] in shown):
        return cited_ids[0]
    return None


def _majority(labels: list[str | None]) -> str | None:
    ranked = Counter(x for x in labels if x is not None).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def collect(rows: Iterable[tuple[str, str, str | None, float | None]]) -> dict[str, QuestionVotes]:
    """``(question_id, model, vote, top retrieval score)`` per answer -> votes per question."""
    per: dict[tuple[str, str], list[str | None]] = {}
    out: dict[str, QuestionVotes] = {}
    for qid, model, vote, score in rows:
        q = out.get(qid) or out.setdefault(qid, QuestionVotes(qid))
        q.asked.add(model)
        if score is not None and (q.top_score is None or score > q.top_score):
            q.top_score = score
        per.setdefault((qid, model), []).append(vote)
    for (qid, model), labels in per.items():
        label = _majority(labels)
        if label is not None:
            out[qid].by_model[model] = label
    return out


def votes_from_codes(q: Any, m: Any, pred: Any, qids: Sequence[str], models: Sequence[str],
                     labels: Sequence[str | None], counts: Any = None) -> dict[str, QuestionVotes]:
    """:func:`collect` over the scorer's integer columns, in numpy: a million rows are not a million tuples.

    ``q``, ``m`` and ``pred`` index ``qids``, ``models`` and ``labels`` (a ``None``
    label is no vote); ``counts``, when given, how many rows each (q, m, pred) stands for (a tally's distinct
    ones). Same rule as :func:`collect`: one vote per model, its most frequent label over repeats, none on a tie.
    """
    import numpy as np

    q, m, pred = (np.asarray(x, dtype=np.int64) for x in (q, m, pred))
    weights = np.ones(q.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    n_models, n_labels = max(1, len(models)), max(1, len(labels))
    out: dict[str, QuestionVotes] = {}
    asked = np.unique(q * n_models + m)
    for key in asked.tolist():
        qid = qids[key // n_models]
        (out.get(qid) or out.setdefault(qid, QuestionVotes(qid))).asked.add(models[key % n_models])
    voting = np.array([lab is not None for lab in labels], dtype=bool)[pred]
    if not voting.any():
        return out
    pairs, inverse = np.unique((q[voting] * n_models + m[voting]) * n_labels + pred[voting], return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights[voting], minlength=pairs.size).astype(np.int64)
    keys, codes = pairs // n_labels, pairs % n_labels
    order = np.lexsort((-counts, keys))  # by (question, model), most frequent label first
    keys, codes, counts = keys[order], codes[order], counts[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    tie = np.zeros(keys.size, dtype=bool)
    starts = np.flatnonzero(first)
    has_second = starts + 1 < keys.size
    second = starts[has_second] + 1
    tie[starts[has_second]] = (keys[second] == keys[starts[has_second]]) & (counts[second] == counts[starts[has_second]])
    for key, code in zip(keys[starts[~tie[starts]]].tolist(), codes[starts[~tie[starts]]].tolist(), strict=True):
        out[qids[key // n_models]].by_model[models[key % n_models]] = labels[code]
    return out


def votes_from_responses(rows: Iterable[Mapping[str, Any]], kb_ids: Collection[str]) -> dict[str, QuestionVotes]:
    """Votes from ``responses.jsonl`` rows (the latest per call), reading citations as the scorer does."""
    from harness.scoring.extraction import extract

    kb_ids = frozenset(kb_ids)

    def each():
        for r in rows:
            scores = r.get("retrieval_scores") or []
            top = float(scores[0]) if scores and isinstance(scores[0], int | float) else None
            if r.get("error") or not isinstance(r.get("response"), str):
                yield str(r["question_id"]), str(r["model"]), None, top
                continue
            ext = extract(r["response"], kb_ids)
            yield str(r["question_id"]), str(r["model"]), row_vote(ext.cited_ids, ext.refused, kb_ids, _shown(r)), top

    return collect(each())


def _shown(row: Mapping[str, Any]) -> list[str] | None:
    shown = row.get("retrieved_ids")
    return [str(x) for x in shown] if isinstance(shown, list) else None


def load_votes(source: str | Path, kb_ids: Collection[str]) -> tuple[dict[str, QuestionVotes], list[str]]:
    """Votes from a run folder or any responses file, and the models that voted.

    A run folder is read through its owner (:class:`harness.run_folder.run_dir.RunDir`), which
    keeps the latest row per call, so a retried error never counts twice.
    """
    from harness.run_folder.responses import latest_rows, read_response_lines
    from harness.run_folder.run_dir import RunDir

    source = Path(source)
    if source.is_dir():
        rows = list(RunDir(source).latest_responses().values())
        if not rows:
            raise GraceError(f"{source}: no responses in this run folder; give a folder `grace run` wrote, "
                             "or a responses .jsonl file")
    elif source.exists():
        rows = list(latest_rows(read_response_lines(source)).values())
        if not rows:
            raise GraceError(f"{source}: no responses in the file")
    else:
        raise GraceError(f"{source}: not found; give a run folder or a responses .jsonl file")
    votes = votes_from_responses(rows, kb_ids)
    models = sorted({str(r["model"]) for r in rows})
    return votes, models
