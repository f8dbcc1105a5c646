"""The gold-label workflows of ``grace annotations``: what a command does, as one call each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["audit_gold"]


def audit_gold(gold: str | Path, kb: Any, run: str | Path, out: str | Path | None = None, **rules: Any):
    """The gold labels a run's models contradict, most likely wrong first (``grace annotations audit``); written
    to ``out`` (a suspects CSV) when given. ``rules``: ``min_voters``, ``min_swaps``. Returns an ``AuditResult``."""
    from annotations.audit import audit_gold as _audit
    from kb_builder.store import load_kb as _load_kb

    return _audit(gold, _load_kb(kb) if isinstance(kb, str | Path) else kb, run, out, **rules)
