"""Native citations checked: does the span an API says a sentence cites exist in the article it names?

Anthropic's Messages API (and Claude on Bedrock) cites documents sent with citations enabled by the document's
index and the exact text, with its character offsets. The citation is scored like any other (the article it names
is the answer's citation); this module checks the quoted span itself, with no model: ``found`` when the text is in
the article, ``at_offsets`` when it is exactly where the API said. A span its article does not hold is a citation
that quotes what the source does not say, and is counted as such (:func:`span_figures`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.core.wilson import wilson_interval
from harness.run_folder.run_records import CitedSpan

SHOWN = 1_000  # characters of a cited span kept in the row


def checked_spans(spans: Iterable[dict[str, Any]], articles: Sequence[Any]) -> list[CitedSpan]:
    """Each span the API returned, checked against the text of the article it names (``articles``: those sent)."""
    texts = {a.id: a.text for a in articles}
    out = []
    for s in spans:
        article, text = s.get("article"), str(s.get("text") or "")
        start, end = s.get("start"), s.get("end")
        body = texts.get(article) if article is not None else None
        found = bool(text.strip()) and body is not None and text in body
        exact = found and isinstance(start, int) and isinstance(end, int) and body[start:end] == text
        out.append(CitedSpan(article=article, text=text[:SHOWN], start=start if isinstance(start, int) else None,
                             end=end if isinstance(end, int) else None, found=found, at_offsets=exact))
    return out


def span_figures(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per model, over rows with native citations: spans cited, how many are in their article (with a Wilson
    interval over spans), and answers with a span their article does not hold."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        spans = row.get("cited_spans")
        if not isinstance(spans, list) or row.get("error"):
            continue
        m = out.setdefault(row["model"], {"answers": 0, "spans": 0, "found": 0, "at_offsets": 0,
                                          "answers_with_unfound_span": 0})
        m["answers"] += 1
        m["spans"] += len(spans)
        m["found"] += sum(bool(s.get("found")) for s in spans)
        m["at_offsets"] += sum(bool(s.get("at_offsets")) for s in spans)
        m["answers_with_unfound_span"] += any(not s.get("found") for s in spans)
    for m in out.values():
        share = m["found"] / m["spans"] if m["spans"] else None
        m["found_rate"], m["found_ci"] = share, wilson_interval(share, m["spans"])
    return out
