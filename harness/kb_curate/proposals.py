"""Proposed fixes for KB lint findings (``grace kb curate``): what a proposal is, what it is made from, the offline
``baseline:heuristic`` proposer, and how a model's reply is read.

A proposal is only ever a proposal: a person sees it as a diff and accepts, edits
or rejects it; accepting applies it through the curation overlay
(:mod:`kb_builder.curation`), which records it like any hand edit. Three kinds,
one per way lint's findings are fixed:

* ``rewrite`` (an article that is not self-contained): the article with the
  missing antecedent brought in from its source page (its section's lead, the
  text just before it) and a title that says what it alone answers;
* ``merge`` (a confusable pair): one article holding both texts' facts, the ID
  it keeps (the other is retired) and its title;
* ``split`` (an article over its budget, or holding two topics): the paragraph the
  second part starts with, and a title per part.

Model replies are hostile data: read leniently as to form (fences, prose around
the JSON), strictly as to content. A reply that names an unknown ID, a paragraph
the article does not have, an empty text, or a rewrite that drops most of the
article comes back as a *rejected* proposal whose ``error`` says why: never
applied, never a crash. The model path (prompt, engine, cache, cost) is
:mod:`harness.kb_curate.proposer`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.core.errors import GraceError
from harness.core.json_text import first_json_object
from kb_builder.language import surface_words

Kind = Literal["rewrite", "merge", "split"]
KINDS: tuple[str, ...] = ("rewrite", "merge", "split")
BASELINE = "baseline:heuristic"
# the fix each lint finding asks for first (the page offers the others too)
KIND_FOR_FINDING = {"not_self_contained": "rewrite", "empty": "rewrite", "too_short": "rewrite", "title_markup": "rewrite",
                    "navigation": "rewrite",
                    "confusable": "merge", "swapped_in_run": "merge", "duplicate_title": "merge", "over_budget": "split"}
KEEPS_AT_LEAST = 0.6  # a rewrite or merge keeps this share of the articles' distinct words; less is a different article, rejected
MAX_GROWTH = 4.0  # ... and is at most this many times as long as the article and its context together
NEAR_SAME = 0.8  # paragraphs sharing this share of their words are one paragraph to a merge
CONTEXT_CHARS = 1200  # surrounding text shown to the model, per piece
OUTPUT_TOKENS = 1200  # a rewritten or merged article; the output limit unless --max-tokens says otherwise
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|\|)")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


class Proposal(BaseModel):
    """One proposed fix, as the curation page shows it and an accept applies it."""

    id: int = 0  # its number in the app (1, 2, ...); 0 until the app files it
    kind: Kind  # rewrite | merge | split
    articles: list[str]  # the IDs it changes (merge: both)
    finding: str | None = None  # the lint finding kind it answers
    title: str | None = None  # rewrite, merge: the new title
    text: str | None = None  # rewrite, merge: the new text
    keep: str | None = None  # merge: the ID that survives
    at: int | None = None  # split: the paragraph (1-based) the second part starts with
    titles: list[str] = Field(default_factory=list)  # split: a title per part
    reason: str = ""  # the proposer's one sentence on why
    model: str = BASELINE  # who proposed it: baseline:heuristic or PROVIDER:MODEL
    cost_usd: float | None = 0.0  # what the call cost (None: no price known); 0 when cached or offline
    cached: bool = False  # answered from the response cache
    error: str | None = None  # set: the proposal is rejected (the reply was unusable, the call failed) and why
    status: Literal["open", "accepted", "rejected"] = "open"

    @property
    def usable(self) -> bool:
        return self.error is None


@dataclass
class ProposalInput:
    """What a proposal is made from: the articles (as dicts: id, title, text), and what lint said."""

    kind: str
    articles: list[dict[str, str]]
    finding: str = ""  # lint's message (the prompt's problem statement)
    finding_kind: str | None = None
    context: list[tuple[str, str]] = field(default_factory=list)  # rewrite: (what, text) from the source page
    paragraphs: list[str] = field(default_factory=list)  # split: the article's paragraphs

    @property
    def ids(self) -> list[str]:
        return [a["id"] for a in self.articles]


def default_paragraphs(text: str) -> list[str]:
    """Blank-line paragraphs; the curation overlay's own rule is passed in where it is open."""
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def make_input(kb: Any, kind: str, ids: Sequence[str], *, finding: str = "", finding_kind: str | None = None,
               paragraphs: Callable[[str], list[str]] | None = None) -> ProposalInput:
    """Check a request for a proposal against the KB (``GraceError`` naming the fix on bad input) and gather what
    the proposer reads. ``paragraphs(article_id)``: the overlay's paragraphs (default: blank-line paragraphs)."""
    if kind not in KINDS:
        raise GraceError(f"proposal kind {kind!r}: use one of {', '.join(KINDS)}")
    ids = [str(i) for i in ids]
    unknown = [i for i in ids if i not in kb.by_id]
    if unknown:
        raise GraceError(f"no article {unknown[0]!r} in the KB {kb.path} ({len(kb.articles)} articles); it may have "
                         "been merged, split or retired: reload the worklist")
    want = 2 if kind == "merge" else 1
    if len(ids) != want:
        raise GraceError(f"a {kind} proposal takes {want} article ID(s), got {len(ids)}: {', '.join(ids) or 'none'}")
    if kind == "merge" and ids[0] == ids[1]:
        raise GraceError(f"cannot merge article {ids[0]} with itself: name two different articles")
    arts = [kb.by_id[i] for i in ids]
    inp = ProposalInput(kind, [{"id": a.id, "title": a.title, "text": a.text} for a in arts], finding, finding_kind)
    if kind == "rewrite":
        inp.context = source_context(kb, arts[0])
    if kind == "split":
        inp.paragraphs = paragraphs(ids[0]) if paragraphs else default_paragraphs(arts[0].text)
        if len(inp.paragraphs) < 2:
            raise GraceError(f"article {ids[0]} has {len(inp.paragraphs)} paragraph(s): there is nowhere to split it")
    return inp


# -- the source page around an article ----------------------------------------------------------------------------
def _lead(text: str) -> str:
    """The first paragraph that is prose (not a heading, list or table): what introduces a section."""
    for p in default_paragraphs(text):
        lines = [ln for ln in p.splitlines() if ln.strip() and not _HEADING.match(ln)]
        if lines and not _LIST_OR_TABLE.match(lines[0]):
            return "\n".join(lines)
    return ""


def source_context(kb: Any, art: Any) -> list[tuple[str, str]]:
    """The text around ``art`` on its source page, nearest first: its section's lead (an earlier part of the same
    section, else the closest enclosing section's article), then the end of the article just before it."""
    if not art.source:
        return []
    same = [a for a in kb.articles if a.source == art.source]
    at = next((i for i, a in enumerate(same) if a.id == art.id), None)
    if at is None:
        return []
    before = same[:at]
    path = list(art.heading_path or [])
    out: list[tuple[str, str]] = []
    section = next((a for a in reversed(before) if list(a.heading_path or []) == path and _lead(a.text)), None)
    if section is None:
        for depth in range(len(path) - 1, -1, -1):
            section = next((a for a in reversed(before) if list(a.heading_path or []) == path[:depth]
                            and _lead(a.text)), None)
            if section is not None:
                break
    if section is not None:
        out.append((f"the lead of '{section.title}' ({section.id})", _lead(section.text)[:CONTEXT_CHARS]))
    if before and before[-1] is not section:
        prev = default_paragraphs(before[-1].text)
        if prev:
            out.append((f"the end of '{before[-1].title}' ({before[-1].id}), just before", prev[-1][-CONTEXT_CHARS:]))
    return out


# -- the offline proposer -----------------------------------------------------------------------------------------
def baseline_proposal(inp: ProposalInput) -> Proposal:
    """``baseline:heuristic``: no model, no call. Rewrite: the section's lead paragraph put before the text. Merge:
    the more specific title's article keeps its ID; the other's paragraphs it lacks (not near copies of its own) are appended. Split: at the
    largest topic shift between neighbouring paragraphs, each part titled by its first heading or words."""
    base = Proposal(kind=inp.kind, articles=inp.ids, finding=inp.finding_kind, model=BASELINE)  # type: ignore[arg-type]
    if inp.kind == "rewrite":
        a = inp.articles[0]
        if not inp.context:
            return base.model_copy(update={"error": "nothing on the source page to bring in (the article has no "
                                                    "source, or is the first of its page): edit it by hand"})
        what, lead = inp.context[0]
        return base.model_copy(update={"title": a["title"], "text": f"{lead}\n\n{a['text']}",
                                       "reason": f"{BASELINE}: put {what} before the text"})
    if inp.kind == "merge":
        first, second = sorted(inp.articles, key=lambda x: -_specific(x["title"]))
        mine = [set(surface_words(p)) for p in default_paragraphs(first["text"])]
        extra = [p for p in default_paragraphs(second["text"]) if not any(_alike(set(surface_words(p)), m) for m in mine)]
        text = "\n\n".join([first["text"].strip(), *extra])
        return base.model_copy(update={"keep": first["id"], "title": first["title"], "text": text,
                                       "reason": f"{BASELINE}: {first['id']} has the more specific title; "
                                                 f"{len(extra)} paragraph(s) of {second['id']} it lacks appended"})
    at = largest_shift(inp.paragraphs)
    parts = (inp.paragraphs[: at - 1], inp.paragraphs[at - 1:])
    title = inp.articles[0]["title"]
    return base.model_copy(update={"at": at, "titles": [part_title(title, p) for p in parts],
                                   "reason": f"{BASELINE}: the paragraphs before and after {at} share the fewest words"})


def _alike(a: set[str], b: set[str]) -> bool:
    """Two paragraphs the same but for a few words (Jaccard of their words): a merge keeps one of them."""
    return bool(a | b) and len(a & b) / len(a | b) >= NEAR_SAME


def _specific(title: str) -> int:
    """How much a title says: the distinct words of its last breadcrumb part."""
    return len(set(surface_words(title.rsplit(">", 1)[-1])))


def _bag(paragraphs: Sequence[str]) -> Counter:
    return Counter(w for p in paragraphs for w in surface_words(p) if len(w) > 3)


def largest_shift(paragraphs: Sequence[str], window: int = 2) -> int:
    """The paragraph (1-based, 2..n) where the words before and after (``window`` paragraphs each side) overlap
    least (cosine of word counts); ties go to the split nearest the middle."""
    n = len(paragraphs)
    best, best_key = 2, (math.inf, math.inf)
    for at in range(2, n + 1):
        left, right = _bag(paragraphs[max(0, at - 1 - window): at - 1]), _bag(paragraphs[at - 1: at - 1 + window])
        dot = sum(c * right[w] for w, c in left.items())
        norm = math.sqrt(sum(c * c for c in left.values()) * sum(c * c for c in right.values())) or 1.0
        key = (dot / norm, abs((at - 1) - n / 2))
        if key < best_key:
            best, best_key = at, key
    return best


def part_title(title: str, paragraphs: Sequence[str]) -> str:
    """A part's title: the article's title, then the part's first heading (else its first words)."""
    for p in paragraphs:
        for line in p.splitlines():
            m = _HEADING.match(line)
            if m:
                return f"{title} > {m.group(1).strip()}"
    words = " ".join(" ".join(paragraphs).split()[:7]).strip(" .,:;")
    return f"{title} > {words}…" if words else title


# -- reading a model's reply --------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_reply(inp: ProposalInput, reply: str | None, model: str) -> Proposal:
    """A model's reply -> a :class:`Proposal`; one with ``error`` set (rejected) when the reply is unusable."""
    base = Proposal(kind=inp.kind, articles=inp.ids, finding=inp.finding_kind, model=model)  # type: ignore[arg-type]

    def rejected(why: str) -> Proposal:
        return base.model_copy(update={"error": why})

    if not reply or not reply.strip():
        return rejected("the model's reply was empty")
    obj = first_json_object(reply)
    if obj is None:
        return rejected("no JSON object in the model's reply")
    obj = {str(k).lower(): v for k, v in obj.items()}
    base.reason = " ".join(_text(obj.get("reason")).split())[:500]
    if inp.kind == "split":
        at = obj.get("at")
        if isinstance(at, str) and at.strip().isdigit():
            at = int(at.strip())
        n = len(inp.paragraphs)
        if isinstance(at, bool) or not isinstance(at, int):
            return rejected(f"'at' must be a paragraph number (2 to {n}), got {str(at)[:40]!r}")
        if not 2 <= at <= n:
            return rejected(f"the article has {n} paragraphs: the second part must start at paragraph 2 to {n}, "
                            f"not {at}")
        titles = obj.get("titles")
        if not isinstance(titles, list) or len(titles) != 2 or not all(_text(t) for t in titles):
            return rejected("'titles' must be a list of two non-empty titles")
        return base.model_copy(update={"at": at, "titles": [_text(t)[:300] for t in titles]})
    title, text = _text(obj.get("title")), _text(obj.get("text"))
    if not title or not text:
        return rejected("the reply has no title or no text")
    if len(title) > 300 or "\n" in title:
        return rejected("the proposed title is not one line of at most 300 characters")
    update: dict[str, Any] = {"title": title, "text": text}
    originals = " ".join(a["text"] for a in inp.articles)
    if inp.kind == "merge":
        keep = str(obj.get("keep", "")).strip()
        keep = re.sub(r"^\[?\s*ID:\s*|\s*\]$", "", keep, flags=re.I)
        if keep not in inp.ids:
            return rejected(f"'keep' must be {inp.ids[0]} or {inp.ids[1]}, got {keep[:40]!r}")
        update["keep"] = keep
    context = " ".join(t for _, t in inp.context)
    if len(text) > MAX_GROWTH * (len(originals) + len(context)) + 200:
        return rejected("the proposed text is far longer than the article(s) and context it was made from")
    kept = _kept_share(originals, text)
    if kept < KEEPS_AT_LEAST:
        return rejected(f"the proposed text keeps {kept:.0%} of the original words (at least {KEEPS_AT_LEAST:.0%} "
                        "expected): it is a different article")
    if inp.kind == "rewrite" and title == inp.articles[0]["title"] and text == inp.articles[0]["text"]:
        return rejected("the proposal changes nothing")
    return base.model_copy(update=update)


def _kept_share(original: str, proposed: str) -> float:
    """The share of the original's distinct words the proposal still has (a merge drops repeats, not words)."""
    words = set(surface_words(original))
    return len(words & set(surface_words(proposed))) / len(words) if words else 1.0
