"""Answers given as JSON: ``{"answer": ..., "citation": x}``.

The json prompt template asks for exactly that object; models also wrap it in a
```json fence, surround it with prose, give the citation as a number, a list,
``"[ID: 17]"`` or ``null``, rename the key, or nest it in the answer
(``{"answer": {"text": ..., "citation_id": "15"}}``). Parsing only runs when the
text contains a ``{``, so the common inline answer never pays for it.

Where a citation is read, and where it is not:

* Only the documented citation fields count, case-insensitively:
  :data:`CITATION_KEYS` (``citation``, ``citations``, ``citation_id``,
  ``citation_ids``, ``cited_id``, ``cited_ids``, ``source_id``, ``source_ids``,
  ``article_id``, ``article_ids``, ``doc_id``, ``doc_ids``, ``document_id``,
  ``document_ids``), whose values are IDs, and the looser
  :data:`LOOSE_CITATION_KEYS` (``source``, ``sources``, ``reference``,
  ``references``), where models also put titles and URLs, so their values count
  only when they are KB IDs or labelled as IDs (``"ID: 14"``).
* They are read at the top level of the answer object and one level down,
  inside its answer field (:data:`ANSWER_KEYS`), and nowhere else. A generic
  ``id``/``ids`` key is never a citation: ``{"id": 18, "title": "Premises"}`` is
  an object the model made up, not a citation of article 18. (A citation field
  whose value is an object gives that object's ``id``: ``{"citation": {"id": 18}}``.)
* A documented citation field whose value names no ID at all (a URL, a title,
  a sentence: "https://intranet/leave", "The annual leave policy") is an
  attempted citation, and an invalid one: :func:`attempted_citations` gives
  those values, and the scorer counts them as cited values that are not KB
  IDs, so the outcome is ``invalid_citation``, not ``no_citation`` (a careful
  reader sees the model try to cite). Only when nothing in the response names
  an ID: a title next to an ID (``["Part 3: Conduct", "ID: 14"]``) is a label.
  Empty values and "no citation" words (``null``, ``"N/A"``, ``"none"``, ``"No
  relevant article"``) are no citation; the loose keys keep their rule (a
  title or URL under ``source`` is no citation at all). An object that does
  not parse gives no attempted citation: the end of the text may have cut
  the ID off its list.
* A JSON answer that does not parse (cut off by the output limit, a trailing
  comma, single quotes) is read by a tolerant parser that keeps every complete
  key and value and drops a value the end of the text cut off, then by the same
  rules, so it gives the citations the parsed object would have given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.S)
ANSWER_KEYS = ("answer", "response", "final_answer", "text", "reply")
CITATION_KEYS = (
    "citation", "citations", "citation_id", "citation_ids", "cited_id", "cited_ids", "source_id", "source_ids",
    "article_id", "article_ids", "doc_id", "doc_ids", "document_id", "document_ids",
)
LOOSE_CITATION_KEYS = ("source", "sources", "reference", "references")
REFUSED_KEYS = ("refused", "refusal", "refuse", "cannot_answer")
NO_CITATION = frozenset({"", "null", "none", "n/a", "na", "nil", "-", "refuse", "refused", "refusal"})
_NO_CITATION_WORDS = re.compile(r"(?:no|none|not|n/a|nothing|unknown)\b", re.IGNORECASE)  # "No relevant article"
_ATTEMPT_KEYS = ("title", "name", "url", "source", "reference")  # what a citation object names instead of an ID
_ANSWER, _CITATION, _LOOSE = frozenset(ANSWER_KEYS), frozenset(CITATION_KEYS), frozenset(LOOSE_CITATION_KEYS)
_ID_KEYS = ("id", "article_id", "citation", "citation_id", "source_id", "doc_id", "document_id")  # of a citation object
_MAX_STARTS = 20  # '{' positions tried before giving up on prose-wrapped JSON
_MAX_DEPTH = 20
_MAX_SKIPS = 32  # stray characters the tolerant reader steps over before it stops (prose after a "{")
_OBJECT_START = re.compile(r"""\{\s*(?:["']|[A-Za-z_][\w-]*\s*:)""")  # '{"key"', "{'key'", '{key:'


@dataclass
class JsonAnswer:
    data: dict[str, Any]
    citations: list[Any] = field(default_factory=list)  # raw values of CITATION_KEYS, not yet IDs
    loose_citations: list[Any] = field(default_factory=list)  # raw values of LOOSE_CITATION_KEYS
    answer: str = ""
    refused: bool = False
    exact: bool = False  # the whole response is the object the json template asks for
    parsed: bool = True  # False: read by the tolerant reader (cut off or malformed), so a list may be cut short


def _as_answer(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    if any(str(k).lower() in _ANSWER or str(k).lower() in _CITATION for k in obj):
        return obj
    if len(obj) == 1:  # {"result": {"answer": ..., "citation": ...}}
        return _as_answer(next(iter(obj.values())))
    return None


def _candidates(text: str):
    stripped = text.strip()
    yield stripped
    if "```" in text:
        for m in _FENCE.finditer(text):
            yield m.group(1).strip()
    start = text.find("{")
    tries = 0
    while start != -1 and tries < _MAX_STARTS:
        yield text, start
        tries += 1
        start = text.find("{", start + 1)


def find_json_answer(text: str) -> JsonAnswer | None:
    """The first JSON object in ``text`` that looks like an answer, or None.

    Each ``{`` is parsed strictly first; where that fails, tolerantly (see the
    module docstring), so a truncated outer object is read before an inner one.
    """
    if "{" not in text:
        return None
    for i, cand in enumerate(_candidates(text)):
        try:
            if isinstance(cand, tuple):
                obj, _ = _DECODER.raw_decode(*cand)
            elif cand.startswith("{"):
                obj = json.loads(cand)
            else:
                continue
        except (ValueError, RecursionError):
            if not isinstance(cand, tuple) or not _OBJECT_START.match(*cand):
                continue
            obj = loose_object(*cand)
            data = _as_answer(obj)
            if data is not None:
                out = _read(data, exact=False)
                out.parsed = False
                return out
            continue
        data = _as_answer(obj)
        if data is not None:
            return _read(data, exact=(i == 0 and data is obj))
    return None


def _text_of(value: dict[str, Any]) -> str:
    for k, v in value.items():
        if str(k).lower() in _ANSWER and isinstance(v, str):
            return v
    return ""


def _read(data: dict[str, Any], exact: bool) -> JsonAnswer:
    out = JsonAnswer(data=data)
    scopes = [data]
    for k, v in data.items():
        if str(k).lower() in _ANSWER:
            if isinstance(v, str) and not out.answer:
                out.answer = v
            elif isinstance(v, dict):
                scopes.append(v)  # {"answer": {"text": ..., "citation_id": "15"}}
                out.answer = out.answer or _text_of(v)
    for scope in scopes:
        for k, v in scope.items():
            key = str(k).lower()
            if key in _CITATION:
                out.citations.append(v)
            elif key in _LOOSE:
                out.loose_citations.append(v)
            elif key in REFUSED_KEYS and v is True:
                out.refused = True
    out.exact = exact and "answer" in data and "citation" in data  # the template's keys, verbatim
    return out


def citation_tokens(value: Any) -> list[str]:
    """Raw citation values -> ID strings (numbers as integers; lists and {"id": ...} flattened)."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        return [str(int(value)) if value.is_integer() else str(value)]
    if isinstance(value, str):
        v = value.strip()
        return [] if v.lower() in NO_CITATION else [v]
    if isinstance(value, list):
        return [t for item in value for t in citation_tokens(item)]
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        for key in _ID_KEYS:
            if key in lower:
                return citation_tokens(lower[key])
    return []


def attempted_citations(value: Any) -> list[str]:
    """The values of a citation field as the model wrote them, for one that names no ID (see the module docstring).

    Strings as written (whitespace collapsed), numbers as text, lists
    flattened, an object by its title, name or URL; empty values and "no
    citation" words give nothing."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return citation_tokens(value)
    if isinstance(value, str):
        v = " ".join(value.split())
        return [] if v.lower() in NO_CITATION or _NO_CITATION_WORDS.match(v) else [v]
    if isinstance(value, list):
        return [t for item in value for t in attempted_citations(item)]
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        for key in _ATTEMPT_KEYS:
            if isinstance(lower.get(key), str) and lower[key].strip():
                return attempted_citations(lower[key])
    return []


# The tolerant reader. It never raises: anything it cannot make sense of is skipped.
_WS = re.compile(r"\s*")
_DQ = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SQ = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'", re.S)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_][\w\-]*")
_LITERALS = {"null": None, "none": None, "true": True, "false": False}
_CUT = object()  # a value the end of the text cut off


def loose_object(text: str, start: int) -> dict[str, Any] | None:
    """The object starting at ``text[start] == "{"``, read tolerantly; complete keys and values only."""
    try:
        obj, _ = _LooseReader(text).obj(start, 0)
    except RecursionError:
        return None
    return obj if isinstance(obj, dict) else None


class _LooseReader:
    def __init__(self, text: str) -> None:
        self.s, self.n = text, len(text)
        self.skips = _MAX_SKIPS

    def skip(self) -> bool:
        """Step over something that is not JSON; False once too much was (then the reader stops)."""
        self.skips -= 1
        return self.skips >= 0

    def string(self, i: int) -> tuple[Any, int]:
        m = (_DQ if self.s[i] == '"' else _SQ).match(self.s, i)
        if m is None:
            return _CUT, self.n  # unterminated: the text ends inside it
        raw = m.group()
        try:
            value = json.loads(raw if raw[0] == '"' else '"' + raw[1:-1].replace('"', '\\"') + '"')
        except ValueError:
            value = raw[1:-1]
        return value, m.end()

    def value(self, i: int, depth: int) -> tuple[Any, int]:
        i = _WS.match(self.s, i).end()
        if i >= self.n:
            return _CUT, i
        c = self.s[i]
        if c == "{":
            return self.obj(i, depth + 1)
        if c == "[":
            return self.arr(i, depth + 1)
        if c in "\"'":
            return self.string(i)
        m = _NUMBER.match(self.s, i) or _WORD.match(self.s, i)
        if m is None:
            return _CUT, i  # not a value: the caller skips a character
        if m.end() >= self.n:
            return _CUT, self.n  # "15" may be the start of "150": a value touching the end is not trusted
        word = m.group()
        if c.isdigit() or c == "-":
            return (int(word) if word.lstrip("-").isdigit() else float(word)), m.end()
        return _LITERALS.get(word.lower(), word), m.end()

    def arr(self, i: int, depth: int) -> tuple[Any, int]:
        out: list[Any] = []
        i += 1
        while depth < _MAX_DEPTH:
            i = _WS.match(self.s, i).end()
            if i >= self.n:
                return out, self.n
            c = self.s[i]
            if c == "]":
                return out, i + 1
            if c == "," or c == "}":
                i += 1
                continue
            v, j = self.value(i, depth)
            if v is _CUT:
                if j >= self.n or not self.skip():
                    return out, self.n
                i = max(j, i + 1)  # not a value: skip it
                continue
            out.append(v)
            i = j
        return out, self.n

    def obj(self, i: int, depth: int) -> tuple[Any, int]:
        out: dict[str, Any] = {}
        i += 1
        while depth < _MAX_DEPTH:
            i = _WS.match(self.s, i).end()
            if i >= self.n:
                return out, self.n
            c = self.s[i]
            if c == "}":
                return out, i + 1
            if c in "\"'":
                key, j = self.string(i)
            else:
                m = _WORD.match(self.s, i)
                key, j = (m.group(), m.end()) if m else (_CUT, i + 1)
            if key is _CUT:
                if j >= self.n or (c != "," and not self.skip()):
                    return out, self.n
                i = j  # not a key (a comma, stray text): skip it and look for the next one
                continue
            j = _WS.match(self.s, j).end()
            if j >= self.n or self.s[j] != ":":
                if not self.skip():
                    return out, self.n
                i = j
                continue
            v, j = self.value(j + 1, depth)
            if v is _CUT:
                if j >= self.n:
                    return out, self.n
                i = j  # no value after the colon: the loop skips what is there, or closes on "}"
                continue
            out[str(key)] = v
            i = j
        return out, self.n
