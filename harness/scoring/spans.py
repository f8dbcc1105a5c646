"""Native citations counted: of the spans an API cited (each checked against its article when the answer was
recorded, harness.runner.native_citations), how many its article holds. A span its article does not hold is a
citation that quotes what the source does not say, and is counted as such."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.stats.wilson import wilson_interval


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
