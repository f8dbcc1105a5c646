"""HTML -> sections with the standard-library parser (no lxml or network needed).

Navigation, headers, footers, scripts and forms are dropped: they are site
chrome, not handbook content, and would otherwise become stub articles.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.documents import Document, Section, title_from_source
from kb_builder.documents.cleanup import clean_title, strip_templates_mapped, tidy

_SKIP = {"script", "style", "nav", "footer", "header", "noscript", "form", "template", "svg", "button", "aside"}
_BLOCK = {"p", "div", "section", "article", "main", "br", "tr", "table", "ul", "ol", "dl", "blockquote", "pre", "hr", "dt", "dd", "figure"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "area", "base", "embed", "source", "track", "wbr"}


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip_depth = 0
        self.stack: list[str] = []
        self.sections: list[Section] = [Section(0, "", "")]
        self.places: list[tuple[int, int]] = [(1, 0)]  # (line, column) where each section starts
        self.buf: list[str] = []
        self.heading: list[str] | None = None
        self.heading_level = 0
        self.heading_at = (1, 0)  # (line, column) of the heading's tag: sections say where they are in the file
        self.heading_id = ""
        self.title: list[str] | None = None
        self.page_title = ""
        self.href: str | None = None
        self.link_text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self.skip_depth += 1
        if tag not in _VOID:
            self.stack.append(tag)
        if self.skip_depth:
            return
        if tag == "title":
            self.title = []
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._flush()
            self.heading, self.heading_level = [], int(tag[1])
            self.heading_at, self.heading_id = self.getpos(), dict(attrs).get("id") or ""
        elif tag == "a" and self.heading is not None and not self.heading_id:
            named = dict(attrs)
            self.heading_id = named.get("id") or named.get("name") or ""  # <h2><a id="x"></a>...</h2>
        elif tag == "li":
            self.buf.append("\n- ")
        elif tag in ("td", "th"):
            self.buf.append(" | ")
        elif tag in _BLOCK:
            self.buf.append("\n\n" if tag in ("p", "div", "section", "table", "ul", "ol", "pre", "blockquote") else "\n")
        elif tag == "a":
            self.href, self.link_text = dict(attrs).get("href") or "", []

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack:
                top = self.stack.pop()
                if top in _SKIP:
                    self.skip_depth = max(0, self.skip_depth - 1)
                if top == tag:
                    break
        if self.skip_depth:
            return
        if tag == "title" and self.title is not None:
            self.page_title = clean_title("".join(self.title), decoded=True)
            self.title = None
        elif self.heading is not None and len(tag) == 2 and tag[0] == "h":
            text = clean_title("".join(self.heading), decoded=True)
            self.sections.append(Section(self.heading_level, text, "", anchor=self.heading_id.strip()))
            self.places.append(self.heading_at)
            self.heading = None
        elif tag == "a" and self.href is not None:
            label = " ".join("".join(self.link_text).split())
            if self.href.startswith(("http://", "https://")) and self.href not in label and label:
                self._text(f" ({self.href})")
            self.href = None
        elif tag in _BLOCK:
            self.buf.append("\n")

    def handle_data(self, data):
        if self.skip_depth:
            return
        if self.title is not None:
            self.title.append(data)
        elif self.heading is not None:
            self.heading.append(data)
        else:
            if self.href is not None:
                self.link_text.append(data)
            self._text(data)

    def _text(self, data: str) -> None:
        self.buf.append(" ".join(data.split(" ")) if "\n" not in data else " ".join(data.split()) + " ")

    def _flush(self) -> None:
        text = "".join(self.buf)
        lines = [" ".join(line.split()) for line in text.split("\n")]
        self.sections[-1].body = tidy("\n".join(lines))
        self.buf = []

    def close(self):
        super().close()
        self._flush()


def load_html(path: Path, source: str) -> Document:
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raw = path.read_text(encoding="latin-1")
    parser = _Parser()
    text, shifts = strip_templates_mapped(raw)
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # html.parser is lenient; anything raised here is a truly broken file
        raise GraceError(f"{path}: could not parse HTML ({exc})") from None
    lines = [0]
    for line in text.split("\n"):
        lines.append(lines[-1] + len(line) + 1)
    starts = [lines[min(line - 1, len(lines) - 1)] + col for line, col in parser.places]
    for sec, at, nxt in zip(parser.sections, starts, [*starts[1:], len(text)], strict=True):
        sec.start, sec.end = shifts.before(at), shifts.before(nxt)
    sections = [s for s in parser.sections if s.body or s.level]
    h1 = [s for s in sections if s.level == 1]
    title = h1[0].heading if len(h1) == 1 else (parser.page_title or title_from_source(source))
    return Document(source=source, title=title, sections=sections)
