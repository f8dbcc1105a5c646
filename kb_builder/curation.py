"""Curating a KB by hand: edit a title or text, split, merge, mark a pair distinct, undo.

Curation is an overlay on the built KB, not a fork of it. Each action is saved at
once to ``KB/curation.jsonl`` (:mod:`kb_builder.curation_records`) and applied to
``articles.jsonl`` and ``manifest.json``, so every other grace command sees the
curated KB; ``grace kb build`` rebuilds from the sources and replays the actions
(:func:`replay`), applying each only where the text it saw is still there.

IDs stay a contract with gold labels: a merge keeps one ID and retires the other
(``merged_into``), a split gives both parts new IDs and retires the original;
retired IDs are never handed out again. A KB has one writer at a time: the
:class:`Curation` holds the KB's lock (``grace kb build`` takes the same one).

An action is two writes: appended to ``curation.jsonl`` first, then the articles and
the manifest, which records the last action the articles hold (``curation_seq``). A
writer killed between the two leaves an action in force that the articles lack; every
load of the KB sees it (:func:`merge_pending`), applies it and says so, so no command
ever uses a KB that disagrees with its own curation.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.clock import now
from harness.core.errors import GraceError
from kb_builder.curation_records import (
    CurationConflict,
    CurationEdit,
    active_edits,
    append_edit,
    distinct_marks,
    last_seq,
    read_conflicts,
    read_edits,
    set_aside_torn_tail,
    write_conflicts,
)
from kb_builder.kb_dir import KbDir
from kb_builder.kb_records import Article, Manifest, kb_content_hash
from kb_builder.provenance import carry, uncarry
from kb_builder.store import KB, finish_articles, read_kb, token_stats, write_kb

if TYPE_CHECKING:
    from kb_builder.lint import LintReport

log = logging.getLogger("grace")
_NOTED: set[tuple[str, int]] = set()  # (KB folder, action) a half-way note was given for in this process
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_PART = re.compile(r"\s*\(part ([\d.]+) of (\d+)\)\s*$")


def part_titles(title: str) -> list[str]:
    """The two parts' titles of a split: ``T (part 1 of 2)``, ``T (part 2 of 2)``; a part split again numbers
    within its number (``T (part 1 of 2)`` -> ``T (part 1.1 of 2)``, ``T (part 1.2 of 2)``), never doubling it."""
    m = _PART.search(title)
    if m is None:
        return [f"{title} (part {i} of 2)" for i in (1, 2)]
    base = title[: m.start()]
    return [f"{base} (part {m.group(1)}.{i} of {m.group(2)})" for i in (1, 2)]


def default_author() -> str:
    """Who an action is recorded as when no author is given: ``$GRACE_ANNOTATOR``, else the login name (as for
    gold labels, so one person's labels and edits carry one name)."""
    for var in ("GRACE_ANNOTATOR", "USER", "USERNAME"):
        if os.environ.get(var):
            return os.environ[var]
    return "annotator"


def paragraphs(text: str) -> list[str]:
    """An article's paragraphs as a split counts them: blocks of text between blank lines."""
    return [p.strip("\n") for p in _PARAGRAPH_BREAK.split(text.strip("\n")) if p.strip()]


# ---------------------------------------------------------------- applying an edit to a list of articles


def _index(articles: list[Article]) -> dict[str, int]:
    return {a.id: i for i, a in enumerate(articles)}


def _swap(articles: list[Article], remove: Sequence[str], insert: list[Article], anchor: str | None) -> list[Article]:
    """``articles`` without ``remove``, with ``insert`` where ``anchor`` stood (the article order stays the build's)."""
    pos = _index(articles)
    gone = set(remove)
    at = len(articles) if anchor is None or anchor not in pos else pos[anchor]
    at -= sum(1 for i in (pos[r] for r in gone if r in pos) if i < at)
    kept = [a for a in articles if a.id not in gone]
    return kept[:at] + [a.model_copy(deep=True) for a in insert] + kept[at:]


def _mismatch(edit: CurationEdit, articles: list[Article], hashes: dict[str, str]) -> dict[str, str | None] | None:
    """The articles of ``hashes`` whose current hash differs (None: gone); None when every one matches."""
    by_id = {a.id: a for a in articles}
    found = {aid: (by_id[aid].content_hash or by_id[aid].compute_hash()) if aid in by_id else None for aid in hashes}
    return None if all(found[aid] == h for aid, h in hashes.items()) else found


def apply_edit(edit: CurationEdit, articles: list[Article]) -> list[Article]:
    """``articles`` with ``edit`` applied: its ``before`` articles replaced by its ``after`` ones (checked first by
    the caller with :func:`_mismatch`), which take where their text is in the sources from the articles they replace
    as they are now (a rebuild moves them when a document changed elsewhere)."""
    if edit.action == "distinct":
        return articles
    remove = list(edit.before)
    by_id = {a.id: a for a in articles}
    after = [a.model_copy(deep=True) for a in edit.after_articles]
    if all(aid in by_id for aid in remove):
        carry(edit.action, [by_id[aid] for aid in remove], after)
    return _swap(articles, remove, after, remove[0] if remove else None)


def revert_edit(edit: CurationEdit, articles: list[Article]) -> list[Article]:
    """``articles`` with ``edit`` taken back: its ``after`` articles replaced by its ``before`` ones, each where it
    stood before the edit (with where their text is in the sources, as far as the ``after`` ones say it now)."""
    if edit.action == "distinct":
        return articles
    by_id = {a.id: a for a in articles}
    before = [a.model_copy(deep=True) for a in edit.before_articles]
    if all(aid in by_id for aid in edit.after):
        uncarry(edit.action, [by_id[aid] for aid in edit.after], before)
    out = [a for a in articles if a.id not in set(edit.after)]
    for art, at in sorted(zip(before, edit.positions_before(), strict=True), key=lambda p: p[1]):
        out.insert(min(at, len(out)), art)
    return out


# ---------------------------------------------------------------- rebuilding: the overlay replayed


@dataclass
class Replay:
    """What a build did with the overlay: the curated articles, retired IDs and next number, the edits applied and
    those in conflict."""

    articles: list[Article]
    retired: list[str]
    next_id: int | None
    applied: list[int] = field(default_factory=list)
    conflicts: list[CurationConflict] = field(default_factory=list)
    seq: int | None = None  # the last action on file: every one is now applied or listed as a conflict

    def save(self, kb_dir: Path) -> None:
        """Write (or clear) ``curation_conflicts.jsonl``: once the KB itself is written."""
        if self.applied or self.conflicts or KbDir(kb_dir).conflicts.exists():
            write_conflicts(Path(kb_dir), self.conflicts)


def built_articles(kb_dir: Path, curated: list[Article]) -> list[Article]:
    """The articles as the last build made them, before curation: ``curated`` with every applied edit taken back,
    newest first. A rebuild matches its new articles to these to keep their IDs."""
    edits = active_edits(read_edits(kb_dir))
    if not edits:
        return curated
    unapplied = {c.seq for c in read_conflicts(kb_dir)}
    out = list(curated)
    for edit in reversed(edits):
        if edit.seq in unapplied or _mismatch(edit, out, edit.after) is not None:
            continue
        out = revert_edit(edit, out)
    return out


def replay(kb_dir: Path, articles: list[Article], retired: list[str], next_id: int | None,
           built_at: str | None = None) -> Replay:
    """Apply the KB's overlay to freshly built ``articles`` (IDs assigned): each edit in order, only where every
    article it saw is still there with the same text; the others become conflicts, saying what changed."""
    edits = read_edits(kb_dir)
    result = Replay(articles=articles, retired=retired, next_id=next_id, seq=edits[-1].seq if edits else None)
    if not edits:
        return result
    for edit in active_edits(edits):
        found = _mismatch(edit, result.articles, edit.before)
        clash = [p for p in edit.parts if p in {a.id for a in result.articles}]
        if found is None and not clash:
            result.articles = apply_edit(edit, result.articles)
            result.applied.append(edit.seq)
            continue
        if found is None:
            why = f"its new ID(s) {', '.join(clash)} are taken"
        else:
            gone = [aid for aid, h in found.items() if h is None]
            changed = [aid for aid, h in found.items() if h is not None and h != edit.before[aid]]
            why = "; ".join(filter(None, [f"article(s) {', '.join(changed)} changed" if changed else "",
                                          f"article(s) {', '.join(gone)} no longer in the KB" if gone else ""]))
        result.conflicts.append(CurationConflict(
            seq=edit.seq, action=edit.action, articles=edit.articles, author=edit.author,
            reason=f"{why} since {edit.author} made this {edit.action} edit on {edit.time[:10]}: look at the "
                   f"article(s) again and redo the edit, or drop it with 'grace kb edit {kb_dir} --undo --seq "
                   f"{edit.seq}'",
            expected=dict(edit.before), found=found or {}, built_at=built_at or now()))
    finish_articles(result.articles)
    result.retired, result.next_id = settle_ids(retired, next_id, result.articles, edits)
    return result


def settle_ids(retired: list[str], next_id: int | None, live: list[Article], edits: list[CurationEdit]
               ) -> tuple[list[str], int | None]:
    """Retired IDs and the next free number once curation is applied: every ID an edit ever named that is not live
    now is retired (a merged-away or split article, an undone split's parts), and no number is handed out twice."""
    ids = {a.id for a in live}
    named = {aid for e in edits for aid in (*e.before, *e.after, *e.parts)}
    out = sorted((set(retired) | named) - ids, key=lambda x: (len(x), x))
    if next_id is not None:
        numbers = [int(x) for x in (*ids, *out) if x.isdigit()]
        next_id = max([next_id, *(n + 1 for n in numbers)])
    return out, next_id


# ---------------------------------------------------------------- an action stopped half-way


def unmerged(edits: list[CurationEdit], articles: list[Article], unapplied: set[int], since: int
             ) -> tuple[list[Article], list[CurationEdit]]:
    """``articles`` with the actions after ``since`` that they lack applied in order (an action saved to
    ``curation.jsonl`` whose writer died before writing the articles), and those actions. Each is applied only where
    its articles still hold the text it saw and not yet the text it left, so an action already in the articles is
    never applied twice."""
    by_seq = {e.seq: e for e in edits}
    done: list[CurationEdit] = []
    for e in edits:
        if e.seq <= since or e.seq in unapplied:
            continue
        if e.action == "undo":
            target = by_seq.get(e.undoes or 0)
            if target is not None and target.action != "distinct" and _mismatch(target, articles, target.after) \
                    is None and _mismatch(target, articles, target.before) is not None:
                articles = revert_edit(target, articles)
                done.append(e)
        elif e.action != "distinct" and _mismatch(e, articles, e.after) is not None \
                and _mismatch(e, articles, e.before) is None:
            articles = apply_edit(e, articles)
            done.append(e)
    return articles, done


def curated_manifest(manifest: Manifest, articles: list[Article], edits: list[CurationEdit]) -> Manifest:
    """The manifest of ``articles`` once curated by ``edits``: counts, hash, retired IDs and the last action held."""
    finish_articles(articles)
    m = manifest.model_copy(deep=True)
    m.retired_ids, m.next_id = settle_ids(m.retired_ids, m.next_id, articles, edits)
    m.kb_hash, m.article_count, m.token_stats = kb_content_hash(articles), len(articles), token_stats(articles)
    if len(m.languages) <= 1 and m.language:
        m.languages = {m.language: len(articles)}
    m.curation_seq = edits[-1].seq if edits else None
    return m


def in_force(kb: KB, *, save: bool) -> KB:
    """``kb`` as read, with every curation action in force (:func:`merge_pending` when the manifest's last action is
    not the log's): what :func:`kb_builder.loader.load_kb` and a curation session load."""
    if KbDir(kb.path).curation.exists() and last_seq(kb.path) != kb.manifest.curation_seq:
        return merge_pending(kb, save=save)
    return kb


def merge_pending(kb: KB, *, save: bool) -> KB:
    """``kb`` with every curation action in force: the ones a writer killed half-way saved but did not apply are
    applied, with a note. With ``save`` the KB is written too, under its lock (when another grace holds it, that
    writer applies them on its next open: this command uses the merged KB in memory)."""
    lock = KbDir(kb.path).lock()
    locked = False
    if save:
        try:
            lock.acquire()
            locked = True
            kb = read_kb(kb.path, write_missing=True)  # again, under the lock: what the last writer left
        except (GraceError, OSError):
            pass  # a curation open now (in this process or another: it merges on its own), or a read-only folder
    try:
        edits = read_edits(kb.path)
        since = kb.manifest.curation_seq or 0
        articles, done = unmerged(edits, kb.articles, {c.seq for c in read_conflicts(kb.path)}, since)
        last = edits[-1].seq if edits else None
        if not done and (kb.manifest.curation_seq == last or not locked):
            return kb
        manifest = curated_manifest(kb.manifest, articles, edits)
        saved = False
        if locked:
            try:
                write_kb(kb.path, articles, manifest)
                saved = True
            except OSError:
                pass  # a read-only KB: merged in memory, as for a reader
        for e in done:
            if (str(kb.path), e.seq) not in _NOTED:
                _NOTED.add((str(kb.path), e.seq))
                log.warning(f"{kb.path}: curation action {e.seq} ({e.action} of {', '.join(e.articles)}, by {e.author}) "
                            "was saved but its curation stopped half-way, before the articles were written; "
                            + ("applied it to articles.jsonl now" if saved else "this command uses the KB with it (the "
                               f"next writer saves it: 'grace kb edit {kb.path} --list' does)"))
        return KB(path=kb.path, articles=articles, manifest=manifest)
    finally:
        if locked:
            lock.release()


# ---------------------------------------------------------------- the live session


class Curation:
    """A KB open for curation: holds its one-writer lock until :meth:`close`; every action is saved at once."""

    def __init__(self, kb_dir: str | Path):
        self.path = Path(kb_dir)
        self.kb: KB = in_force(read_kb(self.path), save=True)  # a missing folder or articles file: its own clear error
        self.path = self.kb.path
        self._lock = KbDir(self.path).lock()
        self._lock.acquire()
        try:
            set_aside_torn_tail(self.path)
            self._edits = read_edits(self.path)  # this process is the one writer: the list in memory is the file
            self._catch_up()
        except BaseException:
            self._lock.release()
            raise

    # -- reading

    def edits(self) -> list[CurationEdit]:
        """Every record of ``curation.jsonl`` in order, undo records included."""
        return list(self._edits)

    def active(self) -> list[CurationEdit]:
        """The actions in force: not undone (undo records left out)."""
        return active_edits(self.edits())

    def conflicts(self) -> list[CurationConflict]:
        """The edits the last build could not re-apply and nobody has undone since."""
        live = {e.seq for e in self.active()}
        return [c for c in read_conflicts(self.path) if c.seq in live]

    def distinct(self) -> list[CurationEdit]:
        """The pairs marked distinct and in force (each edit's ``articles``, ``author`` and ``reason``)."""
        return list(distinct_marks(edits=self._edits, unapplied=self._unapplied()).values())

    def _unapplied(self) -> set[int]:
        return {c.seq for c in read_conflicts(self.path)}

    def paragraphs(self, article_id: str) -> list[str]:
        """The article's paragraphs as :meth:`split_article` counts them (``at`` is 1-based)."""
        return paragraphs(self._article(article_id, "split").text)

    def worklist(self, scores: Iterable[dict[str, Any]] | None = None) -> LintReport:
        """Lint of the curated KB, worst first, without the pairs marked distinct (``.distinct`` lists those);
        ``scores``: a scored run's rows, read by the caller (the KB builder knows no run folder), add the pairs its
        models swap."""
        from kb_builder.lint import lint_kb

        return lint_kb(self.kb, scores)

    # -- actions

    def set_title(self, article_id: str, title: str, *, author: str | None = None,
                  reason: str | None = None) -> CurationEdit:
        """Give an article a new title (its ID stays)."""
        art = self._article(article_id, "retitle")
        title = _clean(title, "title", article_id)
        if title == art.title:
            raise GraceError(f"article {article_id} is already titled {title!r}: nothing to change")
        new = _edited(art, title=title)
        return self._save("title", [art.id], [art], [new], author, reason, title=title)

    def set_text(self, article_id: str, text: str, *, author: str | None = None,
                 reason: str | None = None) -> CurationEdit:
        """Replace an article's text (its ID stays)."""
        art = self._article(article_id, "edit")
        if not text.strip():
            raise GraceError(f"article {article_id}: the new text is empty; to remove an article, merge it into "
                             "the one that covers its topic")
        text = text.strip("\n")
        if text == art.text:
            raise GraceError(f"article {article_id}: the new text is the same as the old: nothing to change")
        return self._save("text", [art.id], [art], [_edited(art, text=text)], author, reason, text=text)

    def split_article(self, article_id: str, at: int, *, titles: Sequence[str] | None = None,
                      author: str | None = None, reason: str | None = None) -> CurationEdit:
        """Split an article in two before paragraph ``at`` (1-based: ``at=3`` keeps paragraphs 1-2 in the first
        part). Both parts get new IDs; the original ID is retired (gold labels on it need relabelling:
        ``grace annotations migrate`` lists them with both parts suggested)."""
        art = self._article(article_id, "split")
        paras = paragraphs(art.text)
        if len(paras) < 2:
            raise GraceError(f"article {article_id} has {len(paras)} paragraph: nothing to split (a paragraph is a "
                             "block of text between blank lines)")
        if isinstance(at, bool) or not isinstance(at, int) or not 2 <= at <= len(paras):
            raise GraceError(f"article {article_id} has {len(paras)} paragraphs: split --at must be 2 to {len(paras)} "
                             f"(the paragraph the second part starts with), not {at!r}; 'grace kb show {self.path} "
                             f"{article_id}' shows them")
        if titles is None:
            titles = part_titles(art.title)
        if len(titles) != 2:
            raise GraceError(f"split of article {article_id}: give 2 titles, one per part (got {len(titles)})")
        titles = [_clean(t, "title", article_id) for t in titles]
        ids = self._new_ids(art.id, 2)
        parts = [_edited(art, id=i, title=t, text="\n\n".join(chunk))
                 for i, t, chunk in zip(ids, titles, (paras[: at - 1], paras[at - 1:]), strict=True)]
        return self._save("split", [art.id], [art], parts, author, reason, at=at, parts=ids)

    def merge_articles(self, keep: str, other: str, *, title: str | None = None, text: str | None = None,
                       author: str | None = None, reason: str | None = None) -> CurationEdit:
        """Merge ``other`` into ``keep``: ``keep`` keeps its ID (its title unless ``title``; both texts unless
        ``text``), ``other`` is retired with ``merged_into`` = ``keep`` and its gold labels move to ``keep``
        (``grace annotations migrate``)."""
        if str(keep).strip() == str(other).strip():
            raise GraceError(f"cannot merge article {keep} with itself: name two different articles")
        a, b = self._article(keep, "merge"), self._article(other, "merge")
        title = _clean(title, "title", keep) if title is not None else a.title
        if text is not None and not text.strip():
            raise GraceError(f"merge of {keep} and {other}: the merged text is empty")
        text = text.strip("\n") if text is not None else a.text.rstrip("\n") + "\n\n" + b.text.strip("\n")
        merged = _edited(a, title=title, text=text)
        return self._save("merge", [a.id, b.id], [a, b], [merged], author, reason, title=title, text=text,
                          merged_into=a.id)

    def mark_distinct(self, a: str, b: str, *, why: str, author: str | None = None) -> CurationEdit:
        """Record that two articles answer different questions: lint stops reporting the pair, and shows who
        said so and why (``grace kb lint --show-distinct``)."""
        if str(a).strip() == str(b).strip():
            raise GraceError(f"cannot mark article {a} distinct from itself: name two different articles")
        x, y = self._article(a, "mark"), self._article(b, "mark")
        if not (why or "").strip():
            raise GraceError(f"mark {a} and {b} distinct: say why (--why \"...\"): lint shows it to the next reader")
        if frozenset((x.id, y.id)) in distinct_marks(edits=self._edits, unapplied=self._unapplied()):
            raise GraceError(f"articles {x.id} and {y.id} are already marked distinct")
        return self._save("distinct", [x.id, y.id], [x, y], [x, y], author, why.strip())

    def undo(self, *, author: str | None = None, seq: int | None = None) -> CurationEdit:
        """Take back the last action in force (or action ``seq``, when no later one touched its articles): its
        articles are restored exactly, IDs included. Saved as an ``undo`` record; the undone action stays in the
        file, marked undone."""
        active = self.active()
        if not active:
            raise GraceError(f"{self.path}: no curation action to undo")
        if seq is None:
            target = active[-1]
        else:
            found = [e for e in active if e.seq == seq]
            if not found:
                done = {e.seq for e in self.edits()}
                raise GraceError(f"{self.path}: no curation action {seq} in force to undo ("
                                 + ("it was undone already" if seq in done else f"actions are numbered 1 to {len(done)}")
                                 + "; 'grace kb edit --list' shows them)")
            target = found[0]
        unapplied = {c.seq for c in read_conflicts(self.path)}
        articles = self.kb.articles
        if target.seq not in unapplied:
            changed = _mismatch(target, articles, target.after)
            if changed is not None:
                later = [e.seq for e in active if e.seq > target.seq and set(e.before) & set(target.after)]
                raise GraceError(f"cannot undo action {target.seq} ({target.action} of {', '.join(target.articles)}): "
                                 f"its articles changed since" + (f" (action(s) {', '.join(map(str, later))}); undo "
                                                                  "those first" if later else ""))
            articles = revert_edit(target, articles)
        return self._record(CurationEdit(seq=self._next_seq(), action="undo", articles=target.articles,
                                         undoes=target.seq, author=_author(author), time=now()), articles)

    def close(self) -> None:
        self._lock.release()

    def __enter__(self) -> Curation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside

    def _article(self, article_id: str, verb: str) -> Article:
        aid = str(article_id).strip()
        art = self.kb.by_id.get(aid)
        if art is not None:
            return art
        gone = {e.articles[1] if e.action == "merge" else e.articles[0]: e for e in self.active()
                if e.action in ("merge", "split")}
        if aid in gone:
            e = gone[aid]
            into = f"merged into {e.merged_into}" if e.action == "merge" else f"split into {' and '.join(e.parts)}"
            raise GraceError(f"cannot {verb} article {aid}: it was {into} (action {e.seq}, by {e.author}); "
                             f"edit {'that article' if e.action == 'merge' else 'the parts'} instead, or undo it")
        if aid in set(self.kb.manifest.retired_ids):
            raise GraceError(f"cannot {verb} article {aid}: the ID is retired (the article was removed from the KB); "
                             f"'grace kb show {self.path}' lists the articles")
        raise GraceError(f"cannot {verb} article {aid!r}: no such article in {self.path} ({len(self.kb.articles)} "
                         f"articles; 'grace kb show {self.path}' lists them)")

    def _new_ids(self, base: str, n: int) -> list[str]:
        m = self.kb.manifest
        taken = {a.id for a in self.kb.articles} | set(m.retired_ids) | {
            p for e in self.edits() for p in (*e.parts, *e.before, *e.after)}
        numbers = [int(x) for x in taken if x.isdigit()]
        if m.next_id is not None or (numbers and base.isdigit()):
            start = max([m.next_id or 1, *(k + 1 for k in numbers)])
            return [str(start + i) for i in range(n)]
        out, k = [], 1
        while len(out) < n:  # an imported KB with IDs of its own (HR-12): HR-12.1, HR-12.2
            if f"{base}.{k}" not in taken:
                out.append(f"{base}.{k}")
            k += 1
        return out

    def _next_seq(self) -> int:
        edits = self.edits()
        return edits[-1].seq + 1 if edits else 1

    def _save(self, action: str, names: list[str], before: list[Article], after: list[Article], author: str | None,
              reason: str | None, **params) -> CurationEdit:
        finish_articles(after)
        for a in after:
            a.content_hash = a.compute_hash()
        carry(action, before, after)  # where their text is in the sources: kept, joined or cut with the text
        pos = _index(self.kb.articles)
        edit = CurationEdit(seq=self._next_seq(), action=action, articles=names,
                            before={a.id: a.content_hash or a.compute_hash() for a in before},
                            after={a.id: a.content_hash for a in after}, reason=(reason or "").strip() or None,
                            author=_author(author), time=now(), before_articles=before, after_articles=after,
                            positions=[pos[a.id] for a in before], **params)
        return self._record(edit, apply_edit(edit, self.kb.articles))

    def _record(self, edit: CurationEdit, articles: list[Article]) -> CurationEdit:
        """Save the action (appended and fsynced first, so a crash between the two writes is caught up on the next
        open), then the curated KB."""
        append_edit(self.path, edit)
        self._edits.append(edit)
        self._write(articles)
        return edit

    def _write(self, articles: list[Article]) -> None:
        m = curated_manifest(self.kb.manifest, articles, self.edits())
        write_kb(self.path, articles, m)
        self.kb = KB(path=self.path, articles=articles, manifest=m)

    def _catch_up(self) -> None:
        """Actions saved by a writer killed before it wrote the articles (or since this KB was loaded): applied now.
        A manifest that does not name the last action yet (an older grace wrote it) is brought up to date."""
        if not self._edits:
            return
        articles, done = unmerged(self._edits, self.kb.articles, self._unapplied(), self.kb.manifest.curation_seq or 0)
        if done or self.kb.manifest.curation_seq != self._edits[-1].seq:
            self._write(articles)


def _author(author: str | None) -> str:
    return (author or "").strip() or default_author()


def _clean(title: str | None, what: str, article_id: str) -> str:
    title = " ".join((title or "").split())
    if not title:
        raise GraceError(f"article {article_id}: the new {what} is empty")
    return title


def _edited(art: Article, **changes) -> Article:
    new = art.model_copy(deep=True, update=changes)
    new.tokens = None  # counted again for the new text
    new.content_hash = None
    return new


def open_curation(kb_dir: str | Path) -> Curation:
    """Open a KB for curation (one writer at a time: a second one is refused, naming the first)."""
    return Curation(kb_dir)
