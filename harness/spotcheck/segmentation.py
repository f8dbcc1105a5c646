"""Split an answer the way a careful human reviewer reads it, without an LLM.

The answer is cut into paragraphs (blank lines, with markdown headers dropped:
a header makes no claim), then each paragraph is cut after every citation
marker, so a segment carries the citation that closes it: in "A. B [ID: 4]. C
[ID: 7]." the claims A and B are checked against article 4, C against 7; a
marker inside a sentence closes that sentence ("Under [ID: 4], you get X."). Text
after a paragraph's last citation, and paragraphs without one (introductions,
conclusions), are uncited segments, checked later against what was supported.

One exception follows the grounded prompt's own format, which asks for a single
citation at the end of the answer: when the only citation closes the whole
answer (or a JSON answer carries its citation in a field), it covers every
paragraph, which is how a reviewer reads such an answer.

Citation markers are read with the scorer's lenient rules, so a segment
boundary is exactly where the scorer saw a citation.

A JSON answer (``{"answer": ..., "citation": ...}``) is segmented by its answer
text only (:func:`answer_body`): keys and field names are never text, so they
are never checked as quotes or claims. That holds when the object does not
parse too (cut off, a trailing comma): the fields are then read leniently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from typing import Any

from harness.core.citation_text import SENTENCE_END_BEFORE_CLOSER
from harness.scoring import json_answer
from harness.scoring.extraction import inline_ids_lenient
from harness.scoring.json_answer import citation_tokens, find_json_answer
from harness.scoring.markers import citation_units

_MARKER = re.compile(r"[\[(\u3010\u3014][^\[\]()\u3010\u3011\u3014\u3015\n]{1,300}[\])\u3011\u3015]")
_PROSE_ID = re.compile(r"\bIDs?\s*[:#]\s*\**([\w][\w\-./]*)", re.IGNORECASE)
_ATX_HEADER = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)[^*_\n]+(\*\*|__)\s*:?\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_TRAILING = re.compile(r"[\s.,;:!?)\]*_]*")
_WORDY = re.compile(r"\w")
_TERMINATOR = re.compile(r"[.!?\n]")
_JSON_START = re.compile(r"\s*(?:```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?\s*)?\{")
# one "key": value pair of a JSON object that may not parse: a string value may be cut off at the end
_FIELD = re.compile(r'"((?:[^"\\\n]|\\.){1,60})"\s*:\s*(?:"((?:[^"\\]|\\.)*)(?:"|\\?\Z)|(\[[^\]]*\]?|[^,}\n]*))')
_ANSWER_KEYS = frozenset(json_answer.ANSWER_KEYS)
_CITATION_KEYS = frozenset(json_answer.CITATION_KEYS)
_LOOSE_KEYS = frozenset(getattr(json_answer, "LOOSE_CITATION_KEYS", ()))
_NOT_PROSE = _CITATION_KEYS | _LOOSE_KEYS | frozenset(json_answer.REFUSED_KEYS)


@dataclass(frozen=True)
class Segment:
    index: int  # position in the answer, from 0
    paragraph: int
    text: str  # as written, citation marker included: what a reviewer reads
    claim: str  # what the judge checks: markers, bullets and emphasis removed
    citations: tuple[str, ...]  # article IDs of the marker that closes it; () when uncited

    @property
    def cited(self) -> bool:
        return bool(self.citations)


def _markers(text: str, kb_ids: Collection[str] | None) -> list[tuple[int, int, list[str]]]:
    """(start, end, ids) of every citation unit in a paragraph, in order: a marker, or a run of them with the words
    and brackets around it ("(see [ID: 4])", "Source: [ID: 4], [ID: 7]"; :func:`citation_units`), as one."""
    ids_known = kb_ids if kb_ids is not None else _AnyId()
    found = []
    for m in _MARKER.finditer(text):
        ids = inline_ids_lenient(m.group(0), ids_known)
        if ids:
            found.append((m.start(), m.end(), ids))
    for m in _PROSE_ID.finditer(text):
        if any(s <= m.start() < e for s, e, _ in found):
            continue
        value = m.group(1).rstrip(".,;:!?")
        if value in ids_known:
            found.append((m.start(), m.end(), [value]))
    found.sort()
    units: dict[tuple[int, int], list[str]] = {}
    for (start, end), (_, _, ids) in zip(citation_units(text, [(s, e) for s, e, _ in found]), found, strict=True):
        got = units.setdefault((start, end), [])
        got += [i for i in ids if i not in got]
    return [(start, end, ids) for (start, end), ids in units.items()]


# Citation text rule (issue 46), with markers.citation_units: a citation after a sentence end belongs to that
# sentence (the sentence end: harness.core.citation_text).
def _after_sentence(text: str) -> bool:
    """Whether ``text`` ends at a sentence end (:data:`~harness.core.citation_text.SENTENCE_END_BEFORE_CLOSER`, closing quotes and spaces after it): a
    citation written there cites the sentence before it ("25 days. [ID: 4] Requests ...")."""
    tail = text[-12:]
    return any(not tail[m.end():].strip(" \t\"'\u201d)") for m in SENTENCE_END_BEFORE_CLOSER.finditer(tail))


class _AnyId:
    """Without a KB every ID-looking token counts (the scorer's rules still demand an ID label)."""

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and bool(item) and not re.search(r"\s", item)


def paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks, headers and horizontal rules dropped."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        title = (
            _ATX_HEADER.match(line)
            or (_BOLD_LINE.match(line) and not _markers(line, None))
            or (nxt.strip() and _SETEXT.match(nxt) and not _BULLET.match(line))  # underlined title
        )
        if not line.strip() or _RULE.match(line) or _SETEXT.match(line) or title:
            blocks.append([])
        else:
            blocks[-1].append(line)
    return ["\n".join(b).strip() for b in blocks if any(x.strip() for x in b)]


def clean_claim(text: str) -> str:
    """The checkable words of a segment: no citation markers, bullets or emphasis."""
    out = []
    for line in text.split("\n"):
        line = _BULLET.sub("", line)
        line = _EMPHASIS.sub("", line)
        line = re.sub(r"\s+", " ", line).strip()
        if line:
            out.append(line)
    return "\n".join(out)


def _strip_markers(text: str, kb_ids: Collection[str] | None) -> str:
    for start, end, _ in reversed(_markers(text, kb_ids)):
        head, rest = text[:start].rstrip(), text[end:]
        if rest[:1] == "." and _after_sentence(head):  # "25 days. [ID: 4]." reads "25 days."
            rest = rest[1:]
        text = head + rest
    return text


def _split_paragraph(para: str, kb_ids: Collection[str] | None) -> list[tuple[str, tuple[str, ...]]]:
    """(raw text, citations) pieces: each cited piece ends with its marker (and the punctuation after it).

    A marker inside a sentence ("Under the policy [ID: 4], you get 25 days.") closes the whole
    sentence, unless another marker comes first in it: then each claim keeps its own source. A marker
    after a sentence's end ("25 days. [ID: 4] Requests ...", "25 days. (see [ID: 4])") closes that sentence.
    """
    markers = _markers(para, kb_ids)
    pieces: list[tuple[str, list[str]]] = []
    pos = 0
    for n, (start, end, ids) in enumerate(markers):
        if start < pos:
            continue
        stop = _TRAILING.match(para, end).end()  # type: ignore[union-attr]
        if stop < len(para) and not _TERMINATOR.search(para[end:stop]) and not _after_sentence(para[pos:start]):
            found = SENTENCE_END_BEFORE_CLOSER.search(para, stop)
            sentence_end = found.end() if found else len(para)
            if n + 1 == len(markers) or sentence_end <= markers[n + 1][0]:
                stop = sentence_end
        body = para[pos:start]
        if pieces and not _WORDY.search(body):  # "[ID: 4][ID: 7]" or "[ID: 4], [ID: 7]": one claim, two sources
            text, cites = pieces[-1]
            pieces[-1] = (text + para[pos:stop], cites + [i for i in ids if i not in cites])
        else:
            pieces.append((para[pos:stop], list(ids)))
        pos = stop
    rest = para[pos:]
    if _WORDY.search(rest):
        pieces.append((rest, []))
    return [(t.strip(), tuple(c)) for t, c in pieces]


def _json_string(raw: str) -> str:
    try:
        return json.loads(f'"{raw}"')
    except ValueError:  # cut off inside an escape, or a stray control character
        return raw.replace('\\"', '"').replace("\\n", "\n")


def _loose_value(raw: str) -> Any:
    """A non-string JSON value that may be cut off: ``1``, ``[1, "2"]``, ``[1, "2``."""
    raw = raw.strip()
    try:
        return json.loads(raw)
    except ValueError:
        return [t.strip(" \"'") for t in raw.strip("[]").split(",") if t.strip(" \"'")]


def _prose_values(obj: Any) -> Iterator[str]:
    """The string values of a JSON answer that are prose: never keys, never citation or refusal fields."""
    if isinstance(obj, str):
        if obj.strip():
            yield obj
    elif isinstance(obj, list):
        for item in obj:
            yield from _prose_values(item)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if str(key).lower() not in _NOT_PROSE:
                yield from _prose_values(value)


def _lenient_fields(text: str) -> tuple[str, tuple[str, ...]]:
    """The answer and citations of a JSON object that does not parse, read field by field."""
    answer, prose, ids = None, [], []
    for m in _FIELD.finditer(text):
        key, string, other = m.group(1).lower(), m.group(2), m.group(3)
        if key in _CITATION_KEYS:
            ids += citation_tokens(_json_string(string) if string is not None else _loose_value(other or ""))
        elif key in _NOT_PROSE or string is None:
            continue
        elif key in _ANSWER_KEYS and answer is None:
            answer = _json_string(string)
        else:
            prose.append(_json_string(string))
    body = answer if answer is not None else "\n\n".join(p for p in prose if p.strip())
    return body, tuple(dict.fromkeys(ids))


def answer_body(text: str, kb_ids: Collection[str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The text of an answer to segment, and the article IDs its JSON citation field names.

    Inline answers are their own text. A JSON answer is its answer field's
    string; one with no answer field, its other string values (never keys, never
    citation fields); one that does not parse, the same read field by field.
    Citation fields give their IDs as the scorer reads them; the loose ones
    (``source``, ``reference``) only their KB IDs.
    """
    body = text or ""
    if "{" not in body:
        return body, ()
    ans = find_json_answer(body)
    if ans is not None:
        loose = [t for v in getattr(ans, "loose_citations", []) for t in citation_tokens(v)
                 if kb_ids is not None and t in kb_ids]
        ids = tuple(dict.fromkeys([t for v in ans.citations for t in citation_tokens(v)] + loose))
        if ans.answer:
            return ans.answer, ids
        if _JSON_START.match(body):
            return "\n\n".join(_prose_values(ans.data)), ids
        return _without_objects(body), ids
    if _JSON_START.match(body):
        return _lenient_fields(body)
    return body, ()


def _without_objects(text: str) -> str:
    """Prose around JSON objects, each object replaced by its prose values."""
    decoder, out, pos = json.JSONDecoder(), [], 0
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        out += [text[pos:start], "\n\n".join(_prose_values(obj))]
        pos = end
        start = text.find("{", end)
    return "".join(out + [text[pos:]])


def segment_answer(text: str, kb_ids: Collection[str] | None = None) -> list[Segment]:
    """Segments of one answer, in reading order; ``kb_ids`` lets bare ``[17]`` markers count."""
    body, field_ids = answer_body(text, kb_ids)
    paras = paragraphs(body)
    split = [_split_paragraph(p, kb_ids) for p in paras]
    cover: tuple[str, ...] = field_ids
    markers = [piece for pieces in split for piece in pieces if piece[1]]
    if not cover and len(markers) == 1 and split and split[-1] and split[-1][-1][1]:
        cover = split[-1][-1][1]  # one citation, closing the answer: it covers every paragraph
    segments: list[Segment] = []
    for p, pieces in enumerate(split):
        for raw, cites in pieces:
            claim = clean_claim(_strip_markers(raw, kb_ids))
            if not _WORDY.search(claim):  # a bare citation ("[ID: 6]." on its own line) is no claim: it cites
                if cites and segments:  # the text before it
                    last = segments[-1]
                    segments[-1] = replace(last, citations=tuple(dict.fromkeys(last.citations + cites)))
                continue
            segments.append(Segment(len(segments), p, raw, claim, cites or cover))
    return segments
