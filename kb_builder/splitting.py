"""Sections -> self-contained articles: one topic each, within a token budget.

The outline decides. A subtree that fits the budget and holds at most one
substantial sub-topic stays one article (its small sub-sections are details of
one topic). A subtree with two or more substantial sub-topics is split into them;
the parent's own text and its small sub-sections stay together as the parent's
article. Anything still over budget is cut at paragraph, then sentence, bounds.
Navigation-only and tiny stubs are dropped: an article must be able to answer a
question on its own.

Splitting is linear in the size of a document: a subtree's size is asked for at
every level above it, so token counts are summed from per-line counts (each
distinct line is tokenised once per document), and nodes are told apart by
identity, never by comparing their contents.

Each article also says which of the document's sections it holds (``Draft.held``): an article that knows where
its text came from maps a link to a heading folded into it, or to a section cut into parts. Nodes carry the
sections whose text their body holds, and each place text moves (a short heading's text joined to the topic after
it, a subtree rendered into one article, an article cut at blocks) moves them with it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from kb_builder.documents import Document
from kb_builder.tokens import count_tokens, tokenizer_name

DEFAULT_MAX_TOKENS = 800
DEFAULT_MIN_TOKENS = 80
STUB_TOKENS = 40
PARALLEL_CHARS = 4_000_000  # a document this large has its lines counted on two cores

# headings that name a page's navigation rather than a topic, in the languages grace's lint reads (lint_phrases):
# the section under one is dropped when it is only links, and lint flags one left in an article's text
NAVIGATION_HEADINGS: dict[str, str] = {
    "en": r"see also|related(?: pages| links| articles| topics| documents| content| reading)?|further reading"
          r"|(?:useful|external|quick) links|(?:table of )?contents|on this page|navigation|in this (?:section|page)"
          r"|more information|read more",
    "fr": r"voir aussi|(?:pages|articles|liens|sujets) (?:associ[ée]s|connexes|li[ée]s)|liens (?:utiles|externes)"
          r"|(?:pour )?en savoir plus|lectures? compl[ée]mentaires?|sommaire|table des mati[èe]res"
          r"|(?:sur|dans) cette (?:page|section)",
    "de": r"siehe auch|verwandte (?:seiten|themen|artikel|links)|weiterf[üu]hrende (?:links|informationen|literatur)"
          r"|weitere informationen|n[üu]tzliche links|externe links|inhaltsverzeichnis|inhalt"
          r"|auf dieser seite|in diesem abschnitt",
    "es": r"v[ée]ase tambi[ée]n|ver tambi[ée]n|(?:p[áa]ginas|art[íi]culos|enlaces|temas) relacionad[oa]s"
          r"|enlaces (?:[úu]tiles|externos)|m[áa]s informaci[óo]n|lecturas? (?:recomendadas?|adicionale?s?)"
          r"|contenidos?|[íi]ndice|en esta p[áa]gina",
    "pt": r"ver tamb[ée]m|veja tamb[ée]m|(?:p[áa]ginas|artigos|links|t[óo]picos) relacionad[oa]s"
          r"|(?:links|liga[çc][õo]es) (?:[úu]teis|externos|externas)|mais informa[çc][õo]es|saiba mais"
          r"|leituras? (?:adicionais|adicional|recomendadas?)|[íi]ndice|conte[úu]dos?|nesta p[áa]gina",
    "it": r"vedi anche|vedere anche|(?:pagine|articoli|voci) correlat[ei]|(?:link|collegamenti) (?:utili|esterni|correlati)"
          r"|per saperne di pi[ùu]|ulteriori informazioni|letture consigliate|indice|sommario|in questa pagina",
    "nl": r"zie ook|gerelateerde (?:pagina'?s|artikelen|links|onderwerpen)|(?:nuttige|externe) links"
          r"|meer informatie|verder lezen|inhoudsopgave|inhoud|op deze pagina",
    "el": r"δείτε επίσης|βλέπε επίσης|σχετικ(?:ές σελίδες|ά άρθρα|οί σύνδεσμοι|ά θέματα)"
          r"|(?:χρήσιμοι|εξωτερικοί) σύνδεσμοι|περισσότερες πληροφορίες|περιεχόμενα|σε αυτή(?:ν)? τη(?:ν)? σελίδα",
}
_NAV_HEADINGS = re.compile(r"^(?:" + "|".join(NAVIGATION_HEADINGS.values()) + r")\s*:?$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
# Counting a text line by line gives its exact count when the tokenizer never lets a
# piece run across a line start. In cl100k no pre-tokeniser piece holds a newline
# followed by anything but whitespace, and its lookaheads and ``$`` only act at the
# end of a whitespace run, so a text's count is the sum of its lines' (each with the
# newlines after it). grace's offline approximation goes further: a whitespace run
# is a piece of its own, one token if it holds a newline, so a line counts the same
# whatever follows it, and a paragraph alone and inside its section share a count.
# Other encodings (o200k joins "/" to the newline before it) count texts whole.
_LINE_ADDITIVE = {"tiktoken:cl100k_base"}
_RUN_SEPARATE = {"approx-cl100k"}
_LINE_START = re.compile(r"(?<=\n)(?=\S)")
_BLANK_LINE = re.compile(r"\n\s*\n")


@dataclass
class Node:
    level: int
    heading: str
    body: str
    children: list[Node] = field(default_factory=list)
    tokens: int | None = None  # memoised size of the rendered subtree
    sums: dict[int, tuple[int, int] | None] = field(default_factory=dict)  # see Splitter._sum
    body_tokens: int | None = None
    in_text: str = ""  # the heading in a parent article's text, if not ``heading`` (see Section.heading_in_text)
    nav: bool = False  # a navigation heading whose link list was dropped: it goes too unless it heads sub-sections
    # (offset in body, index of the document's section) of each section whose text the body holds, in order;
    # a heading with no text of its own is held at the offset of the text that follows it
    held: list[tuple[int, int]] = field(default_factory=list)

    @property
    def shown(self) -> str:
        return self.in_text or self.heading


@dataclass
class Draft:
    """An article before it has an ID: ``key`` is what its ID is tied to."""

    path: list[str]
    text: str
    part: int = 0
    parts: int = 1
    tokens: int | None = None  # of title and text as the article stores them, counted from the lines already counted
    # (index of the document's section, from, to) of each section it holds: the share of the section's text, as
    # fractions (0.0, 1.0: all of it; a cut between parts of an article falls inside one section)
    held: list[tuple[int, float, float]] = field(default_factory=list)

    @property
    def title(self) -> str:
        base = " > ".join(self.path)
        return f"{base} (part {self.part + 1} of {self.parts})" if self.parts > 1 else base


def outline(doc: Document) -> Node:
    root = Node(0, doc.title, "")
    stack = [root]
    for k, s in enumerate(doc.sections):
        if s.level == 0:
            root.body = (root.body + "\n\n" + s.body).strip()
            root.held.append((len(root.body) - len(s.body.strip()), k))
            continue
        node = Node(s.level, s.heading, s.body, in_text=s.heading_in_text, held=[(0, k)])
        if names_navigation(s.heading) and is_navigation(s.heading, s.body):
            # the link list goes; the heading stays while the outline is built, so the sections under it keep
            # their place, and goes too when it heads nothing (never a heading over another topic's text)
            node = Node(s.level, s.heading, "", in_text=s.heading_in_text, nav=True, held=[(0, k)])
        while len(stack) > 1 and stack[-1].level >= s.level:
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
    _drop_empty_navigation(root)
    # a page whose one top heading is its title: that heading is the root
    while len(root.children) == 1 and (root.children[0].level == 1 or root.children[0].heading.lower() == root.heading.lower()):
        only = root.children[0]
        body = "\n\n".join(b for b in (root.body, only.body) if b)
        root = Node(0, doc.title, body, only.children, held=root.held + _shifted(only.held, len(body) - len(only.body)))
    return root


def _shifted(held: list[tuple[int, int]], by: int, limit: int | None = None) -> list[tuple[int, int]]:
    return [(min(at + by, limit) if limit is not None else at + by, k) for at, k in held]


def _drop_empty_navigation(root: Node) -> None:
    """Remove the navigation headings left with nothing under them (their links already dropped)."""
    stack = [root]
    order: list[Node] = []
    while stack:  # children before parents, so a heading over empty navigation headings goes too
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        if any(c.nav for c in node.children):
            node.children = [c for c in node.children if not (c.nav and not c.children and not c.body)]


def names_navigation(heading: str) -> bool:
    """The heading names a page's navigation ("See also", "Related pages", "Voir aussi"...), not a topic."""
    return bool(_NAV_HEADINGS.match(heading.strip().strip("#*_ ").strip()))


def _render(node: Node, depth: int = 0) -> str:
    parts = [node.body] if node.body else []
    for c in node.children:
        sub = _render(c, depth + 1)
        head = "#" * min(depth + 2, 6) + " " + c.shown if c.heading else ""
        parts.append("\n\n".join(x for x in (head, sub) if x))
    return "\n\n".join(p for p in parts if p)


def _render_held(node: Node, depth: int = 0) -> tuple[str, list[tuple[int, int]]]:
    """:func:`_render`'s text, and where in it each section the subtree holds begins (a child's at its heading)."""
    parts: list[str] = []
    held: list[tuple[int, int]] = []
    at = 0
    if node.body:
        parts.append(node.body)
        held.extend(_shifted(node.held, 0, len(node.body)))
        at = len(node.body) + 2
    else:
        held.extend((0, k) for _, k in node.held)
    for c in node.children:
        sub, sub_held = _render_held(c, depth + 1)
        head = "#" * min(depth + 2, 6) + " " + c.shown if c.heading else ""
        part = "\n\n".join(x for x in (head, sub) if x)
        if not part:
            continue
        into = len(head) + 2 if head and sub else 0
        held.extend((at, k) for _, k in sub_held[:1])  # the child's own section starts at its heading
        held.extend(_shifted(sub_held[1:], at + into))
        parts.append(part)
        at += len(part) + 2
    return "\n\n".join(parts), held


def is_navigation(heading: str, text: str) -> bool:
    """Link lists and tables of contents: words a reader skips, never an answer."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return True
    short_items = all(_LIST_ITEM.match(ln) and len(ln.split()) <= 8 and not ln.rstrip().endswith((".", ":")) for ln in lines)
    if names_navigation(heading) and short_items:
        return True
    return short_items and count_tokens(text) < DEFAULT_MIN_TOKENS


class _Counter:
    """Exact token counts of texts that share lines, each distinct line tokenised once.

    The same lines are counted again and again: in a subtree at every level above
    it, then in the article cut from it and in its blocks. Counting whole texts
    made splitting one large file take minutes.
    """

    def __init__(self) -> None:
        self.tokenizer = tokenizer_name()
        self.mode = "runs" if self.tokenizer in _RUN_SEPARATE else "lines" if self.tokenizer in _LINE_ADDITIVE else None
        self.known: dict[str, int] = {}
        self._raw = getattr(count_tokens, "__wrapped__", count_tokens)  # its LRU would keep every line too

    def _parts(self, text: str) -> tuple[list[str], int]:
        return _parts(text, self.mode)

    def __call__(self, text: str) -> int:
        if self.mode is None:
            return count_tokens(text)
        known = self.known
        n = known.get(text)
        if n is not None:
            return n
        parts, total = self._parts(text)
        for part in parts:
            n = known.get(part)
            if n is None:
                n = known[part] = self._raw(part)
            total += n
        return total

    def prefill(self, texts: list[str]) -> None:
        """Count the lines of a large document up front, the second half of them in a second process.

        Tokenising is most of the time a large file takes, lines are independent,
        and the machine has more than one core.
        """
        if self.mode is None or (os.cpu_count() or 1) < 2:
            return
        half, size, total = 0, 0, sum(map(len, texts))
        while half < len(texts) and size < total / 2:
            size += len(texts[half])
            half += 1
        from kb_builder.documents.offload import Offloaded

        try:
            future: Offloaded | None = Offloaded(_count_parts, texts[half:], self.mode, self.tokenizer)
        except OSError:  # no second process here: the rest is counted when asked for
            future = None
        known = self.known
        try:
            for text in texts[:half]:
                for part in _parts(text, self.mode)[0]:
                    if part and part not in known:
                        known[part] = self._raw(part)
            if future is None:
                return
            theirs = _distinct_parts(texts[half:], self.mode)  # what the child counted, in its order
            tokenizer, counts = future.result()
        except OSError:  # the child failed: the rest is counted when asked for
            return
        finally:
            if future is not None:
                future.cancel()
        if tokenizer == self.tokenizer and len(counts) == len(theirs):  # else the child used another encoding
            known.update(zip(theirs, counts, strict=True))


def _parts(text: str, mode: str | None) -> tuple[list[str], int]:
    """The independently counted parts of ``text``, and the tokens between them (see _LINE_ADDITIVE)."""
    if mode == "runs":
        # the parts between whitespace runs that hold a newline (str.strip and the tokenizer's \s agree)
        lines = text.split("\n")
        if len(lines) == 1:
            return lines, 0
        first, last = lines[0].rstrip(), lines[-1].lstrip()
        parts = [p for p in (first, *(line.strip() for line in lines[1:-1]), last) if p]
        return parts, (len(parts) - 1 + (not first) + (not last) if parts else 1)
    if mode == "lines":
        return _LINE_START.split(text), 0
    return [text], 0


def _distinct_parts(texts: list[str], mode: str | None) -> list[str]:
    return list(dict.fromkeys(p for t in texts for p in _parts(t, mode)[0] if p))


def _count_parts(texts: list[str], mode: str | None, tokenizer: str) -> tuple[str, list[int]]:
    """In a child process: counts of ``texts``' distinct parts with the parent's tokenizer, and its name to check."""
    if tokenizer.startswith("tiktoken:"):
        os.environ["GRACE_TOKENIZER"] = "tiktoken"  # the parent has the file (cached, or downloaded as asked)
        os.environ["GRACE_TIKTOKEN_ENCODING"] = tokenizer.split(":", 1)[1]
    else:
        os.environ["GRACE_TOKENIZER"] = "approx"  # never retry a download the parent already gave up on
    from kb_builder.tokens import count_tokens, tokenizer_name

    raw = getattr(count_tokens, "__wrapped__", count_tokens)
    return tokenizer_name(), [raw(part) for part in _distinct_parts(texts, mode)]


def _likely_texts(doc: Document) -> list[str]:
    """Texts whose lines the splitter will count: each body as rendered (followed by more), and its blocks."""
    texts: list[str] = []
    for s in doc.sections:
        if s.body:
            texts.append(s.body + "\n\n")
            texts.extend(b.strip() for b in _BLANK_LINE.split(s.body))  # their last lines end differently
    return texts


class Splitter:
    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS, min_tokens: int = DEFAULT_MIN_TOKENS,
                 keep_short: bool = False):
        if max_tokens < 50:
            from harness.core.errors import GraceError

            raise GraceError(f"--max-tokens {max_tokens} is too small to hold an article; use 200 or more")
        self.max, self.min = max_tokens, min(min_tokens, max_tokens // 2)
        # a short section among others is a fragment and is dropped; a KB whose every document is that short
        # (one FAQ answer, a first article) keeps it: the build asks again with keep_short
        self.keep_short = keep_short
        self._count = _Counter()
        self._held: list[tuple[int, int]] = []  # the sections of the text being emitted (see _emit_node)
        self._held_end = 0

    def _tokens(self, node: Node) -> int:
        # memoised on the node itself: an id()-keyed cache would outlive freed nodes and hand their counts on
        if node.tokens is None:
            sums = self._sum(node, 0) if self._count.mode == "runs" else None
            node.tokens = sums[0] + max(sums[1] - 1, 0) if sums else self._count(_render(node))
        return node.tokens

    def _sum(self, node: Node, depth: int) -> tuple[int, int] | None:
        """(tokens, number) of the stripped texts ``_render(node, depth)`` joins with blank lines.

        When every text is stripped, each blank line between two is one token of its
        own (see _RUN_SEPARATE), so a subtree's count is its parts' counts plus the
        joins, without rendering it again at every level above. None: some text has
        space at an end, render and count.
        """
        key = min(depth, 4)  # deeper, every heading is "######": the sums are the same
        if key in node.sums:
            return node.sums[key]
        total, n, result = 0, 0, None
        body = node.body
        if not body or not (body[0].isspace() or body[-1].isspace()):
            if body:
                if node.body_tokens is None:
                    node.body_tokens = self._count(body)
                total, n = node.body_tokens, 1
            for c in node.children:
                if c.heading:
                    if c.shown[-1].isspace():
                        break
                    total, n = total + self._count("#" * min(depth + 2, 6) + " " + c.shown), n + 1
                sub = self._sum(c, depth + 1)
                if sub is None:
                    break
                total, n = total + sub[0], n + sub[1]
            else:
                result = (total, n)
        node.sums[key] = result
        return result

    def split(self, doc: Document) -> list[Draft]:
        drafts: list[Draft] = []
        try:
            if sum(len(s.body) for s in doc.sections) >= PARALLEL_CHARS:
                # by runs, a line counts the same wherever it ends up: the bodies are all there is to count
                texts = [s.body for s in doc.sections] if self._count.mode == "runs" else _likely_texts(doc)
                self._count.prefill(texts)
            self._plan(outline(doc), [doc.title], drafts)
            kept = [d for d in drafts if not self._is_stub(d)]
            for d in kept:  # here, while the lines are counted: re-tokenising every article cost 7 s of 25 on 50 MB
                d.tokens = self._count(d.title + "\n" + d.text)
            return kept
        finally:
            self._count = _Counter()  # lines are shared within a document, rarely across: free them

    def _is_stub(self, d: Draft) -> bool:
        if self.keep_short:
            return not d.text.strip() or is_navigation(d.path[-1], d.text)
        return self._count(d.text) < STUB_TOKENS or is_navigation(d.path[-1], d.text)

    def _budget(self, path: list[str]) -> int:
        # the title (breadcrumb, maybe "part i of n") counts against the article's budget
        return max(self.max - count_tokens(" > ".join(path)) - 10, self.max // 2)

    def _plan(self, node: Node, path: list[str], out: list[Draft]) -> None:
        if not node.body and len(node.children) == 1:
            # a heading with nothing of its own but one sub-topic: the article is that sub-topic
            only = node.children[0]
            only.held = [(0, k) for _, k in node.held] + only.held
            self._plan(only, path if only.heading.lower() == path[-1].lower() else [*path, only.heading], out)
            return
        total = self._tokens(node)
        budget = self._budget(path)
        big = [c for c in node.children if self._tokens(c) >= self.min]
        if not node.children or (total <= budget and len(big) <= 1):
            self._emit_node(path, node, out)
            return
        if len(big) <= 1 and total > budget and not any(c.children for c in node.children):
            # one long topic with small parts: keep it together, cut by blocks
            self._emit_node(path, node, out)
            return
        big_ids = {id(c) for c in big}  # identity: `c not in big` compared whole subtrees, quadratic in children
        rest = Node(node.level, node.heading, node.body, [c for c in node.children if id(c) not in big_ids],
                    in_text=node.in_text, held=node.held)
        lead = ""
        lead_held: list[tuple[int, int]] = []
        tails: dict[int, list[Node]] = {}  # id of a sub-topic -> the short sections that follow it
        emitted = False
        if rest.body or rest.children:
            text = _render(rest)
            if self._count(text) >= STUB_TOKENS or is_navigation(path[-1], text):
                self._emit_node(path, rest, out)
                emitted = True
            else:
                # too short for an article of its own, so kept in document order: a short intro is context for
                # the first sub-topic, and a short section after a sub-topic closes that one (never moved ahead)
                first = next((i for i, c in enumerate(node.children) if id(c) in big_ids), len(node.children))
                lead, lead_held = _render_held(Node(node.level, node.heading, node.body, node.children[:first],
                                                    in_text=node.in_text, held=node.held))
                owner = None
                for c in node.children[first:]:
                    if id(c) in big_ids:
                        owner = c
                    elif owner is not None:
                        tails.setdefault(id(owner), []).append(c)
        if not lead and not emitted:  # a heading with no text of its own: held with the first sub-topic after it
            lead_held = [(0, k) for _, k in node.held]
        for c in big:
            after = tails.get(id(c), [])
            if lead or after or lead_held:
                body = (lead + "\n\n" + c.body).strip() if lead else c.body
                held = lead_held + _shifted(c.held, len(body) - len(c.body.strip()) if c.body.strip() else len(body),
                                            len(body))
                c = Node(c.level, c.heading, body, [*c.children, *after], in_text=c.in_text, held=held)
                lead, lead_held = "", []
            child_path = path if c.heading.lower() == path[-1].lower() else [*path, c.heading]
            self._plan(c, child_path, out)

    def _emit_node(self, path: list[str], node: Node, out: list[Draft]) -> None:
        """Emit the subtree's text as one article (or its parts), with the sections it holds."""
        text, self._held = _render_held(node)
        self._held_end = len(text.rstrip())
        self._emit(path, text, out)

    def _emit(self, path: list[str], text: str, out: list[Draft], at: int | None = None) -> None:
        """``text``: the text :meth:`_emit_node` rendered, or (``at``) the part of it that starts there."""
        stripped = text.strip()
        if not stripped:
            return
        base = len(text) - len(text.lstrip()) if at is None else at
        budget = self._budget(path)
        chunks, starts = self._pack(stripped, budget) if self._count(stripped) > budget else ([stripped], [0])
        ends = [*starts[1:], len(stripped)]
        for i, chunk in enumerate(chunks):
            held = self._held_between(base + starts[i], base + ends[i])
            out.append(Draft(path=list(path), text=chunk, part=i, parts=len(chunks), held=held))

    def _held_between(self, start: int, end: int) -> list[tuple[int, float, float]]:
        """The sections (and the share of each) that characters ``start``..``end`` of the rendered text hold."""
        held, total = self._held, self._held_end
        out: list[tuple[int, float, float]] = []
        for j, (a, k) in enumerate(held):
            b = min(held[j + 1][0], total) if j + 1 < len(held) else total
            if b <= a:  # a heading with no text of its own: in the part where it stands
                if start <= a < end or (end >= total and a >= total):
                    out.append((k, 0.0, 1.0))
                continue
            lo, hi = max(a, start), min(b, end)
            if lo < hi:
                f0 = 0.0 if lo <= a else (lo - a) / (b - a)
                f1 = 1.0 if hi >= b else (hi - a) / (b - a)
                out.append((k, round(f0, 4), round(f1, 4)))
        return out

    def _pack(self, text: str, budget: int) -> tuple[list[str], list[int]]:
        """Greedy packing of blocks (a heading stays with the block after it) under the budget; the chunks, and
        where each starts in ``text``."""
        blocks: list[tuple[int, str]] = []
        for at, b in placed_blocks(text):
            if blocks and re.fullmatch(r"#{1,6} .+", blocks[-1][1]):
                blocks[-1] = (blocks[-1][0], blocks[-1][1] + "\n\n" + b)
            else:
                blocks.append((at, b))
        pieces: list[tuple[int, str]] = []
        for at, b in blocks:
            if self._count(b) > budget:
                pieces.extend(_placed(self._cut(b, budget), b, at))
            else:
                pieces.append((at, b))
        chunks: list[str] = []
        starts: list[int] = []
        cur: list[str] = []
        cur_tokens = 0
        for at, p in pieces:
            t = self._count(p) + 1
            if cur and cur_tokens + t > budget:
                chunks.append("\n\n".join(cur))
                cur, cur_tokens = [], 0
            if not cur:
                starts.append(at)
            cur.append(p)
            cur_tokens += t
        if cur:
            chunks.append("\n\n".join(cur))
        # a tiny last chunk reads better joined to the one before, if that still fits
        if len(chunks) > 1 and self._count(chunks[-1]) < self.min and self._count(chunks[-2] + "\n\n" + chunks[-1]) <= budget:
            chunks[-2:] = [chunks[-2] + "\n\n" + chunks[-1]]
            starts.pop()
        return chunks, starts

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


def placed_blocks(text: str) -> list[tuple[int, str]]:
    """The blocks of ``text`` (stripped, between blank lines) with where each starts."""
    out: list[tuple[int, str]] = []
    pos = 0
    for m in [*_BLANK_LINE.finditer(text), None]:
        seg = text[pos:m.start() if m else len(text)]
        if seg.strip():
            out.append((pos + len(seg) - len(seg.lstrip()), seg.strip()))
        if m:
            pos = m.end()
    return out


def _placed(pieces: list[str], block: str, at: int) -> list[tuple[int, str]]:
    """Each piece :meth:`Splitter._cut` made of ``block`` with where it starts in the text (``block`` starts at
    ``at``): a piece is the block's next words, re-joined by single spaces."""
    words = [m.start() for m in re.finditer(r"\S+", block)]
    out, n = [], 0
    for piece in pieces:
        out.append((at + words[min(n, len(words) - 1)] if words else at, piece))
        n += len(piece.split())
    return out
