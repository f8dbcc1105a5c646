"""Markdown (with YAML front matter) -> sections, using markdown-it's heading map.

markdown-it finds real headings only (a ``#`` inside a code fence is not one),
and gives each heading's source line, so bodies are the original Markdown lines
between headings, cleaned.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_markdown, strip_templates

_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n?", re.S)


def split_front_matter(text: str) -> tuple[dict, str]:
    m = _FRONT.match(text)
    if not m:
        return {}, text
    import yaml

    try:
        data = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError:
        data = {}
    return (data if isinstance(data, dict) else {}), text[m.end():]


def markdown_sections(text: str) -> tuple[str | None, list[Section]]:
    """Sections from Markdown source; returns (first H1 if it opens the page, sections)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    lines = text.split("\n")
    tokens = md.parse(text)
    heads: list[tuple[int, int, int, str]] = []  # (start line, end line, level, text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            inline = tokens[i + 1]
            heads.append((tok.map[0], tok.map[1], int(tok.tag[1]), _heading_text(inline.content)))
    sections: list[Section] = []
    prev_end, prev_level, prev_heading = 0, 0, ""
    for start, end, level, heading in heads:
        sections.append(Section(prev_level, prev_heading, clean_markdown("\n".join(lines[prev_end:start]))))
        prev_end, prev_level, prev_heading = end, level, heading
    sections.append(Section(prev_level, prev_heading, clean_markdown("\n".join(lines[prev_end:]))))
    if sections and sections[0].level == 0 and not sections[0].body:
        sections = sections[1:]
    return None, sections


def _heading_text(raw: str) -> str:
    text = re.sub(r"\{#[^}]*\}", "", clean_markdown(raw))
    return re.sub(r"[*_`]+", "", text).strip().rstrip(":").strip()


def load_markdown(path: Path, source: str) -> Document:
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise GraceError(f"{path}: not UTF-8 text; re-save it as UTF-8") from None
    front, body = split_front_matter(raw)
    _, sections = markdown_sections(strip_templates(body))
    title = str(front.get("title") or "").strip()
    if not title:
        h1 = [s for s in sections if s.level == 1]
        title = h1[0].heading if len(h1) == 1 else title_from_source(source)
    return Document(source=source, title=title, sections=sections)
