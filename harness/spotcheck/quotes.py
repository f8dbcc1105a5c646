"""Quotes in an answer are checked verbatim against the cited article, without an LLM.

A quotation is the strongest claim an answer can make ("the policy says
'...'"), and the cheapest to check: the words must be in the article. The
comparison forgives only what a faithful copy may change: whitespace and line
breaks, quote and apostrophe style, dash style, markdown emphasis, the case of
the first letter, punctuation at the quote's ends, and an ellipsis standing for
omitted words (each part must then appear, in order).

Only quoted spans of the answer's text are quotes: a JSON answer is checked by
its answer field (see :func:`harness.spotcheck.segmentation.answer_body`), and
as a second guard a ``"name":`` that opens a JSON field is never a quote.
"""

from __future__ import annotations

import re
import unicodedata

# straight double quotes, curly double quotes, low-high German quotes, guillemets, curly single quotes;
# straight single quotes are left out: they are apostrophes far more often than quotation marks
_QUOTE = re.compile(
    r'"([^"]{2,}?)"'
    r"|\u201c([^\u201c\u201d]{2,}?)\u201d"
    r"|\u201e([^\u201c\u201d\u201e]{2,}?)[\u201c\u201d]"
    r"|\u00ab\s*([^\u00ab\u00bb]{2,}?)\s*\u00bb"
    r"|\u2018([^\u2018\u2019]{2,}?)\u2019(?![a-z])"
)
_SINGLE = str.maketrans({c: "'" for c in "\u2018\u2019\u201a\u201b\u2032`"})
_DOUBLE = str.maketrans({c: '"' for c in "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033"})
_DASH = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"})
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026|\[\s*(?:\.\.\.|\u2026)\s*\]|\(\s*(?:\.\.\.|\u2026)\s*\))\s*")
_ENDS = " \t\n.,;:!?\"'"
_KEY_AFTER = re.compile(r'\s*:\s*(?:["\[{\d-]|true\b|false\b|null\b)')


def normalize(text: str) -> str:
    """The text a verbatim comparison sees."""
    text = unicodedata.normalize("NFKC", text).translate(_SINGLE).translate(_DOUBLE).translate(_DASH)
    text = text.replace("**", "").replace("__", "")
    return re.sub(r"\s+", " ", text).strip()


def _after_open(text: str, pos: int) -> bool:
    """Whether only whitespace stands between ``pos`` and a preceding ``{``, ``,`` or ``[``."""
    i = pos - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i >= 0 and text[i] in "{,["


def find_quotes(text: str) -> list[str]:
    """Every quoted span, in order; a quote of fewer than two characters is not a claim."""
    out = []
    text = text or ""
    for m in _QUOTE.finditer(text):
        if m.group(1) is not None and _KEY_AFTER.match(text, m.end()) and _after_open(text, m.start()):
            continue  # a JSON field name ({"answer": ...), not a quotation
        quote = next(g for g in m.groups() if g is not None).strip()
        if len(quote.strip(_ENDS)) >= 2:
            out.append(quote)
    return out


def _parts(quote: str) -> list[str]:
    return [p.strip(_ENDS) for p in _ELLIPSIS.split(normalize(quote)) if p.strip(_ENDS)]


def quote_in(quote: str, article: str) -> bool:
    """Whether ``quote`` appears in ``article`` verbatim, up to the differences listed above."""
    hay = normalize(article)
    pos = 0
    for part in _parts(quote):
        first, rest = part[0], part[1:]
        found = -1
        for candidate in dict.fromkeys((first.lower() + rest, first.upper() + rest)):
            i = hay.find(candidate, pos)
            if i != -1 and (found == -1 or i < found):
                found = i
        if found == -1:
            return False
        pos = found + len(part)
    return True


def missing_quotes(text: str, article: str) -> list[str]:
    """The quotes in ``text`` that ``article`` does not contain."""
    return [q for q in find_quotes(text) if not quote_in(q, article)]
