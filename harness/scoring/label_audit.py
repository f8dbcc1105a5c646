"""Gold labels that a run's models contradict: the audit behind ``grace annotations audit``.

A wrong gold label is read as a model error by every leaderboard built on it,
so the models' own citations are turned back on the gold set (cleanlab's idea,
with citations as the labels). Each rule needs several models to agree, because
a reviewer's time is the cost being saved: a flag that is usually wrong would
waste it.

Rules (``kind``), each on the models' votes (:mod:`harness.scoring.votes`):

- ``other_article``: most voters (more than half, at least ``min_voters``) cite one
  article outside the gold label. Either the label is wrong or that article also
  answers: the row names it, to check and add or move the label.
- ``refuse_answered``: a must_refuse question most voters answer from one article:
  the KB may cover it after all.
- ``all_refuse``: an answerable question that every model that was asked refuses
  (at least ``min_voters``): the gold article may not answer it.
- ``near_duplicates``: two articles the models swap in both directions, on at least
  ``min_swaps`` questions each way: accept both as answers or merge them in the KB.
  One row per pair, listing its questions.

Multi-article gold (``17;18``) counts a citation of any of its articles as agreement.
The suspects file (``SUSPECTS.csv``) is owned here: its columns, writer and reader.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text, csv_text, spreadsheet_unsafe
from harness.scoring.votes import REFUSE, QuestionVotes
from kb_builder.gold import CITATIONS_NEEDED

COLUMNS = ["question_id", "question", "gold", "suggested", "agree", "gold_votes", "voters", "kind", "check", "reason"]
KINDS = ("other_article", "refuse_answered", "all_refuse", "near_duplicates")
MIN_VOTERS = 2
MIN_SWAPS = 2


class GoldLike(Protocol):
    question_id: str
    question: str
    expected_citations: list[str]
    must_refuse: bool


@dataclass
class Suspect:
    question_id: str  # several, joined by ";", for a near_duplicates row
    question: str
    gold: str  # "17", "17;18" or "REFUSE"
    suggested: str  # what the models say instead
    agree: int  # voters behind the suggestion
    gold_votes: int  # voters citing a gold article (or refusing a must_refuse question)
    voters: int
    kind: str
    check: str  # what the reviewer should look at
    reason: str
    line: int = 0

    @property
    def question_ids(self) -> list[str]:
        return [q for q in self.question_id.split(";") if q]

    def to_row(self) -> dict[str, str]:
        return {"question_id": self.question_id, "question": self.question, "gold": self.gold,
                "suggested": self.suggested, "agree": str(self.agree), "gold_votes": str(self.gold_votes),
                "voters": str(self.voters), "kind": self.kind, "check": self.check, "reason": self.reason}

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("question_id", "question", "gold", "suggested", "agree", "gold_votes",
                                              "voters", "kind", "check", "reason")}


BASELINE_PROVIDER = "baseline"


def independent_models(models: Sequence[str], providers: Mapping[str, str]) -> list[str]:
    """The models whose votes are evidence apart from one another: not grace's retrieval baselines, which all cite
    the retriever's top article, so that two of them agreeing is one opinion counted twice (the report's "labels
    to check" counts only these). ``providers``: model name -> provider (run.json's); a model it does not name is
    told by the provider part of its name (``baseline:top1``)."""
    return [m for m in models if providers.get(m, m.split(":", 1)[0]) != BASELINE_PROVIDER]


def _label(q: GoldLike) -> str:
    return REFUSE if q.must_refuse else ";".join(q.expected_citations)


def _listing(q: GoldLike, ids: set[str]) -> str:
    """How to write a label that takes another article in: listed beside the others, as an alternative; a question
    whose articles are all required (``citations_needed = all``) would then require it too, so that is said."""
    listed = ";".join(sorted(ids))
    if getattr(q, "citations_needed", "any") == "all":
        return f"then list it: {listed}, every one required as {CITATIONS_NEEDED} is all; or set it to any"
    return f"then list both: {listed}"


def _name(article_id: str, titles: Mapping[str, str]) -> str:
    title = titles.get(article_id)
    return f"{article_id} ({title})" if title else article_id


def audit(questions: Sequence[GoldLike], votes: Mapping[str, QuestionVotes], titles: Mapping[str, str] | None = None, *,
          min_voters: int = MIN_VOTERS, min_swaps: int = MIN_SWAPS) -> list[Suspect]:
    """The labels most likely wrong, strongest evidence first; near-duplicate pairs last."""
    titles = titles or {}
    out: list[tuple[float, Suspect]] = []
    swaps: Counter[tuple[str, str]] = Counter()
    swap_questions: dict[tuple[str, str], list[str]] = {}
    for q in questions:
        v = votes.get(q.question_id)
        if v is None or v.voters == 0:
            continue
        gold = _label(q)
        counts = v.counts
        if q.must_refuse:
            gold_votes = counts.get(REFUSE, 0)
            top = next(((lab, n) for lab, n in counts.most_common() if lab != REFUSE), None)
            if top and v.voters >= min_voters and top[1] * 2 > v.voters:
                out.append((2 + top[1] / v.voters, Suspect(
                    q.question_id, q.question, gold, top[0], top[1], gold_votes, v.voters, "refuse_answered",
                    f"article {_name(top[0], titles)}",
                    f"must_refuse, but {top[1]} of {v.voters} models answer from article {_name(top[0], titles)}: "
                    "the KB may cover this question after all")))
            continue
        expected = set(q.expected_citations)
        gold_votes = sum(n for lab, n in counts.items() if lab in expected)
        for lab, n in counts.items():
            if lab != REFUSE and lab not in expected:
                for e in expected:
                    swaps[(e, lab)] += n
                    swap_questions.setdefault((e, lab), []).append(q.question_id)
        refusals = counts.get(REFUSE, 0)
        if refusals == v.voters and v.voters >= max(min_voters, len(v.asked)):
            out.append((1.5, Suspect(
                q.question_id, q.question, gold, REFUSE, refusals, 0, v.voters, "all_refuse",
                f"article {', '.join(_name(e, titles) for e in q.expected_citations)}",
                f"all {v.voters} models refuse: the gold article may not answer this question")))
            continue
        top = next(((lab, n) for lab, n in counts.most_common() if lab != REFUSE and lab not in expected), None)
        if top and v.voters >= min_voters and top[1] * 2 > v.voters:
            other = _name(top[0], titles)
            out.append((2 + top[1] / v.voters - gold_votes / v.voters, Suspect(
                q.question_id, q.question, gold, top[0], top[1], gold_votes, v.voters, "other_article",
                f"article {other}",
                f"{top[1]} of {v.voters} models cite {other}, {gold_votes} the gold "
                f"{'article' if len(expected) == 1 else 'articles'}: a wrong label, or {top[0]} also answers "
                f"({_listing(q, expected | {top[0]})})")))
    flagged = {s.question_id for _, s in out}
    done: set[frozenset[str]] = set()
    for (a, b), n in sorted(swaps.items()):
        pair = frozenset((a, b))
        back = swaps.get((b, a), 0)
        if pair in done or a == b:
            continue
        qa, qb = set(swap_questions.get((a, b), [])), set(swap_questions.get((b, a), []))
        if len(qa) >= min_swaps and len(qb) >= min_swaps:
            done.add(pair)
            qids = sorted(qa | qb)
            out.append((1.0, Suspect(
                ";".join(qids), "", f"{a};{b}", f"{a};{b}", n + back, 0, 0, "near_duplicates",
                f"articles {_name(a, titles)} and {_name(b, titles)}",
                f"models swap {_name(a, titles)} and {_name(b, titles)} both ways ({len(qa)} question(s) labelled "
                f"{a} cited as {b}, {len(qb)} the other way; {sum(q in flagged for q in qids)} already listed above): "
                "near-duplicates: accept both as answers, or merge them in the KB")))
    out.sort(key=lambda x: -x[0])
    return [s for _, s in out]


def render(suspects: Iterable[Suspect]) -> str:
    return csv_text(COLUMNS, (s.to_row() for s in suspects))


def write_suspects(path: str | Path, suspects: Iterable[Suspect]) -> Path:
    path = Path(path)
    atomic_write_text(path, render(suspects))
    return path


def read_suspects(path: str | Path) -> list[Suspect]:
    """A suspects file, strictly: every row needs a question_id; numbers must be whole numbers."""
    path = Path(path)
    header, rows = read_csv_rows(path)
    if "question_id" not in header:
        raise GraceError(f"{where(path, 1)}: no question_id column; a suspects file has {', '.join(COLUMNS)} "
                         "(write one with `grace annotations audit`)")
    out: list[Suspect] = []
    for n, row in rows:
        cells = {k: (spreadsheet_unsafe(v) or "").strip() for k, v in row.items()}
        if not cells.get("question_id"):
            raise GraceError(f"{where(path, n)}: empty question_id")
        nums = {}
        for col in ("agree", "gold_votes", "voters"):
            value = cells.get(col, "") or "0"
            if not value.isdigit():
                raise GraceError(f"{where(path, n)}: {col} must be a whole number, got {value!r}")
            nums[col] = int(value)
        out.append(Suspect(cells["question_id"], cells.get("question", ""), cells.get("gold", ""),
                           cells.get("suggested", ""), nums["agree"], nums["gold_votes"], nums["voters"],
                           cells.get("kind", ""), cells.get("check", ""), cells.get("reason", ""), line=n))
    return out
