"""Answers given as JSON: ``{"answer": ..., "citation": x}``.

The json prompt template asks for exactly that object; models also wrap it in a
```json fence, surround it with prose, give the citation as a number, a list,
``"[ID: 17]"`` or ``null``. Parsing only runs when the text contains a ``{``,
so the common inline answer never pays for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.S)
ANSWER_KEYS = frozenset({"answer", "response", "final_answer", "text", "reply"})
CITATION_KEYS = frozenset(
    {
        "citation", "citations", "citation_id", "citation_ids", "cited_id", "cited_ids", "article_id",
        "article_ids", "source_id", "source_ids", "doc_id", "document_id", "id", "ids", "source",
        "sources", "reference", "references",
    }
)
REFUSED_KEYS = frozenset({"refused", "refusal", "refuse", "cannot_answer"})
NO_CITATION = frozenset({"", "null", "none", "n/a", "na", "nil", "-", "refuse", "refused", "refusal"})
_MAX_STARTS = 20  # '{' positions tried before giving up on prose-wrapped JSON


@dataclass
class JsonAnswer:
    data: dict[str, Any]
    citations: list[Any] = field(default_factory=list)  # raw citation values, not yet IDs
    answer: str = ""
    refused: bool = False
    exact: bool = False  # the whole response is the object the json template asks for


def _as_answer(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    keys = {str(k).lower() for k in obj}
    if keys & (ANSWER_KEYS | CITATION_KEYS):
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
    """The first JSON object in ``text`` that looks like an answer, or None."""
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
            continue
        data = _as_answer(obj)
        if data is not None:
            return _read(data, exact=(i == 0 and data is obj))
    return None


def _read(data: dict[str, Any], exact: bool) -> JsonAnswer:
    out = JsonAnswer(data=data)
    lower = {str(k).lower(): v for k, v in data.items()}
    for key in ANSWER_KEYS:
        if isinstance(lower.get(key), str):
            out.answer = lower[key]
            break
    for key in CITATION_KEYS:
        if key in lower:
            out.citations.append(lower[key])
    out.refused = any(lower.get(k) is True for k in REFUSED_KEYS)
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
        for key in ("id", "article_id", "citation", "source_id", "doc_id"):
            if key in value:
                return citation_tokens(value[key])
    return []
