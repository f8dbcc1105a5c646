"""The curation workflows of ``grace kb edit`` (and the ``grace kb curate`` app): fix a built KB by hand.

A KB is opened for curation (:func:`open_curation`: one writer at a time), and each action (retitle, new text,
split, merge, mark a pair distinct, undo) is saved at once to the KB folder's overlay and to its articles, so
every other grace command sees the curated KB and ``grace kb build`` re-applies the overlay after a rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kb_builder.curation import Curation, default_author, open_curation
from kb_builder.curation_records import CurationConflict, CurationEdit

__all__ = ["Curation", "CurationConflict", "CurationEdit", "KbEdit", "curation_edits", "edit_kb", "open_curation"]


@dataclass
class KbEdit:
    """One ``grace kb edit`` action: exactly one of the fields below the author is set."""

    author: str | None = None  # default: $GRACE_ANNOTATOR, else $USER
    reason: str | None = None
    title: tuple[str, str] | None = None  # (ID, new title)
    text: tuple[str, str] | None = None  # (ID, new text)
    split: tuple[str, int] | None = None  # (ID, paragraph the second part starts with, 1-based)
    split_titles: Sequence[str] | None = None  # the parts' titles (default: "TITLE (part N of 2)")
    merge: tuple[str, str] | None = None  # (ID kept, ID merged into it and retired)
    merged_title: str | None = None
    distinct: tuple[str, str] | None = None  # two IDs that answer different questions; reason says why
    undo: bool = False
    undo_seq: int | None = None  # with undo: this action instead of the last


def edit_kb(kb: str | Path, edit: KbEdit) -> CurationEdit:
    """Make one curation action on the KB folder ``kb`` and save it (``grace kb edit``); returns the saved record.
    Bad input (an unknown or retired ID, a paragraph that does not exist, a merge with itself) raises
    ``GraceError`` before anything is written."""
    from harness.core.errors import GraceError

    chosen = [name for name in ("title", "text", "split", "merge", "distinct") if getattr(edit, name) is not None]
    chosen += ["undo"] if edit.undo else []
    if len(chosen) != 1:
        raise GraceError("give exactly one action: --title ID TITLE, --text ID FILE, --split ID --at N, "
                         "--merge KEEP OTHER, --distinct A B --why TEXT or --undo"
                         + (f" (got {', '.join('--' + c for c in chosen)})" if chosen else ""))
    author = edit.author or default_author()
    with open_curation(kb) as cur:
        if edit.title is not None:
            return cur.set_title(*edit.title, author=author, reason=edit.reason)
        if edit.text is not None:
            return cur.set_text(*edit.text, author=author, reason=edit.reason)
        if edit.split is not None:
            return cur.split_article(edit.split[0], edit.split[1], titles=edit.split_titles, author=author,
                                     reason=edit.reason)
        if edit.merge is not None:
            return cur.merge_articles(*edit.merge, title=edit.merged_title, author=author, reason=edit.reason)
        if edit.distinct is not None:
            return cur.mark_distinct(*edit.distinct, why=edit.reason or "", author=author)
        return cur.undo(author=author, seq=edit.undo_seq)


def curation_edits(kb: str | Path) -> tuple[list[CurationEdit], list[CurationConflict]]:
    """A KB's curation: every saved action in order (undo records included), and the actions the last build could not
    re-apply. The KB is loaded first, so an action whose curation stopped half-way is in its articles too (saved
    under the KB's lock) before it is listed as in force."""
    from kb_builder.curation_records import active_edits, read_conflicts, read_edits
    from kb_builder.loader import load_kb

    folder = load_kb(kb).path
    edits = read_edits(folder)
    live = {e.seq for e in active_edits(edits)}
    return edits, [c for c in read_conflicts(folder) if c.seq in live]


