"""Which passage of an article matched the question, and which words to highlight.

Computed server-side and sent as ``[text, is_match, in_passage]`` segments, so the
page builds text nodes only (KB text is untrusted) and never has to map offsets
between Python code points and JavaScript UTF-16 units.

Words are read as retrieval reads them (:func:`kb_builder.language.term_spans`,
the retrievers' own analyzer): each article in its language (its own in a KB that
mixes languages, else the KB's), a question in each of the KB's languages, with
their Snowball stems and stop words. So "rémunération" marks "rémunéré" in a
French KB, and "les", "de" are never marked.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache

from kb_builder import language as lang
from kb_builder.retrieval.lexical import article_languages, kb_language

_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+|\n\s*\n|\n(?=\s*[-*#>|\d])")

Segment = list  # [text: str, is_match: int, in_passage: int]


# English words a question is made of but no passage is found by: marking them is noise. With the words retrieval
# keeps for meaning (lang.MEANINGFUL_EN: "not", "before"...) this is what English pages always left unmarked.
_QUESTION_WORDS_EN = frozenset("""another also can could get got know like many may might much must need one please
tell use want way would yes""".split()) | lang.MEANINGFUL_EN


@lru_cache(maxsize=64)
def unmarked(language: str) -> frozenset[str]:
    """Words never marked in ``language``: its stop words (and question words), as retrieval drops them."""
    stop = lang.stop_words(language)
    return stop | _QUESTION_WORDS_EN if language == "en" else stop


class KBWords:
    """How one KB's pages read words: which language each article is in, and a question's terms."""

    def __init__(self, kb):
        default = kb_language(kb)
        self.language = dict(zip((a.id for a in kb.articles), article_languages(kb.articles, default), strict=True))
        self.languages = list(dict.fromkeys(self.language.values())) or [default]
        self.default = default

    def of(self, article_id: str) -> str:
        return self.language.get(article_id, self.default)

    def terms(self, text: str) -> frozenset[str]:
        """The terms of a question (or a claim) in each of the KB's languages: it may be asked in any of them."""
        return frozenset(t for la in self.languages for t in lang.terms(text, la, unmarked(la)))


def _matches(text: str, terms: frozenset[str], language: str) -> list[tuple[int, int, str]]:
    if not terms:
        return []
    return [m for m in lang.term_spans(text, language, unmarked(language)) if m[2] in terms]


def match_spans(text: str, terms: frozenset[str], language: str) -> list[tuple[int, int]]:
    """Where ``text`` holds one of ``terms``; overlapping character bigrams (Chinese, Thai...) joined into one."""
    out: list[tuple[int, int]] = []
    for a, b, _ in _matches(text, terms, language):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


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


def best_passage(text: str, terms: frozenset[str], language: str, width: int = 320) -> tuple[int, int]:
    """The span with the most distinct query terms (then most hits, then earliest)."""
    found = _matches(text, terms, language)
    best, best_key = (0, min(len(text), width)), (0, 0)
    starts = [a for a, _, _ in found]
    for s, e in _units(text, width):
        lo, hi = bisect_left(starts, s), bisect_right(starts, e)
        inside = [t for _, b, t in found[lo:hi] if b <= e]
        key = (len(set(inside)), len(inside))
        if key > best_key:
            best, best_key = (s, e), key
    s, e = best
    if e - s > width * 2:  # one huge sentence or table: centre a window on its first hit
        first = next((a for a, b, _ in found if a >= s and b <= e), s)
        s = max(s, first - width // 3)
        e = min(e, s + width * 2)
    return s, e


def segments(text: str, terms: frozenset[str], language: str, span: tuple[int, int] | None = None) -> list[Segment]:
    """``text`` (or ``text[span]``) cut into plain and matched pieces."""
    lo, hi = span if span else (0, len(text))
    out: list[Segment] = []
    pos = lo
    for a, b in match_spans(text[lo:hi], terms, language):
        a, b = a + lo, b + lo
        if a > pos:
            out.append([text[pos:a], 0, 0])
        out.append([text[a:b], 1, 0])
        pos = b
    if pos < hi:
        out.append([text[pos:hi], 0, 0])
    return out


def passage_snippet(text: str, terms: frozenset[str], language: str, width: int = 320) -> dict:
    s, e = best_passage(text, terms, language, width)
    return {
        "segments": segments(text, terms, language, (s, e)),
        "cut_before": s > 0,
        "cut_after": e < len(text),
    }


def article_segments(text: str, terms: frozenset[str], language: str, width: int = 320) -> list[Segment]:
    """The full text, with the best passage flagged so the page can scroll to it."""
    s, e = best_passage(text, terms, language, width) if terms else (0, 0)
    out: list[Segment] = []
    for part_span, in_passage in (((0, s), 0), ((s, e), 1), ((e, len(text)), 0)):
        if part_span[1] > part_span[0]:
            out += [[t, m, in_passage] for t, m, _ in segments(text, terms, language, part_span)]
    return out
