"""The curation overlay's files: ``KB/curation.jsonl`` (every edit a person made) and
``KB/curation_conflicts.jsonl`` (the edits the last build could not re-apply).

Curation is an overlay on a built KB, not a fork of it: ``grace kb build`` rebuilds
the articles from the sources and replays these edits, so the record of each edit
must say exactly what it saw (``before``: each article's content hash and whole
text) and what it left (``after``). An edit whose ``before`` no longer matches the
rebuilt text is a conflict, never applied to the wrong text. This module is the one
reader and writer of both files (their names and paths are :class:`kb_builder.kb_dir.KbDir`'s);
edits are appended one line at a time, flushed and fsynced, so a saved action survives
a crash; a crash mid-append leaves half a line with no newline, which never took
effect: readers pass over it and the KB's writer sets it aside (:func:`set_aside_torn_tail`), so it never locks the KB.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text, disk_error, repair_torn_tail
from harness.core.jsonl import iter_jsonl
from kb_builder.kb_dir import KbDir
from kb_builder.kb_records import Article

CURATION_FORMAT_VERSION = 1
# what to do about a damaged line before the last one (a torn last line is set aside on its own)
_DAMAGED = ("; this file is written by 'grace kb edit' and 'grace kb curate': restore it from a copy, or remove that "
            "line (an action after it that edits the same articles may then no longer apply)")

log = logging.getLogger("grace")

Action = Literal["title", "text", "split", "merge", "distinct", "undo"]


class CurationEdit(BaseModel):
    """One curation action, as saved: what it did, to which articles, who did it and why."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = CURATION_FORMAT_VERSION  # a grace refuses a curation file newer than the one it reads
    seq: int  # 1, 2, 3...: the action's place in the file; an undo names the seq it undoes
    action: Action  # title | text | split | merge | distinct | undo
    articles: list[str] = Field(default_factory=list)  # the IDs the action names (merge: keep, other; split: the one)
    # each article's content hash (kb_records.text_hash of title + newline + text) before and after the action:
    # a rebuild applies the edit only when every ``before`` hash still matches
    before: dict[str, str] = Field(default_factory=dict)
    after: dict[str, str] = Field(default_factory=dict)  # each article's content hash after the action (ID -> hash)
    title: str | None = None  # title: the new title; merge: the merged article's title
    text: str | None = None  # text: the new text; merge: the merged article's text
    at: int | None = None  # split: the paragraph (1-based) the second part starts with
    parts: list[str] = Field(default_factory=list)  # split: the new IDs of the parts, in order
    merged_into: str | None = None  # merge: the ID that survives (the other is retired)
    undoes: int | None = None  # undo: the seq of the action undone
    reason: str | None = None  # why (required for distinct: lint shows it)
    author: str  # who: --author, else $GRACE_ANNOTATOR or $USER
    time: str  # when: ISO 8601, UTC, to the second
    # the articles as they were before and after, whole: what an undo restores and a rebuild checks against
    before_articles: list[Article] = Field(default_factory=list)
    after_articles: list[Article] = Field(default_factory=list)  # the articles the action left, whole
    positions: list[int] = Field(default_factory=list)  # where each before article stood in articles.jsonl (0-based)

    def positions_before(self) -> list[int]:
        """Where an undo puts each ``before`` article back (a record without positions: where the first after
        article stands is as good a place as any)."""
        return self.positions if len(self.positions) == len(self.before_articles) else [0] * len(self.before_articles)


class CurationConflict(BaseModel):
    """An edit the last build could not re-apply: its articles' text changed underneath it (or they are gone)."""

    model_config = ConfigDict(extra="forbid")

    seq: int  # the edit in curation.jsonl
    action: Action  # the edit's action: title | text | split | merge | distinct | undo
    articles: list[str]  # the IDs the edit names
    author: str  # who made the edit
    reason: str  # what no longer matches, in words, and what to do
    # per article named: the hash the edit expects and the one the rebuild made (None: the article is gone)
    expected: dict[str, str] = Field(default_factory=dict)
    found: dict[str, str | None] = Field(default_factory=dict)  # per article: the hash the rebuild made (null: gone)
    built_at: str  # the build that found the conflict


class Retirement(BaseModel):
    """Where a curated-away article went: what a gold label on its ID should cite now."""

    id: str
    how: Literal["merged", "split"]
    into: list[str]  # merged: the surviving ID; split: the parts' IDs, in order
    title: str  # the article's title when it was retired
    seq: int  # the action in curation.jsonl
    author: str


def read_edits(kb_dir: Path) -> list[CurationEdit]:
    """Every edit in ``KB/curation.jsonl``, in order (none: an empty list)."""
    path = KbDir(kb_dir).curation
    edits: list[CurationEdit] = []
    if not path.exists():
        return edits
    for n, data in iter_jsonl(path, torn_tail_ok=True, hint=_DAMAGED):
        version = data.get("format_version", CURATION_FORMAT_VERSION) if isinstance(data, dict) else None
        if isinstance(version, int) and version > CURATION_FORMAT_VERSION:
            raise GraceError(f"{where(path, n)}: curation format {version} is newer than this grace reads "
                             f"({CURATION_FORMAT_VERSION}); upgrade grace")
        try:
            edit = CurationEdit.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field_name = ".".join(str(p) for p in first["loc"]) or "?"
            raise GraceError(f"{where(path, n)}: field '{field_name}': {first['msg']}; this file is written by "
                             "'grace kb edit' and 'grace kb curate': restore it from a copy, or undo the bad line by "
                             "removing it") from None
        edits.append(edit)
    return edits


def last_seq(kb_dir: Path) -> int | None:
    """The ``seq`` of the last whole action in ``KB/curation.jsonl`` (None: no action on file), read from the end of
    the file: what every load of a KB compares with the manifest's ``curation_seq``, so a KB whose articles are up to
    date costs no read of its whole overlay. A last line that does not parse gives -1 (never a match)."""
    try:
        fh = KbDir(kb_dir).curation.open("rb")
    except FileNotFoundError:
        return None
    with fh:
        pos, data = fh.seek(0, os.SEEK_END), b""
        while True:
            end = data.rfind(b"\n")  # a torn last line (no newline) is passed over: it never took effect
            start = data.rfind(b"\n", 0, end) if end >= 0 else -1
            if end >= 0 and (start >= 0 or pos == 0):
                line = data[start + 1:end]
                if line.strip():
                    try:
                        seq = json.loads(line).get("seq")
                    except (ValueError, AttributeError):
                        return -1
                    return seq if isinstance(seq, int) else -1
                data = data[:start + 1]  # a blank line: the one before it
                continue
            if pos == 0:
                return None
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data


def set_aside_torn_tail(kb_dir: Path) -> None:
    """Move a last line cut off mid-write (a writer killed while appending it: no newline, not JSON) to
    ``curation.jsonl.torn``, saying so with its line number. That action never took effect (an action is appended
    before the articles are written), so nothing is lost; a damaged line before the last one is not touched here:
    it stays the error :func:`read_edits` names. Only the holder of the KB's lock calls this."""
    path = KbDir(kb_dir).curation
    try:
        with path.open("rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return
    if not data or data.endswith(b"\n"):
        return
    line = data.count(b"\n") + 1
    side = KbDir(kb_dir).torn_curation
    if repair_torn_tail(path, side):
        log.warning(f"{where(path, line)}: the last curation action was cut off mid-write (a crash or a full disk) "
                    f"and never took effect; set it aside in {side.name}. Redo that action if it is still wanted "
                    f"('grace kb edit {path.parent} --list' shows the ones in force)")


def append_edit(kb_dir: Path, edit: CurationEdit) -> None:
    """Append one edit and fsync it: saved the moment the action is taken. Only the holder of the KB's curation
    lock calls this (:class:`kb_builder.curation.Curation`)."""
    path = KbDir(kb_dir).curation
    set_aside_torn_tail(kb_dir)
    line = json.dumps(edit.model_dump(mode="json", exclude_defaults=False), ensure_ascii=False) + "\n"
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise disk_error(path, exc) from None


def read_conflicts(kb_dir: Path) -> list[CurationConflict]:
    path = KbDir(kb_dir).conflicts
    out: list[CurationConflict] = []
    if not path.exists():
        return out
    for n, data in iter_jsonl(path):
        try:
            out.append(CurationConflict.model_validate(data))
        except ValidationError as exc:
            raise GraceError(f"{where(path, n)}: not a curation conflict ({exc.errors()[0]['msg']}); it is rewritten "
                             "by every 'grace kb build': build again") from None
    return out


def write_conflicts(kb_dir: Path, conflicts: list[CurationConflict]) -> None:
    """Replace the conflicts file (none left: the file is removed, so its presence means work to do)."""
    path = KbDir(kb_dir).conflicts
    if not conflicts:
        path.unlink(missing_ok=True)
        return
    atomic_write_text(path, "".join(c.model_dump_json() + "\n" for c in conflicts))


def active_edits(edits: list[CurationEdit]) -> list[CurationEdit]:
    """The actions in force, in order: every edit but the undo records and the edits they undid."""
    undone = {e.undoes for e in edits if e.action == "undo"}
    return [e for e in edits if e.action != "undo" and e.seq not in undone]


def distinct_marks(kb_dir: Path | None = None, edits: list[CurationEdit] | None = None,
                   unapplied: set[int] | None = None) -> dict[frozenset[str], CurationEdit]:
    """The article pairs marked distinct and in force (in the KB folder, or among ``edits``), each with its edit
    (who, when, why). A mark the last build found in conflict (an article changed since) is left out: the changed
    pair is for a person to look at again, not to stay silenced."""
    if edits is None:
        edits = read_edits(kb_dir)
    if unapplied is None:
        unapplied = {c.seq for c in read_conflicts(kb_dir)} if kb_dir is not None else set()
    return {frozenset(e.articles): e for e in active_edits(edits) if e.action == "distinct" and e.seq not in unapplied}


def where_ids_went(kb_dir: Path, live: set[str] | None = None) -> dict[str, Retirement]:
    """Article ID -> where curation sent it (merged into one article, or split into parts), for the IDs that are not
    live (``live``: the KB's current IDs; None: every merge and split in force)."""
    out: dict[str, Retirement] = {}
    for e in active_edits(read_edits(kb_dir)):
        if e.action == "merge" and len(e.articles) == 2:
            gone, into, how = e.articles[1], [e.merged_into or e.articles[0]], "merged"
        elif e.action == "split" and e.articles:
            gone, into, how = e.articles[0], list(e.parts), "split"
        else:
            continue
        title = next((a.title for a in e.before_articles if a.id == gone), "")
        if live is None or gone not in live:
            out[gone] = Retirement(id=gone, how=how, into=into, title=title, seq=e.seq, author=e.author)
    # a chain (13 merged into 12, 12 split into 40 and 41) ends at live articles
    for r in out.values():
        seen: set[str] = set()
        while any(i in out and i not in seen for i in r.into):
            nxt: list[str] = []
            for i in r.into:
                seen.add(i)
                nxt += out[i].into if i in out else [i]
            r.into = list(dict.fromkeys(nxt))
    return out


def curated_away(kb_dir: Path, ids: set[str], live: set[str]) -> str:
    """Which of ``ids`` curation merged or split, in words ("article 13 was merged into 12 (curation action 4)");
    empty when none was: what a gold check says before it names the command that migrates the labels."""
    went = where_ids_went(kb_dir, live)
    return "; ".join(describe_retirement(went[i]) for i in sorted(ids & set(went)))


def describe_retirement(r: Retirement) -> str:
    into = f"merged into {r.into[0]}" if r.how == "merged" and len(r.into) == 1 else f"split into {' and '.join(r.into)}"
    return f"article {r.id} was {into} (curation action {r.seq}, by {r.author})"
