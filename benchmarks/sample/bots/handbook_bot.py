"""An HR help-desk bot over a Markdown handbook that cites its own chunks: the bot of issue 46, rebuilt offline.

It knows nothing of grace. Its own chunker makes one chunk per section at ``##`` to ``####`` (the text before the
first such heading is the page's own chunk), cut into pieces of at most 220 words; each chunk has an ID of the
bot's index (``tts-0017``) and a URL on the handbook's site, with the section's anchor made the way GitHub and
Docusaurus make them (``.../travel-and-leave/leave/#paid-parental-leave``); a page's own chunk has the page's URL.
It retrieves by its own BM25 and answers with 1 to 3 sentences copied from its best chunks, each citing its chunk
in one of five styles (one per question):

* ``url``: footnotes ``[1]`` and a ``Sources:`` list of the chunks' URLs, as markdown links;
* ``link``: an inline markdown link after each sentence;
* ``chunk``: footnotes and a list of the bot's own chunk IDs (a map file says what they are);
* ``quote``: footnotes and a list of 30-word quotes of the chunks;
* ``page``: footnotes and a list of the pages' URLs, without an anchor.

One question in four gets a wrong citation on purpose: its last citation is a chunk of another page.

Run it through grace as ``python:benchmarks/sample/bots/handbook_bot.py:answer``. The handbook is the TTS
handbook (``../shared/data/tts-handbook/pages`` beside the checkout) unless ``HANDBOOK_BOT_PAGES`` names another
folder of Markdown pages (``HANDBOOK_BOT_SITE``: its site, ``HANDBOOK_BOT_PREFIX``: its chunk IDs' prefix).
``python handbook_bot.py --write-map KB OUT.csv`` writes the map of its chunk IDs by asking grace which articles
each chunk's text is in (``grace.resolve_references``).
"""

from __future__ import annotations

import math
import os
import re
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGES = Path(os.environ.get("HANDBOOK_BOT_PAGES") or ROOT.parent / "shared" / "data" / "tts-handbook" / "pages")
SITE = os.environ.get("HANDBOOK_BOT_SITE") or "https://handbook.tts.gsa.gov/"
PREFIX = os.environ.get("HANDBOOK_BOT_PREFIX") or "tts"
LEVELS = (2, 4)  # the headings that start a chunk
CAP = 220  # words per chunk at most
QUOTE_WORDS = 30
STYLES = ("url", "link", "chunk", "quote", "page")

_FRONT = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*\n", re.S)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_EXPLICIT = re.compile(r"\{#([^}\s]+)\}")
# what the bot's display text leaves out: templates, comments, tags, explicit IDs, link targets, heading marks
_MARKUP = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|<!--.*?-->|<[^>\n]+>|\{#[^}]*\}|\]\([^)\s]*\)|^[ \t]*#{1,6}[ \t]+",
                     re.S | re.M)
_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are as at be by can do does for from how i if in is it its my of on or the to what when "
                  "where which who will with you your about".split())


def github_slug(text: str) -> str:
    """A heading as GitHub (github-slugger) and Docusaurus make its anchor: lower case, punctuation dropped,
    each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _heading_text(raw: str) -> str:
    raw = _EXPLICIT.sub("", raw)
    raw = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return " ".join(re.sub(r"<[^>]+>|[*`]", "", raw).split())


def page_url(page: str, site: str = SITE) -> str:
    path = page.rsplit(".", 1)[0]
    if path == "index" or path.endswith("/index"):
        path = path[: -len("index")]
    return site + (path.rstrip("/") + "/" if path else "")


@dataclass
class Heading:
    start: int  # offset of the heading line in the page
    level: int
    text: str
    anchor: str


@dataclass(eq=False)  # one chunk is one object: hashed by identity
class Chunk:
    id: str
    page: str  # the page's path under the handbook folder
    url: str  # the site URL with the section's anchor (the page's URL for the text before any section)
    page_url: str
    heading: str
    start: int  # the chunk's characters in the page file
    end: int
    text: str  # as the bot shows it: no markup, one space between words
    words: Counter = field(default_factory=Counter)


def read_page(path: Path) -> tuple[str, int]:
    """The page's text and where its body starts (after its front matter)."""
    raw = path.read_text(encoding="utf-8")
    m = _FRONT.match(raw)
    return raw, m.end() if m else 0


def headings(raw: str, body: int = 0) -> list[Heading]:
    """Every heading of a page outside code fences, with its anchor: an explicit ``{#id}``, else GitHub's slug,
    numbered ``-1``, ``-2`` when the page has it already."""
    out: list[Heading] = []
    seen: Counter = Counter()
    fenced = False
    at = body
    for line in raw[body:].split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            explicit = _EXPLICIT.search(m.group(2))
            text = _heading_text(m.group(2))
            anchor = explicit.group(1) if explicit else github_slug(text)
            base = anchor
            while seen[anchor]:
                anchor = f"{base}-{seen[base]}"
                seen[base] += 1
            seen[anchor] += 1
            out.append(Heading(at, len(m.group(1)), text, anchor))
        at += len(line) + 1
    return out


def led_to(raw: str, heads: list[Heading], i: int) -> tuple[int, int]:
    """Where the text a link to heading ``i`` leads to starts and ends: the heading up to the next one, or, with
    nothing but sub-headings under it, its whole sub-tree (up to the next heading of its level or above)."""
    h = heads[i]
    end = heads[i + 1].start if i + 1 < len(heads) else len(raw)
    line_end = raw.find("\n", h.start, end)
    if not kept_words(raw, line_end + 1 if line_end >= 0 else end, end):
        end = next((g.start for g in heads[i + 1:] if g.level <= h.level), len(raw))
    return h.start, end


def shown(raw: str) -> str:
    """Page text as the bot shows it."""
    return " ".join(_MARKUP.sub(" ", raw).replace("[", " ").replace("]", " ").replace("*", "").replace("`", "").split())


def kept_words(raw: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) in the page of each word of ``raw[start:end]`` the bot shows (not inside markup it drops)."""
    dropped = [(m.start(), m.end()) for m in _MARKUP.finditer(raw, start, end)]
    out, k = [], 0
    for m in _WORD.finditer(raw, start, end):
        while k < len(dropped) and dropped[k][1] <= m.start():
            k += 1
        if k < len(dropped) and dropped[k][0] <= m.start() < dropped[k][1]:
            continue
        out.append((m.start(), m.end()))
    return out


def sections(raw: str, body: int) -> list[tuple[Heading | None, int, int]]:
    """(heading, start, end) of each chunking section: the text before the first ``##``-``####`` heading (heading
    None), then each such heading to the next."""
    cuts = [h for h in headings(raw, body) if LEVELS[0] <= h.level <= LEVELS[1]]
    out: list[tuple[Heading | None, int, int]] = []
    first = cuts[0].start if cuts else len(raw)
    out.append((None, body, first))
    for i, h in enumerate(cuts):
        out.append((h, h.start, cuts[i + 1].start if i + 1 < len(cuts) else len(raw)))
    return out


def chunk_pages(folder: Path = PAGES, prefix: str = PREFIX, site: str = SITE) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path in sorted(folder.rglob("*.md")):
        page = path.relative_to(folder).as_posix()
        raw, body = read_page(path)
        title = next((h.text for h in headings(raw, body) if h.level == 1), page)
        for head, start, end in sections(raw, body):
            spans = kept_words(raw, start, end)
            if head is not None and len(kept_words(raw, raw.find("\n", start) + 1 or end, end)) < 5:
                continue  # a heading with next to nothing under it: no chunk of its own
            for i in range(0, len(spans), CAP):
                piece = spans[i:i + CAP]
                if len(piece) < 5:
                    continue
                a = start if i == 0 else piece[0][0]
                b = spans[i + CAP][0] if i + CAP < len(spans) else end
                url = page_url(page, site) + (f"#{head.anchor}" if head else "")
                text = shown(raw[a:b])
                chunks.append(Chunk(f"{prefix}-{len(chunks) + 1:04d}", page, url, page_url(page, site),
                                    head.text if head else title, a, b, text,
                                    Counter(w for w in _WORD.findall(text.casefold()) if w not in _STOP)))
    return chunks


class BM25:
    def __init__(self, chunks: list[Chunk], k1: float = 1.2, b: float = 0.75) -> None:
        self.chunks, self.k1, self.b = chunks, k1, b
        self.avg = sum(sum(c.words.values()) for c in chunks) / max(len(chunks), 1)
        df = Counter(w for c in chunks for w in c.words)
        self.idf = {w: math.log(1 + (len(chunks) - n + 0.5) / (n + 0.5)) for w, n in df.items()}

    def search(self, question: str, k: int = 3) -> list[Chunk]:
        asked = {w for w in _WORD.findall(question.casefold()) if w not in _STOP}
        scored = []
        for c in self.chunks:
            size = sum(c.words.values())
            s = sum(self.idf[w] * c.words[w] * (self.k1 + 1) / (c.words[w] + self.k1 * (1 - self.b + self.b * size / self.avg))
                    for w in asked if w in c.words)
            if s > 0:
                scored.append((s, c.id, c))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [c for _, _, c in scored[:k]]


_INDEX: tuple[list[Chunk], BM25] | None = None


def index() -> tuple[list[Chunk], BM25]:
    global _INDEX
    if _INDEX is None:
        chunks = chunk_pages()
        _INDEX = (chunks, BM25(chunks))
    return _INDEX


def quote(chunk: Chunk) -> str:
    """The chunk's first 30 words as the bot quotes them."""
    return " ".join(chunk.text.split()[:QUOTE_WORDS])


def best_sentence(chunk: Chunk, question: str) -> str:
    asked = {w for w in _WORD.findall(question.casefold()) if w not in _STOP}
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", chunk.text) if len(s.split()) > 4] or [chunk.text]
    return max(sentences, key=lambda s: (len(asked & set(_WORD.findall(s.casefold()))), -sentences.index(s)))


def plan(question: str) -> tuple[str, list[Chunk]]:
    """The style and the chunks the bot cites for a question: 1 to 3 of its best, the last one swapped for a chunk
    of another page in one question of four."""
    chunks, bm25 = index()
    h = zlib.crc32(question.encode("utf-8"))
    hits = bm25.search(question, 3)[: 1 + h % 3]
    if hits and h % 4 == 0:
        far = chunks[(chunks.index(hits[-1]) + len(chunks) // 2) % len(chunks)]
        hits[-1] = far
    return STYLES[(h // 7) % len(STYLES)], hits


def reference(style: str, chunk: Chunk) -> str:
    return {"url": chunk.url, "link": chunk.url, "chunk": chunk.id, "quote": f'"{quote(chunk)}"',
            "page": chunk.page_url}[style]


def answer(request):
    """Sentences from the cited chunks, each with its citation in the question's style."""
    from grace import SystemAnswer

    style, cited = plan(request.question)
    if not cited:
        return SystemAnswer("Sorry, I couldn't find that in the handbook.", retrieved=[])
    lines, sources = [], []
    for n, chunk in enumerate(dict.fromkeys(cited), 1):
        sentence = best_sentence(chunk, request.question).rstrip(".")
        if style == "link":
            lines.append(f"{sentence} ([{chunk.heading}]({chunk.url})).")
        else:
            lines.append(f"{sentence} [{n}].")
            shown_ref = reference(style, chunk)
            sources.append(f"[{n}] [{chunk.heading}]({shown_ref})" if style == "url" else f"[{n}] {shown_ref}")
    text = " ".join(lines) + ("\n\nSources:\n" + "\n".join(sources) if sources else "")
    chunks, bm25 = index()
    return SystemAnswer(text, retrieved=[c.id for c in bm25.search(request.question, 5)])


def write_map(kb: str, out: str) -> None:
    """Each chunk ID -> the KB article(s) holding its text (``id,12;13`` when it spans two); unmapped ones named."""
    import grace

    chunks, _ = index()
    found = grace.resolve_references(kb, [c.text for c in chunks])
    rows = ["their_id,article_id"]
    for chunk, res in zip(chunks, found, strict=True):
        if res.mapped:
            rows.append(f"{chunk.id},{';'.join(res.articles)}")
        else:
            print(f"unmapped: {chunk.id} {chunk.url}: {res.note}", file=sys.stderr)
    Path(out).write_text("\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(rows) - 1} of {len(chunks)} chunks mapped -> {out}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--write-map":
        write_map(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: python handbook_bot.py --write-map KB OUT.csv")
