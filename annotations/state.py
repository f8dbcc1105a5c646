"""One annotation session: every question, its label, and the file saved after each change.

A threading lock serialises saves, and each save rewrites the whole file with
write-then-rename, so a killed server leaves the last complete file behind; an
advisory lock on ``.OUT.lock`` stops a second server from overwriting the first.
The file format lives in :mod:`annotations.labels`.

A session may also show suggestions (a suggestions file, a run's consensus, a draft's
proposed label, an audit's alternative) and walk a chosen subset or order of the
questions (``--only``, ``--order``); the file always keeps every question, in file
order. The server, never the page, decides a label's ``provenance``: it compares the
label saved with the suggestion it showed, so a stale or hand-made request cannot
claim that a suggestion was accepted.
"""

from __future__ import annotations

import copy
import os
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from annotations.labels import OUT_COLUMNS, STATUSES, LabelRecord, read_labels, read_rows, render_csv
from annotations.single_writer import SingleWriter
from annotations.suggestions import Suggestion, informative_order, label_of, normal_label
from harness.core.clock import now as _now
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from harness.core.outputs import keep_backup
from harness.web import Rejected
from kb_builder.gold import CITATIONS_NEEDED, NEEDED_VALUES, read_questions, split_ids

if TYPE_CHECKING:
    from kb_builder.store import KB

ORDERS = ("file", "informative")


class LabelRejected(Rejected):
    """A save the server refuses (unknown article, refuse plus citations): the page shows why (400)."""


def _question_extras(path: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Extra columns of a questions CSV (a category, a source), kept in the output."""
    if path.suffix.lower() not in {".csv", ".tsv"}:
        return {}, []
    header, rows = read_rows(path)
    cols = [h for h in header if h not in OUT_COLUMNS]
    return {row["question_id"].strip(): {c: row.get(c, "") for c in cols} for _, row in rows}, cols


def question_records(questions: str | Path) -> tuple[list[LabelRecord], list[str]]:
    """A questions file (CSV or text) as unlabelled records, with the CSV's extra columns (a category)."""
    qpath = Path(questions)
    extras, cols = _question_extras(qpath)
    return [LabelRecord(q.question_id, q.question, line=q.line, extra=extras.get(q.question_id, {}))
            for q in read_questions(qpath)], cols


class AnnotationSession:
    """All questions and their labels, and the one file they are saved to after every change."""

    def __init__(self, out: Path, records: list[LabelRecord], annotator: str, kb: KB, extra_columns: list[str]):
        self.out, self.records, self.annotator, self.kb = out, records, annotator, kb
        self.extra_columns = extra_columns
        self.index = {r.question_id: i for i, r in enumerate(records)}
        self.suggestions: dict[str, Suggestion] = {}  # what the page shows per question; set before serving
        self.audit: dict[str, list[dict]] = {}  # --only: the audit rows that name each question
        self.view: list[str] | None = None  # the question IDs the page walks, in order; None: all, in file order
        self.reviewed: set[str] = set()  # questions saved since this session opened
        self._lock = threading.Lock()
        self._writer = SingleWriter(self.out, "'grace annotate'")

    @classmethod
    def open(
        cls,
        kb: KB,
        out: str | Path,
        *,
        questions: str | Path | None = None,
        from_gold: str | Path | None = None,
        annotator: str = "",
    ) -> AnnotationSession:
        """Questions (or an existing gold set), overlaid by what ``out`` already holds (resume)."""
        out = Path(out)
        if questions is None and from_gold is None and not out.exists():
            raise GraceError("give --questions Q.csv (or a .txt, one per line) or --from-gold GOLD.csv")
        base: list[LabelRecord] = []
        extra_cols: list[str] = []
        if from_gold is not None:
            base, extra_cols = read_labels(from_gold)
            kb.check_cited(base, from_gold)
        if questions is not None:
            asked, qcols = question_records(questions)
            have = {r.question_id for r in base}
            extra_cols += [c for c in qcols if c not in extra_cols]
            base += [r for r in asked if r.question_id not in have]
        session = cls(out, [], annotator, kb, extra_cols)
        session._writer.acquire()
        try:
            if out.exists() and (from_gold is None or out.resolve() != Path(from_gold).resolve()):
                saved, saved_cols = read_labels(out)
                kb.check_cited(saved, out)
                base = _overlay(base, saved)
                extra_cols += [c for c in saved_cols if c not in extra_cols]
            session.records, session.extra_columns = base, extra_cols
            session.index = {r.question_id: i for i, r in enumerate(base)}
            session.suggestions = _carried_suggestions(base, kb)
            session._writer.remove_stale_temp_files()
            if out.exists():  # the version before this session, beside it: one slip of a key is never final
                keep_backup(out)
            session.write()
        except BaseException:
            session.close()
            raise
        return session

    # -- what the page shows: suggestions, a subset, an order ---------------------------------------

    def use_suggestions(self, suggestions: Mapping[str, Suggestion], origin: str | Path) -> int:
        """Show ``suggestions`` (they win over a draft's or a saved row's); returns how many match a question."""
        known = {q: s for q, s in suggestions.items() if q in self.index}
        if suggestions and not known:
            raise GraceError(
                f"{origin}: none of its {len(suggestions)} question_id(s) is among the {len(self.records)} questions "
                f"being labelled (first: {next(iter(suggestions))!r}); suggest for these questions with "
                "'grace annotations suggest QUESTIONS --kb KB --run RUN --out SUGGESTIONS.csv'"
            )
        for s in known.values():
            self._check_suggestion(s, origin)
        self.suggestions.update(known)
        return len(known)

    def only(self, suspects: str | Path) -> int:
        """Walk just the questions an audit lists (``--only SUSPECTS.csv``), its alternative label suggested.

        A near-duplicate row names several questions joined by ``;``; each is opened. An ID
        the labels do not hold raises ``GraceError`` naming the line. Returns the count.
        """
        from annotations.audit import read_suspects

        path = Path(suspects)
        rows = read_suspects(path)
        if not rows:
            raise GraceError(f"{path}: lists no suspect; nothing to review")
        ids: dict[str, None] = {}
        found: dict[str, Suggestion] = {}
        for row in rows:
            qids = list(dict.fromkeys(row.question_ids))
            for qid in qids:
                if qid not in self.index:
                    raise GraceError(
                        f"{where(path, row.line)}: question {qid!r} is not in the gold labels being reviewed "
                        f"({len(self.records)} questions, saving to {self.out}); fix or delete the row, or audit "
                        f"this gold file again: grace annotations audit {self.out} --kb KB --run RUN --out {path}"
                    )
                ids[qid] = None
                self.audit.setdefault(qid, []).append(
                    {"kind": row.kind, "check": row.check, "reason": row.reason, "gold": row.gold,
                     "suggested": row.suggested, "questions": len(qids)}
                )
                if row.suggested and qid not in found:  # the strongest row (listed first) suggests
                    support = round(row.agree / row.voters, 4) if row.voters and row.agree <= row.voters else None
                    found[qid] = Suggestion(
                        question_id=qid, question=row.question, suggested=normal_label(row.suggested), support=support,
                        source=f"audit:{path}", voters=row.voters, reason=row.reason, line=row.line,
                    )
        for sug in found.values():
            self._check_suggestion(sug, path)
        self.suggestions.update(found)
        self.view = list(ids)
        return len(ids)

    def only_questions(self, question_ids: list[str]) -> int:
        """Walk just these questions (``--question ID``, as ``grace view`` offers to fix one gold label)."""
        ids = list(dict.fromkeys(question_ids))
        unknown = [q for q in ids if q not in self.index]
        if unknown:
            raise GraceError(f"no question {', '.join(map(repr, unknown))} in {self.out} ({len(self.records)} "
                             "questions); give an ID of the gold file")
        self.view = [q for q in (self.view if self.view is not None else ids) if q in ids]
        return len(self.view)

    def order_by(self, order: str) -> None:
        """``file`` keeps the order; ``informative`` puts the weakest suggestions first."""
        if order not in ORDERS:
            raise GraceError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
        if order == "informative":
            with self._lock:
                self.view = informative_order(self._ids(), self.suggestions)

    def _check_suggestion(self, s: Suggestion, origin: str | Path) -> None:
        unknown = [c for c in s.citations if c not in self.kb.by_id]
        if unknown and s.usable:
            raise GraceError(
                f"{where(origin, s.line or None)}: question {s.question_id!r} is suggested article(s) "
                f"{', '.join(unknown)}, not in the KB {self.kb.path} ({len(self.kb.articles)} articles); "
                "make the suggestions again against this KB"
            )

    # -- saving ------------------------------------------------------------------------------------

    def save(
        self,
        question_id: str,
        *,
        status: str,
        expected_citations: list[str] | None = None,
        must_refuse: bool = False,
        question: str | None = None,
        expected_answer: str | None = None,
        notes: str | None = None,
        citations_needed: str | None = None,
    ) -> LabelRecord:
        """Apply one change and rewrite the file atomically before returning (nothing is lost).

        ``citations_needed`` (any | all; None: as it was) is written to the gold's optional column of that name:
        the file gains the column the first time a question's articles are marked all required."""
        if question_id not in self.index:
            raise LabelRejected(f"no question with id {question_id!r}")
        if status not in STATUSES:
            raise LabelRejected(f"status must be one of {', '.join(STATUSES)}")
        cites = split_ids(";".join(expected_citations or []))
        unknown = [c for c in cites if c not in self.kb.by_id]
        if unknown:
            raise LabelRejected(f"unknown article ID(s): {', '.join(unknown)}")
        if status == "labelled" and must_refuse and cites:
            raise LabelRejected("a must_refuse question cites no article; clear one of the two")
        if status == "labelled" and not must_refuse and not cites:
            raise LabelRejected("choose an answering article or mark must_refuse")
        if question is not None and not question.strip():
            raise LabelRejected("the question text cannot be empty")
        if citations_needed is not None and citations_needed not in NEEDED_VALUES:
            raise LabelRejected(f"{CITATIONS_NEEDED} must be one of {', '.join(NEEDED_VALUES)}")
        with self._lock:
            rec = self.records[self.index[question_id]]
            if status == "draft" and rec.status != "draft":
                raise LabelRejected("only 'grace gold generate' writes drafts; label the question instead")
            if status == "draft":  # a text edit of a draft keeps its proposed label
                cites, must_refuse = list(rec.expected_citations), rec.must_refuse
            elif status != "labelled":
                cites, must_refuse = [], False
            self._stamp_provenance(rec, status, cites, must_refuse)
            rec.status, rec.expected_citations, rec.must_refuse = status, cites, must_refuse
            rec.expected_titles = [self.kb.by_id[c].title for c in cites]
            if question is not None and question.strip() != rec.question:
                if not rec.original_question:
                    rec.original_question = rec.question
                rec.question = question.strip()
                if rec.question == rec.original_question:
                    rec.original_question = ""
            if expected_answer is not None:
                rec.expected_answer = expected_answer.strip()
            if notes is not None:
                rec.notes = notes.strip()
            if citations_needed is not None:
                if citations_needed == "all" and CITATIONS_NEEDED not in self.extra_columns:
                    self.extra_columns.append(CITATIONS_NEEDED)
                if CITATIONS_NEEDED in self.extra_columns:
                    rec.extra[CITATIONS_NEEDED] = citations_needed
            rec.annotator, rec.labelled_at = self.annotator, _now()
            self._write_locked()
            self.reviewed.add(question_id)
            return copy.deepcopy(rec)

    def _stamp_provenance(self, rec: LabelRecord, status: str, cites: list[str], must_refuse: bool) -> None:
        """``human``, ``accepted_suggestion`` or ``changed_suggestion``: the saved label against the one shown.

        A save that leaves the label as it was, judged against the same suggestion (a text
        edit), keeps its provenance; shown a new suggestion, keeping the label changes it.
        """
        s = self.suggestions.get(rec.question_id)
        s = s if s is not None and s.usable else None
        if status != "labelled":
            rec.provenance = ""
            if s is not None:  # kept, so reopening the file shows the same suggestion
                rec.suggested, rec.suggestion_source = s.suggested, s.source
            return
        label = label_of(cites, must_refuse)
        if rec.status == "labelled" and rec.label == label and rec.provenance and rec.suggested == (s.suggested if s else ""):
            return
        if s is None:
            rec.provenance, rec.suggested, rec.suggestion_source = "human", "", ""
        else:
            rec.provenance = "accepted_suggestion" if label == s.suggested else "changed_suggestion"
            rec.suggested, rec.suggestion_source = s.suggested, s.source

    def write(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        atomic_write_text(self.out, render_csv(self.records, self.extra_columns))

    # -- reading -----------------------------------------------------------------------------------

    def progress(self) -> dict:
        """Counts over the questions the page walks (all of them unless ``--only``); indexes into that walk."""
        with self._lock:
            ids = self._ids()
            recs = [self.records[self.index[q]] for q in ids]
            labelled = [r for r in recs if r.status == "labelled"]
            refuse = sum(r.must_refuse for r in labelled)
            first = next((i for i, r in enumerate(recs) if r.status in ("unlabelled", "draft")), None)
            if self.audit:  # reviewing an audit's list: every question is to look at, once
                todo = next((i for i, q in enumerate(ids) if q not in self.reviewed), None)
            else:
                todo = first
            return {
                "total": len(recs),
                "labelled": len(labelled),
                "skipped": sum(r.status == "skipped" for r in recs),
                "unlabelled": sum(r.status == "unlabelled" for r in recs),
                "draft": sum(r.status == "draft" for r in recs),
                "must_refuse": refuse,
                "must_refuse_share": round(refuse / len(labelled), 4) if labelled else 0.0,
                "multi_article": sum(len(r.expected_citations) > 1 for r in labelled),
                "first_unlabelled": first,
                "first_todo": todo,  # where the page starts, and where u goes
                "reviewed": sum(q in self.reviewed for q in ids),
                "provenance": dict(Counter(r.provenance for r in labelled if r.provenance)),
                "suggested": sum(q in self.suggestions and self.suggestions[q].usable for q in ids),
                "file_total": len(self.records),
            }

    def _ids(self) -> list[str]:
        return list(self.view) if self.view is not None else [r.question_id for r in self.records]

    def view_ids(self) -> list[str]:
        with self._lock:
            return self._ids()

    def record(self, i: int) -> LabelRecord:
        """A copy of the ``i``-th question of the walk, so a page being built never sees a save half-applied."""
        with self._lock:
            ids = self._ids()
            if not 0 <= i < len(ids):
                raise LookupError(f"question index {i} out of range (0..{len(ids) - 1})")
            return copy.deepcopy(self.records[self.index[ids[i]]])

    def snapshot(self) -> list[LabelRecord]:
        """Copies of every record as saved (a team's agreement and gold read these, never a half-applied save).

        Shallow, with the lists copied: a save assigns new values to a record's fields, never edits them in place,
        so this is a consistent picture at a fraction of a deep copy's cost (it runs after every save of a team)."""
        with self._lock:
            return [_copy(r) for r in self.records]

    def suggestion(self, question_id: str) -> Suggestion | None:
        return self.suggestions.get(question_id)

    def statuses(self) -> list[str]:
        with self._lock:
            return [self.records[self.index[q]].status for q in self._ids()]

    def close(self) -> None:
        self._writer.release()


def _copy(rec: LabelRecord) -> LabelRecord:
    out = copy.copy(rec)
    out.expected_citations, out.expected_titles, out.extra = list(rec.expected_citations), list(rec.expected_titles), \
        dict(rec.extra)
    return out


def _carried_suggestions(records: list[LabelRecord], kb: KB) -> dict[str, Suggestion]:
    """What the file itself suggests: a draft's proposed label, else what a saved label was judged against."""
    out: dict[str, Suggestion] = {}
    for r in records:
        if r.status == "draft" and r.proposed:
            out[r.question_id] = Suggestion(
                question_id=r.question_id, question=r.question, suggested=r.proposed,
                source=r.suggestion_source or "draft", reason="a drafted label: not gold until a person accepts it",
            )
        elif r.suggested:
            s = Suggestion(question_id=r.question_id, question=r.question, suggested=normal_label(r.suggested),
                           source=r.suggestion_source, reason="the suggestion shown when this question was labelled")
            if all(c in kb.by_id for c in s.citations):  # one retired since is dropped, not offered
                out[r.question_id] = s
    return out


def _overlay(base: list[LabelRecord], saved: list[LabelRecord]) -> list[LabelRecord]:
    """Saved work wins over the questions file; saved questions missing from it are kept, not lost."""
    by_id = {r.question_id: r for r in saved}
    out: list[LabelRecord] = []
    for rec in base:
        s = by_id.pop(rec.question_id, None)
        if s is None:
            out.append(rec)
            continue
        if s.question != rec.question and not s.original_question:
            s.original_question = rec.question
        s.extra = {**s.extra, **{k: v for k, v in rec.extra.items() if v}}
        out.append(s)
    out.extend(r for r in saved if r.question_id in by_id)
    return out


def default_annotator() -> str:
    for var in ("GRACE_ANNOTATOR", "USER", "USERNAME"):
        if os.environ.get(var):
            return os.environ[var]
    return "annotator"
