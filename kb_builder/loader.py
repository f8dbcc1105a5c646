"""Loading a KB folder as every reader must see it: its files with every curation action in force.

Why a module of its own: the plain reader (:func:`kb_builder.store.read_kb`) knows
the articles and the manifest, the curation log knows its actions, and a loader must use both (an
action whose writer was killed before it wrote the articles is in force and must
be applied). Kept above both, so neither imports the other; the folder's file names
and paths are :class:`kb_builder.kb_dir.KbDir`'s, below all three.
"""

from __future__ import annotations

from pathlib import Path

from kb_builder.kb_dir import KbDir
from kb_builder.store import KB, read_kb


def load_kb(kb_dir: str | Path, *, write_missing: bool = True) -> KB:
    """Load a KB folder (or an ``articles.jsonl`` path), creating a missing or stale manifest (unless
    ``write_missing`` is false), with every curation action in force: one whose writer was killed before it wrote the
    articles is applied (and, with ``write_missing``, saved), never silently left out."""
    kb = read_kb(kb_dir, write_missing=write_missing)
    if not KbDir(kb.path).curation.exists():
        return kb  # never curated: the curation code is not even imported
    from kb_builder.curation import in_force

    return in_force(kb, save=write_missing)
