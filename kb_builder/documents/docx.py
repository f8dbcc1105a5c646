"""DOCX -> sections from Word's heading styles (Title, Heading 1..6) and outline levels."""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_title, tidy

_HEADING = re.compile(r"^heading\s*(\d)$", re.I)


def _level(paragraph) -> int | None:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name.lower() == "title":
        return 1
    if m := _HEADING.match(name.strip()):
        return min(int(m.group(1)), 6)
    return None


def load_docx(path: Path, source: str) -> Document:
    try:
        import docx
    except ImportError:
        raise GraceError("reading DOCX needs python-docx: pip install python-docx") from None
    try:
        doc = docx.Document(str(path))
    except Exception as exc:  # python-docx raises several unrelated types for a corrupt zip
        raise GraceError(f"{path}: unreadable DOCX ({type(exc).__name__}: {exc}); is it a Word .docx file?") from None
    sections = [Section(0, "", "")]
    body: list[str] = []
    title_style: str | None = None
    # walk paragraphs and tables in document order
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for child in doc.element.body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            p = Paragraph(child, doc)
            text = p.text.strip()
            if not text:
                body.append("")
                continue
            level = _level(p)
            if level is not None:
                text = clean_title(text)
                if p.style is not None and p.style.name.lower() == "title":
                    title_style = text
                sections[-1].body = tidy("\n".join(body))
                sections.append(Section(level, text, ""))
                body = []
            else:
                style = (p.style.name if p.style is not None else "").lower()
                body.append(("- " + text) if "list" in style else text)
                body.append("")
        elif tag == "tbl":
            for row in Table(child, doc).rows:
                cells = []
                for c in row.cells:
                    t = " ".join(c.text.split())
                    if not cells or cells[-1] != t:  # merged cells repeat their text
                        cells.append(t)
                body.append(" | ".join(cells))
            body.append("")
    sections[-1].body = tidy("\n".join(body))
    sections = [s for s in sections if s.body or s.level]
    core_title = clean_title(doc.core_properties.title or "")
    h1 = [s for s in sections if s.level == 1]
    title = core_title or title_style or (h1[0].heading if len(h1) == 1 else title_from_source(source))
    return Document(source=source, title=title, sections=sections)
