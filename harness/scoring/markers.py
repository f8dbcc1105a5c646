"""The citation markers a shipped system prints, and the reference string each one points to.

A RAG bot does not write GRACE's ``[ID: 17]``: it writes ``[1]``, ``[1, 2]``, ``[1-3]``, ``[^1]`` footnotes,
``【1†source】``, superscripts (``¹²``), markdown links ``[text](url)``, and ends with a "Sources:" list (in
any language grace has templates for). A number in such a marker is an index into the answer's *own* source
list (or into the structured citations the system returned, 1-based), never a KB article ID: reading ``[1]``
as article 1 gave bots a silent wrong figure (issue 39). So this module only turns an answer into typed
records (the body without its source list, each marker with its span, the sentence it ends and the
reference *string* it points to, and the named problems found); mapping a reference string onto KB articles
is the resolver's job, never done here.

What is read, and how (each rule a test in tests/harness/scoring/test_markers.py):

* markers: ``[1]``, ``[1, 2]``, ``[1-3]``, ``[doc1]``/``[Source 2]`` (Azure's and others' labelled form),
  ``[^1]``/``[^note]``/``[^1^]`` footnotes, ``【1†source】``/``【4:0†file.pdf】`` (the name after the dagger is
  the reference when it is not just "source"), ``¹²``/``<sup>1</sup>`` (only when every number resolves:
  ``mc²`` and ``40 m²`` are exponents), and markdown links ``[text](url)`` / ``[[1]](url)`` (the URL is the
  reference). ``[ID: 17]`` is GRACE's form and is left to :mod:`harness.scoring.extraction`.
* the source list: the last heading line ("Sources:", "**Quellen**", "## Πηγές", "SOURCES: a, b") followed by
  entries (``[1] x``, ``1. x``, ``(1) x``, ``¹ x``, ``- x``, a markdown link); footnote definitions
  ``[^1]: x`` and link definitions ``[1]: url`` anywhere. They are taken out of the body.
* an answer with no marker cites its structured citations, or else its whole list ("Source: x"); a list entry it
  does not cite is then one outside its structured citations (``uncited_entry`` always means "not counted").

Model output is hostile: every pattern is linear (bounded repeats, no nested quantifiers over overlapping
characters), at most :data:`MAX_MARKERS` markers and sources are read (a named problem says when more were
there), a number has at most :data:`MAX_DIGITS` digits, text inside ``` fences and inline code is never read, and
nothing here raises on any string.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import islice
from typing import NamedTuple

from harness.core.citation_text import SENTENCE_END

# The heading of a trailing source list, per template language (harness.prompts.languages.TEMPLATE_LANGUAGES:
# a test keeps the two in step). Matched with case and accents folded.
LIST_HEADINGS = {
    "en": ("sources", "source", "references", "reference", "citations", "citation", "bibliography"),
    "fr": ("sources", "source", "références", "référence", "citations", "bibliographie"),
    "de": ("quellen", "quelle", "referenzen", "quellenangaben", "belege", "zitate"),
    "es": ("fuentes", "fuente", "referencias", "citas", "bibliografía"),
    "pt": ("fontes", "fonte", "referências", "citações", "bibliografia"),
    "it": ("fonti", "fonte", "riferimenti", "citazioni", "bibliografia"),
    "nl": ("bronnen", "bron", "referenties", "verwijzingen", "citaten"),
    "el": ("πηγές", "πηγή", "αναφορές", "παραπομπές", "βιβλιογραφία"),
}


def _fold(word: str) -> str:
    """Case and accents folded, so "ΠΗΓΕΣ", "Πηγές" and "Références"/"References" each match their heading."""
    if word.isascii():  # no accent to take off (the first word of most lines of most answers)
        return word.casefold()
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c)).casefold()


_HEADING_WORDS = frozenset(_fold(w) for words in LIST_HEADINGS.values() for w in words)

KINDS = ("numeric", "footnote", "bracket_source", "superscript", "link")
PROBLEMS = {  # code: severity
    "unlisted_marker": "error",  # a marker whose number has no entry in the list nor in the structured citations
    "duplicate_number": "error",  # two list entries with one number (the first is used)
    "range_too_long": "error",  # [1-500] or [3-1]: not expanded, its ends read
    "too_many_sources": "error",  # more than MAX_MARKERS list entries and definitions: the rest is not read
    "too_many_markers": "error",  # more than MAX_MARKERS: the rest is not read (no real answer has that many)
    "uncited_entry": "warning",  # a list entry the answer does not cite (not counted as cited)
    "list_longer_than_markers": "warning",  # more list entries than distinct numbers its markers cite
}
MAX_RANGE = 50  # a range marker [a-b] wider than this is not expanded (a year span, a typo, or hostile)
MAX_MARKERS = 2000  # bounded work on hostile output: a 1 MB answer of "[1]" would otherwise be 333,000 markers
# the digits of a marker's or a list entry's number: far more than a list of MAX_MARKERS entries needs, so "[1500]"
# is read and "[12345]" is an unlisted marker, never skipped; ten digits in brackets are no footnote (an order number)
MAX_DIGITS = 9
_NUM = rf"\d{{1,{MAX_DIGITS}}}"
_SUP_NUM = rf"[⁰¹²³⁴⁵⁶⁷⁸⁹]{{1,{MAX_DIGITS}}}(?![⁰¹²³⁴⁵⁶⁷⁸⁹])"

_SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_SUPER_DIGITS = str.maketrans(_SUPERSCRIPT, "0123456789")


class SourceEntry(NamedTuple):
    """One entry of the answer's own source list or one footnote definition. (These records are named tuples, not
    frozen dataclasses: the scorer makes a few per answer, a million answers a run, and a frozen dataclass took
    ten times as long to build.)"""

    label: str  # "1", "2", or a footnote's name ("note"); an unnumbered bullet gets its 1-based position
    reference: str  # the text of the entry, for the resolver (a path, a URL, a title, a quote); a link's URL
    title: str  # a markdown link entry's text ("[Pay policy](https://x)" gives "Pay policy"); else ""
    origin: str  # list | footnote (``[^1]: ...``) | definition (``[1]: url``)


class Marker(NamedTuple):
    """One marker in the body, and what each of its labels points to."""

    kind: str  # one of KINDS
    start: int  # character span in ``MarkerReading.body``
    end: int
    labels: tuple[str, ...]  # ("1", "2") for [1, 2] or [1-2]; () for a link whose text is not a number
    references: tuple[str | None, ...]  # per label (a link: its URL, once); None when nothing resolves it
    via: tuple[str, ...]  # per reference: list | footnote | definition | structured | link | dagger | none
    sentence_start: int  # the sentence this marker ends (span in the body)
    sentence_end: int

    def sentence(self, body: str) -> str:
        return body[self.sentence_start:self.sentence_end]


class Problem(NamedTuple):
    """Something in the answer's markers or list that the scorer must count, not guess past."""

    code: str  # a key of PROBLEMS
    severity: str  # error | warning
    detail: str


class MarkerReading(NamedTuple):
    """One answer read: what :func:`read_markers` returns."""

    body: str  # the answer without its source list and footnote definitions
    markers: tuple[Marker, ...]
    sources: tuple[SourceEntry, ...]
    # distinct, in order of first marker; with no marker, the structured citations or else the whole list
    cited_references: tuple[str, ...]
    problems: tuple[Problem, ...]


# ---- back matter: the trailing source list and footnote definitions --------------------------------------------

_INLINE_CODE = re.compile(r"`[^`\n]{1,500}`")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]*)?[*_]{0,2}([^\W\d_]{3,20})[*_]{0,2}[ \t]*([:：])?[*_]{0,2}[ \t]*(.*)$")
_FOOTNOTE_DEF = re.compile(r"^[ \t]{0,3}\[\^([^\]\s]{1,40})\]:[ \t]*(.*)$")
_LINK_DEF = re.compile(r"^[ \t]{0,3}\[(" + _NUM + r")\]:[ \t]+(\S.*)$")
# "[1] x", "[1]: x", "1. x", "1) x", "(1) x", "¹ x", each maybe after a bullet; a bare bullet "- x"
_ENTRY = re.compile(
    r"^[ \t]{0,3}(?:[-*+•][ \t]+)?(?:\[\^?(" + _NUM + r")\]|\((" + _NUM + r")\)|(" + _NUM + r")[.):]|(" + _SUP_NUM
    + r"))[ \t]*[:\-–—]?[ \t]*(.*)$"
)
_BULLET = re.compile(r"^[ \t]{0,3}[-*+•][ \t]+(\S.*)$")
_INLINE_SPLIT = re.compile(r"[;,][ \t]+")
_INLINE_ENTRY = re.compile(r"\[(" + _NUM + r")\][ \t]*:?[ \t]*([^\[]*)")


def _fences(lines: list[str]) -> list[bool]:
    """Whether each line is inside (or opens/closes) a ``` or ~~~ fence; an unclosed fence runs to the end."""
    inside, out, opener = False, [], ""
    for line in lines:
        m = _FENCE.match(line)
        if m and not inside:
            inside, opener = True, m.group(1)[0]
            out.append(True)
        elif m and inside and m.group(1)[0] == opener:
            inside = False
            out.append(True)
        else:
            out.append(inside)
    return out


def _entry(line: str) -> tuple[str | None, str] | None:
    """A list line's (number or None for a bare bullet, text); None when the line is no entry."""
    m = _ENTRY.match(line)
    if m:
        number = next(g for g in m.groups()[:4] if g is not None).translate(_SUPER_DIGITS)
        return str(int(number)), m.group(5).strip()
    m = _BULLET.match(line)
    return (None, m.group(1).strip()) if m else None


_ENTRY_LINK = re.compile(r"\[([^\[\]\n]{0,300})\]\(([^()\s]{1,2000})\)(.*)")


def _clean_reference(text: str) -> tuple[str, str]:
    """An entry's (reference, title): a markdown link "[Pay policy](https://x)" gives its URL and its text."""
    text = text.strip().strip("`<>*\"'\u201c\u201d").strip()
    m = _ENTRY_LINK.fullmatch(text)
    if m:
        return m.group(2), (m.group(1) + m.group(3)).strip(" -–—:")
    return text, ""


def _heading(line: str) -> tuple[bool, str] | None:
    """``(True, rest)`` when ``line`` is a source-list heading ("Sources:", "**Quellen**", "## Πηγές")."""
    m = _HEADING.match(line)  # a line's ending: (.*) takes an "\r" or a separator, which the strip below drops
    if not m or _fold(m.group(1)) not in _HEADING_WORDS:
        return None
    rest = m.group(3).strip().strip("*_").strip()
    if m.group(2) is None and rest:  # "Sources say the bonus is 10%": prose, not a heading
        return None
    return True, rest


def _inline_entries(rest: str) -> list[tuple[str | None, str]]:
    """Entries written on the heading's own line: "Sources: [1] a.html, [2] b.html" or "Sources: a.html; b.html"
    (MAX_MARKERS of them and one more, when there are more)."""
    found = [(str(int(m.group(1))), m.group(2).strip().rstrip(",;").strip())
             for m in islice(_INLINE_ENTRY.finditer(rest), MAX_MARKERS + 1)]  # one more: more were there
    if found:
        return found
    parts = islice((p.strip() for p in _INLINE_SPLIT.split(rest, maxsplit=MAX_MARKERS)), MAX_MARKERS + 1)
    return [(None, part) for part in parts if part]


def _back_matter(text: str) -> tuple[str, list[SourceEntry], bool]:
    """The body without the trailing source list and footnote/link definitions, those entries in order (the first
    MAX_MARKERS), and whether there were more (all of them are taken out of the body, read or not)."""
    lines = text.splitlines(keepends=True)
    fenced = _fences(lines) if "```" in text or "~~~" in text else [False] * len(lines)
    keep = [True] * len(lines)
    definitions: list[SourceEntry] = []
    i = 0
    while i < len(lines):
        m = None if fenced[i] or "[" not in lines[i] else (_FOOTNOTE_DEF.match(lines[i]) or _LINK_DEF.match(lines[i]))
        if m:
            label = m.group(1).rstrip("^") or m.group(1)
            label = str(int(label)) if label.isdecimal() else label
            parts = [m.group(2).strip()]
            keep[i] = False
            while i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t") and lines[i + 1].strip():
                i += 1
                keep[i] = False
                parts.append(lines[i].strip())
            origin = "footnote" if m.re is _FOOTNOTE_DEF else "definition"
            if len(definitions) <= MAX_MARKERS:
                definitions.append(SourceEntry(label, *_clean_reference(" ".join(parts)), origin))
        i += 1

    listed: list[tuple[str | None, str]] = []
    more = False
    heading = next((j for j in range(len(lines) - 1, -1, -1) if keep[j] and not fenced[j] and _heading(lines[j])),
                   None)
    if heading is not None:
        rest = _heading(lines[heading])[1]
        candidate = _inline_entries(rest) if rest else []
        continued: dict[int, list[str]] = {}  # an entry's continuation lines, joined once: linear in a long entry
        end = heading + 1
        while end < len(lines):
            line = lines[end]
            if not keep[end] or not line.strip():
                end += 1
                continue
            entry = None if fenced[end] else _entry(line)
            if entry is not None and len(candidate) > MAX_MARKERS:  # (one more is kept, never read: the lines
                more = True  # continuing a skipped entry go there) removed from the body, not read: too_many_sources
            elif entry is not None:
                candidate.append(entry)
            elif candidate and line[:1] in (" ", "\t"):  # an indented continuation of the entry above
                continued.setdefault(len(candidate) - 1, []).append(line.strip())
            else:
                break
            end += 1
        for k, parts in continued.items():
            candidate[k] = (candidate[k][0], " ".join((candidate[k][1], *parts)))
        if candidate:
            listed = candidate
            for j in range(heading, end):
                keep[j] = False
    entries = [SourceEntry(label if label is not None else str(n), *_clean_reference(ref), "list")
               for n, (label, ref) in enumerate(listed, 1) if ref]
    body = "".join(line for line, k in zip(lines, keep, strict=True) if k).rstrip()
    sources = entries + definitions
    return body, sources[:MAX_MARKERS], more or len(sources) > MAX_MARKERS


# ---- markers in the body --------------------------------------------------------------------------------------

# [text](url) with at most one level of brackets in the text ([[1]](url)); images (![..](..)) are skipped by the caller
_LINK = re.compile(r"\[((?:[^\[\]\n]|\[[^\[\]\n]{0,100}\]){0,300})\]\(([^()\s]{1,2000})(?:[ \t]+\"[^\"\n]{0,300}\")?\)")
_NUMERIC = re.compile(r"\[(?i:(?:doc|source|src|ref|reference|citation)s?[ \t]?#?:?[ \t]?)?(" + _NUM
                      + r"(?:[ \t]{0,3}(?:[,;]|[-–—]|and)[ \t]{0,3}" + _NUM + r"){0,100})\](?!\()")
_FOOTNOTE = re.compile(r"\[\^([^\]\s\[]{1,40})\]")  # definitions were taken out of the body already
_DAGGER = re.compile(r"【(" + _NUM + r"(?::" + _NUM + r")?)(?:†([^【】\n]{0,300}))?】")
_SUPER = re.compile(r"(?<![\d⁰¹²³⁴⁵⁶⁷⁸⁹])" + _SUP_NUM + r"(?:[,˒]" + _SUP_NUM + r"){0,20}|<sup>(" + _NUM
                    + r"(?:,\s?" + _NUM + r"){0,20})</sup>")
# what every marker, definition and second line needs: a square or lenticular bracket, a superscript, <sup>, or a
# line break (str.splitlines's)
# line break (str.splitlines's); one character class, so the scan is the regex engine's fast one
_MARK_CHAR = re.compile("[\\[\u3010⁰¹²³⁴⁵⁶⁷⁸⁹\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SUPER_CHAR = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹]")


def _superscripts(text: str) -> bool:
    """Could ``text`` hold a superscript marker? (An ASCII text has no superscript digit: no scan.)"""
    return "<sup>" in text or (not text.isascii() and _SUPER_CHAR.search(text) is not None)
_UNIT_BEFORE = re.compile(r"(?:\d[ \t]?[A-Za-zµ°]{1,3}|\d)$")  # m², 10 km², x10³: an exponent, not a marker
_NUMBER_SPLIT = re.compile(r"[ \t]*(?:[,;]|and)[ \t]*")
_RANGE = re.compile(r"(" + _NUM + r")[ \t]*[-–—][ \t]*(" + _NUM + r")")

# Words that lead a citation in, per template language like LIST_HEADINGS (whose words lead one in too): "(see [1])",
# "(Source: [2])", "See [About PPL](url)." With its lead-in and brackets a marker is one citation unit
# (:func:`citation_units`): written after a full stop it cites the sentence before, and none of it is a claim.
LEAD_INS = {
    "en": ("see", "see also", "cf", "more", "more details", "more info", "more information", "details", "read more",
           "learn more", "via", "from", "per"),
    "fr": ("voir", "voir aussi", "cf", "plus", "détails", "en savoir plus", "selon"),
    "de": ("siehe", "siehe auch", "vgl", "mehr", "details", "laut"),
    "es": ("ver", "véase", "consulte", "más", "detalles", "según"),
    "pt": ("ver", "veja", "consulte", "mais", "detalhes", "segundo"),
    "it": ("vedi", "vedere", "cfr", "più", "dettagli", "secondo"),
    "nl": ("zie", "zie ook", "meer", "details", "volgens"),
    "el": ("βλ", "βλέπε", "δείτε", "περισσότερα", "λεπτομέρειες", "σύμφωνα με"),
}
_LEAD_PHRASES = frozenset(" ".join(_fold(w) for w in phrase.split())
                          for phrases in (*LEAD_INS.values(), *LIST_HEADINGS.values()) for phrase in phrases)
_LEAD_LAST = frozenset(p.rsplit(" ", 1)[-1] for p in _LEAD_PHRASES)  # a quick no for the word before a marker
_OPENERS, _CLOSERS = "([\uff08", ")]\uff09"
_RUN_JOIN = re.compile(r"[ \t]{0,3}(?:[,;&]|and)?[ \t]{0,3}")  # between the markers of one run: "[1], [2]", "[1] and [2]"


def _lead_start(text: str, at: int) -> int | None:
    """Where the lead-in words ending at ``at`` begin ("see", "see also", "Source"), the longest that is one; None
    when the words before are none."""
    words: list[tuple[int, str]] = []  # (start, folded word), nearest first
    pos = at
    for _ in range(3):
        end = pos
        if end > 0 and text[end - 1] == ".":  # "cf." "vgl." "βλ."
            end -= 1
        start = end
        while start > 0 and end - start < 20 and text[start - 1].isalpha():
            start -= 1
        if start == end:
            break
        word = _fold(text[start:end])
        if not words and word not in _LEAD_LAST:
            return None
        words.append((start, word))
        pos = start
        while pos > 0 and at - pos < 60 and text[pos - 1] in " \t":
            pos -= 1
        if pos == start:
            break
    for n in range(len(words), 0, -1):
        if " ".join(w for _, w in reversed(words[:n])) in _LEAD_PHRASES:
            return words[n - 1][0]
    return None


def _unit(text: str, a: int, b: int) -> tuple[int, int]:
    """The citation unit of the run of markers ``text[a:b]``: with the brackets around it and the lead-in words in
    them ("(see [1])", "([2])"), or with lead-in words when they make a sentence of their own ("See [About
    PPL](url)."), else itself."""
    j = a
    while j and a - j < 8 and text[j - 1] in " \t:\uff1a":
        j -= 1
    if not j:
        return a, b
    lead = None
    if text[j - 1] not in _OPENERS:  # the word before: a quick no for most markers ("salary [1]")
        before = text[max(0, j - 24):j].rsplit(None, 1)
        if not before or _fold(before[-1].lstrip(_OPENERS).rstrip(".")) not in _LEAD_LAST:
            return a, b
        lead = _lead_start(text, j)
        if lead is None:
            return a, b
    s = lead if lead is not None else j
    p, q = s, b  # the characters before and after it, spaces skipped
    while p > 0 and s - p < 4 and text[p - 1] in " \t":
        p -= 1
    while q < len(text) and q - b < 4 and text[q] in " \t":
        q += 1
    if p > 0 and text[p - 1] in _OPENERS and q < len(text) and text[q] == _CLOSERS[_OPENERS.index(text[p - 1])]:
        return p - 1, q + 1
    if (lead is not None and (p == 0 or SENTENCE_END.match(text, p - 1) is not None)  # a sentence of its own,
            and (q == len(text) or SENTENCE_END.match(text, q) is not None)):  # not "See [1], staff get ..."
        return lead, b
    return a, b


def citation_units(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The citation unit of each marker span of ``text`` (sorted, not overlapping): the run of markers it is in
    ("[1], [2]") with the words that lead it in and the brackets around them ("(see [1], [2])", "Source: [ID: 4]",
    "See [About PPL](url)."), else the marker alone. A unit is read as one: after a full stop it cites the
    sentence before it (``notice. (see [About PPL](url))`` cites "notice"), and no word of it is part of a claim."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(spans)
    while i < n:
        k = i
        while (k + 1 < n and spans[k + 1][0] - spans[k][1] < 10
               and (j := _RUN_JOIN.match(text, spans[k][1], spans[k + 1][0])) and j.end() == spans[k + 1][0]):
            k += 1
        unit = _unit(text, spans[i][0], spans[k][1])
        out.extend([unit] * (k - i + 1))
        i = k + 1
    return out


def _fence_spans(body: str) -> list[tuple[int, int]]:
    spans, pos, start = [], 0, None
    lines = body.splitlines(keepends=True)
    for line, inside in zip(lines, _fences(lines), strict=True):
        if inside and start is None:
            start = pos
        elif not inside and start is not None:
            spans.append((start, pos))
            start = None
        pos += len(line)
    if start is not None:
        spans.append((start, pos))
    return spans


def _numbers(inner: str) -> tuple[tuple[str, ...], bool]:
    """The labels of "1, 2", "1-3", "1 and 4"; False when a range is wider than MAX_RANGE (kept as its ends)."""
    labels: list[str] = []
    ok = True
    for part in _NUMBER_SPLIT.split(inner):
        r = _RANGE.fullmatch(part)
        if r:
            a, b = int(r.group(1)), int(r.group(2))
            if 0 <= b - a <= MAX_RANGE:
                labels.extend(str(n) for n in range(a, b + 1))
            else:
                ok = False
                labels.extend((str(a), str(b)))
        elif part.strip().isdecimal():
            labels.append(str(int(part)))
    return tuple(dict.fromkeys(labels)), ok


def _sentences(masked: str) -> list[tuple[int, int]]:
    """Sentence spans (trimmed) of ``masked``, the body with every marker blanked out."""
    out, a = [], 0
    for b in [m.end() for m in SENTENCE_END.finditer(masked)] + [len(masked)]:
        seg = masked[a:b]
        kept = seg.strip()
        if kept:
            lead = len(seg) - len(seg.lstrip())
            out.append((a + lead, a + lead + len(kept)))
        a = b
    return out


def read_markers(text: str, citations: list[str] | tuple[str, ...] | None = None, *, fast: bool = True) -> MarkerReading:
    """Every citation marker of ``text``, resolved through its own source list or the structured ``citations``.

    A numbered marker resolves, in order, through the name after the dagger (``【1†handbook.pdf】``), the
    answer's list entry or footnote definition with that number, then the structured citation at that 1-based index;
    a marker nothing resolves is an ``unlisted_marker`` problem, never an article ID. A superscript is ambiguous
    (``mc²``, ``m²``): it is read as a marker only when every number in it resolves.

    ``fast=False`` takes the full reading even for an answer of the common shape (see :func:`_plain`), which
    otherwise is read in one pass with the same result: the tests compare the two.
    """
    citations = [str(c) for c in (citations or ())]
    if _MARK_CHAR.search(text) is None and "<sup>" not in text and _heading(text) is None:
        # one line with nothing a marker, list entry or definition is made of, and no list heading: what the whole
        # reading below would give, without it (a bot returning its citations as data writes such answers)
        return MarkerReading(text.rstrip(), (), (), tuple(dict.fromkeys(c for c in citations if c.strip())), ())
    plain = fast and _plain(text)  # only "[n]"-style markers can be in it: the common shape, read faster
    block = _plain_back_matter(text) if plain else None
    if block is not None:
        body, sources, by_label, listed_problems = block
        problems = list(listed_problems)
    else:
        body, sources, more = _back_matter(text)
        by_label, problems = _index(sources, more)
    raw = _numeric_markers(body) if plain else _find(body, by_label, citations)
    if len(raw) > MAX_MARKERS:  # one more was looked for: there were more
        problems.append(_problem("too_many_markers", f"more than {MAX_MARKERS} markers: only the first "
                                 f"{MAX_MARKERS} are read"))
        del raw[MAX_MARKERS:]

    sentences: list[tuple[int, int]] = []
    units: list[tuple[int, int]] = []
    if raw:  # the sentences are those the markers end: none to find in an answer without one
        # the body with each citation unit (a marker, or "(see [1])") blanked out (sorted, never overlapping)
        units = citation_units(body, [(a, b) for a, b, *_ in raw])
        masked, pos = [], 0
        for a, b in units:
            if b > pos:
                masked.append(body[pos:max(a, pos)])
                masked.append(" " * (b - max(a, pos)))
                pos = b
        masked.append(body[pos:])
        sentences = _sentences("".join(masked))

    # the sentence each marker ends: the one it sits in or, after its full stop ("days.[1]", "days. (see [1])"),
    # the one before; that sentence's span then runs over its trailing citation units
    placed, sentence_index = [], 0
    ends = [b for _, b in sentences]
    last = len(sentences) - 1
    for (start, _end, *_), (_a, end) in zip(raw, units, strict=True):
        while sentence_index < last and sentences[sentence_index + 1][0] <= start:
            sentence_index += 1
        placed.append(sentence_index)
        if sentences and end > ends[sentence_index]:
            ends[sentence_index] = end

    markers: list[Marker] = []
    cited_labels: dict[str, None] = {}
    cited: dict[str, None] = {}
    for (start, end, kind, labels, direct, ok), k in zip(raw, placed, strict=True):
        s_start, s_end = (sentences[k][0], ends[k]) if sentences else (start, end)
        if not ok:
            problems.append(_problem("range_too_long", f"{body[start:end]!r} is no range of 1 to {MAX_RANGE + 1} numbers: only its ends are read"))
        references: list[str | None] | tuple[str | None, ...] = []
        via: list[str] | tuple[str, ...] = []
        entry = by_label.get(labels[0]) if len(labels) == 1 and direct is None and kind != "link" else None
        if entry is not None:  # the common marker: one number, in the answer's list (what _resolve gives)
            cited_labels[labels[0]] = None
            references, via = (entry.reference,), (entry.origin,)
        elif kind == "link":
            references, via = [direct], ["link"]
            cited_labels.update(dict.fromkeys(labels))
        else:
            for label in labels:
                cited_labels[label] = None
                ref, how = _resolve(label, by_label, citations, direct)
                if ref is None:
                    problems.append(_problem("unlisted_marker", f"{body[start:end]!r}: no source numbered {label} in "
                                             "the answer's list or the system's citations"))
                references.append(ref)
                via.append(how)
        for r in references:
            if r is not None:
                cited[r] = None
        markers.append(Marker(kind, start, end, labels, tuple(references), tuple(via), s_start, s_end))

    if markers:  # an entry is cited when a marker points to it
        for label, entry in by_label.items():
            if label not in cited_labels:
                problems.append(_problem("uncited_entry", f"source [{label}] {entry.reference!r} is never cited"))
        if len(by_label) > len(cited_labels):
            problems.append(_problem("list_longer_than_markers", f"{len(by_label)} sources listed, "
                                     f"{len(cited_labels)} cited by a marker"))
    else:  # a system that prints no marker cites all it returned, or else all it listed ("Source: x")
        cited = dict.fromkeys(c for c in citations if c.strip()) or dict.fromkeys(by_label[k].reference
                                                                                   for k in by_label)
        for label, entry in by_label.items():  # only beside citations returned as data can an entry be left out
            if entry.reference not in cited:
                problems.append(_problem("uncited_entry", f"source [{label}] {entry.reference!r} is not among the "
                                         "citations the system returned"))
    return MarkerReading(body, tuple(markers), tuple(sources), tuple(cited), tuple(problems))


def _index(sources: list[SourceEntry], more: bool = False) -> tuple[dict[str, SourceEntry], list[Problem]]:
    """The source entries by label (the first of a duplicated number), and the problems of the list itself
    (``more``: entries past the first MAX_MARKERS were not read)."""
    by_label: dict[str, SourceEntry] = {}
    problems: list[Problem] = []
    if more:
        problems.append(_problem("too_many_sources", f"more than {MAX_MARKERS} sources listed: only the first "
                                 f"{MAX_MARKERS} are read"))
    for entry in sources:
        if entry.label in by_label:
            problems.append(_problem("duplicate_number", f"[{entry.label}] is listed twice: "
                                     f"{by_label[entry.label].reference!r} (used) and {entry.reference!r}"))
        else:
            by_label[entry.label] = entry
    return by_label, problems


_Raw = tuple[int, int, str, tuple[str, ...], str | None, bool]  # start, end, kind, labels, direct reference, range ok


# ---- the common shape, read in one pass -----------------------------------------------------------------------
# Most footnoted answers are prose with "[1]"/"[1, 2]" markers and a trailing "Sources:" list of "[n] reference"
# lines. An answer holding none of the characters the other forms need (a backtick, a fence, a dagger bracket, a
# superscript, <sup>, a link "](", a footnote "[^", a definition "]:", a line break other than "\n") can only hold
# numeric markers, so it is read by _NUMERIC alone; and when its last lines are a heading and "[n] x" entries, that
# block is read once per distinct block (a bot lists the same few hundred sources a million times). Anything else
# takes the full reading above; tests/harness/scoring/test_markers.py checks both readings agree on varied and
# hostile answers.
_UNUSUAL_CHAR = re.compile("[`\u3010\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029⁰¹²³⁴⁵⁶⁷⁸⁹]")


def _plain(text: str) -> bool:
    """No character nor pair the forms other than "[n]" need (substring tests and one character class: each a
    single fast scan, where one alternation of them all cost a third of the plain reading)."""
    return ("](" not in text and "]:" not in text and "[^" not in text and "~~~" not in text and "<sup>" not in text
            and _UNUSUAL_CHAR.search(text) is None)
_BLOCKS_MAX = 100_000  # distinct source-list blocks remembered (bounded on hostile output: every one unique)
_Block = tuple[tuple[SourceEntry, ...], dict[str, SourceEntry], tuple[Problem, ...]]
_blocks: dict[str, _Block | None] = {}
_NO_BLOCK = object()


def _plain_back_matter(text: str) -> tuple[str, list[SourceEntry], dict[str, SourceEntry], tuple[Problem, ...]] | None:
    """:func:`_back_matter` and :func:`_index` of a plain answer (see _plain) that ends with a heading line and
    "[n] reference" lines; None when it ends otherwise (the full reading then decides)."""
    end = len(text.rstrip())
    cut = end
    while True:  # back over the trailing lines that open with "[", to the line before them
        nl = text.rfind("\n", 0, cut)
        if nl < 0:
            return None
        if text[nl + 1:nl + 2] != "[":
            break
        cut = nl
    if cut == end:  # no such line: no list of that shape
        return None
    start = nl + 1
    key = text[start:end]
    block = _blocks.get(key, _NO_BLOCK)
    if block is _NO_BLOCK:
        block = _read_block(key)
        if len(_blocks) < _BLOCKS_MAX:
            _blocks[key] = block
    if block is None:
        return None
    entries, by_label, problems = block
    return text[:start].rstrip(), list(entries), by_label, problems


def _read_block(block: str) -> _Block | None:
    """A heading line alone ("Sources:") and one "[n] reference" entry a line, as the full reading reads them."""
    heading, *lines = block.split("\n")
    found = _heading(heading)
    if found is None or found[1] or len(lines) > MAX_MARKERS:  # more: the full reading names them
        return None
    entries = []
    for line in lines:
        entry = _lines.get(line)
        if entry is None:
            entry = _plain_entry(line)
            if len(_lines) < _BLOCKS_MAX:
                _lines[line] = entry
        if not entry:
            return None
        entries.append(entry)
    by_label, problems = _index(entries)
    return tuple(entries), by_label, tuple(problems)


_lines: dict[str, SourceEntry | bool] = {}  # an entry line read (False: not an entry of that shape)


def _plain_entry(line: str) -> SourceEntry | bool:
    if _FOOTNOTE_DEF.match(line) or _LINK_DEF.match(line):
        return False
    entry = _entry(line)
    if entry is None or entry[0] is None or not entry[1]:
        return False
    read = SourceEntry(entry[0], *_clean_reference(entry[1]), "list")
    return read if read.reference else False


_labels_of: dict[str, tuple[tuple[str, ...], bool]] = {}


def _numeric_markers(body: str) -> list[_Raw]:
    """:func:`_find` of a plain body (see _plain): its numeric markers, in order."""
    if "[" not in body:
        return []
    raw: list[_Raw] = []
    for m in islice(_NUMERIC.finditer(body), MAX_MARKERS + 1):  # one more: more were there
        inner = m.group(1)
        found = _labels_of.get(inner)
        if found is None:
            found = _numbers(inner)
            if len(_labels_of) < _BLOCKS_MAX:
                _labels_of[inner] = found
        raw.append((m.start(), m.end(), "numeric", found[0], None, found[1]))
    return raw


def _find(body: str, by_label: dict[str, SourceEntry], citations: list[str]) -> list[_Raw]:
    """Every marker of ``body`` in order; a character read once (a link's ``[1]``, a fence) is not read again."""
    # each pattern is tried only when the text holds the characters it needs: the scorer reads a million answers,
    # most of them with one kind of marker or none (the superscript pattern alone cost a third of the reading)
    fences = _fence_spans(body) if "```" in body or "~~~" in body else []
    taken = bytearray(len(body))  # characters already read as part of a marker (or inside a fence)
    for a, b in fences:
        taken[a:b] = b"\x01" * (b - a)
    for m in _INLINE_CODE.finditer(body) if "`" in body else ():  # `a[1]` is code, not a marker
        taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    raw: list[_Raw] = []

    def free(a: int, b: int) -> bool:
        return not any(taken[a:b])

    def claim(a: int, b: int) -> None:
        taken[a:b] = b"\x01" * (b - a)

    for m in _LINK.finditer(body) if "](" in body else ():
        if len(raw) > MAX_MARKERS:
            break
        if m.start() > 0 and body[m.start() - 1] == "!" or not free(m.start(), m.end()):
            continue
        label_text = m.group(1).strip().strip("[]^").strip()
        labels = (str(int(label_text)),) if label_text.isdecimal() and len(label_text) <= MAX_DIGITS else ()
        raw.append((m.start(), m.end(), "link", labels, m.group(2), True))
        claim(m.start(), m.end())
    square = "[" in body
    for pattern, kind, needed in ((_FOOTNOTE, "footnote", square and "[^" in body),
                                  (_DAGGER, "bracket_source", "\u3010" in body), (_NUMERIC, "numeric", square),
                                  (_SUPER, "superscript", _superscripts(body))):
        if not needed:
            continue
        for m in pattern.finditer(body):
            if len(raw) > MAX_MARKERS:
                break
            if not free(m.start(), m.end()):
                continue
            direct, ok = None, True
            if kind == "footnote":
                label = m.group(1).rstrip("^") or m.group(1)  # Copilot writes [^1^]
                labels = (str(int(label)) if label.isdecimal() else label,)
            elif kind == "bracket_source":
                labels = (str(int(m.group(1))) if m.group(1).isdecimal() else m.group(1),)
                name = (m.group(2) or "").strip()
                direct = name if name and name.lower() not in ("source", "sources") else None
            elif kind == "numeric":
                labels, ok = _numbers(m.group(1))
            else:
                if m.group(1) is None and _UNIT_BEFORE.search(body, max(0, m.start() - 6), m.start()):
                    continue
                digits = m.group(1) if m.group(1) is not None else m.group(0).translate(_SUPER_DIGITS)
                labels = tuple(dict.fromkeys(str(int(d)) for d in re.split(r"[,˒]\s?", digits) if d))
                if not all(_resolve(n, by_label, citations, None)[0] for n in labels):
                    continue  # "mc²": a superscript is a marker only when the answer has a source for it
            raw.append((m.start(), m.end(), kind, labels, direct, ok))
            claim(m.start(), m.end())
    raw.sort()
    return raw



def _resolve(label: str, by_label: dict[str, SourceEntry], citations: list[str],
             direct: str | None) -> tuple[str | None, str]:
    if direct is not None:  # 【3†handbook.pdf】 names its source itself
        return direct, "dagger"
    entry = by_label.get(label)
    if entry is not None:
        return entry.reference, entry.origin
    if label.isdecimal() and 1 <= int(label) <= len(citations):
        return citations[int(label) - 1], "structured"
    return None, "none"


def _problem(code: str, detail: str) -> Problem:
    return Problem(code, PROBLEMS[code], detail)
