"""PDF -> sections, finding headings by font size.

PDF has no headings, only text drawn at sizes. The most common size (by
characters) is body text; noticeably larger lines are headings, ranked by size
into levels. A PDF drawn in one size falls back to the plain-text heading rules
(numbering, capitals).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_title, tidy
from kb_builder.documents.text import text_sections


def _lines(page) -> list[tuple[str, float, float]]:
    """(text, font size, y) per visual line of a page, in drawing order."""
    runs: list[tuple[str, float, float]] = []

    def visit(text, cm, tm, font, size):
        if not text:
            return
        scale = abs(tm[3] * cm[3]) or abs(tm[0] * cm[0]) or 1.0
        y = tm[5] * cm[3] + cm[5]
        for i, part in enumerate(text.split("\n")):
            if i:
                runs.append(("\n", 0.0, y))
            if part:
                runs.append((part, round(size * scale, 1), round(y, 1)))

    page.extract_text(visitor_text=visit)
    lines: list[tuple[str, float, float]] = []
    cur, cur_size, cur_y = "", 0.0, None
    for text, size, y in runs:
        if text == "\n" or (cur_y is not None and abs(y - cur_y) > 1.0 and cur.strip()):
            if cur.strip():
                lines.append((" ".join(cur.split()), cur_size, cur_y or 0.0))
            cur, cur_size, cur_y = "", 0.0, None
            if text == "\n":
                continue
        cur += text
        cur_size = max(cur_size, size)
        cur_y = y if cur_y is None else cur_y
    if cur.strip():
        lines.append((" ".join(cur.split()), cur_size, cur_y or 0.0))
    return lines


def load_pdf(path: Path, source: str) -> Document:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise GraceError("reading PDF needs pypdf: pip install pypdf") from None
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise GraceError(f"{path}: the PDF is password-protected; save an unprotected copy")
        pages = [_lines(p) for p in reader.pages]
    except GraceError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise GraceError(f"{path}: unreadable PDF ({type(exc).__name__}: {exc}); is it a valid PDF?") from None
    lines = [ln for page in pages for ln in page]
    if not lines:
        raise GraceError(f"{path}: the PDF has no extractable text (scanned? run OCR first)")
    sizes = Counter()
    for text, size, _ in lines:
        sizes[size] += len(text)
    body_size = sizes.most_common(1)[0][0]
    head_sizes = sorted({s for t, s, _ in lines if s >= body_size * 1.15 and len(t) <= 100}, reverse=True)
    if not head_sizes:
        sections = text_sections("\n".join(t for t, _, _ in lines))
    else:
        level_of = {s: min(i + 1, 6) for i, s in enumerate(head_sizes)}
        sections = [Section(0, "", "")]
        body: list[str] = []
        prev_y: float | None = None
        for text, size, y in lines:
            if size in level_of and len(text) <= 100:
                sections[-1].body = tidy("\n".join(body))
                sections.append(Section(level_of[size], clean_title(text), ""))
                body, prev_y = [], None
                continue
            if prev_y is not None and abs(prev_y - y) > body_size * 1.9:
                body.append("")  # vertical gap: a new paragraph
            # a line ending with a hyphenated word continues on the next
            if body and body[-1].endswith("-") and text[:1].islower():
                body[-1] = body[-1][:-1] + text
            else:
                body.append(text)
            prev_y = y
        sections[-1].body = tidy("\n".join(body))
        sections = [s for s in sections if s.body or s.level]
    meta_title = (reader.metadata.title if reader.metadata else None) or ""
    h1 = [s for s in sections if s.level == 1]
    title = clean_title(meta_title) or (h1[0].heading if len(h1) == 1 else title_from_source(source))
    return Document(source=source, title=title, sections=sections)
