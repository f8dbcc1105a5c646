"""The code blocks of a documentation page, as the docs test runs them.

Every fenced block of the README, the tutorial and the how-to guides is one of:

- a command: a ```` ```bash ```` block (its lines run in one ``bash -euo pipefail``, and must succeed), a
  ```` ```console ```` block (each ``$ `` line runs; the lines under it are its quoted output, an error too) or a ```` ```python ```` block (run
  with the Python grace is installed in; the page's python blocks share one namespace, as in a notebook);
- a quoted output: a block right after ``<!-- output -->``, compared with what the command before it printed;
- a quoted file: the page's own lines between ``<!-- output: PATH -->`` and ``<!-- /output -->`` (a leaderboard
  shown as the site renders it), compared with the file PATH the commands before it wrote;
- a file: a block right after ``<!-- file: NAME -->``, written to NAME before the commands after it run;
- a web app: a ```` ```bash ```` block right after ``<!-- app -->`` (``grace annotate``...), started with no
  browser; the test acts as the person at the page (``test_doc_blocks.PEOPLE``), then stops it as Ctrl-C does;
- illustrative: a block right after ``<!-- illustrative -->`` (a hosted model, a key, a browser, a sketch of
  a file), shown and never run.

Any other block is an error of the page: a new example has to say which it is. The markers are HTML comments,
so neither the site nor the code host shows them. A page says where its commands run in a first-line comment,
``<!-- docs-test: SETUP -->`` (see ``test_doc_blocks.SETUPS``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MARK = re.compile(r"^\s*<!--\s*(illustrative|output|app|file:\s*(?P<file>\S+))\s*-->\s*$")
REGION = re.compile(r"^\s*<!--\s*output:\s*(?P<path>\S+)\s*-->\s*$")  # quoted Markdown, up to <!-- /output -->
REGION_END = re.compile(r"^\s*<!--\s*/output\s*-->\s*$")
SETUP = re.compile(r"<!--\s*docs-test:\s*(?P<setup>[\w-]+)\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`\n]*)$")
RUN_LANGS = {"bash", "console", "python"}


@dataclass
class Block:
    line: int  # the fence's line, 1-based
    lang: str
    text: str  # the block's content, dedented to its fence
    mark: str = ""  # "illustrative", "output", "app", "file" or "" (a command when lang is a RUN_LANG)
    file: str = ""  # the file a "file" block writes

    @property
    def kind(self) -> str:
        if self.mark:
            return self.mark
        return "command" if self.lang in RUN_LANGS else "unmarked"


@dataclass
class Page:
    path: Path
    setup: str | None
    blocks: list[Block] = field(default_factory=list)


def read_page(path: Path) -> Page:
    lines = path.read_text(encoding="utf-8").splitlines()
    m = SETUP.search("\n".join(lines[:3]))
    page = Page(path, m.group("setup") if m else None)
    i, mark, file = 0, "", ""
    while i < len(lines):
        line = lines[i]
        region = REGION.match(line)
        if region:
            start, body = i, []
            i += 1
            while i < len(lines) and not REGION_END.match(lines[i]):
                body.append(lines[i])
                i += 1
            page.blocks.append(Block(start + 1, "markdown", "\n".join(body) + "\n", "output", region.group("path")))
            i += 1
            continue
        marked = MARK.match(line)
        if marked:
            mark, file = ("file", marked.group("file")) if marked.group("file") else (marked.group(1), "")
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, start = len(fence.group("indent")), i
            body = []
            i += 1
            while i < len(lines) and not re.match(rf"^\s{{0,{indent + 3}}}```\s*$", lines[i]):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            page.blocks.append(Block(start + 1, fence.group("info").strip().split(" ")[0], "\n".join(body) + "\n",
                                     mark, file))
            mark, file = "", ""
        elif line.strip():
            mark, file = "", ""  # a marker names the block right after it, not one further down
        i += 1
    return page


# what changes from one run to the next, masked on both sides before an output is compared
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|min)\b"), "<duration>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hash>"),
    (re.compile(r"/tmp/\S+"), "<tmp>"),
    (re.compile(r"[━┏┓┗┛┃┡┩│└┘┌┐─┬┴┼╇╈┳┻╋├┤╭╮╰╯|]+"), " "),
]


def normal(line: str) -> str:
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def missing_lines(quoted: str, printed: str) -> list[str]:
    """The quoted output's lines that the printed output lacks, in order: each quoted line (volatile parts
    masked, spacing and table borders ignored; a line ending in ``...`` matches any line it starts) must come,
    in that order, among the printed lines. Quoting a part of an output is fine; changing it is not."""
    got = [normal(x) for x in printed.splitlines()]
    want = [normal(x) for x in quoted.splitlines()]
    at, missing = 0, []
    for w in want:
        if not w:
            continue
        prefix = w.endswith("...")
        stem = w.removesuffix("...").rstrip()
        for j in range(at, len(got)):
            if got[j] == w or (prefix and got[j].startswith(stem)):
                at = j + 1
                break
        else:
            missing.append(w)
    return missing
