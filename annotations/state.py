"""The annotation file: the gold CSV contract plus the labeller's bookkeeping.

Columns are ``GOLD_COLUMNS`` then ``status, annotator, labelled_at, expected_titles,
original_question``, then any extra columns the questions came with (a ``category``,
say). Every question is written, labelled or not, so the file *is* the task:
reopening resumes it, and ``read_gold`` ignores rows whose ``status`` is
``skipped`` or ``unlabelled``. ``expected_titles`` keeps the cited articles' titles
at labelling time, so a later KB rebuild can still say which article was meant.
"""

from __future__ import annotations

import csv
import io
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from kb_builder.errors import GraceError, where
from kb_builder.gold import GOLD_COLUMNS, parse_bool, read_questions, split_ids
from kb_builder.store import atomic_write_text

if TYPE_CHECKING:
    from kb_builder.store import KB

STATUSES = ("labelled", "skipped", "unlabelled")
BOOK_COLUMNS = ["status", "annotator", "labelled_at", "expected_titles", "original_question"]
OUT_COLUMNS = GOLD_COLUMNS + BOOK_COLUMNS
TITLE_SEP = " | "
REFUSE = "REFUSE"


class LabelRejected(ValueError):
    """A save the server refuses (unknown article, refuse plus citations): the page shows why."""


@dataclass
class LabelRecord:
    question_id: str
    question: str
    expected_citations: list[str] = field(default_factory=list)
    must_refuse: bool = False
    expected_answer: str = ""
    notes: str = ""
    status: str = "unlabelled"
    annotator: str = ""
    labelled_at: str = ""
    expected_titles: list[str] = field(default_factory=list)
    original_question: str = ""
    line: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str | None:
        """``REFUSE`` or the cited IDs (sorted, ``;``-joined); ``None`` when not labelled."""
        if self.status != "labelled":
            return None
        return REFUSE if self.must_refuse else ";".join(sorted(self.expected_citations))

    def to_row(self) -> dict[str, str]:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "expected_answer": self.expected_answer,
            "expected_citations": ";".join(self.expected_citations),
            "must_refuse": "true" if self.must_refuse else "false",
            "notes": self.notes,
            "status": self.status,
            "annotator": self.annotator,
            "labelled_at": self.labelled_at,
            "expected_titles": TITLE_SEP.join(self.expected_titles),
            "original_question": self.original_question,
            **self.extra,
        }

    def to_json(self) -> dict:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "expected_citations": list(self.expected_citations),
            "must_refuse": self.must_refuse,
            "expected_answer": self.expected_answer,
            "notes": self.notes,
            "status": self.status,
            "annotator": self.annotator,
            "labelled_at": self.labelled_at,
            "original_question": self.original_question,
            "extra": dict(self.extra),
        }


def split_titles(value: str) -> list[str]:
    sep = "|" if "|" in (value or "") else ";"
    return [t.strip() for t in (value or "").split(sep) if t.strip()]


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and non-blank rows of a label CSV; structural problems raise ``GraceError``."""
    if not path.exists():
        raise GraceError(f"{path}: file not found")
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, expected a CSV file")
    rows: list[tuple[int, dict[str, str]]] = []
    last = 0
    with path.open(newline="", encoding="utf-8-sig") as fh:
        # strict: an unbalanced quote would otherwise swallow every later row into one field, silently
        reader = csv.DictReader(fh, strict=True)
        try:
            header = [h.strip() for h in (reader.fieldnames or [])]
            if not header:
                raise GraceError(f"{path}: the file is empty; expected a header with question_id, question")
            reader.fieldnames = header
            missing = [c for c in ("question_id", "question") if c not in header]
            if missing:
                raise GraceError(
                    f"{where(path, 1)}: missing column(s) {', '.join(missing)}; the header has {', '.join(header)}"
                )
            last = 1
            for row in reader:
                last = reader.line_num
                if None in row:
                    raise GraceError(
                        f"{where(path, reader.line_num)}: more fields than header columns (an unquoted comma?)"
                    )
                if all(not (v or "").strip() for v in row.values()):
                    continue
                rows.append((reader.line_num, {k: v or "" for k, v in row.items()}))
        except csv.Error as exc:
            hint = "; an unclosed quote?" if "end of data" in str(exc) else ""
            raise GraceError(f"{where(path, last + 1)}: unreadable CSV ({exc}{hint})") from None
        except UnicodeDecodeError:
            raise GraceError(f"{path}: not UTF-8 text; save the CSV as UTF-8") from None
    return header, rows


def row_to_record(path: Path, line: int, row: dict[str, str]) -> LabelRecord:
    """One row as a record; a value that cannot be right raises ``GraceError`` naming the line."""
    qid = row.get("question_id", "").strip()
    question = row.get("question", "").strip()
    if not qid:
        raise GraceError(f"{where(path, line)}: empty question_id")
    if not question:
        raise GraceError(f"{where(path, line)}: question {qid!r} has an empty question")
    must_refuse = parse_bool(row.get("must_refuse", ""), path, line, "must_refuse")
    cites = split_ids(row.get("expected_citations", ""))
    status = row.get("status", "").strip().lower()
    if status and status not in STATUSES:
        raise GraceError(f"{where(path, line)}: status must be one of {', '.join(STATUSES)}, got {status!r}")
    if not status:
        status = "labelled" if (must_refuse or cites) else "unlabelled"
    if status == "labelled" and must_refuse and cites:
        raise GraceError(
            f"{where(path, line)}: question {qid!r} is must_refuse but lists expected_citations "
            f"{';'.join(cites)}; clear one of the two"
        )
    if status == "labelled" and not must_refuse and not cites:
        raise GraceError(
            f"{where(path, line)}: question {qid!r} is marked labelled but has no expected_citations "
            "and must_refuse is false"
        )
    known = set(OUT_COLUMNS)
    return LabelRecord(
        question_id=qid,
        question=question,
        expected_citations=cites if status == "labelled" else [],
        must_refuse=must_refuse if status == "labelled" else False,
        expected_answer=row.get("expected_answer", "").strip(),
        notes=row.get("notes", "").strip(),
        status=status,
        annotator=row.get("annotator", "").strip(),
        labelled_at=row.get("labelled_at", "").strip(),
        expected_titles=split_titles(row.get("expected_titles", "")),
        original_question=row.get("original_question", "").strip(),
        line=line,
        extra={k: v for k, v in row.items() if k not in known},
    )


def read_labels(path: str | Path) -> tuple[list[LabelRecord], list[str]]:
    """All rows of a gold or annotation CSV (labelled or not) and its extra columns, strictly."""
    path = Path(path)
    header, rows = read_rows(path)
    out: list[LabelRecord] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        rec = row_to_record(path, line, row)
        if rec.question_id in seen:
            raise GraceError(
                f"{where(path, line)}: duplicate question_id {rec.question_id!r} (first on line {seen[rec.question_id]})"
            )
        seen[rec.question_id] = line
        out.append(rec)
    if not out:
        raise GraceError(f"{path}: no questions found")
    return out, [h for h in header if h not in OUT_COLUMNS]


def render_csv(records: list[LabelRecord], extra_columns: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=OUT_COLUMNS + extra_columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow(rec.to_row())
    return buf.getvalue()


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
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class AnnotationSession:
    """All questions and their labels, and the one file they are saved to after every change."""

    def __init__(self, out: Path, records: list[LabelRecord], annotator: str, kb: KB, extra_columns: list[str]):
        self.out, self.records, self.annotator, self.kb = out, records, annotator, kb
        self.extra_columns = extra_columns
        self.index = {r.question_id: i for i, r in enumerate(records)}
        self._lock = threading.Lock()
        self._lock_fh = None

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
        session._acquire_writer_lock()
        try:
            if out.exists() and (from_gold is None or out.resolve() != Path(from_gold).resolve()):
                saved, saved_cols = read_labels(out)
                check_known_ids(saved, kb, out)
                base = _overlay(base, saved)
                extra_cols += [c for c in saved_cols if c not in extra_cols]
            session.records, session.extra_columns = base, extra_cols
            session.index = {r.question_id: i for i, r in enumerate(base)}
            session._remove_stale_temp_files()
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

    def statuses(self) -> list[str]:
        with self._lock:
            return [r.status for r in self.records]

    # -- the one-writer rule -----------------------------------------------------------------------

    def _acquire_writer_lock(self) -> None:
        """Two servers on one file would overwrite each other's labels; refuse the second."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock, single use assumed
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fh = (self.out.parent / f".{self.out.name}.lock").open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise GraceError(
                f"{self.out}: another 'grace annotate' is already writing this file; "
                "close it first or choose another --out"
            ) from None
        self._lock_fh = fh

    def _remove_stale_temp_files(self) -> None:
        """A server killed mid-write leaves its temp file; the real file is intact, so drop it."""
        cutoff = time.time() - 60
        for tmp in self.out.parent.glob(f".{self.out.name}.*"):
            if tmp.suffix != ".lock" and tmp.stat().st_mtime < cutoff:
                tmp.unlink(missing_ok=True)

    def close(self) -> None:
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None


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
