"""The annotation file format: the gold CSV contract plus the labeller's bookkeeping.

Columns are ``GOLD_COLUMNS`` then ``status, annotator, labelled_at, expected_titles,
original_question, provenance, suggested, suggestion_source, labelled_by, adjudicated_by,
adjudication_reason``, then any extra columns the
questions came with (a ``category``, say). Every question is written, labelled or not, so
the file *is* the task: reopening resumes it, and ``read_gold`` ignores rows whose
``status`` is ``skipped``, ``unlabelled`` or ``draft``. A ``draft`` row (from ``grace gold
generate``) carries a proposed label that counts only once a person accepts it.

``provenance`` says where a saved label came from: ``human`` (no suggestion was shown),
``accepted_suggestion`` or ``changed_suggestion``; ``suggested`` and ``suggestion_source``
keep what was suggested and by whom, so agreement between the suggester and people can be
measured later (``grace annotations agree``). A team's gold (``grace annotate --team``) also says
who labelled each question (``labelled_by``) and, where they disagreed, who decided and why
(``adjudicated_by``, ``adjudication_reason``). ``expected_titles`` keeps the cited articles' titles
at labelling time, so a later KB rebuild can still say which article was meant.
Cells that a spreadsheet would run as a formula (a question starting with ``=``,
``+``, ``-`` or ``@``) are written with a leading ``'`` and read back without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import GraceError, where
from harness.core.files import csv_text
from kb_builder.gold import (
    CITATIONS_NEEDED,
    EXPECTED_CITATIONS,
    GOLD_COLUMNS,
    ID_SEP,
    MUST_REFUSE,
    QUESTION_COLUMNS,
    STATUS,
    GoldRecord,
    check_label,
    check_unique,
    parse_needed,
    parse_row,
    read_table,
)

STATUSES = ("labelled", "skipped", "unlabelled", "draft")
PROVENANCES = ("human", "accepted_suggestion", "changed_suggestion")
BOOK_COLUMNS = [STATUS, "annotator", "labelled_at", "expected_titles", "original_question", "provenance", "suggested",
                "suggestion_source", "labelled_by", "adjudicated_by", "adjudication_reason"]
OUT_COLUMNS = GOLD_COLUMNS + BOOK_COLUMNS
TITLE_SEP = " | "
REFUSE = "REFUSE"


@dataclass
class LabelRecord(GoldRecord):
    """A row of an annotation file: the gold record plus the labeller's bookkeeping (``BOOK_COLUMNS``)."""

    status: str = "unlabelled"
    annotator: str = ""
    labelled_at: str = ""
    expected_titles: list[str] = field(default_factory=list)
    original_question: str = ""
    provenance: str = ""
    suggested: str = ""  # a label string (``17;18`` or ``REFUSE``), as suggested when the label was saved
    suggestion_source: str = ""
    labelled_by: str = ""  # a team's gold (``grace annotate --team``): the people whose labels it comes from, ;-joined
    adjudicated_by: str = ""  # ... the reviewer who decided it when they disagreed
    adjudication_reason: str = ""  # ... and why

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
        return ID_SEP.join(sorted(self.expected_citations)) or None

    def book_cells(self) -> dict[str, str]:
        """The bookkeeping columns as the CSV spells them, in ``BOOK_COLUMNS`` order."""
        return dict(zip(BOOK_COLUMNS, (
            self.status, self.annotator, self.labelled_at, TITLE_SEP.join(self.expected_titles),
            self.original_question, self.provenance, self.suggested, self.suggestion_source, self.labelled_by,
            self.adjudicated_by, self.adjudication_reason,
        ), strict=True))

    def to_row(self) -> dict[str, str]:
        return {**self.gold_cells(), **self.book_cells(), **self.extra}

    def to_json(self) -> dict:
        """The record for the annotation page: the CSV's cells, with the IDs a list and must_refuse a boolean."""
        cells = {**self.gold_cells(), **self.book_cells()}
        del cells["expected_titles"]
        return {**cells, EXPECTED_CITATIONS: list(self.expected_citations), MUST_REFUSE: self.must_refuse,
                "extra": dict(self.extra)}


def split_titles(value: str) -> list[str]:
    sep = "|" if "|" in (value or "") else ";"
    return [t.strip() for t in (value or "").split(sep) if t.strip()]


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and non-blank rows of a label CSV; structural problems raise ``GraceError``."""
    return read_table(path, QUESTION_COLUMNS)


def row_to_record(path: Path, line: int, row: dict[str, str]) -> LabelRecord:
    """One row as a record; a value that cannot be right raises ``GraceError`` naming the line."""
    gold = parse_row(path, line, row, known=OUT_COLUMNS)
    status = row.get(STATUS, "").strip().lower()
    if status and status not in STATUSES:
        raise GraceError(f"{where(path, line)}: {STATUS} must be one of {', '.join(STATUSES)}, got {status!r}")
    if not status:
        status = "labelled" if (gold.must_refuse or gold.expected_citations) else "unlabelled"
    if status in ("labelled", "draft"):
        check_label(path, gold, required=False)
    else:  # a row not labelled yet keeps no label
        gold.must_refuse, gold.expected_citations = False, []
    if status == "labelled" and not gold.must_refuse and not gold.expected_citations:
        raise GraceError(
            f"{where(path, line)}: question {gold.question_id!r} is marked labelled but has no {EXPECTED_CITATIONS} "
            f"and {MUST_REFUSE} is false"
        )
    parse_needed(row.get(CITATIONS_NEEDED), path, line)  # kept as written (an extra column); a bad value named here
    provenance = row.get("provenance", "").strip().lower()
    if provenance and provenance not in PROVENANCES:
        raise GraceError(f"{where(path, line)}: provenance must be one of {', '.join(PROVENANCES)}, got {provenance!r}")
    return LabelRecord(
        **vars(gold),
        status=status,
        annotator=row.get("annotator", "").strip(),
        labelled_at=row.get("labelled_at", "").strip(),
        expected_titles=split_titles(row.get("expected_titles", "")),
        original_question=row.get("original_question", "").strip(),
        provenance=provenance,
        suggested=row.get("suggested", "").strip(),
        suggestion_source=row.get("suggestion_source", "").strip(),
        labelled_by=row.get("labelled_by", "").strip(),
        adjudicated_by=row.get("adjudicated_by", "").strip(),
        adjudication_reason=row.get("adjudication_reason", "").strip(),
    )


def read_labels(path: str | Path) -> tuple[list[LabelRecord], list[str]]:
    """All rows of a gold or annotation CSV (labelled or not) and its extra columns, strictly."""
    path = Path(path)
    header, rows = read_rows(path)
    out: list[LabelRecord] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        rec = row_to_record(path, line, row)
        check_unique(path, line, rec.question_id, seen)
        out.append(rec)
    if not out:
        raise GraceError(f"{path}: no questions found")
    return out, [h for h in header if h not in OUT_COLUMNS]


def render_csv(records: list[LabelRecord], extra_columns: list[str]) -> str:
    return csv_text(OUT_COLUMNS + extra_columns, (rec.to_row() for rec in records))
