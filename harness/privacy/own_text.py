"""Grace's own prompt text, which redaction never touches.

A prompt is grace's template filled with the user's data. Where grace can, it
redacts the data before filling the template (``grace run`` redacts the
question and the articles, then renders), so the template is never read at
all. Where a caller hands over finished messages (the judge, the labeler, the
reranker), the template's lines are found in them and left as written: a name
recogniser once took the French refusal sentence "Je n'ai pas assez
d'informations..." for a person in every prompt. The lines come from grace's
template files (every language) and the refusal sentences; a user's own
template is not known here, which is why ``grace run`` renders after redacting.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIRS = ("harness/prompts/templates", "harness/prompts/rerank", "harness/prompts/splitter",
                 "harness/spotcheck/templates", "annotations/templates", "harness/kb_curate/templates")
_PLACEHOLDER = re.compile(r"\{\{\s*\w+\s*\}\}|^=== \w+ ===\s*$|^#.*$", re.M)
MIN_CHARS = 12  # shorter pieces ("Answer:", "ID") are words the data may hold too


@lru_cache(maxsize=1)
def own_lines() -> tuple[str, ...]:
    """The literal pieces of grace's templates (between placeholders, one line at most) and the notes grace writes into them, longest first."""
    from harness.prompts.languages import NOTES, REFUSALS

    pieces = set(REFUSALS.values())
    pieces.update(part.strip() for notes in NOTES.values() for note in notes.values() for part in note.split("{ids}"))
    for folder in TEMPLATE_DIRS:
        for path in sorted((_ROOT / folder).glob("*.txt")):
            for chunk in _PLACEHOLDER.split(path.read_text(encoding="utf-8")):
                pieces.update(line.strip() for line in chunk.splitlines())
    return tuple(sorted((p for p in pieces if len(p) >= MIN_CHARS), key=len, reverse=True))


def own_ranges(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a line of grace's own templates."""
    out = []
    for piece in own_lines():
        at = text.find(piece)
        while at != -1:
            out.append((at, at + len(piece)))
            at = text.find(piece, at + len(piece))
    return out
