"""Markdown (with YAML front matter) -> sections, using markdown-it's heading map.

markdown-it finds real headings only (a ``#`` inside a code fence is not one),
and gives each heading's source line, so bodies are the original Markdown lines
between headings, cleaned. Only its block pass runs: headings are block
structure, and parsing every paragraph's inline markup (which nothing here
reads) was a third of the time on a large file.
"""

from __future__ import annotations

import os
import re
from itertools import chain
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_markdown, clean_title, strip_templates_mapped

_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n?", re.S)
_ANCHOR = re.compile(r"\{#[^}]*\}")  # kramdown's {#id} heading attribute
_EXPLICIT = re.compile(r"\{#([^}\s]+)\}")
_ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
PARALLEL_CHARS = 4_000_000  # below this, starting a second process costs more than it saves


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
    """Sections from Markdown source; returns (first H1 if it opens the page, sections), each with its offsets in
    ``text`` (``start``, ``end``).

    A large text is read in two halves at once, on two cores. The halves meet at
    an ATX heading after a blank line. The first half is parsed up to and
    including that heading line: if markdown-it sees it as a top-level heading,
    nothing before it (an unclosed fence, a ``<pre>`` block) reaches past it, and
    the rest read on its own gives what one pass would. If not, or if the second
    process fails, the text is read in one go.
    """
    lines = text.split("\n")
    cut = _cut_line(lines) if len(text) >= PARALLEL_CHARS and "\r" not in text and (os.cpu_count() or 1) > 1 else None
    sections: list[Section] | None = None
    if cut is not None:
        from kb_builder.documents.offload import Offloaded

        try:
            rest = Offloaded(_part_sections, "\n".join(lines[cut:]))
        except OSError:  # no second process here
            rest = None
        if rest is not None:
            try:
                first = _scan("\n".join(lines[: cut + 1]))
                if any(h[0] == cut and h[4] for h in first):
                    later = rest.result()
                    for sec in later:  # their lines counted from the cut
                        sec.start, sec.end = sec.start + cut, sec.end + cut
                    sections = _sections(lines[:cut], [h[:4] for h in first if h[0] < cut]) + later
            except OSError:  # the child failed
                pass
            finally:
                rest.cancel()
    if sections is None:
        sections = _sections(lines, [h[:4] for h in _scan(text)])
    offsets = [0]  # where each line starts
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for sec in sections:  # line numbers -> offsets in text
        sec.start, sec.end = offsets[sec.start], min(offsets[sec.end], len(text))
    if sections and sections[0].level == 0 and not sections[0].body:
        sections = sections[1:]
    return None, sections


def _sections(lines: list[str], heads: list[tuple[int, int, int, str]]) -> list[Section]:
    """Each heading with the cleaned lines up to the next; the first section is the text before any. ``start`` and
    ``end`` are line numbers here (markdown_sections makes them offsets)."""
    sections: list[Section] = []
    prev_end, prev_level, prev_heading = 0, 0, ""
    prev_in_text, prev_anchor, prev_line = "", "", 0
    for start, end, level, raw in heads:
        sections.append(Section(prev_level, prev_heading, clean_markdown("\n".join(lines[prev_end:start])), prev_in_text,
                                prev_anchor, prev_line, start))
        prev_end, prev_level, prev_heading = end, level, _heading_text(raw)
        prev_in_text = _heading_in_text(raw)
        prev_in_text = "" if prev_in_text == prev_heading else prev_in_text
        explicit = _EXPLICIT.search(raw)
        prev_anchor, prev_line = (explicit.group(1) if explicit else ""), start
    sections.append(Section(prev_level, prev_heading, clean_markdown("\n".join(lines[prev_end:])), prev_in_text,
                            prev_anchor, prev_line, len(lines)))
    return sections


def _part_sections(text: str) -> list[Section]:
    """In a child process: the sections of a part that opens with a heading (so without a preamble)."""
    return _sections(text.split("\n"), [h[:4] for h in _scan(text)])[1:]


def _scan(text: str) -> list[tuple[int, int, int, str, bool]]:
    """(start line, end line, level, raw text, top level?) of every heading."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)  # a heading's inline token still carries its raw text
    tokens = md.parse(text)
    return [
        (tok.map[0], tok.map[1], int(tok.tag[1]), tokens[i + 1].content, tok.level == 0)
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.map
    ]


def _cut_line(lines: list[str]) -> int | None:
    """The ATX heading after a blank line nearest the middle, or None."""
    mid = max(len(lines) // 2, 1)
    for i in chain(range(mid, len(lines)), range(mid - 1, 0, -1)):
        if _ATX.match(lines[i]) and not lines[i - 1].strip(" \t"):
            return i
    return None


def _heading_text(raw: str) -> str:
    return clean_title(_ANCHOR.sub("", raw)).rstrip(":").strip()


def _heading_in_text(raw: str) -> str:
    """The heading as body text reads: cleaned like a body, so a link keeps its URL."""
    text = _ANCHOR.sub("", clean_markdown(raw))
    return re.sub(r"[*_`]+", "", text).strip().rstrip(":").strip()


def load_markdown(path: Path, source: str) -> Document:
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise GraceError(f"{path}: not UTF-8 text; re-save it as UTF-8") from None
    front, body = split_front_matter(raw)
    text, shifts = strip_templates_mapped(body)
    _, sections = markdown_sections(text)
    skip = len(raw) - len(body)  # the front matter
    for sec in sections:
        sec.start, sec.end = skip + shifts.before(sec.start), skip + shifts.before(sec.end)
    title = clean_title(str(front.get("title") or ""))
    if not title:
        h1 = [s for s in sections if s.level == 1]
        title = h1[0].heading if len(h1) == 1 else title_from_source(source)
    return Document(source=source, title=title, sections=sections)
