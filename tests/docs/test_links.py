"""Every link of the README and the docs works where most people read Markdown: on the code host, file by file.

There a link reaches a committed file (not a page MkDocs generates at build time) and an anchor is the heading's
natural slug (lower case, punctuation dropped, spaces as hyphens, a repeat numbered -1, -2): a ``{#custom-id}``
attribute is shown as text there, not taken as the anchor. The site build's own check (``mkdocs build --strict``,
test_docs.py) covers the site.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link or heading inside one is shown as code)."""
    out, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        out.append("" if inside else line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (markup and links reduced to their words), lower case, every
    character that is not a letter, digit, space, hyphen or underscore dropped, spaces made hyphens."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = "".join(ch for ch in text.lower() if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    lines = prose(path.read_text(encoding="utf-8"))
    for line in lines:
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return frozenset(out)


def broken_links() -> list[str]:
    bad = []
    for page in PAGES:
        # code spans (which may run over a line end) shown as code, not links; their line ends kept for the numbers
        text = re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), "\n".join(prose(
            page.read_text(encoding="utf-8"))))
        for n, line in enumerate(text.splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file of the repository
                    continue
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                where = f"{page.relative_to(ROOT)}:{n}: {target}"
                if not dest.exists():
                    bad.append(f"{where}: no such file in the repository")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    bad.append(f"{where}: no heading of {dest.name} has the anchor #{anchor}")
    return bad


def test_every_link_works_on_the_code_host():
    bad = broken_links()
    assert not bad, f"{len(bad)} broken link(s) as the code host renders the Markdown:\n" + "\n".join(bad)


def test_the_slug_is_the_code_hosts():
    assert slug("How your system's citations are read and scored") == "how-your-systems-citations-are-read-and-scored"
    assert slug("`python:` systems") == "python-systems"
    assert slug("A complete example: 400 questions, 60 human labels") == "a-complete-example-400-questions-60-human-labels"
    assert slug("Label a fraction, let a model label the rest") == "label-a-fraction-let-a-model-label-the-rest"
