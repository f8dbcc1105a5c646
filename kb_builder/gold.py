"""The gold CSV contract: which article answers each question, or ``must_refuse``.

Columns: ``question_id, question, expected_answer, expected_citations, must_refuse,
notes`` (extra columns are kept in ``extra``). ``expected_citations`` holds article
IDs separated by ``;``. Three optional columns are read into a gold question too: ``groups``, the groups of the
user who asks (``;``-separated; a citation of an article whose ``audience`` has none of them is a
``forbidden_citation``), ``category``, the slice the report shows accuracy for, and ``citations_needed``:
``any`` (the default, also for an empty cell: any one of the listed articles answers) or ``all`` (the answer must
cite every listed article). Rows whose optional ``status`` column says ``skipped``, ``unlabelled`` or
``draft`` (a file still being labelled in ``grace annotate``, or questions ``grace gold generate``
proposed that no person has accepted yet) are not gold yet and are left out.

A file with questions and no label at all (only ``question_id, question``; label columns left empty; every row
``status=unlabelled``) is a *question set*: :func:`load_gold` reads it as questions with no label
(:attr:`GoldSet.labelled` false), which ``grace run`` asks and the scorer reports without accuracy, since a team
starts with questions and no gold. A file mixing labelled rows with unlabelled ones is gold in the making: an
unlabelled row must then say so (``status=unlabelled``) and is left out, so a forgotten label is an error, not a
question silently dropped. What needs labels (an audit, PPI's human file) asks :func:`require_labels`.
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
from harness.core.group_names import group_names

# The gold CSV's columns, spelled here only: every other module names them through these constants
# (tests/kb_builder/test_gold_format.py holds the source tree to that).
QUESTION_ID = "question_id"
QUESTION = "question"
EXPECTED_ANSWER = "expected_answer"
EXPECTED_CITATIONS = "expected_citations"
MUST_REFUSE = "must_refuse"
NOTES = "notes"
STATUS = "status"  # optional here; written by `grace annotate` and `grace gold generate`
GROUPS = "groups"  # optional: the asking user's groups, ";"-separated (permissions: forbidden_citation)
CATEGORY = "category"  # optional: the question's category (the report's per-category slices)
# optional: whether the listed expected_citations are alternatives ("any", the default: any one answers, GRACE's
# reading) or all required ("all": an answer must cite every one); recall and the outcome follow it
CITATIONS_NEEDED = "citations_needed"
NEEDED_VALUES = ("any", "all")
NO_CATEGORY = "(no category)"  # the slice of the questions whose category cell is empty, in a file that has the column
GOLD_COLUMNS = [QUESTION_ID, QUESTION, EXPECTED_ANSWER, EXPECTED_CITATIONS, MUST_REFUSE, NOTES]
QUESTION_COLUMNS = [QUESTION_ID, QUESTION]  # what a file of questions to label needs
LABEL_COLUMNS = [EXPECTED_CITATIONS, MUST_REFUSE]  # ... and what makes it gold
REQUIRED_COLUMNS = QUESTION_COLUMNS + LABEL_COLUMNS
SKIP_STATUSES = {"skipped", "unlabelled", "unlabeled", "draft"}
ID_SEP = ";"
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


@dataclass
class GoldRecord:
    """One row's gold columns, as typed: what a gold file and an annotation file have in common.

    :class:`GoldQuestion` (a question of a gold set) and ``annotations.labels.LabelRecord`` (a row of an
    annotation file, labelled or not, with the labeller's bookkeeping) are this record plus their own fields.
    """

    question_id: str  # the question's ID, unique in the file
    question: str  # the question as a model is asked it
    # the IDs of the articles that answer it, separated by ; in the file (empty for must_refuse)
    expected_citations: list[str] = field(default_factory=list)
    must_refuse: bool = False  # true when no article answers it and the right response is to refuse (then no citations)
    expected_answer: str = ""  # the answer in words, for people reading the set; scoring uses the citations, not this
    notes: str = ""  # the labeller's free-text notes
    line: int = 0  # not a column: the line of the file the row starts on, which error messages name
    extra: dict[str, str] = field(default_factory=dict)  # the row's other columns, as written

    def gold_cells(self) -> dict[str, str]:
        """The gold columns as the CSV spells them, in :data:`GOLD_COLUMNS` order."""
        return {
            QUESTION_ID: self.question_id,
            QUESTION: self.question,
            EXPECTED_ANSWER: self.expected_answer,
            EXPECTED_CITATIONS: ID_SEP.join(self.expected_citations),
            MUST_REFUSE: format_bool(self.must_refuse),
            NOTES: self.notes,
        }


@dataclass
class GoldQuestion(GoldRecord):
    """A question of a gold set: labelled, with either ``expected_citations`` or ``must_refuse``.

    ``groups`` and ``category`` are read from the ``groups`` and ``category`` columns (also kept in ``extra``, as
    written): None when the file has no such column or, for ``groups``, the cell is empty (no groups known: the
    permission check skips the question unless its responses carry ``user_groups``).
    """

    # the asking user's groups, separated by ; in the file; null when the column is absent or the cell empty
    groups: list[str] | None = None
    # the question's category (report slices); "(no category)" when the cell is empty; null: no column
    category: str | None = None
    # "any": the listed articles are alternatives (any one answers); "all": every one is required
    citations_needed: str = "any"

    @property
    def labelled(self) -> bool:
        """False for a question of a question set (see :func:`load_gold`): neither citations nor must_refuse."""
        return self.must_refuse or bool(self.expected_citations)

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


def parse_groups(value: str | None, path: Path, line: int) -> list[str] | None:
    """A ``groups`` cell: ``"staff; hr"`` -> ``["staff", "hr"]``; empty or no column -> None (not known).

    Another format (a JSON list, commas) is refused with how to write it: read as one group name it would
    silently make every restricted citation forbidden (or allowed)."""
    text = (value or "").strip()
    if not text:
        return None
    if any(ch in text for ch in '[]{}"\'') or "," in text:
        raise GraceError(f"{where(path, line)}: column '{GROUPS}' must list group names separated by '{ID_SEP}' "
                         f"(staff{ID_SEP}hr), got {value!r}")
    return group_names(text.split(ID_SEP)) or None


def parse_needed(value: str | None, path: Path, line: int) -> str:
    """A ``citations_needed`` cell: ``any`` (also empty or no column) or ``all``; anything else is refused, since
    read as the default it would silently change what the question's recall means."""
    text = (value or "").strip().lower()
    if not text:
        return NEEDED_VALUES[0]
    if text not in NEEDED_VALUES:
        raise GraceError(f"{where(path, line)}: column '{CITATIONS_NEEDED}' must be 'any' (any one of the listed "
                         f"articles answers) or 'all' (the answer must cite every one), got {value!r}")
    return text


def format_bool(value: bool) -> str:
    return "true" if value else "false"


def split_ids(value: str) -> list[str]:
    """``"17; 18;17"`` -> ``["17", "18"]`` (order kept, duplicates dropped)."""
    seen: list[str] = []
    for part in (value or "").replace(",", ID_SEP).split(ID_SEP):
        p = part.strip()
        if p and p not in seen:
            seen.append(p)
    return seen


def read_table(path: Path, required: list[str], text: str | None = None) -> tuple[list[str], list[Row]]:
    """Header and non-blank rows of a CSV that has the ``required`` columns, cells as typed (``grace annotate``
    writes ``'=...`` so a spreadsheet does not run a cell as a formula); a runaway quote or a row of the wrong
    width names its line."""
    header, rows = read_csv_rows(path, text)
    if not header:
        raise GraceError(f"{path}: the file is empty; expected a header row with {', '.join(required)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise GraceError(
            f"{where(path, 1)}: missing column(s) {', '.join(missing)}; the header has {', '.join(header)}"
        )
    return header, [(line, {k: spreadsheet_unsafe(v) or "" for k, v in row.items()}) for line, row in rows]


def parse_row(path: Path, line: int, row: dict[str, str], *, known: list[str] = GOLD_COLUMNS,
              seen: dict[str, int] | None = None) -> GoldRecord:
    """One row's gold columns, checked: a question ID and a question, must_refuse a boolean, the IDs split.

    ``seen`` (question ID -> line), when given, also refuses a question ID met before and records this one.
    Whether the row must carry a label is the reader's rule: :func:`check_label`. Columns not in ``known``
    go to ``extra``.
    """
    qid = (row.get(QUESTION_ID) or "").strip()
    question = (row.get(QUESTION) or "").strip()
    if not qid:
        raise GraceError(f"{where(path, line)}: empty {QUESTION_ID}")
    if not question:
        raise GraceError(f"{where(path, line)}: question {qid!r} has an empty {QUESTION}")
    if seen is not None:
        check_unique(path, line, qid, seen)
    return GoldRecord(
        question_id=qid,
        question=question,
        expected_citations=split_ids(row.get(EXPECTED_CITATIONS, "")),
        must_refuse=parse_bool(row.get(MUST_REFUSE, ""), path, line, MUST_REFUSE),
        expected_answer=(row.get(EXPECTED_ANSWER) or "").strip(),
        notes=(row.get(NOTES) or "").strip(),
        line=line,
        extra={k: v for k, v in row.items() if k not in known},
    )


def check_unique(path: Path, line: int, qid: str, seen: dict[str, int]) -> None:
    if qid in seen:
        raise GraceError(f"{where(path, line)}: duplicate {QUESTION_ID} {qid!r} (first on line {seen[qid]})")
    seen[qid] = line


def check_label(path: Path, rec: GoldRecord, *, required: bool = True) -> None:
    """A label is ``must_refuse`` or ``expected_citations``, not both; ``required``: and not neither."""
    if rec.must_refuse and rec.expected_citations:
        raise GraceError(
            f"{where(path, rec.line)}: question {rec.question_id!r} is {MUST_REFUSE} but lists {EXPECTED_CITATIONS} "
            f"{ID_SEP.join(rec.expected_citations)}; clear one of the two"
        )
    if required and not rec.must_refuse and not rec.expected_citations:
        raise GraceError(no_label(path, rec.line, rec.question_id))


def no_label(path: Path, line: int, qid: str) -> str:
    """What a gold row with no label is told."""
    return (f"{where(path, line)}: question {qid!r} has no {EXPECTED_CITATIONS} and {MUST_REFUSE} is false; "
            f"give the answering article ID(s) or set {MUST_REFUSE} to true, or set its {STATUS} to unlabelled to "
            "leave it out (a file where no row has a label runs as questions, without accuracy)")


@dataclass(frozen=True)
class GoldSet:
    """A gold file as read once: its questions, path and content hash (what run.json and report.json record).

    ``grace run`` reads the file once and hands this to every stage (asking, run.json, scoring), so
    the questions asked and the questions scored come from the same bytes.
    """

    path: Path
    hash: str  # file_hash's form: the first 16 hex digits of the SHA-256 of the bytes
    questions: tuple[GoldQuestion, ...]

    @property
    def labelled(self) -> bool:
        """True for gold (every question labelled), False for a question set (no question labelled)."""
        return any(q.labelled for q in self.questions)


def require_labels(gold: GoldSet, what: str) -> GoldSet:
    """``gold`` itself when it is labelled; a question set is told that ``what`` needs labels and how to get them."""
    if not gold.labelled:
        raise GraceError(f"{gold.path}: {what} needs labelled questions, and this file's {len(gold.questions)} "
                         f"question(s) carry no label ({EXPECTED_CITATIONS} or {MUST_REFUSE}); label them first "
                         "(grace annotate KB --questions FILE --out gold.csv; docs: Label gold cheaply)")
    return gold


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
    header, rows = read_table(path, QUESTION_COLUMNS, text)
    missing = [c for c in LABEL_COLUMNS if c not in header]
    if len(missing) == 1:  # one label column without the other: a misspelt header, not a question set
        raise GraceError(f"{where(path, 1)}: missing column(s) {missing[0]}; the header has {', '.join(header)} "
                         f"(a gold file needs both {' and '.join(LABEL_COLUMNS)}; a file of questions to run "
                         "without labels needs neither)")
    records: list[tuple[GoldRecord, str, Row]] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        status = (row.get(STATUS) or "").strip().lower()
        records.append((parse_row(path, line, row, seen=seen), status, (line, row)))
    gold = [(rec, status, raw) for rec, status, raw in records
            if status not in SKIP_STATUSES and (rec.must_refuse or rec.expected_citations)]
    if gold:  # gold, perhaps in the making: an unlabelled row must say so (status), a labelled one must be sound
        kept = [(rec, raw) for rec, status, raw in records if status not in SKIP_STATUSES]
        for rec, _ in kept:
            check_label(path, rec)
        return [_question(path, rec, raw) for rec, raw in kept]
    # a question set: no row carries a label (drafts' proposed labels are nobody's yet, and not asked)
    questions = [_question(path, GoldRecord(rec.question_id, rec.question, expected_answer=rec.expected_answer,
                                            notes=rec.notes, line=rec.line, extra=rec.extra), raw)
                 for rec, status, raw in records if status != "draft"]
    if not questions:
        drafts = f": its {len(records)} row(s) are drafts (status=draft), not gold until accepted in grace annotate " \
                 "--from-gold" if records else ""
        raise GraceError(f"{path}: no questions found{drafts}")
    return questions


def _question(path: Path, rec: GoldRecord, raw: Row) -> GoldQuestion:
    line, row = raw
    return GoldQuestion(**vars(rec), groups=parse_groups(row.get(GROUPS), path, line),
                        category=(row.get(CATEGORY) or "").strip() or NO_CATEGORY if CATEGORY in row else None,
                        citations_needed=parse_needed(row.get(CITATIONS_NEEDED), path, line))


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
    for line, row in read_table(path, QUESTION_COLUMNS)[1]:
        qid = row[QUESTION_ID].strip()
        text = row[QUESTION].strip()
        if not qid and not text:
            continue
        if not qid or not text:
            raise GraceError(f"{where(path, line)}: each row needs a {QUESTION_ID} and a {QUESTION}")
        if qid in seen:
            raise GraceError(f"{where(path, line)}: duplicate {QUESTION_ID} {qid!r}")
        seen.add(qid)
        out.append(Question(qid, text, line))
    if not out:
        raise GraceError(f"{path}: no questions found")
    return out

