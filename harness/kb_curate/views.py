"""What the curation page shows of a finding, computed here so the page only builds text nodes.

An article is sent as its paragraphs (the curation overlay's own cut, so "split
at paragraph 3" means what the overlay means), each as ``[text, is_match,
in_passage]`` segments like the annotation page's (:mod:`kb_builder.retrieval.passages`):
for a confusable pair the words the two articles share are marked and the
paragraphs holding most of them flagged; for an article that is not
self-contained, the words lint quoted ("as mentioned above", "This policy") or
the line it objected to. A proposal is sent as a word diff (``[text, op]``:
0 kept, 1 added, -1 removed). Offsets never cross to JavaScript.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from kb_builder.retrieval import passages

_QUOTED = re.compile(r"\(\"(.+?)\"\)|opens with \"(.+?)\"")
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
PASSAGE_SHARE = 0.5  # a paragraph holding this share of the pair's best paragraph's shared words is flagged


def _spans_to_segments(text: str, spans: list[tuple[int, int]], flagged: bool) -> list[list]:
    out, pos = [], 0
    for a, b in sorted(spans):
        if a < pos:
            continue
        if a > pos:
            out.append([text[pos:a], 0, int(flagged)])
        out.append([text[a:b], 1, int(flagged)])
        pos = b
    if pos < len(text):
        out.append([text[pos:], 0, int(flagged)])
    return out


def lint_evidence(message: str, paragraphs: list[str]) -> list[list[list]]:
    """Per paragraph, segments marking what lint objected to in an article that is not self-contained."""
    m = _QUOTED.search(message)
    phrase = (m.group(1) or m.group(2)) if m else None
    out = []
    for i, p in enumerate(paragraphs):
        spans: list[tuple[int, int]] = []
        if phrase:
            spans = [(x.start(), x.end()) for x in re.finditer(re.escape(phrase), p, re.IGNORECASE)]
        elif "list or table" in message and i == 0:
            first = p.split("\n", 1)[0]
            spans = [(0, len(first))]
        elif "announcing" in message and i == len(paragraphs) - 1:
            last = p.rsplit("\n", 1)[-1]
            spans = [(len(p) - len(last), len(p))]
        out.append(_spans_to_segments(p, spans, bool(spans)))
    return out


def shared_evidence(words: passages.KBWords, article_id: str, paragraphs: list[str],
                    other_text: str) -> list[list[list]]:
    """Per paragraph, segments marking the words this article shares with the other of a confusable pair; the
    paragraphs that hold most of them are flagged as the passage that makes the pair confusable."""
    language = words.of(article_id)
    shared = words.terms(" ".join(paragraphs)) & words.terms(other_text)
    counts = [len(words.terms(p) & shared) for p in paragraphs]
    top = max(counts, default=0)
    out = []
    for p, n in zip(paragraphs, counts, strict=True):
        flagged = top >= 2 and n >= PASSAGE_SHARE * top
        out.append([[t, m, int(flagged)] for t, m, _ in passages.segments(p, shared, language)])
    return out


def plain(paragraphs: list[str]) -> list[list[list]]:
    return [[[p, 0, 0]] for p in paragraphs]


def word_diff(before: str, after: str) -> list[list]:
    """``[text, op]`` pieces turning ``before`` into ``after``, word by word (op 0 kept, 1 added, -1 removed)."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[list] = []

    def add(text: str, op: int) -> None:
        if out and out[-1][1] == op:
            out[-1][0] += text
        elif text:
            out.append([text, op])

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            add("".join(a[i1:i2]), 0)
        else:
            add("".join(a[i1:i2]), -1)
            add("".join(b[j1:j2]), 1)
    return out


def proposal_view(proposal: Any, kb: Any, paragraphs: list[str] | None = None) -> dict[str, Any]:
    """The proposal with what the page shows: a diff per field (rewrite, merge) or the parts (split)."""
    data = proposal.model_dump()
    if proposal.error:
        return data | {"blocks": []}
    arts = [kb.by_id.get(i) for i in proposal.articles]
    if any(a is None for a in arts):  # the articles changed since: nothing to diff against
        return data | {"blocks": [], "stale": True}
    if proposal.kind == "rewrite":
        a = arts[0]
        blocks = [{"label": "title", "diff": word_diff(a.title, proposal.title or "")},
                  {"label": "text", "diff": word_diff(a.text, proposal.text or "")}]
    elif proposal.kind == "merge":
        keep = next(a for a in arts if a.id == proposal.keep)
        other = next(a for a in arts if a.id != proposal.keep)
        blocks = [{"label": f"title (kept by {keep.id}; {other.id} is retired)",
                   "diff": word_diff(keep.title, proposal.title or "")},
                  {"label": f"text ({keep.id}, then {other.id})",
                   "diff": word_diff(f"{keep.text}\n\n{other.text}", proposal.text or "")}]
    else:
        paras = paragraphs or []
        at = proposal.at or 2
        parts = ("\n\n".join(paras[: at - 1]), "\n\n".join(paras[at - 1:]))
        blocks = [{"label": f"part {n}: {t}", "diff": [[text, 1]]}
                  for n, (t, text) in enumerate(zip(proposal.titles, parts, strict=False), 1)]
    return data | {"blocks": blocks}


def change_blocks(rec: Any, kb: Any) -> list[dict[str, Any]]:
    """What a pending change would do to the KB as it is now, for the reviewer: a word diff of each title and text
    it changes (a merge: the kept article's; a split: the parts' titles), the page's diff blocks."""
    body = rec.body
    arts = {i: kb.by_id.get(i) for i in rec.articles}
    if any(a is None for a in arts.values()):
        return []
    first = arts[rec.articles[0]]
    if rec.action == "title":
        return [{"label": f"title of {first.id}", "diff": word_diff(first.title, str(body.get("title", "")))}]
    if rec.action == "text":
        return [{"label": f"text of {first.id}", "diff": word_diff(first.text, str(body.get("text", "")))}]
    if rec.action == "merge":
        keep, other = arts[str(body.get("keep"))], arts[str(body.get("other"))]
        return [{"label": f"title (kept by {keep.id}; {other.id} is retired)",
                 "diff": word_diff(keep.title, str(body.get("title") or keep.title))},
                {"label": f"text of {keep.id}, with {other.id}'s",
                 "diff": word_diff(keep.text, str(body.get("text") or f"{keep.text}\n\n{other.text}"))}]
    if rec.action == "accept":
        from harness.kb_curate.proposals import Proposal

        q = Proposal(kind=body["kind"], articles=body["articles"], model=body.get("model", ""), title=body.get("title"),
                     text=body.get("text"), keep=body.get("keep"), at=body.get("at"), titles=body.get("titles") or [])
        return proposal_view(q, kb)["blocks"] if q.kind != "split" else []
    return []
