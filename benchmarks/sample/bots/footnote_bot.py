"""A support bot that cites its own documents: the worked example of docs/how-to/own-references.md.

It knows nothing of grace's KB or article IDs. It chunks the Larkspur handbook's source files itself (one chunk per
``##``/``###`` or ``<h2>`` section), gives each chunk an ID of its own index (``lk-0001``...) and a URL on the company's
handbook site (``https://handbook.larkspur.example/payroll/pay-and-compensation#annual-performance-bonus``),
retrieves by word overlap, and answers with sentences copied from its best chunks, each ending in a footnote
marker (``[1]``, ``[2]``) that points into a ``Sources:`` list of links, as shipped RAG bots do. It needs no model
and no network, so the example runs anywhere.

Run it through grace as ``python:benchmarks/sample/bots/footnote_bot.py:answer`` (see the how-to); ``python
footnote_bot.py --write-map KB OUT.csv`` writes its index's ``their_id,article_id`` map by asking grace where each
chunk's URL lands (``grace.resolve_references``), the check a team makes before a run.
"""

from __future__ import annotations

import html
import math
import re
import sys
from pathlib import Path

from grace import SystemAnswer, SystemRequest

HANDBOOK = Path(__file__).resolve().parent.parent / "handbook"
SITE = "https://handbook.larkspur.example/"
_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are as at be by can do does for from how i if in is it its my of on or the to what when "
                  "where which who will with you your".split())


def _slug(heading: str) -> str:
    return "-".join(_WORD.findall(heading.casefold()))


def _sections(path: Path) -> list[tuple[str, str]]:
    """(heading, plain text) per second-level section of one handbook file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        parts = re.split(r"<h2>(.*?)</h2>", text, flags=re.S)
        pairs = zip(parts[1::2], parts[2::2], strict=False)
        return [(html.unescape(h).strip(), html.unescape(re.sub(r"<[^>]+>", " ", body))) for h, body in pairs]
    parts = re.split(r"^#{2,3} +(.+)$", text, flags=re.M)
    return [(h.strip(), body) for h, body in zip(parts[1::2], parts[2::2], strict=False)]


def _index() -> list[dict]:
    chunks = []
    for path in sorted(HANDBOOK.rglob("*")):
        if path.suffix not in (".md", ".html"):
            continue
        page = path.relative_to(HANDBOOK).with_suffix("").as_posix()
        for heading, text in _sections(path):
            plain = " ".join(re.sub(r"^\s*[-*]\s+|\*\*", "", text, flags=re.M).split())
            sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", plain) if len(s.split()) > 4]
            chunks.append({"id": f"lk-{len(chunks) + 1:04d}", "url": f"{SITE}{page}#{_slug(heading)}",
                           "title": heading, "sentences": sentences,
                           "words": {w for w in _WORD.findall((heading + " " + text).casefold()) if w not in _STOP}})
    return chunks


CHUNKS = _index()
# a rare word says more than a common one (inverse document frequency over the chunks)
WEIGHT = {w: math.log(len(CHUNKS) / sum(w in c["words"] for c in CHUNKS)) for c in CHUNKS for w in c["words"]}


def _asked(question: str) -> set[str]:
    return {w for w in _WORD.findall(question.casefold()) if w not in _STOP}


def search(question: str, k: int = 3) -> list[dict]:
    asked = _asked(question)
    scored = [(sum(WEIGHT[w] for w in asked & c["words"]), c) for c in CHUNKS]
    ranked = sorted(scored, key=lambda sc: (-sc[0], sc[1]["id"]))
    return [c for score, c in ranked[:k] if score > 0]


def _best_sentence(chunk: dict, question: str) -> str | None:
    asked = _asked(question)
    scored = [(sum(WEIGHT.get(w, 0.0) for w in asked & set(_WORD.findall(s.casefold()))), -i, s)
              for i, s in enumerate(chunk["sentences"])]
    return max(scored)[2] if scored else None


def answer(request: SystemRequest) -> SystemAnswer:
    """Two sentences from the two best chunks, each with its footnote, and the Sources list of their links."""
    hits = search(request.question)
    if not hits:
        return SystemAnswer("Sorry, I couldn't find that in the handbook.", retrieved=[])
    lines, sources = [], []
    for n, chunk in enumerate(hits[:2], 1):
        sentence = _best_sentence(chunk, request.question)
        if sentence:
            lines.append(f"{sentence.rstrip('.')} [{n}].")
            sources.append(f"[{n}] [{chunk['title']}]({chunk['url']})")
    text = " ".join(lines) + "\n\nSources:\n" + "\n".join(sources)
    # what it retrieved, as IDs of its own index: mapped onto KB articles by the map file (see --write-map)
    return SystemAnswer(text, retrieved=[c["id"] for c in hits])


def write_map(kb: str, out: str) -> None:
    """Each chunk ID of the bot's index -> the KB article(s) its URL resolves to (a section grace keeps in several
    articles: all of them, ``lk-0012,11;12;13``); unmapped chunks left out, named."""
    import grace

    found = grace.resolve_references(kb, [c["url"] for c in CHUNKS], rewrites=[f"{SITE}="])
    rows = ["their_id,article_id"]
    for chunk, res in zip(CHUNKS, found, strict=True):
        if res.mapped:
            rows.append(f"{chunk['id']},{';'.join(res.articles)}")
        else:
            print(f"unmapped: {chunk['id']} {chunk['url']}: {res.note}", file=sys.stderr)
    Path(out).write_text("\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(rows) - 1} of {len(CHUNKS)} chunks mapped -> {out}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--write-map":
        write_map(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: python footnote_bot.py --write-map KB OUT.csv")
