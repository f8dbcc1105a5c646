"""``grace annotations audit``: the gold labels a run's models contradict, for a person to check.

The rules and the suspects file live with the scorer (:mod:`harness.scoring.label_audit`),
because the report's "labels to check" section uses them too; this is the glue
from a gold file and a run to ``SUSPECTS.csv``, and what ``grace annotate --only``
reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.scoring.label_audit import MIN_SWAPS, MIN_VOTERS, Suspect, audit, read_suspects, write_suspects
from harness.scoring.votes import load_votes

__all__ = ["AuditResult", "audit_gold", "read_suspects"]


@dataclass
class AuditResult:
    suspects: list[Suspect]
    models: list[str]
    questions: int  # gold questions with at least one vote
    out: Path | None


def audit_gold(gold: str | Path, kb, run: str | Path, out: str | Path | None = None, *, min_voters: int = MIN_VOTERS,
               min_swaps: int = MIN_SWAPS) -> AuditResult:
    """Audit ``gold`` (labelled rows only) against the models of ``run`` (a folder or responses file)."""
    from kb_builder.gold import load_gold, require_labels

    questions = list(require_labels(load_gold(gold), "an audit of the labels").questions)
    kb.check_cited(questions, gold)  # first: a ghost ID is a broken row to fix, not a label to advise on
    votes, models = load_votes(run, kb.by_id)
    suspects = audit(questions, votes, {a.id: a.title for a in kb.articles}, min_voters=min_voters, min_swaps=min_swaps)
    path = write_suspects(out, suspects) if out is not None else None
    voted = sum(1 for q in questions if q.question_id in votes and votes[q.question_id].voters)
    return AuditResult(suspects, models, voted, path)
