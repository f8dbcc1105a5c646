"""One annotation session: every question, its label, and the file saved after each change.

A threading lock serialises saves, and each save rewrites the whole file with
write-then-rename, so a killed server leaves the last complete file behind; an
advisory lock on ``.OUT.lock`` stops a second server from overwriting the first.
The file format lives in :mod:`annotations.labels`.
"""

from __future__ import annotations

import copy
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from annotations.labels import OUT_COLUMNS, STATUSES, LabelRecord, read_labels, read_rows, render_csv
from annotations.single_writer import SingleWriter
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from kb_builder.gold import read_questions, split_ids

if TYPE_CHECKING:
    from kb_builder.store import KB


class LabelRejected(ValueError):
    """A save the server refuses (unknown article, refuse plus citations): the page shows why."""


def check_known_ids(records: list[LabelRecord], kb: KB, path: Path) -> None:
    for rec in records:
        unknown = [c for c in rec.expected_citations if c not in kb.by_id]
        if unknown:
            raise GraceError(
                f"{where(path, rec.line)}: question {rec.question_id!r} cites article(s) {', '.join(unknown)} "
                f"not in the KB {kb.path} ({len(kb.articles)} articles); fix the row or annotate against "
                "the KB it was labelled on ('grace annotations validate' names retired IDs)"
            )


def _question_extras(path: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Extra columns of a questions CSV (a category, a source), kept in the output."""
    if path.suffix.lower() not in {".csv", ".tsv"}:
        return {}, []
    header, rows = read_rows(path)
    cols = [h for h in header if h not in OUT_COLUMNS]
    return {row["question_id"].strip(): {c: row.get(c, "") for c in cols} for _, row in rows}, cols


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class AnnotationSession:
    """All questions and their labels, and the one file they are saved to after every change."""

    def __init__(self, out: Path, records: list[LabelRecord], annotator: str, kb: KB, extra_columns: list[str]):
        self.out, self.records, self.annotator, self.kb = out, records, annotator, kb
        self.extra_columns = extra_columns
        self.index = {r.question_id: i for i, r in enumerate(records)}
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
            check_known_ids(base, kb, Path(from_gold))
        if questions is not None:
            qpath = Path(questions)
            extras, qcols = _question_extras(qpath)
            have = {r.question_id for r in base}
            extra_cols += [c for c in qcols if c not in extra_cols]
            base += [
                LabelRecord(q.question_id, q.question, line=q.line, extra=extras.get(q.question_id, {}))
                for q in read_questions(qpath)
                if q.question_id not in have
            ]
        session = cls(out, [], annotator, kb, extra_cols)
        session._writer.acquire()
        try:
            if out.exists() and (from_gold is None or out.resolve() != Path(from_gold).resolve()):
                saved, saved_cols = read_labels(out)
                check_known_ids(saved, kb, out)
                base = _overlay(base, saved)
                extra_cols += [c for c in saved_cols if c not in extra_cols]
            session.records, session.extra_columns = base, extra_cols
            session.index = {r.question_id: i for i, r in enumerate(base)}
            session._writer.remove_stale_temp_files()
            session.write()
        except BaseException:
            session.close()
            raise
        return session

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
    ) -> LabelRecord:
        """Apply one change and rewrite the file atomically before returning (nothing is lost)."""
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
        with self._lock:
            rec = self.records[self.index[question_id]]
            if status != "labelled":
                cites, must_refuse = [], False
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
            rec.annotator, rec.labelled_at = self.annotator, _now()
            self._write_locked()
            return rec

    def write(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        atomic_write_text(self.out, render_csv(self.records, self.extra_columns))

    # -- reading -----------------------------------------------------------------------------------

    def progress(self) -> dict:
        with self._lock:
            labelled = [r for r in self.records if r.status == "labelled"]
            refuse = sum(r.must_refuse for r in labelled)
            first = next((i for i, r in enumerate(self.records) if r.status == "unlabelled"), None)
            return {
                "total": len(self.records),
                "labelled": len(labelled),
                "skipped": sum(r.status == "skipped" for r in self.records),
                "unlabelled": sum(r.status == "unlabelled" for r in self.records),
                "must_refuse": refuse,
                "must_refuse_share": round(refuse / len(labelled), 4) if labelled else 0.0,
                "multi_article": sum(len(r.expected_citations) > 1 for r in labelled),
                "first_unlabelled": first,
            }

    def record(self, i: int) -> LabelRecord:
        """A copy, so a page being built never sees a save half-applied."""
        with self._lock:
            return copy.deepcopy(self.records[i])

    def statuses(self) -> list[str]:
        with self._lock:
            return [r.status for r in self.records]

    def close(self) -> None:
        self._writer.release()


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
