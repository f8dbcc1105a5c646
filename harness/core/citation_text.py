"""The rules of citation text, each written once: GRACE's ``[ID: x]`` marker, where a sentence ends, and how text
is folded before two texts are compared.

The scorer (:mod:`harness.scoring.extraction`, :mod:`harness.scoring.citation_reading`), the marker reader
(:mod:`harness.scoring.markers`), the spot-check (segmentation, the citation-support judge), the resolver
(:mod:`kb_builder.references`) and the review app all read these; a second spelling of one of them drifts from
the first (the sentence end was three, kept equal by hand), so tests/harness/core/test_citation_text.py holds the
tree to this module.
"""

from __future__ import annotations

import re
import unicodedata

# GRACE's own citation, exactly as the prompt asks for it: "[ID: 17]" (strict reading; the ID may be any text
# without brackets or a line break: the extraction then tells a KB ID from an invalid one)
CANONICAL = re.compile(r"\[ID: ([^\[\]\n]+)\]")
# any spelling of it a person or a model writes: "[ID:17]", "[ id: 17 ]", "[Id: 4, 5]": cut from an answer's words
ANY_ID_MARKER = re.compile(r"\[\s*ID:[^\]]*\]", re.IGNORECASE)
# a reference that names an ID in its own words ("ID 17", "[ID#17]", "id: uid-4"): the whole reference, one ID
ID_REFERENCE = re.compile(r"^\[?\s*ID(?:\s*[:#]\s*|\s+)([A-Za-z0-9_.-]+)\s*\]?$", re.IGNORECASE)

# the characters that end a sentence, Latin and CJK
END_MARKS = ".!?\u2026\u3002\uff01\uff1f"
# a sentence ends at one of them before a space or the end of the text, or at a line break ("v1.2" and "e.g.x"
# do not end one): where a citation marker's sentence starts and stops
SENTENCE_END = re.compile(f"[{re.escape(END_MARKS)}](?=\\s|$)|\\n")
# the spot-check's segmentation also ends a sentence before a closing quote or bracket ('"stop." Then'), on the
# Latin marks only: the rule its meta-evaluation was measured with, kept until a change is measured there
SENTENCE_END_BEFORE_CLOSER = re.compile(r"[.!?](?=[\s\"'\u201d)]|$)|\n")

WORD = re.compile(r"\w+")


def fold(text: str) -> str:
    """Text as compared: Unicode NFKC, case folded, every run of white space one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def folded_words(text: str) -> list[str]:
    """The words of the folded text (punctuation dropped): what a quote and an article are compared by."""
    return WORD.findall(fold(text))


def is_canonical_id(cited: str) -> bool:
    """One ID in a canonical marker: "[ID: 4]", not "[ID: 4, 5]" (a list, read by the lenient extraction)."""
    return not any(c.isspace() or c in ",;" for c in cited)
