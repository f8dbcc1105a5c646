"""Which passage of an article matched the question, and which words to highlight.

Computed server-side and sent as ``[text, is_match, in_passage]`` segments, so the
page builds text nodes only (KB text is untrusted) and never has to map offsets
between Python code points and JavaScript UTF-16 units.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache

_WORD = re.compile(r"\w\w+")  # the token pattern BM25 indexes with
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+|\n\s*\n|\n(?=\s*[-*#>|\d])")

Segment = list  # [text: str, is_match: int, in_passage: int]


# words a question is made of but no passage is found by: highlighting them is noise
_QUESTION_WORDS = {"another", "also", "can", "could", "get", "got", "know", "like", "many", "may", "might", "much",
                   "must", "need", "one", "please", "tell", "use", "want", "way", "would", "yes"}


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    try:
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        return frozenset(STOPWORDS_EN_PLUS) | _QUESTION_WORDS
    except ImportError:  # pragma: no cover
        return frozenset(_QUESTION_WORDS)


@lru_cache(maxsize=1)
def _stemmer():
    try:
        import Stemmer

        return Stemmer.Stemmer("english").stemWord
    except ImportError:  # pragma: no cover
        return lambda w: w


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer()(word.lower())


def query_terms(query: str) -> frozenset[str]:
    stop = _stopwords()
    return frozenset(stem(w) for w in _WORD.findall(query.lower()) if w not in stop)


def match_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    if not terms:
        return []
    return [m.span() for m in _WORD.finditer(text) if stem(m.group()) in terms]


def _units(text: str, width: int) -> list[tuple[int, int]]:
    """Runs of whole sentences of about ``width`` characters (a passage a human reads at a glance)."""
    bounds, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(text)))
    units: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for s, e in bounds:
        if e <= s:
            continue
        if cur is None:
            cur = (s, e)
        elif e - cur[0] <= width:
            cur = (cur[0], e)
        else:
            units.append(cur)
            cur = (s, e)
    if cur is not None:
        units.append(cur)
    return units or [(0, len(text))]


def best_passage(text: str, terms: frozenset[str], width: int = 320) -> tuple[int, int]:
    """The span with the most distinct query terms (then most hits, then earliest)."""
    spans = match_spans(text, terms)
    best, best_key = (0, min(len(text), width)), (0, 0)
    starts = [a for a, _ in spans]
    for s, e in _units(text, width):
        lo, hi = bisect_left(starts, s), bisect_right(starts, e)
        inside = [text[a:b] for a, b in spans[lo:hi] if b <= e]
        key = (len({stem(w) for w in inside}), len(inside))
        if key > best_key:
            best, best_key = (s, e), key
    s, e = best
    if e - s > width * 2:  # one huge sentence or table: centre a window on its first hit
        first = next((a for a, b in spans if a >= s and b <= e), s)
        s = max(s, first - width // 3)
        e = min(e, s + width * 2)
    return s, e


def segments(text: str, terms: frozenset[str], span: tuple[int, int] | None = None) -> list[Segment]:
    """``text`` (or ``text[span]``) cut into plain and matched pieces."""
    lo, hi = span if span else (0, len(text))
    out: list[Segment] = []
    pos = lo
    for a, b in match_spans(text[lo:hi], terms):
        a, b = a + lo, b + lo
        if a > pos:
            out.append([text[pos:a], 0, 0])
        out.append([text[a:b], 1, 0])
        pos = b
    if pos < hi:
        out.append([text[pos:hi], 0, 0])
    return out


def passage_snippet(text: str, terms: frozenset[str], width: int = 320) -> dict:
    s, e = best_passage(text, terms, width)
    return {
        "segments": segments(text, terms, (s, e)),
        "cut_before": s > 0,
        "cut_after": e < len(text),
    }


def article_segments(text: str, terms: frozenset[str], width: int = 320) -> list[Segment]:
    """The full text, with the best passage flagged so the page can scroll to it."""
    s, e = best_passage(text, terms, width) if terms else (0, 0)
    out: list[Segment] = []
    for part_span, in_passage in (((0, s), 0), ((s, e), 1), ((e, len(text)), 0)):
        if part_span[1] > part_span[0]:
            out += [[t, m, in_passage] for t, m, _ in segments(text, terms, part_span)]
    return out
