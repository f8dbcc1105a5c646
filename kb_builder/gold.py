"""The gold CSV contract: which article answers each question, or ``must_refuse``.

Columns: ``question_id, question, expected_answer, expected_citations, must_refuse,
notes`` (extra columns are kept in ``extra``). ``expected_citations`` holds article
IDs separated by ``;``. Rows whose optional ``status`` column says ``skipped``, ``unlabelled`` or
``draft`` (a file still being labelled in ``grace annotate``, or questions ``grace gold generate``
proposed that no person has accepted yet) are not gold yet and are left out.
Every reader of gold files goes through here so a bad row
gets the same clear message (file, line, what to fix) wherever it is read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.csv_rows import Row, read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import decode_checked, read_text_checked, spreadsheet_unsafe

GOLD_COLUMNS = ["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"]
REQUIRED_COLUMNS = ["question_id", "question", "expected_citations", "must_refuse"]
SKIP_STATUSES = {"skipped", "unlabelled", "unlabeled", "draft"}
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


@dataclass
class GoldQuestion:
    question_id: str
    question: str
    expected_citations: list[str]
    must_refuse: bool
    expected_answer: str = ""
    notes: str = ""
    line: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The single label used for agreement and confusion matrices."""
        return "REFUSE" if self.must_refuse else self.expected_citations[0]


@dataclass
class Question:
    question_id: str
    question: str
    line: int = 0


def parse_bool(value: str, path: Path, line: int, column: str) -> bool:
    v = (value or "").strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise GraceError(f"{where(path, line)}: column '{column}' must be true or false, got {value!r}")


def split_ids(value: str) -> list[str]:
    """``"17; 18;17"`` -> ``["17", "18"]`` (order kept, duplicates dropped)."""
    seen: list[str] = []
    for part in (value or "").replace(",", ";").split(";"):
        p = part.strip()
        if p and p not in seen:
            seen.append(p)
    return seen


def _unescaped(row: dict[str, str]) -> dict[str, str]:
    """Cells as typed: ``grace annotate`` writes ``'=...`` so a spreadsheet does not run them as formulas."""
    return {k: spreadsheet_unsafe(v) or "" for k, v in row.items()}


def _open_csv(path: Path, required: list[str], text: str | None = None) -> list[Row]:
    """Rows of a CSV that has the ``required`` columns; a runaway quote or a row of the wrong width names its line."""
    header, rows = read_csv_rows(path, text)
    if not header:
        raise GraceError(f"{path}: the file is empty; expected a header row with {', '.join(required)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise GraceError(
            f"{where(path, 1)}: missing column(s) {', '.join(missing)}; the header has {', '.join(header)}"
        )
    return rows


@dataclass(frozen=True)
class GoldSet:
    """A gold file as read once: its questions, path and content hash (what run.json and report.json record).

    ``grace run`` reads the file once and hands this to every stage (asking, run.json, scoring), so
    the questions asked and the questions scored come from the same bytes.
    """

    path: Path
    hash: str  # file_hash's form: the first 16 hex digits of the SHA-256 of the bytes
    questions: tuple[GoldQuestion, ...]


def load_gold(path: str | Path) -> GoldSet:
    """Read, hash and check a gold CSV in one read of the file; a bad row raises a ``GraceError`` with its line."""
    path = Path(path)
    if not path.exists():
        raise GraceError(f"{path}: file not found")
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, expected a gold CSV")
    raw = path.read_bytes()
    text = decode_checked(path, raw)
    return GoldSet(path, hashlib.sha256(raw).hexdigest()[:16], tuple(_read_gold(path, text)))


def read_gold(path: str | Path) -> list[GoldQuestion]:
    """The questions of a gold CSV (see :func:`load_gold`)."""
    return list(load_gold(path).questions)


def _read_gold(path: Path, text: str) -> list[GoldQuestion]:
    out: list[GoldQuestion] = []
    seen: dict[str, int] = {}
    for line, row in _open_csv(path, REQUIRED_COLUMNS, text):
        row = _unescaped(row)  # never blank: the reader leaves blank rows out
        if (row.get("status") or "").strip().lower() in SKIP_STATUSES:
            continue  # written by `grace annotate` so a half-labelled file resumes; not gold yet
        qid = (row.get("question_id") or "").strip()
        question = (row.get("question") or "").strip()
        if not qid:
            raise GraceError(f"{where(path, line)}: empty question_id")
        if not question:
            raise GraceError(f"{where(path, line)}: question {qid!r} has an empty question")
        if qid in seen:
            raise GraceError(f"{where(path, line)}: duplicate question_id {qid!r} (first on line {seen[qid]})")
        seen[qid] = line
        must_refuse = parse_bool(row.get("must_refuse", ""), path, line, "must_refuse")
        cites = split_ids(row.get("expected_citations", ""))
        if must_refuse and cites:
            raise GraceError(
                f"{where(path, line)}: question {qid!r} is must_refuse but lists expected_citations "
                f"{';'.join(cites)}; clear one of the two"
            )
        if not must_refuse and not cites:
            raise GraceError(
                f"{where(path, line)}: question {qid!r} has no expected_citations and must_refuse is false; "
                "give the answering article ID(s) or set must_refuse to true"
            )
        extra = {k: v for k, v in row.items() if k not in GOLD_COLUMNS}
        out.append(
            GoldQuestion(
                question_id=qid,
                question=question,
                expected_citations=cites,
                must_refuse=must_refuse,
                expected_answer=(row.get("expected_answer") or "").strip(),
                notes=(row.get("notes") or "").strip(),
                line=line,
                extra=extra,
            )
        )
    if not out:
        raise GraceError(f"{path}: no questions found")
    return out


def read_questions(path: str | Path) -> list[Question]:
    """Questions to search or label: a CSV with ``question_id, question`` or a text file, one per line."""
    path = Path(path)
    if path.suffix.lower() not in {".csv", ".tsv"}:
        lines = read_text_checked(path).splitlines()
        qs = [Question(f"q{i}", t.strip(), i) for i, t in enumerate(lines, 1) if t.strip()]
        if not qs:
            raise GraceError(f"{path}: no questions found")
        return qs
    out: list[Question] = []
    seen: set[str] = set()
    for line, row in _open_csv(path, ["question_id", "question"]):
        qid = (spreadsheet_unsafe(row.get("question_id")) or "").strip()
        text = (spreadsheet_unsafe(row.get("question")) or "").strip()
        if not qid and not text:
            continue
        if not qid or not text:
            raise GraceError(f"{where(path, line)}: each row needs a question_id and a question")
        if qid in seen:
            raise GraceError(f"{where(path, line)}: duplicate question_id {qid!r}")
        seen.add(qid)
        out.append(Question(qid, text, line))
    if not out:
        raise GraceError(f"{path}: no questions found")
    return out

