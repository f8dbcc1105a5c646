"""Where an article's text came from: the spans of its source document it holds and the headings inside them.

A bot cites its own chunks of the same documents grace built the KB from: a URL with a heading's anchor, a page, a
quote. Which articles such a reference means depends on where their text lies in the document, not on their
titles: a short section folded into the article before it keeps its heading and its anchor there; a section cut
into parts is in all of them. So a build records, per article, the document spans its text holds (from the
sections the splitter says each article holds, :attr:`kb_builder.splitting.Draft.held`) and every heading whose
line it holds, with the anchors site generators make of it (:mod:`kb_builder.anchors`). Curation carries them: an
edited article keeps its place, a merged one holds both, a split one is cut where its text is cut, and a rebuild
replaying an edit takes them from the articles as built now, never from the edit's old copy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kb_builder.anchors import page_anchors
from kb_builder.documents import Document
from kb_builder.kb_records import Article, SourceHeading, Span

_HEADING_LINE = re.compile(r"^#{1,6}\s+(.*)$")
_WORD = re.compile(r"\w+")


def document_anchors(doc: Document) -> list[list[str]]:
    """Per section of ``doc`` (in order), the anchors of its heading (none for the text before any heading)."""
    headed = [k for k, s in enumerate(doc.sections) if s.level >= 1]
    found = page_anchors([(doc.sections[k].heading, doc.sections[k].anchor) for k in headed])
    out: list[list[str]] = [[] for _ in doc.sections]
    for k, anchors in zip(headed, found, strict=True):
        out[k] = anchors
    return out


def reach(doc: Document, k: int) -> int:
    """Where the text a link to section ``k``'s heading leads to ends: the next section, or, for a heading with no
    text of its own, the end of its sub-tree (the next heading of its level or above)."""
    s = doc.sections[k]
    if s.body.strip() or s.level < 1:
        return s.end or 0
    for later in doc.sections[k + 1:]:
        if later.level <= s.level:
            return later.start or 0
    return max((x.end or 0) for x in doc.sections)


def built(doc: Document, held: Sequence[tuple[int, float, float]], anchors: list[list[str]]
          ) -> tuple[list[Span] | None, list[SourceHeading] | None]:
    """The spans and headings of an article holding ``held`` (section, from, to) of ``doc``; (None, None) when
    the loader knows no positions."""
    if not held or any(doc.sections[k].start is None or doc.sections[k].end is None for k, _, _ in held):
        return None, None
    spans: list[tuple[int, int]] = []
    heads: list[SourceHeading] = []
    for k, f0, f1 in held:
        s = doc.sections[k]
        size = s.end - s.start
        a = s.start + round(f0 * size)
        b = s.end if f1 >= 1.0 else s.start + round(f1 * size)
        spans.append((a, b))
        if f0 == 0.0 and s.level >= 1 and s.heading:
            heads.append(SourceHeading(text=s.heading, level=s.level, start=s.start, end=max(reach(doc, k), s.start),
                                       anchors=anchors[k]))
    return [Span(start=a, end=b) for a, b in _joined(spans)], sorted(heads, key=lambda h: h.start)


def _joined(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def _sourced(article: Article, source: str | None) -> tuple[list[Span], list[SourceHeading]]:
    """The article's spans and headings, each naming its document when it is not ``source``."""
    def whose(x: str | None) -> str | None:
        doc = x or article.source
        return doc if doc != source else None

    spans = [sp.model_copy(update={"source": whose(sp.source)}) for sp in article.spans or []]
    heads = [h.model_copy(update={"source": whose(h.source)}) for h in article.headings or []]
    return spans, heads


def merged(articles: Sequence[Article], source: str | None) -> tuple[list[Span] | None, list[SourceHeading] | None]:
    """What an article made of ``articles`` holds (its document ``source``): all their spans and headings."""
    if all(a.spans is None for a in articles):
        return None, None
    spans: list[Span] = []
    heads: list[SourceHeading] = []
    for a in articles:
        s, h = _sourced(a, source)
        spans += s
        heads += h
    by_doc: dict[str | None, list[tuple[int, int]]] = {}
    for sp in spans:
        by_doc.setdefault(sp.source, []).append((sp.start, sp.end))
    joined = [Span(start=a, end=b, source=doc) for doc in sorted(by_doc, key=lambda d: (d is not None, d or ""))
              for a, b in _joined(by_doc[doc])]
    unique = {(h.source, h.start): h for h in heads}
    return joined, sorted(unique.values(), key=lambda h: (h.source is not None, h.source or "", h.start))


def cut(article: Article, first_text: str, second_text: str
        ) -> tuple[tuple[list[Span] | None, list[SourceHeading] | None], tuple[list[Span] | None, list[SourceHeading] | None]]:
    """An article split in two (``first_text``, ``second_text``): the spans and headings of each part. The cut is
    at the heading the second part starts with when it starts with one the article holds; else where the second
    part's share of the text puts it."""
    if article.spans is None:
        return (None, None), (None, None)
    own = [sp for sp in article.spans if sp.source in (None, article.source)]
    total = sum(sp.end - sp.start for sp in own)
    at = None
    first_line = second_text.lstrip().split("\n", 1)[0]
    m = _HEADING_LINE.match(first_line)
    if m:
        said = _WORD.findall(m.group(1).casefold())
        at = next((h.start for h in article.headings or [] if h.source in (None, article.source)
                   and _WORD.findall(h.text.casefold()) == said), None)
    if at is None:
        share = len(first_text) / max(len(first_text) + len(second_text), 1)
        left = round(share * total)
        for sp in own:
            if left <= sp.end - sp.start:
                at = sp.start + left
                break
            left -= sp.end - sp.start
        else:
            at = own[-1].end if own else 0
    def side(first: bool) -> tuple[list[Span], list[SourceHeading]]:
        spans: list[Span] = []
        for sp in article.spans:
            if sp.source not in (None, article.source):
                if not first:
                    spans.append(sp)  # another document's text, merged in: it stays at the end, with the second part
                continue
            a, b = (sp.start, min(sp.end, at)) if first else (max(sp.start, at), sp.end)
            if b > a:
                spans.append(Span(start=a, end=b))
        heads = [h for h in article.headings or []
                 if (h.source in (None, article.source) and (h.start < at) == first)
                 or (h.source not in (None, article.source) and not first)]
        return spans, heads
    return side(True), side(False)


def carry(action: str, before: Sequence[Article], after: Sequence[Article]) -> None:
    """Give ``after`` (an edit's articles) the spans and headings of ``before`` (the articles it replaced, as they
    are now), in place: an edited article keeps them, a merge holds both, a split cuts them where its text is cut."""
    if action in ("title", "text"):
        after[0].spans = [sp.model_copy() for sp in before[0].spans] if before[0].spans is not None else None
        after[0].headings = [h.model_copy() for h in before[0].headings] if before[0].headings is not None else None
    elif action == "merge":
        after[0].spans, after[0].headings = merged(before, after[0].source)
    elif action == "split":
        first, second = cut(before[0], after[0].text, after[1].text)
        (after[0].spans, after[0].headings), (after[1].spans, after[1].headings) = first, second


def uncarry(action: str, after: Sequence[Article], before: Sequence[Article]) -> None:
    """An edit taken back: ``before`` (its recorded articles) get the spans and headings ``after`` hold now where
    they follow from them (an edited article's, a split's parts joined); a merge's recorded ones stay."""
    if action in ("title", "text"):
        carry("text", after, before)
    elif action == "split":
        before[0].spans, before[0].headings = merged(after, before[0].source)
