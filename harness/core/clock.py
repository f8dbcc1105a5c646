"""The one clock of grace's records: every time written to a file (an export, a curation action, a label, a review)
is UTC to the second in ISO 8601, so records from different machines and time zones sort and compare as text."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    """This moment as ``2026-12-08T00:54:30+00:00``."""
    return datetime.now(UTC).isoformat(timespec="seconds")
