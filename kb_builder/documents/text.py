"""Plain text -> sections, finding the headings a person would see.

Plain-text handbooks mark headings by convention: underlines (``===``/``---``),
numbering (``2.1 Sick leave``) or a short line in capitals. Anything else is body.
"""

from __future__ import annotations

import re
from pathlib import Path

from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_title, strip_templates_mapped, tidy

_NUMBERED = re.compile(r"^(\d+(?:\.\d+){0,3})\.?\s+([A-Z][^.!?]{1,80})$")
_MD = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$")


def heading_of(line: str, next_line: str = "") -> tuple[int, str] | None:
    s = line.strip()
    if not s or len(s) > 90:
        return None
    if m := _MD.match(s):
        return len(m.group(1)), m.group(2).strip()
    nxt = next_line.strip()
    if nxt and set(nxt) <= {"="} and len(nxt) >= 3:
        return 1, s
    if nxt and set(nxt) <= {"-"} and len(nxt) >= 3:
        return 2, s
    if m := _NUMBERED.match(s):
        return min(1 + m.group(1).count("."), 6), m.group(2).strip()
    letters = [c for c in s if c.isalpha()]
    if len(letters) >= 4 and all(c.isupper() for c in letters) and not s.endswith((".", ",", ";")):
        return 1, s.title()
    return None


def text_sections(text: str) -> list[Section]:
    """Sections of plain text, each with its offsets in ``text``."""
    lines = text.split("\n")
    sections = [Section(0, "", "", start=0)]
    body: list[str] = []
    i = at = 0
    while i < len(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        prev_blank = i == 0 or not lines[i - 1].strip()
        head = heading_of(lines[i], nxt) if prev_blank or _MD.match(lines[i].strip()) else None
        if head:
            sections[-1].body = tidy("\n".join(body))
            sections[-1].end = at
            sections.append(Section(head[0], clean_title(head[1]), "", start=at))
            body = []
            if nxt.strip() and set(nxt.strip()) <= {"=", "-"}:
                at += len(lines[i]) + 1
                i += 1
        else:
            body.append(lines[i])
        at += len(lines[i]) + 1
        i += 1
    sections[-1].body = tidy("\n".join(body))
    sections[-1].end = len(text)
    return [s for s in sections if s.body or s.level]


def load_text(path: Path, source: str) -> Document:
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raw = path.read_text(encoding="latin-1")
    text, shifts = strip_templates_mapped(raw)
    sections = text_sections(text)
    for sec in sections:
        sec.start, sec.end = shifts.before(sec.start), shifts.before(sec.end)
    h1 = [s for s in sections if s.level == 1]
    return Document(source=source, title=h1[0].heading if len(h1) == 1 else title_from_source(source), sections=sections)
