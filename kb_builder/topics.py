"""Topic splitting for text without usable headings (``grace kb build --splitter semantic|llm:MODEL``).

A flat PDF export, a wiki page written as one long run of paragraphs, a policy
whose headings were lost on the way: the heading splitter can only cut such
text where the token budget runs out, so one article ends mid-topic and the
next starts without its subject. Here the cut points are where the topic
changes instead:

* ``semantic`` (offline, nothing downloaded): TextTiling-style lexical
  cohesion (Hearst 1997). Each paragraph becomes a bag of grace's own search
  terms (stop words out, Snowball stems: :func:`kb_builder.language.terms`);
  the similarity of the ``WINDOW`` paragraphs before each gap with the
  ``WINDOW`` after it dips where a topic ends, and a gap's *depth* (how far the
  similarity falls below the peaks on either side) says how clear that dip is.
  A text is cut at its deepest gap while that gap is clear enough (depth at
  least ``CUTOFF``, or the part is over the token budget), never leaving a
  part under the minimum size. A line that reads as a title (short, no final
  punctuation, followed by text: what a heading becomes in a flat export)
  deepens the gap before it by ``TITLE_CUE``; a gap between two items of one
  list is cut only for the budget (a list cut from its introduction cannot
  answer on its own).
* ``llm:PROVIDER:MODEL``: the model names where each part starts and its title
  (:mod:`harness.runner.topic_split` asks it, through the engine, so it is
  cached and priced); this module only plans the questions
  (:class:`TopicRequest`) and applies the answers (:class:`Segmentation`). A
  text whose answer cannot be read is split by ``semantic`` instead, and the
  build says which.

Each part is titled from its text: its opening title line if it has one, else
its first sentence cut short. The title joins the breadcrumb
(``Page > Part title``), so the part's ID is tied to it like a heading's:
rebuilding unchanged sources gives the same articles and IDs. Text that sits
under a heading and fits the budget is left as the heading splitter makes it:
the author's headings are better boundaries than any guess.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.core.errors import GraceError
from harness.core.model_names import split_model
from kb_builder.documents import Document
from kb_builder.documents.cleanup import clean_title
from kb_builder.language import DEFAULT_LANGUAGE, detect, terms
from kb_builder.splitting import _BLANK_LINE, _LIST_ITEM, _SENTENCE, Draft, Splitter, placed_blocks

WINDOW = 2  # paragraphs compared on each side of a gap
CUTOFF = 0.8  # least depth (0..2) of a gap a text under budget is cut at (tuned on four handbooks)
TITLE_CUE = 0.3  # added to the depth of the gap before a title-like line
LIST_PENALTY = 2.0  # taken from the depth of a gap between two items of one list
TITLE_WORDS = 10  # a part titled by its first sentence: at most this many words of it
ASK_TOKENS = 2_000  # paragraphs shown to a model in one question: a long text is asked in windows this size

_TITLE_LINE = re.compile(r"^(?:#{1,6}\s+)?(?P<t>[^\n]{2,90})$")
_MARKERS = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")
_TAGS = re.compile(r"<[^<>]*>")
_WORDY = re.compile(r"[^\W\d_]{2,}")  # a line with a word in it, not a rule, a fence or a lone tag
_MARKUP_LINE = re.compile(r"^\s*(?:</?[A-Za-z][^>]*>\s*)+$|^\s*(?:[-*_=`~]{3,}|\|[-|: ]+\|?)\s*$")


@dataclass(frozen=True)
class TopicRequest:
    """One text a model is asked to cut into topics: its paragraphs and where it comes from."""

    key: str  # SHA-256 of the paragraphs: the same text is asked once, and its answer found again
    source: str
    title: str  # the breadcrumb above the text
    units: tuple[str, ...]


@dataclass(frozen=True)
class Segmentation:
    """Where each part starts (0-based paragraph index, the first 0) and its title."""

    starts: tuple[int, ...]
    titles: tuple[str, ...]


AskTopics = Callable[[list[TopicRequest]], dict[str, "Segmentation | None"]]


def parse_splitter(text: str | None) -> str:
    """``headings``, ``semantic`` or ``llm:PROVIDER:MODEL``, checked; anything else is a GraceError saying the choices."""
    value = (text or "headings").strip()
    if value in ("headings", "semantic"):
        return value
    if value.startswith("llm:"):
        if split_model(value[4:]).complete:
            return value
        raise GraceError(f"--splitter {value}: name the model as llm:PROVIDER:MODEL, e.g. llm:openai:gpt-4o-mini "
                         "or llm:openai-compatible:smollm2 with --base-url")
    raise GraceError(f"--splitter {value!r}: choose headings (the default: split at the documents' headings), "
                     "semantic (offline: topic boundaries from the text itself) or llm:PROVIDER:MODEL (a model "
                     "finds them)")


def topic_units(text: str) -> list[str]:
    """The paragraphs of ``text``, a title-like line or a lead-in ending in ``:`` kept with the paragraph after it."""
    blocks = [b.strip() for b in _BLANK_LINE.split(text) if b.strip()]
    units: list[str] = []
    carry = ""
    for b in blocks:
        if carry:
            b = carry + "\n\n" + b
            carry = ""
        if is_title_line(b) or b.endswith(":"):
            carry = b
            continue
        units.append(b)
    if carry:
        if units:
            units[-1] += "\n\n" + carry
        else:
            units.append(carry)
    return units


def is_title_line(text: str) -> bool:
    """One short line without final punctuation: a heading that lost its markup, or a Markdown heading."""
    m = _TITLE_LINE.match(text.strip())
    if not m:
        return False
    line = _MARKERS.sub("", m.group("t")).strip()
    return bool(line) and len(line.split()) <= 12 and not line.endswith((".", "!", "?", ",", ";", ":", "|"))


def title_block(unit: str) -> str | None:
    """The unit's opening title line, when it stands as a paragraph of its own before more text (a wrapped
    line of a paragraph is not one)."""
    head, sep, rest = unit.strip().partition("\n\n")
    return head if sep and rest.strip() and is_title_line(head) and _WORDY.search(clean_title(head)) else None


def depth_scores(sims: Sequence[float]) -> list[float]:
    """TextTiling's depth of each gap: how far its similarity lies below the highest point reached climbing
    uphill to the left and to the right of it."""
    out = []
    for i, s in enumerate(sims):
        left = s
        for j in range(i - 1, -1, -1):
            if sims[j] < left:
                break
            left = sims[j]
        right = s
        for j in range(i + 1, len(sims)):
            if sims[j] < right:
                break
            right = sims[j]
        out.append((left - s) + (right - s))
    return out


def gap_similarities(units: Sequence[str], language: str) -> list[float]:
    """Cosine similarity of the term bags of the ``WINDOW`` paragraphs before and after each gap (n-1 gaps)."""
    bags = [Counter(terms(u, language)) for u in units]
    sims = []
    for g in range(1, len(units)):
        left: Counter[str] = Counter()
        for b in bags[max(0, g - WINDOW):g]:
            left.update(b)
        right: Counter[str] = Counter()
        for b in bags[g:g + WINDOW]:
            right.update(b)
        dot = sum(v * right[t] for t, v in left.items() if t in right)
        norm = math.sqrt(sum(v * v for v in left.values()) * sum(v * v for v in right.values()))
        sims.append(dot / norm if norm else 0.0)
    return sims


def semantic_starts(units: Sequence[str], sizes: Sequence[int], budget: int, least: int, language: str) -> list[int]:
    """Where each topic starts (0 first): cut at the deepest gap while it is clear enough or the part is over
    ``budget`` tokens, never leaving a part under ``least`` tokens (``sizes``: each paragraph's tokens)."""
    if len(units) < 2:
        return [0]
    depth = depth_scores(gap_similarities(units, language))
    for g in range(1, len(units)):
        if title_block(units[g]):
            depth[g - 1] += TITLE_CUE
        elif _LIST_ITEM.match(units[g]) and _LIST_ITEM.match(units[g - 1].rsplit("\n\n", 1)[-1]):
            depth[g - 1] -= LIST_PENALTY  # the next item of a list: cut there only for the budget
    prefix = [0]
    for n in sizes:
        prefix.append(prefix[-1] + n + 1)

    def cut(lo: int, hi: int) -> list[int]:
        total = prefix[hi] - prefix[lo]
        gaps = [g for g in range(lo + 1, hi) if prefix[g] - prefix[lo] >= least and prefix[hi] - prefix[g] >= least]
        if not gaps:
            return [lo]
        best = max(gaps, key=lambda g: (depth[g - 1], -abs((prefix[g] - prefix[lo]) * 2 - total)))
        if total > budget or depth[best - 1] >= CUTOFF:
            return cut(lo, best) + cut(best, hi)
        return [lo]

    return cut(0, len(units))


def topic_title(units: Sequence[str]) -> str:
    """A part's title from its text: its opening title line, else its first sentence cut to ``TITLE_WORDS``
    (lines of bare markup, rules and fences skipped)."""
    head = title_block(units[0])
    if head:
        return clean_title(_MARKERS.sub("", head)).strip()
    lines = [ln for u in units for ln in u.splitlines() if ln.strip() and not _MARKUP_LINE.match(ln)]
    text = ""
    for i, ln in enumerate(lines):
        if _WORDY.search(clean_title(ln)):
            text = " ".join(_MARKERS.sub("", x).strip() for x in lines[i:i + 4])
            break
    text = clean_title(text) if text else ""
    sentence = _SENTENCE.split(text, maxsplit=1)[0].strip().rstrip(".:;,") if text else ""
    words = sentence.split()
    if len(words) > TITLE_WORDS:
        return " ".join(words[:TITLE_WORDS]).rstrip(".:;,") + " ..."
    return sentence or "Untitled"


def request_key(units: Sequence[str]) -> str:
    return hashlib.sha256("\n\u241e\n".join(units).encode("utf-8")).hexdigest()[:16]


class TopicSplitter(Splitter):
    """The heading splitter, with text that has no heading above it (or is over budget) cut at its topics.

    ``answers`` (``llm:``): the model's :class:`Segmentation` per :class:`TopicRequest` key, None where its
    answer could not be read; a text not in it, or unreadable, is split by ``semantic`` (listed in
    ``fallbacks``). ``record``: a list that collects the requests instead (the planning pass of ``llm:``).
    """

    def __init__(self, *args, answers: dict[str, Segmentation | None] | None = None,
                 record: list[TopicRequest] | None = None, language: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers, self.record, self.language = answers, record, language
        self.fallbacks: list[str] = []  # "source: title" of each text split by semantic for want of an answer
        self._doc: Document | None = None
        self._lang = language or DEFAULT_LANGUAGE

    def split(self, doc: Document) -> list[Draft]:
        self._doc = doc
        if self.language is None:
            self._lang = detect("\n\n".join(s.body for s in doc.sections[:20])[:4000]) or DEFAULT_LANGUAGE
        return super().split(doc)

    def _emit(self, path: list[str], text: str, out: list[Draft], at: int | None = None) -> None:
        base = (len(text) - len(text.lstrip()) if at is None else at)
        text = text.strip()
        budget = self._budget(path)
        if not text or (len(path) > 1 and self._count(text) <= budget):
            super()._emit(path, text, out, base)  # under a heading and within budget: the author's cut stands
            return
        units = topic_units(text)
        if len(units) < 2:
            super()._emit(path, text, out, base)
            return
        sizes = [self._count(u) for u in units]
        if sum(sizes) < 2 * self.min and self._count(text) <= budget:
            super()._emit(path, text, out, base)  # too short for two parts: nothing to find (nor to ask a model)
            return
        # where each unit starts (a unit is whole blocks: the sections its part holds follow from it)
        blocks = [a for a, _ in placed_blocks(text)]
        starts, n = [], 0
        for u in units:
            starts.append(base + blocks[min(n, len(blocks) - 1)])
            n += u.count("\n\n") + 1
        for start, end, title in self._parts(path, units, sizes, budget):
            body = "\n\n".join(units[start:end])
            if start == 0 and end == len(units):
                super()._emit(path, body, out, starts[start])
            else:
                super()._emit([*path, title], body, out, starts[start])

    def _parts(self, path: list[str], units: list[str], sizes: list[int], budget: int) -> list[tuple[int, int, str]]:
        least = max(self.min, 1)
        if self.answers is None and self.record is None:
            starts = semantic_starts(units, sizes, budget, least, self._lang)
            return _with_titles(units, starts)
        parts: list[tuple[int, int, str]] = []
        for lo, hi in _windows(sizes, ASK_TOKENS):
            window = units[lo:hi]
            key = request_key(window)
            seg = None
            if self.record is not None:
                self.record.append(TopicRequest(key, self._doc.source if self._doc else "", " > ".join(path),
                                                tuple(window)))
            elif self.answers is not None:
                seg = self.answers.get(key)
            if seg is None:
                if self.record is None:
                    self.fallbacks.append(f"{self._doc.source if self._doc else ''}: {' > '.join(path)}"
                                          + (f" (paragraphs {lo + 1}-{hi})" if (lo, hi) != (0, len(units)) else ""))
                starts = semantic_starts(window, sizes[lo:hi], budget, least, self._lang)
                found = _with_titles(window, starts)
            else:
                found = _apply(seg, window, sizes[lo:hi], least)
            parts += [(lo + s, lo + e, t) for s, e, t in found]
        return parts


def _with_titles(units: Sequence[str], starts: Sequence[int]) -> list[tuple[int, int, str]]:
    ends = [*starts[1:], len(units)]
    return [(s, e, topic_title(units[s:e])) for s, e in zip(starts, ends, strict=True)]


def _windows(sizes: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Consecutive runs of paragraphs of at most ``limit`` tokens each (a longer paragraph alone)."""
    out, lo, total = [], 0, 0
    for i, n in enumerate(sizes):
        if i > lo and total + n > limit:
            out.append((lo, i))
            lo, total = i, 0
        total += n + 1
    out.append((lo, len(sizes)))
    return out


def _apply(seg: Segmentation, units: Sequence[str], sizes: Sequence[int], least: int) -> list[tuple[int, int, str]]:
    """A model's parts, with a part under ``least`` tokens joined to the one before (the first: to the next)."""
    starts = list(seg.starts)
    titles = list(seg.titles)
    i = 0
    while i < len(starts) and len(starts) > 1:
        end = starts[i + 1] if i + 1 < len(starts) else len(units)
        if sum(sizes[starts[i]:end]) >= least:
            i += 1
            continue
        if i == 0:  # the first part is too small: it opens the second, which keeps the first's start and title
            del starts[1], titles[1]
        else:
            del starts[i], titles[i]
    ends = [*starts[1:], len(units)]
    return [(s, e, t or topic_title(units[s:e])) for s, e, t in zip(starts, ends, titles, strict=True)]


def check_segmentation(starts: Sequence[object], titles: Sequence[object], n: int) -> Segmentation | None:
    """A model's answer as a :class:`Segmentation` of ``n`` paragraphs (1-based starts in the answer), or None
    when it cannot be one: starts out of range, not increasing, or nothing usable."""
    pairs: list[tuple[int, str]] = []
    for s, t in zip(starts, titles, strict=True):
        if isinstance(s, bool):
            return None
        try:
            k = int(str(s).strip().strip("[]#").removeprefix("P").removeprefix("p"))
        except ValueError:
            return None
        if not 1 <= k <= n:
            return None
        title = _TAGS.sub("", str(t or ""))  # "<title>": the template's placeholder echoed back, not a title
        pairs.append((k - 1, " ".join(clean_title(title).split())[:120] if re.search(r"[^\W_]", title) else ""))
    if not pairs:
        return None
    if any(b[0] <= a[0] for a, b in zip(pairs, pairs[1:], strict=False)):
        return None
    if pairs[0][0] != 0:
        pairs.insert(0, (0, ""))  # the text before the first named start is a part of its own
    return Segmentation(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))
