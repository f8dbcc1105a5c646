"""The spot-check review file: every segment's human verdict, saved after each mark.

The file is the one ``grace spotcheck run`` writes (``spotcheck_review.csv``, columns
``REVIEW_COLUMNS``) and ``grace spotcheck calibrate`` reads, so the app keeps every
row and column it found, in order, and only fills ``supported``, ``note`` and
``reviewer``. Each mark rewrites the whole file write-then-rename under a lock, so a
killed server leaves the last complete file; reopening shows the marks already in it.

Two guards against losing work: an advisory lock on ``.NAME.lock`` refuses a second
server on the same file, and a save refuses to overwrite a file that changed on disk
since this server last read or wrote it (a re-run of ``grace spotcheck run``, a
spreadsheet): restarting the app picks the new file up, labels included.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from annotations.single_writer import SingleWriter
from annotations.state import LabelRejected
from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text, csv_text, spreadsheet_unsafe
from harness.spotcheck.review import HUMAN_FIELDS, parse_supported, parse_verdict, same_text
from harness.spotcheck.spotcheck_records import REQUIRED_REVIEW_COLUMNS, REVIEW_COLUMNS
from harness.web import Rejected

AnswerKey = tuple[str, str, int]  # model, question_id, repeat
SegmentKey = tuple[str, str, int, int]  # ... and segment_index


def key_of(body: dict) -> SegmentKey:
    """The claim a page's request names (model, question_id, repeat, segment_index), or a clear error."""
    try:
        key = (body["model"], body["question_id"], int(body["repeat"]), int(body["segment_index"]))
    except (KeyError, TypeError, ValueError):
        raise LabelRejected("expected model, question_id, repeat and segment_index") from None
    if not isinstance(key[0], str) or not isinstance(key[1], str):
        raise LabelRejected("model and question_id must be strings")
    return key


def check_label(supported: object, note: object, claims: bool, rejected: type[Rejected] = LabelRejected) -> None:
    """A verdict (true, false, null; "partial" in a claims review) and a note as a page sends them, or a clear error
    (``rejected``: a team's request is refused as its person's)."""
    if supported is not None and not isinstance(supported, bool) and not (supported == "partial" and claims):
        raise rejected("supported must be true, false or null" + (' or "partial"' if claims else ""))
    if note is not None and not isinstance(note, str):
        raise rejected("note must be a string")
    if note is not None and len(note) > 5000:
        raise rejected("note is too long (5000 characters at most)")


class SaveConflict(LabelRejected):
    """The file changed under the server: saving would overwrite someone else's rows."""

    status = 409


@dataclass
class ReviewRow:
    key: SegmentKey
    values: dict[str, str]  # every column, as read (and as written back)
    line: int

    @property
    def supported(self) -> bool | None:
        return parse_supported(self.values.get("supported", ""), Path("review"), self.line)  # checked on reading

    @property
    def verdict(self) -> str | None:
        """supported, partial (a claim's third label; not supported) or unsupported."""
        return parse_verdict(self.values.get("supported", ""), Path("review"), self.line)

    def to_json(self) -> dict:
        citation = self.values.get("citation", "")
        return {
            "segment_index": self.key[3],
            "citation": citation,
            "citations": [c.strip() for c in citation.replace(";", ",").split(",") if c.strip()],
            "text": self.values.get("segment_text", ""),
            "supported": "partial" if self.verdict == "partial" else self.supported,
            "note": self.values.get("note", ""),
            "reviewer": self.values.get("reviewer", ""),
        }


def read_review_rows(path: Path) -> tuple[list[str], list[ReviewRow]]:
    """Header and rows of a review CSV, strictly: a bad value names its line."""
    rows: list[ReviewRow] = []
    seen: dict[SegmentKey, int] = {}
    header, cells = read_csv_rows(path)
    missing = [c for c in REQUIRED_REVIEW_COLUMNS if c not in header]
    if missing:
        raise GraceError(f"{where(path, 1)}: missing column(s) {', '.join(missing)}; "
                         f"expected {', '.join(REVIEW_COLUMNS)}")
    for n, row in cells:
        values = {k: spreadsheet_unsafe(v) or "" for k, v in row.items()}  # escaped by the writer
        try:
            key = (values["model"], values["question_id"], int(values["repeat"] or 0), int(values["segment_index"]))
        except ValueError:
            raise GraceError(f"{where(path, n)}: repeat and segment_index must be whole numbers") from None
        parse_supported(values["supported"], path, n)
        if key in seen:
            raise GraceError(f"{where(path, n)}: segment {key[3]} of {key[0]}/{key[1]}/repeat {key[2]} "
                             f"is listed twice (first on line {seen[key]})")
        seen[key] = n
        rows.append(ReviewRow(key, values, n))
    return header, rows


class ReviewSession:
    """All segments to review, grouped by answer, and the file every mark is saved to."""

    def __init__(self, source: Path, out: Path, header: list[str], rows: list[ReviewRow], reviewer: str):
        self.source, self.out, self.reviewer = source, out, reviewer
        self.header = header + [c for c in ("note", "reviewer") if c not in header]
        self.rows = rows
        self.by_key = {r.key: r for r in rows}
        answers: dict[AnswerKey, list[ReviewRow]] = {}
        for r in rows:
            answers.setdefault(r.key[:3], []).append(r)
        self.answers = [sorted(v, key=lambda r: r.key[3]) for v in answers.values()]
        self._lock = threading.Lock()
        self._writer = SingleWriter(self.out, "review app")
        self._seen: tuple[int, int] | None = None

    @classmethod
    def open(cls, source: str | Path, out: str | Path | None = None, *, reviewer: str = "",
             blank: bool = False) -> ReviewSession:
        """Rows of ``source``; with a separate ``out``, the labels it already holds are laid over them (resume).
        ``blank``: the source's own labels are left out (a team member's file starts from the claims alone, never
        from someone else's verdicts)."""
        source = Path(source)
        out = Path(out) if out is not None else source
        header, rows = read_review_rows(source)
        if blank:
            for r in rows:
                r.values.update(dict.fromkeys(HUMAN_FIELDS, ""))
        if not rows:
            raise GraceError(f"{source}: no segments to review (the spot-check sampled no correct answer)")
        session = cls(source, out, header, rows, reviewer)
        session._writer.acquire()
        try:
            if out.resolve() != source.resolve() and out.exists():
                session._overlay(*read_review_rows(out))
            session._writer.remove_stale_temp_files()
            session._seen = _stamp(out)
        except BaseException:
            session.close()
            raise
        return session

    def _overlay(self, header: list[str], saved: list[ReviewRow]) -> None:
        """Labels already in ``out`` win for the same, unchanged segment; others stay, at the end."""
        self.header += [c for c in header if c not in self.header]
        for old in saved:
            row = self.by_key.get(old.key)
            if row is None:
                self.rows.append(old)
                self.by_key[old.key] = old
            elif same_text(row.values.get("segment_text"), old.values.get("segment_text")):
                row.values.update({f: old.values.get(f, "") for f in HUMAN_FIELDS})

    # -- saving ------------------------------------------------------------------------------------

    def save(self, key: SegmentKey, *, supported: bool | str | None, note: str | None = None) -> dict:
        """Set one segment's verdict (``None`` clears it; ``"partial"`` for a claim) and note, and rewrite the file
        before returning."""
        row = self.by_key.get(key)
        if row is None:
            raise LabelRejected(f"no segment {key[3]} of {key[0]}/{key[1]}/repeat {key[2]} in {self.out.name}")
        with self._lock:
            if _stamp(self.out) != self._seen:
                raise SaveConflict(f"{self.out} changed on disk since the review app read it (another program wrote "
                                   "it); not saved. Restart the review app to load the new file, then mark again")
            before = dict(row.values)
            row.values["supported"] = ("" if supported is None else "partial" if supported == "partial"
                                       else "true" if supported else "false")
            if note is not None:
                row.values["note"] = note.strip()
            touched = row.values["supported"] or row.values.get("note", "")
            row.values["reviewer"] = self.reviewer if touched else ""
            try:
                atomic_write_text(self.out, self.render())
            except OSError:
                row.values = before  # the page is told; memory keeps matching the file
                raise
            self._seen = _stamp(self.out)
            return row.to_json()

    def render(self) -> str:
        return csv_text(self.header, ({c: r.values.get(c, "") for c in self.header} for r in self.rows))

    # -- reading -----------------------------------------------------------------------------------

    def answer(self, i: int) -> list[dict]:
        with self._lock:
            return [r.to_json() for r in self.answers[i]]

    def status(self, i: int) -> str:
        done = sum(r.supported is not None for r in self.answers[i])
        return "done" if done == len(self.answers[i]) else ("partial" if done else "todo")

    def progress(self) -> dict:
        with self._lock:
            verdicts = [r.verdict for a in self.answers for r in a]
            statuses = [self.status(i) for i in range(len(self.answers))]
            return {
                "segments": len(verdicts),
                "reviewed": sum(v is not None for v in verdicts),
                "supported": verdicts.count("supported"),
                "unsupported": verdicts.count("unsupported"),
                "partial": verdicts.count("partial"),
                "answers": len(self.answers),
                "answers_done": statuses.count("done"),
                "first_unreviewed": next((i for i, s in enumerate(statuses) if s != "done"), None),
                "statuses": statuses,
            }

    def close(self) -> None:
        self._writer.release()


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)
