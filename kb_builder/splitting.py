"""Sections -> self-contained articles: one topic each, within a token budget.

The outline decides. A subtree that fits the budget and holds at most one
substantial sub-topic stays one article (its small sub-sections are details of
one topic). A subtree with two or more substantial sub-topics is split into them;
the parent's own text and its small sub-sections stay together as the parent's
article. Anything still over budget is cut at paragraph, then sentence, bounds.
Navigation-only and tiny stubs are dropped: an article must be able to answer a
question on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_builder.documents import Document
from kb_builder.tokens import count_tokens

DEFAULT_MAX_TOKENS = 800
DEFAULT_MIN_TOKENS = 80
STUB_TOKENS = 40

_NAV_HEADINGS = re.compile(r"^(see also|related( pages| links| articles)?|contents|table of contents|on this page|navigation|quick links|in this (section|page))$", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass
class Node:
    level: int
    heading: str
    body: str
    children: list[Node] = field(default_factory=list)
    tokens: int | None = None  # memoised size of the rendered subtree


@dataclass
class Draft:
    """An article before it has an ID: ``key`` is what its ID is tied to."""

    path: list[str]
    text: str
    part: int = 0
    parts: int = 1

    @property
    def title(self) -> str:
        base = " > ".join(self.path)
        return f"{base} (part {self.part + 1} of {self.parts})" if self.parts > 1 else base


def outline(doc: Document) -> Node:
    root = Node(0, doc.title, "")
    stack = [root]
    for s in doc.sections:
        if s.level == 0:
            root.body = (root.body + "\n\n" + s.body).strip()
            continue
        node = Node(s.level, s.heading, s.body)
        if _NAV_HEADINGS.match(s.heading.strip()) and is_navigation(s.heading, s.body):
            node = Node(s.level, s.heading, "")  # keeps the outline's shape, drops the link list
        while len(stack) > 1 and stack[-1].level >= s.level:
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
    # a page whose one top heading is its title: that heading is the root
    while len(root.children) == 1 and (root.children[0].level == 1 or root.children[0].heading.lower() == root.heading.lower()):
        only = root.children[0]
        body = "\n\n".join(b for b in (root.body, only.body) if b)
        root = Node(0, doc.title, body, only.children)
    return root


def _render(node: Node, depth: int = 0) -> str:
    parts = [node.body] if node.body else []
    for c in node.children:
        sub = _render(c, depth + 1)
        head = "#" * min(depth + 2, 6) + " " + c.heading if c.heading else ""
        parts.append("\n\n".join(x for x in (head, sub) if x))
    return "\n\n".join(p for p in parts if p)


def is_navigation(heading: str, text: str) -> bool:
    """Link lists and tables of contents: words a reader skips, never an answer."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return True
    short_items = all(_LIST_ITEM.match(ln) and len(ln.split()) <= 8 and not ln.rstrip().endswith((".", ":")) for ln in lines)
    if _NAV_HEADINGS.match(heading.strip()) and short_items:
        return True
    return short_items and count_tokens(text) < DEFAULT_MIN_TOKENS


class Splitter:
    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS, min_tokens: int = DEFAULT_MIN_TOKENS):
        if max_tokens < 50:
            from harness.core.errors import GraceError

            raise GraceError(f"--max-tokens {max_tokens} is too small to hold an article; use 200 or more")
        self.max, self.min = max_tokens, min(min_tokens, max_tokens // 2)

    @staticmethod
    def _tokens(node: Node) -> int:
        # memoised on the node itself: an id()-keyed cache would outlive freed nodes and hand their counts on
        if node.tokens is None:
            node.tokens = count_tokens(_render(node))
        return node.tokens

    def split(self, doc: Document) -> list[Draft]:
        drafts: list[Draft] = []
        self._plan(outline(doc), [doc.title], drafts)
        return [d for d in drafts if not self._is_stub(d)]

    def _is_stub(self, d: Draft) -> bool:
        return count_tokens(d.text) < STUB_TOKENS or is_navigation(d.path[-1], d.text)

    def _budget(self, path: list[str]) -> int:
        # the title (breadcrumb, maybe "part i of n") counts against the article's budget
        return max(self.max - count_tokens(" > ".join(path)) - 10, self.max // 2)

    def _plan(self, node: Node, path: list[str], out: list[Draft]) -> None:
        if not node.body and len(node.children) == 1:
            # a heading with nothing of its own but one sub-topic: the article is that sub-topic
            only = node.children[0]
            self._plan(only, path if only.heading.lower() == path[-1].lower() else [*path, only.heading], out)
            return
        total = self._tokens(node)
        budget = self._budget(path)
        big = [c for c in node.children if self._tokens(c) >= self.min]
        if not node.children or (total <= budget and len(big) <= 1):
            self._emit(path, _render(node), out)
            return
        if len(big) <= 1 and total > budget and not any(c.children for c in node.children):
            # one long topic with small parts: keep it together, cut by blocks
            self._emit(path, _render(node), out)
            return
        rest = Node(node.level, node.heading, node.body, [c for c in node.children if c not in big])
        lead = ""
        if rest.body or rest.children:
            text = _render(rest)
            if count_tokens(text) >= STUB_TOKENS or is_navigation(path[-1], text):
                self._emit(path, text, out)
            else:
                lead = text  # a short intro is context for the first sub-topic, not an article of its own
        for c in big:
            if lead:
                c = Node(c.level, c.heading, (lead + "\n\n" + c.body).strip(), c.children)
                lead = ""
            child_path = path if c.heading.lower() == path[-1].lower() else [*path, c.heading]
            self._plan(c, child_path, out)

    def _emit(self, path: list[str], text: str, out: list[Draft]) -> None:
        text = text.strip()
        if not text:
            return
        budget = self._budget(path)
        chunks = self._pack(text, budget) if count_tokens(text) > budget else [text]
        for i, chunk in enumerate(chunks):
            out.append(Draft(path=list(path), text=chunk, part=i, parts=len(chunks)))

    def _pack(self, text: str, budget: int) -> list[str]:
        """Greedy packing of blocks (a heading stays with the block after it) under the budget."""
        raw = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
        blocks: list[str] = []
        for b in raw:
            if blocks and re.fullmatch(r"#{1,6} .+", blocks[-1]):
                blocks[-1] += "\n\n" + b
            else:
                blocks.append(b)
        pieces: list[str] = []
        for b in blocks:
            pieces.extend(self._cut(b, budget) if count_tokens(b) > budget else [b])
        chunks: list[str] = []
        cur: list[str] = []
        cur_tokens = 0
        for p in pieces:
            t = count_tokens(p) + 1
            if cur and cur_tokens + t > budget:
                chunks.append("\n\n".join(cur))
                cur, cur_tokens = [], 0
            cur.append(p)
            cur_tokens += t
        if cur:
            chunks.append("\n\n".join(cur))
        # a tiny last chunk reads better joined to the one before, if that still fits
        if len(chunks) > 1 and count_tokens(chunks[-1]) < self.min and count_tokens(chunks[-2] + "\n\n" + chunks[-1]) <= budget:
            chunks[-2:] = [chunks[-2] + "\n\n" + chunks[-1]]
        return chunks

    def _cut(self, block: str, budget: int) -> list[str]:
        """A block over budget: cut at sentences, and a sentence over budget at words."""
        out: list[str] = []
        cur = ""
        units = _SENTENCE.split(block) if len(_SENTENCE.split(block)) > 1 else block.split("\n")
        for s in units:
            if count_tokens(s) > budget:
                words = s.split()
                step = max(1, int(len(words) * budget / count_tokens(s) * 0.9))
                for i in range(0, len(words), step):
                    if cur:
                        out.append(cur)
                        cur = ""
                    out.append(" ".join(words[i : i + step]))
                continue
            cand = f"{cur} {s}".strip() if cur else s
            if count_tokens(cand) > budget:
                out.append(cur)
                cur = s
            else:
                cur = cand
        if cur:
            out.append(cur)
        return out
