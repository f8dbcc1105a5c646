"""Native citations checked: does the span an API says a sentence cites exist in the article it names?

Anthropic's Messages API (and Claude on Bedrock) cites documents sent with citations enabled by the document's
index and the exact text, with its character offsets. The citation is scored like any other (the article it names
is the answer's citation); this module checks the quoted span itself when the answer is recorded, with no model:
``found`` when the text is in the article, ``at_offsets`` when it is exactly where the API said
(harness.scoring.spans counts them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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
