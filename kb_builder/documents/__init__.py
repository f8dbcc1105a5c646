"""Documents: files -> a flat list of headed sections, in reading order.

Each loader returns a :class:`Document` whose sections carry a heading level
(0 = text before any heading) so the splitter can rebuild the outline whatever
the format was. Loaders keep text, drop layout and navigation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import GraceError


@dataclass
class Section:
    level: int  # 0 = preamble, 1..6 = heading depth
    heading: str  # plain text (no markup, entities or link targets): titles and IDs are made of it
    body: str
    # the heading as an article's text shows it when the section is merged into its parent's article:
    # a link keeps its target there, as in any body text. Empty: the same as ``heading``.
    heading_in_text: str = ""
    anchor: str = ""  # the heading's explicit anchor (kramdown's {#id}, an HTML heading's id); empty: none
    # where the section is in the source: character offsets of its heading line (of the text, for the part before
    # any heading) and of the next section, in the file's text (a PDF's or DOCX's: in the text grace extracted,
    # see positions_in_text). None: not known
    start: int | None = None
    end: int | None = None


@dataclass
class Document:
    source: str  # path relative to the build root, posix style
    title: str
    sections: list[Section] = field(default_factory=list)


SUFFIXES = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html",
    ".txt": "text", ".text": "text",
    ".pdf": "pdf",
    ".docx": "docx",
}


def load_file(path: Path, source: str) -> Document:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise GraceError(f"{path}: unsupported file type {path.suffix!r}; grace reads {', '.join(sorted(SUFFIXES))}")
    if kind == "markdown":
        from kb_builder.documents.markdown import load_markdown as loader
    elif kind == "html":
        from kb_builder.documents.html import load_html as loader
    elif kind == "text":
        from kb_builder.documents.text import load_text as loader
    elif kind == "pdf":
        from kb_builder.documents.pdf import load_pdf as loader
    else:
        from kb_builder.documents.docx import load_docx as loader
    doc = loader(path, source)
    if doc.sections and doc.sections[0].start is None:
        positions_in_text(doc.sections)
    return doc


def positions_in_text(sections: list[Section]) -> None:
    """Offsets for a format whose file is not text (PDF, DOCX): each section's place in the text grace extracted,
    read as its headings and bodies one after the other, so a section's offsets still order and bound it."""
    at = 0
    for s in sections:
        s.start = at
        at += (len(s.heading) + 2 if s.heading else 0) + len(s.body) + 2
        s.end = at


def discover(root: Path) -> list[tuple[Path, str]]:
    """Files under ``root`` (or ``root`` itself) that grace can read, sorted for stable IDs."""
    if not root.exists():
        raise GraceError(f"{root}: no such file or folder")
    if root.is_file():
        return [(root, root.name)]
    files = sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in SUFFIXES and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not files:
        raise GraceError(f"{root}: no readable documents found (looked for {', '.join(sorted(SUFFIXES))})")
    return [(p, p.relative_to(root).as_posix()) for p in files]


def title_from_source(source: str) -> str:
    stem = Path(source).stem
    if stem.lower() in {"index", "readme", "overview"} and "/" in source:
        stem = Path(source).parent.name
    return stem.replace("-", " ").replace("_", " ").strip().capitalize() or source
