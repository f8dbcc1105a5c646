"""Pre-labels from a run: the consensus of the models' citations.

The rule (documented in the README, and written into each row's ``reason``):
each model votes once per question (see :mod:`harness.scoring.votes`: the
article it cites, or ``REFUSE``; with repeats, its most frequent answer). A
label is suggested when at least ``min_voters`` models voted and the most voted
label holds at least ``min_agreement`` of the votes, ties excluded. Otherwise
the row says why there is none (``split``, ``few_voters``, ``no_votes``): those
are the questions worth a person's attention first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Protocol

from annotations.suggestions import Suggestion
from harness.scoring.votes import QuestionVotes, load_votes

MIN_AGREEMENT = 0.6
MIN_VOTERS = 2
WEAK_BELOW = 0.75  # a suggestion with less support than this is flagged "weak": accepted only after a look


class HasQuestion(Protocol):
    question_id: str
    question: str


def consensus_one(qid: str, question: str, v: QuestionVotes | None, source: str, *, min_agreement: float = MIN_AGREEMENT,
                  min_voters: int = MIN_VOTERS) -> Suggestion:
    s = Suggestion(question_id=qid, question=question, source=source)
    if v is None or not v.asked:
        s.flag, s.reason = "no_votes", "no model in the run answered this question"
        return s
    s.votes, s.voters, s.top_score = v.tally(), v.voters, v.top_score
    if v.voters == 0:
        s.flag = "no_votes"
        s.reason = f"none of {len(v.asked)} model(s) gave exactly one citation or a refusal"
        return s
    label, n = v.top()
    if v.voters < min_voters:
        s.flag = "few_voters"
        s.reason = f"only {v.voters} model(s) voted; the rule needs {min_voters}"
        if label is not None:
            s.support = round(n / v.voters, 4)
        return s
    if label is None:
        s.flag, s.reason = "split", f"tie between the top labels ({s.votes})"
        return s
    share = n / v.voters
    s.support = round(share, 4)
    if share < min_agreement:
        s.flag = "split"
        s.reason = f"{n} of {v.voters} models agree on {label}, below the {min_agreement:.0%} the rule needs"
        return s
    s.suggested = label
    s.flag = "weak" if share < WEAK_BELOW else ""
    what = "refuse" if label == "REFUSE" else f"cite {label}"
    s.reason = f"{n} of {v.voters} models {what}"
    return s


def consensus(questions: Sequence[HasQuestion], votes: dict[str, QuestionVotes], source: str, *,
              min_agreement: float = MIN_AGREEMENT, min_voters: int = MIN_VOTERS) -> list[Suggestion]:
    """One suggestion row per question, in the questions' order."""
    return [consensus_one(q.question_id, q.question, votes.get(q.question_id), source, min_agreement=min_agreement,
                          min_voters=min_voters) for q in questions]


def suggest_from_run(questions: Sequence[HasQuestion], run: str | Path, kb_ids: Collection[str], *,
                     min_agreement: float = MIN_AGREEMENT, min_voters: int = MIN_VOTERS) -> tuple[list[Suggestion], list[str]]:
    """Suggestions for ``questions`` from a run folder or responses file, and the models that voted."""
    votes, models = load_votes(run, kb_ids)
    return consensus(questions, votes, f"run:{run}", min_agreement=min_agreement, min_voters=min_voters), models
