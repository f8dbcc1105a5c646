"""Which KB articles a response cites, and whether it refuses.

Every response is read twice and both readings are scored side by side, as
lm-eval does with ``strict-match`` and ``flexible-extract``, so a team sees how
much of a model's accuracy depends on forgiving its format:

* **strict**: only what the prompt asks for: ``[ID: x]`` verbatim, the exact
  refusal sentence, and (for the json template) a response that is exactly the
  object ``{"answer": ..., "citation": "x" | null}``.
* **lenient**: also what real models write instead: ``[ID:x]``, ``[id: x]``,
  ``(ID: x)``, bold or punctuation around the ID, ``[ID: x, y]`` lists, a bare
  ``[x]`` when ``x`` is a KB article ID, ``ID: x`` in prose when ``x`` is a KB ID,
  JSON answers (bare, fenced, inside prose or cut off; only the citation fields
  listed in :mod:`harness.scoring.json_answer`), refusal paraphrases and, when
  the response cites nothing, generic declines (see :mod:`harness.scoring.refusal`).

A bare number is never a citation: only bracketed IDs, IDs after an ``ID``
label, and JSON citation fields are read (a JSON array is not a bracketed
citation: ``"ids": [17, 18]`` counts only if its key is a citation field).
Lists are split on list syntax (JSON arrays, commas, semicolons), and on
"and"/"&" only between items that look like IDs (``[IDs: 17 and 18]``), never
inside a title (``"Part 3: Conduct and ethics"`` gives nothing). In a JSON
citation field, an item that is not a KB ID counts (as an invalid ID) only when
it looks like an ID: one token with a digit, ``-`` or ``_`` in it, or an ``ID:``
label; a title or a word does not. A citation field that names no ID at all (a
URL, a title, a sentence), in a response that cites no ID anywhere, is an
attempted citation: its values are the cited IDs, none of them a KB ID, so the
outcome is ``invalid_citation`` (see :func:`~harness.scoring.json_answer.attempted_citations`). Matching is exact (``uid-kb-5`` is not
``uid-kb-50``); the same ID cited twice counts once. Both readers are pure
functions of ``(text, kb_ids)``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import NamedTuple

from harness.core.citation_text import CANONICAL
from harness.scoring.json_answer import JsonAnswer, attempted_citations, citation_tokens, find_json_answer
from harness.scoring.refusal import is_lenient_refusal, is_strict_refusal

RULES = ("json", "inline", "lenient", "none")


class Extraction(NamedTuple):
    cited_ids: list[str]  # distinct, in order of first appearance
    refused: bool
    rule: str  # json | inline (canonical form only) | lenient | none


_BRACKETED = re.compile(r"[\[(\u3010\u3014]([^\[\]()\u3010\u3011\u3014\u3015\n]{1,300})[\])\u3011\u3015]")
# "ID: x" outside brackets, only taken when x is a KB ID. Found from its ":" or "#" (a fast literal
# scan) and then checked for the "ID" label just before it: an IGNORECASE "\bID" scan costs 5x more.
_SEP_VALUE = re.compile(r"[:#]\s*\**([\w][\w\-./]*)")
_ID_BEFORE = re.compile(r"\bIDs?\**\s*$", re.IGNORECASE)
# "[ID: x]", "[Article ID 17]", "(source id# x)": sep is ":", "#" or "=", or a space before a digit-led ID
_ID_LABEL = re.compile(
    r"(?:(?:article|source|doc|document|kb|ref|reference|citation)[\s_-]*)?ids?\s*(?:([:#=])\s*|\s+(?=\S))(.*)",
    re.IGNORECASE | re.S,
)
# "[Source: 17]", "[Article 17]", "[doc 3]": only when every listed ID is a KB ID
_OTHER_LABEL = re.compile(
    r"(?:article|source|doc|document|ref|reference|citation)s?\s*(?:[:#=]\s*|\s+)(.*)", re.IGNORECASE | re.S
)
_LIST_SEP = re.compile(r"\s*[,;]\s*")  # list syntax
_AND_SEP = re.compile(r"\s*(?:&|\band\b)\s*", re.IGNORECASE)  # a word: splits only between ID-like items
_ID_FORM = re.compile(r"#?[\w][\w\-./]*")
_ID_PREFIX = re.compile(r"ids?(?:\s*[:#=]\s*|\s+)", re.IGNORECASE)
_WRAP = " \t*_`\"'\u201c\u201d\u2018\u2019"
_TRAIL = ".,;:!?"
_SEPARATORS = re.compile(r"[\s,;]")


def _clean(token: str) -> str:
    t = token.strip(_WRAP)
    m = _ID_PREFIX.match(t)
    if m and m.end() < len(t):
        t = t[m.end():].strip(_WRAP)
    t = t.rstrip(_TRAIL).strip(_WRAP)
    return t.lstrip("#")


def _add(out: list[str], value: str) -> None:
    if value and value not in out:
        out.append(value)


def _id_form(t: str, kb_ids: Collection[str]) -> bool:
    """A KB ID, or one token that looks like an ID (a digit, "-" or "_" in it), not a word or a title."""
    if t in kb_ids:
        return True
    return _ID_FORM.fullmatch(t) is not None and any(ch.isdigit() or ch in "-_" for ch in t)


def _split_list(rest: str, kb_ids: Collection[str]) -> list[str]:
    """Items of a list-like string: split on commas and semicolons; on "and"/"&" only if every part is ID-like."""
    parts = _LIST_SEP.split(rest) if ("," in rest or ";" in rest) else [rest]
    out: list[str] = []
    for p in parts:
        if "&" in p or "and" in p.lower():
            subs = _AND_SEP.split(p)
            if len(subs) > 1 and all(_id_form(_clean(x), kb_ids) for x in subs):
                out.extend(subs)
                continue
        out.append(p)
    return out


def _bracket_ids(content: str, square: bool, kb_ids: Collection[str]) -> list[str]:
    c = content.strip(_WRAP) if ("*" in content or "`" in content or "_" in content) else content.strip()
    if c in kb_ids:
        return [c] if square else []
    m = _ID_LABEL.match(c)
    if m:
        rest = m.group(2).strip(_WRAP)
        if rest in kb_ids:
            return [rest]
        ids = []
        for part in _split_list(rest, kb_ids):
            t = part.strip(_WRAP)
            if t not in kb_ids:
                t = _clean(part)
            if not t:
                continue
            if t in kb_ids or (not _SEPARATORS.search(t) and (m.group(1) or t[0].isdigit())):
                ids.append(t)
        return ids
    if not square:
        return []
    m = _OTHER_LABEL.match(c)
    rest = m.group(1) if m else c
    tokens = [t for t in (_clean(p) for p in _split_list(rest, kb_ids)) if t]
    if tokens and all(t in kb_ids for t in tokens):
        return tokens
    return []


def _json_value(text: str, start: int) -> bool:
    """Is the bracket at ``start`` the value of a JSON key (``"key": [``)?"""
    j = start - 1
    while j > 0 and text[j] in " \t\r\n":
        j -= 1
    return j > 0 and text[j] == ":" and text[j - 1] in "\"'"


def inline_ids_lenient(text: str, kb_ids: Collection[str]) -> list[str]:
    """Every lenient inline citation form, in order of appearance."""
    found: list[tuple[int, str]] = []
    if "[" in text or "(" in text or "\u3010" in text or "\u3014" in text:
        for m in _BRACKETED.finditer(text):
            open_char = text[m.start()]
            if open_char == "[" and _json_value(text, m.start()):
                continue  # '"ids": [17, 18]' is a JSON array, read only through the JSON citation fields
            for i in _bracket_ids(m.group(1), open_char != "(", kb_ids):
                found.append((m.start(), i))
    if ":" in text or "#" in text:
        for m in _SEP_VALUE.finditer(text):
            start = m.start()
            if not _ID_BEFORE.search(text, max(0, start - 12), start):
                continue
            t = m.group(1)
            if t not in kb_ids:
                t = t.rstrip(_TRAIL)
            if t in kb_ids:
                found.append((start, t))
    found.sort(key=lambda p: p[0])
    out: list[str] = []
    for _, i in found:
        _add(out, i)
    return out


def canonical_ids(text: str, kb_ids: Collection[str]) -> list[str]:
    """``[ID: x]`` verbatim; ``x`` must be a KB ID or a single token (so ``[ID: 1, 2]`` is not canonical)."""
    out: list[str] = []
    if "[ID: " not in text:
        return out
    for c in CANONICAL.findall(text):
        if c in kb_ids or not _SEPARATORS.search(c):
            _add(out, c)
    return out


def _field_ids(token: str, kb_ids: Collection[str], loose: bool) -> list[str]:
    """One string from a JSON citation field -> IDs (see the module docstring for what counts)."""
    if token in kb_ids:
        return [token]
    ids = inline_ids_lenient(token, kb_ids)  # "[ID: 14]", "ID: 14", "see [14]"
    if ids:
        return ids
    out: list[str] = []
    for item in _split_list(token.strip().strip("[]()"), kb_ids):
        found = _bracket_ids(item, True, kb_ids)  # "Article 14", "Source: 14", "ID 14"
        if not found and not loose:
            t = _clean(item)
            if _id_form(t, kb_ids):
                found = [t]
        out.extend(found)
    return out


def _json_ids(ans: JsonAnswer, kb_ids: Collection[str]) -> list[str]:
    out: list[str] = []
    for values, loose in ((ans.citations, False), (ans.loose_citations, True)):
        for raw in values:
            for tok in citation_tokens(raw):
                for i in _field_ids(tok, kb_ids, loose):
                    _add(out, i)
    return out


def extract_both(text: str, kb_ids: Collection[str],
                 languages: Iterable[str] | None = None) -> tuple[Extraction, Extraction]:
    """``(lenient, strict)`` in one pass: the scorer's hot path shares the JSON parse and canonical scan.

    ``languages``: whose refusal paraphrases to look for besides English (the question's; all when None)."""
    if not text:
        return Extraction([], False, "none"), Extraction([], False, "none")
    canon = canonical_ids(text, kb_ids)
    strict_refused = is_strict_refusal(text)
    if (
        canon
        and "(" not in text
        and text.count("[") == len(canon)  # every bracket is a canonical citation (possibly repeated: slow path)
        and text.count(":") == len(canon)
        and "#" not in text
        and "\u3010" not in text
        and "\u3014" not in text
        and all(c in kb_ids for c in canon)
    ):
        inline = list(canon)  # fast path: the prompt's own format and nothing else a lenient reader could find
    else:
        inline = inline_ids_lenient(text, kb_ids)
    ans = find_json_answer(text) if "{" in text else None
    json_ids = _json_ids(ans, kb_ids) if ans is not None else []
    refused = strict_refused or is_lenient_refusal(text, cites=bool(inline or json_ids), languages=languages)

    if ans is not None and ans.exact:
        strict_ids = list(canon)
        cit = ans.data.get("citation")
        if isinstance(cit, str) and cit.strip():
            _add(strict_ids, cit.strip())
        strict = Extraction(strict_ids, strict_refused, "json")
    else:
        strict = Extraction(canon, strict_refused, "inline" if canon or strict_refused else "none")

    if ans is not None:
        ids = json_ids
        for i in inline:
            _add(ids, i)
        if not ids and ans.parsed:  # a citation field that names no ID: an attempted, invalid citation
            for raw in ans.citations:
                for value in attempted_citations(raw):
                    _add(ids, value)
        lenient = Extraction(ids, refused or ans.refused, "json")
    elif not inline and not refused:
        lenient = Extraction([], False, "none")
    else:
        same = refused == strict_refused and set(inline) == set(canon)
        lenient = Extraction(inline, refused, "inline" if same else "lenient")
    return lenient, strict


def extract_strict(text: str, kb_ids: Collection[str]) -> Extraction:
    return extract_both(text, kb_ids)[1]


def extract_lenient(text: str, kb_ids: Collection[str]) -> Extraction:
    return extract_both(text, kb_ids)[0]


def extract(text: str, kb_ids: Collection[str], *, strict: bool = False) -> Extraction:
    """Read one response; ``kb_ids`` should be a set (membership is tested often)."""
    lenient, strict_reading = extract_both(text, kb_ids)
    return strict_reading if strict else lenient


def given_citations(text: str, citations: list[str],
                    languages: Iterable[str] | None = None) -> tuple[Extraction, Extraction]:
    """``(lenient, strict)`` for a system that returned its citations as data (``python:``, ``http:``, imported
    logs): the IDs are those, in order, read the same way strictly and leniently (there is nothing to parse);
    the refusal is still read from the text, as for any answer. The rule is ``json``: a structured answer."""
    ids: list[str] = []
    for c in citations:
        if c:
            _add(ids, c)
    strict_refused = bool(text) and is_strict_refusal(text)
    refused = strict_refused or (bool(text) and is_lenient_refusal(text, cites=bool(ids), languages=languages))
    return Extraction(ids, refused, "json"), Extraction(list(ids), strict_refused, "json")
