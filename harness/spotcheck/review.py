"""The human-labels CSV: written pre-filled by ``grace spotcheck run``, read by ``calibrate``.

One row per segment (judge repeat 0), with ``supported`` (true/false), ``note``
and ``reviewer`` left for people, in a spreadsheet or the annotation app. The
judge's own verdict is deliberately not in the file: a reviewer who sees it
anchors on it, and the calibration would measure agreement with the judge's
suggestion instead of with the article. Re-running the spot-check merges: a
label already typed is never overwritten.

Segments are model output, opened in spreadsheets: a cell that would run as a
formula (``=HYPERLINK(...)``) is written with a leading ``'`` and read back
without it, so calibration still compares the exact segment text.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text, spreadsheet_safe, spreadsheet_unsafe
from harness.spotcheck.spotcheck_records import REQUIRED_REVIEW_COLUMNS, REVIEW_COLUMNS

_TRUE = {"true", "t", "yes", "y", "1", "supported"}
_FALSE = {"false", "f", "no", "n", "0", "unsupported", "not supported"}
_PARTIAL = {"partial", "partly", "partially supported", "p"}
HUMAN_FIELDS = ("supported", "note", "reviewer")


@dataclass(frozen=True)
class HumanLabel:
    model: str
    question_id: str
    repeat: int
    segment_index: int
    segment_text: str | None
    supported: bool
    note: str
    reviewer: str
    line: int
    verdict: str = ""  # supported | partial | unsupported (a claim's label; partial is not supported)

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.model, self.question_id, self.repeat, self.segment_index)


def same_text(a: str | None, b: str | None) -> bool:
    squash = lambda s: re.sub(r"\s+", " ", s or "").strip()  # noqa: E731
    return squash(a) == squash(b)


def _key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row.get("model", "")), str(row.get("question_id", "")), str(row.get("repeat", "")),
            str(row.get("segment_index", "")))


def _unescaped(row: dict[str, Any]) -> dict[str, Any]:
    return {k: spreadsheet_unsafe(v) if isinstance(v, str) else v for k, v in row.items()}


def write_review_csv(path: Path, rows: list[dict[str, Any]]) -> int:
    """Write ``rows`` (REVIEW_COLUMNS), keeping labels already in ``path`` for the same, unchanged segment.

    Returns how many existing labels were kept.
    """
    kept: dict[tuple[str, str, str, str], dict[str, str]] = {}
    if path.exists():
        for _, old in read_csv_rows(path)[1]:  # a damaged file stops here rather than losing its labels
            old = _unescaped(old)
            if any((old.get(f) or "").strip() for f in HUMAN_FIELDS):
                kept[_key(old)] = old
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(REVIEW_COLUMNS), lineterminator="\n")
    writer.writeheader()
    reused = 0
    seen = set()
    for row in rows:
        out = {c: row.get(c, "") for c in REVIEW_COLUMNS}
        old = kept.get(_key(out))
        if old is not None and same_text(old.get("segment_text"), out["segment_text"]):
            out.update({f: old.get(f) or "" for f in HUMAN_FIELDS})
            reused += 1
        seen.add(_key(out))
        writer.writerow({c: spreadsheet_safe(v) for c, v in out.items()})
    for key, old in kept.items():  # labels of segments no longer sampled stay in the file, at the end
        if key not in seen:
            writer.writerow({c: spreadsheet_safe(old.get(c, "")) for c in REVIEW_COLUMNS})
    atomic_write_text(path, buf.getvalue())
    return reused


def parse_supported(value: str, path: Path, line: int) -> bool | None:
    v = (value or "").strip().lower()
    if not v:
        return None
    if v in _TRUE:
        return True
    if v in _FALSE or v in _PARTIAL:
        return False
    raise GraceError(f"{where(path, line)}: supported must be true or false (for a claim also partial; empty while "
                     f"unlabelled), got {value!r}")


def parse_verdict(value: str, path: Path, line: int) -> str | None:
    """A claim's label: supported, partial or unsupported (true and false read as the first and last)."""
    v = (value or "").strip().lower()
    if v in _PARTIAL:
        return "partial"
    got = parse_supported(value, path, line)
    return None if got is None else ("supported" if got else "unsupported")


def read_labels(path: Path) -> list[HumanLabel]:
    """Labelled rows of a human-labels CSV; unlabelled rows (empty ``supported``) are skipped."""
    header, rows = read_csv_rows(path)
    missing = [c for c in REQUIRED_REVIEW_COLUMNS if c not in header]
    if missing:
        raise GraceError(f"{where(path, 1)}: missing column(s) {', '.join(missing)}; "
                         f"expected {', '.join(REVIEW_COLUMNS)}")
    out = []
    for n, row in rows:
        row = _unescaped(row)
        supported = parse_supported(row.get("supported") or "", path, n)
        if supported is None:
            continue
        try:
            repeat, seg = int(row["repeat"] or 0), int(row["segment_index"])
        except ValueError:
            raise GraceError(f"{where(path, n)}: repeat and segment_index must be whole numbers") from None
        out.append(HumanLabel(row["model"], row["question_id"], repeat, seg, row.get("segment_text"), supported,
                              row.get("note") or "", row.get("reviewer") or "", n,
                              parse_verdict(row.get("supported") or "", path, n) or ""))
    return out
