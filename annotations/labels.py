"""The annotation file format: the gold CSV contract plus the labeller's bookkeeping.

Columns are ``GOLD_COLUMNS`` then ``status, annotator, labelled_at, expected_titles,
original_question, provenance, suggested, suggestion_source``, then any extra columns the
questions came with (a ``category``, say). Every question is written, labelled or not, so
the file *is* the task: reopening resumes it, and ``read_gold`` ignores rows whose
``status`` is ``skipped``, ``unlabelled`` or ``draft``. A ``draft`` row (from ``grace gold
generate``) carries a proposed label that counts only once a person accepts it.

``provenance`` says where a saved label came from: ``human`` (no suggestion was shown),
``accepted_suggestion`` or ``changed_suggestion``; ``suggested`` and ``suggestion_source``
keep what was suggested and by whom, so agreement between the suggester and people can be
measured later (``grace annotations agree``). ``expected_titles`` keeps the cited articles' titles
at labelling time, so a later KB rebuild can still say which article was meant.
Cells that a spreadsheet would run as a formula (a question starting with ``=``,
``+``, ``-`` or ``@``) are written with a leading ``'`` and read back without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import csv_text, spreadsheet_unsafe
from kb_builder.gold import GOLD_COLUMNS, parse_bool, split_ids

STATUSES = ("labelled", "skipped", "unlabelled", "draft")
PROVENANCES = ("human", "accepted_suggestion", "changed_suggestion")
BOOK_COLUMNS = ["status", "annotator", "labelled_at", "expected_titles", "original_question", "provenance", "suggested",
                "suggestion_source"]
OUT_COLUMNS = GOLD_COLUMNS + BOOK_COLUMNS
TITLE_SEP = " | "
REFUSE = "REFUSE"


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
    provenance: str = ""
    suggested: str = ""  # a label string (``17;18`` or ``REFUSE``), as suggested when the label was saved
    suggestion_source: str = ""
    line: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str | None:
        """``REFUSE`` or the cited IDs (sorted, ``;``-joined); ``None`` when not labelled."""
        if self.status != "labelled":
            return None
        return self.proposed

    @property
    def proposed(self) -> str | None:
        """The label the row carries, labelled or draft: ``REFUSE``, the sorted IDs, or ``None``."""
        if self.must_refuse:
            return REFUSE
        return ";".join(sorted(self.expected_citations)) or None

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
            "provenance": self.provenance,
            "suggested": self.suggested,
            "suggestion_source": self.suggestion_source,
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
            "provenance": self.provenance,
            "suggested": self.suggested,
            "suggestion_source": self.suggestion_source,
            "extra": dict(self.extra),
        }


def split_titles(value: str) -> list[str]:
    sep = "|" if "|" in (value or "") else ";"
    return [t.strip() for t in (value or "").split(sep) if t.strip()]


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and non-blank rows of a label CSV; structural problems raise ``GraceError``."""
    header, rows = read_csv_rows(path)
    if not header:
        raise GraceError(f"{path}: the file is empty; expected a header with question_id, question")
    missing = [c for c in ("question_id", "question") if c not in header]
    if missing:
        raise GraceError(
            f"{where(path, 1)}: missing column(s) {', '.join(missing)}; the header has {', '.join(header)}"
        )
    return header, [(line, {k: spreadsheet_unsafe(v) or "" for k, v in row.items()}) for line, row in rows]


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
    if status in ("labelled", "draft") and must_refuse and cites:
        raise GraceError(
            f"{where(path, line)}: question {qid!r} is must_refuse but lists expected_citations "
            f"{';'.join(cites)}; clear one of the two"
        )
    if status == "labelled" and not must_refuse and not cites:
        raise GraceError(
            f"{where(path, line)}: question {qid!r} is marked labelled but has no expected_citations "
            "and must_refuse is false"
        )
    provenance = row.get("provenance", "").strip().lower()
    if provenance and provenance not in PROVENANCES:
        raise GraceError(f"{where(path, line)}: provenance must be one of {', '.join(PROVENANCES)}, got {provenance!r}")
    known = set(OUT_COLUMNS)
    return LabelRecord(
        question_id=qid,
        question=question,
        expected_citations=cites if status in ("labelled", "draft") else [],
        must_refuse=must_refuse if status in ("labelled", "draft") else False,
        expected_answer=row.get("expected_answer", "").strip(),
        notes=row.get("notes", "").strip(),
        status=status,
        annotator=row.get("annotator", "").strip(),
        labelled_at=row.get("labelled_at", "").strip(),
        expected_titles=split_titles(row.get("expected_titles", "")),
        original_question=row.get("original_question", "").strip(),
        provenance=provenance,
        suggested=row.get("suggested", "").strip(),
        suggestion_source=row.get("suggestion_source", "").strip(),
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
    return csv_text(OUT_COLUMNS + extra_columns, (rec.to_row() for rec in records))
