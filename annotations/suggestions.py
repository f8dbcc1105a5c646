"""The suggestions file (``grace annotations suggest --out SUGGESTIONS.csv``): one pre-label per question.

Columns, in order (extra columns a person adds are kept by readers that copy rows):

- ``question_id``, ``question``
- ``suggested``: article IDs joined by ``;``, or ``REFUSE``; empty when there is no
  suggestion (the models split, too few voted, the labeler failed)
- ``support``: the share of votes for the suggestion, 0 to 1 (a labeler is one vote: 1)
- ``source``: who suggested it: ``run:PATH`` (consensus of a run's models),
  ``labeler:PROVIDER:MODEL`` or ``generated:PROVIDER:MODEL`` (a draft question's own label)
- ``votes``: every label's votes, most first (``17:4 REFUSE:1``); ``voters``: how many voted
- ``top_score``: the best retrieval score for the question (empty when unknown)
- ``flag``: empty for a usable suggestion, else why there is none or why it is weak
  (``split``, ``few_voters``, ``no_votes``, ``labeler_error``, ``weak``)
- ``reason``: one sentence a person can check: the rule that decided, or the labeler's reason
- ``template``: the labeler's prompt template (``labeler.v1``, ``labeler.v1.fr``: the KB's language's unless
  ``--template`` named one); empty for a consensus

This module is the format's one owner: its reader, its writer and the order of
work (:func:`informative_order`) that ``grace annotate --order informative`` uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text, csv_text, spreadsheet_unsafe
from kb_builder.gold import split_ids

COLUMNS = ["question_id", "question", "suggested", "support", "source", "votes", "voters", "top_score", "flag", "reason",
           "template"]
FLAGS = ("", "split", "few_voters", "no_votes", "labeler_error", "weak")
REFUSE = "REFUSE"


@dataclass
class Suggestion:
    question_id: str
    question: str = ""
    suggested: str = ""  # "17", "17;18", "REFUSE" or "" (none)
    support: float | None = None
    source: str = ""
    votes: str = ""
    voters: int = 0
    top_score: float | None = None
    flag: str = ""
    reason: str = ""
    template: str = ""  # the labeler's prompt template; "" for a consensus
    line: int = 0

    @property
    def usable(self) -> bool:
        """A suggestion a person can accept with one key."""
        return bool(self.suggested) and self.flag in ("", "weak")

    @property
    def must_refuse(self) -> bool:
        return self.suggested == REFUSE

    @property
    def citations(self) -> list[str]:
        return [] if self.must_refuse else split_ids(self.suggested)

    def to_row(self) -> dict[str, str]:
        return {
            "question_id": self.question_id, "question": self.question, "suggested": self.suggested,
            "support": "" if self.support is None else f"{self.support:.3f}".rstrip("0").rstrip(".") or "0",
            "source": self.source, "votes": self.votes, "voters": str(self.voters),
            "top_score": "" if self.top_score is None else f"{self.top_score:.4f}", "flag": self.flag,
            "reason": self.reason, "template": self.template,
        }

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("question_id", "suggested", "support", "source", "votes", "voters",
                                              "top_score", "flag", "reason")} | {"usable": self.usable}


def label_of(citations: Iterable[str], must_refuse: bool) -> str:
    """The ``suggested`` spelling of a label: ``REFUSE`` or the sorted IDs joined by ``;``."""
    return REFUSE if must_refuse else ";".join(sorted(set(citations)))


def normal_label(text: str) -> str:
    """A label as typed (``refuse``, ``18;17``) spelled the one way suggestions compare it: ``REFUSE`` or sorted IDs."""
    text = text.strip()
    return REFUSE if text.upper() == REFUSE else label_of(split_ids(text), False)


def render(suggestions: Iterable[Suggestion]) -> str:
    return csv_text(COLUMNS, (s.to_row() for s in suggestions))


def write_suggestions(path: str | Path, suggestions: Iterable[Suggestion]) -> Path:
    path = Path(path)
    atomic_write_text(path, render(suggestions))
    return path


def _float(value: str, path: Path, line: int, column: str, lo: float | None = None, hi: float | None = None) -> float | None:
    value = (value or "").strip()
    if not value:
        return None
    try:
        x = float(value)
    except ValueError:
        raise GraceError(f"{where(path, line)}: {column} must be a number, got {value!r}") from None
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise GraceError(f"{where(path, line)}: {column} must be between {lo} and {hi}, got {value}")
    return x


def read_suggestions(path: str | Path) -> dict[str, Suggestion]:
    """Suggestions by question ID, strictly: a bad cell names its file and line."""
    path = Path(path)
    header, rows = read_csv_rows(path)
    out: dict[str, Suggestion] = {}
    missing = [c for c in ("question_id", "suggested") if c not in header]
    if missing:
        raise GraceError(f"{where(path, 1)}: missing column(s) {', '.join(missing)}; a suggestions file has "
                         f"{', '.join(COLUMNS)} (write one with `grace annotations suggest`)")
    for n, row in rows:
        cells = {k: (spreadsheet_unsafe(v) or "").strip() for k, v in row.items()}
        qid = cells.get("question_id", "")
        if not qid:
            raise GraceError(f"{where(path, n)}: empty question_id")
        if qid in out:
            raise GraceError(f"{where(path, n)}: question {qid!r} is listed twice (first on line {out[qid].line})")
        suggested = normal_label(cells.get("suggested", ""))
        flag = cells.get("flag", "")
        if flag not in FLAGS:
            raise GraceError(f"{where(path, n)}: flag must be empty or one of {', '.join(f for f in FLAGS if f)}, "
                             f"got {flag!r}")
        voters = cells.get("voters", "") or "0"
        if not voters.isdigit():
            raise GraceError(f"{where(path, n)}: voters must be a whole number, got {voters!r}")
        out[qid] = Suggestion(
            question_id=qid, question=cells.get("question", ""), suggested=suggested,
            support=_float(cells.get("support", ""), path, n, "support", 0.0, 1.0), source=cells.get("source", ""),
            votes=cells.get("votes", ""), voters=int(voters), top_score=_float(cells.get("top_score", ""), path, n, "top_score"),
            flag=flag, reason=cells.get("reason", ""), template=cells.get("template", ""), line=n,
        )
    return out


def informative_order(question_ids: list[str], suggestions: dict[str, Suggestion]) -> list[str]:
    """Weakest suggestion first, so a person's time goes where the models are least sure.

    No suggestion (models split, labeler failed) comes first, then suggestions by
    rising support, then by rising retrieval score; confident ones come last.
    Questions without any row keep their place at the front, in file order.
    """
    def key(item: tuple[int, str]) -> tuple:
        i, qid = item
        s = suggestions.get(qid)
        if s is None:
            return (0, 0.0, 0.0, i)
        support = s.support if s.usable and s.support is not None else (1.0 if s.usable else 0.0)
        score = s.top_score if s.top_score is not None else float("inf")
        return (1 if not s.usable else 2, support, score, i)

    return [qid for _, qid in sorted(enumerate(question_ids), key=key)]
