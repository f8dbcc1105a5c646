"""The scorer's per-row columns: a few integers a response, written beside its scores lines, read back a chunk
at a time.

The row pass (:mod:`harness.scoring.row_pass`) reduces each response to the codes the report is computed from
(its model, question, repeat, outcomes, labels, cost...). Kept in memory until the report was built, they grew
with the file: about 75 bytes a row, 230 MB for the 3 million rows of a 2 GB log, and twice that while the
workers' shares were merged. They are written to a file instead, a block of rows as a block is scored (one file
per worker, beside its share of scores.jsonl), and :mod:`harness.scoring.tallies` reads them back in file order a
chunk at a time: no step of the scoring holds a column of every row.

This module is the one reader and writer of that file (fixed-size records of :func:`row_dtype`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.scoring.answer_language import UNKNOWN
from kb_builder.references import HOW

WARNING_BITS = 8  # a count of one named problem in one answer (its citations: at most a few hundred, capped)
CHUNK_ROWS = 1 << 15  # rows read back at once (2.5 MB of a GRACE run's records, 5 MB with citation figures)

FIELDS = (
    ("model", "i"), ("q", "i"), ("repeat", "i"), ("outcome", "b"), ("strict", "b"), ("rule", "b"),
    ("true", "i"), ("pred", "i"), ("refused", "b"), ("expected_retrieved", "b"), ("retrieved_len", "i"),
    ("cost", "d"),
    ("latency", "d"),  # the model's own time (service_ms), else the call's latency: the leaderboard's column
    ("queued", "d"),  # time waiting in grace and in the server's queue; NaN: not recorded
    ("in_tokens", "q"), ("out_tokens", "q"),
    ("truncated", "b"),  # 0 no, 1 cut off, 2 cut off with nothing read
    ("max_tokens", "q"),
    ("checked", "b"),  # 1: the asker's groups were known and the KB restricts articles (permission checked)
    ("own_retrieval", "b"),  # 1: the system said what it retrieved (system_retrieved): judged against that
)
LANGUAGE = ("other_language", "b")  # -1 not told, 0 the question's language, 1 another (answer_language)
# a run with a model read as references or scored several citations per answer (CitationSettings): each
# row's citation figures (NaN / -1 / 0 on a GRACE model's rows), kept only in such runs
CITATIONS = (
    ("cit_precision", "d"), ("cit_recall", "d"), ("cit_f1", "d"), ("cit_hit", "b"), ("cit_correct", "d"),
    ("coverage", "d"), ("n_citations", "i"), ("n_unmapped", "i"), ("quotes_checked", "i"),
    ("quotes_missing", "i"), ("problems", "i"),  # PROBLEM_BIT mask
    *((f"how_{i}", "i") for i in range(len(HOW) + 1)),  # citations per HOW_CODE (the last: unmapped)
    ("cit_page_precision", "d"), ("cit_page_recall", "d"),  # the same, each article read as its source page
    # citations per named reference problem, packed: WARNINGS[i]'s count in bits 8i..8i+7 (WARNING_BITS); one
    # column, not one a kind: each column is a transposition of every row of a block
    ("warnings", "q"),
)


def row_dtype(citations: bool) -> np.dtype:
    """One row's record: the columns above, packed, the citation figures only in a run that has them."""
    return np.dtype([(name, code) for name, code in (*FIELDS, LANGUAGE, *(CITATIONS if citations else ()))])


def columns_file(scores_part: Path) -> Path:
    """The columns of the rows whose scores lines are in ``scores_part``."""
    return scores_part.with_name(scores_part.name + ".columns")


class ColumnWriter:
    """The rows of one share of the file, as records appended to its columns file a block at a time. Rows arrive as
    tuples in ``FIELDS`` order and are moved into the block one column at a time (one tuple per row, not 17 appends).

    The answer-language column is filled a block at a time too, from the answers kept until then: checked in
    one run, the check keeps its word sets and code in the processor's caches, where checked between the
    extraction and the scores line of each row it found them evicted, and took half as long again.
    """

    def __init__(self, path: Path, language_of: Callable[[str, str], int] | None, citations: bool = False) -> None:
        self.path = path
        self.dtype = row_dtype(citations)
        self.citation_rows: list[tuple] | None = [] if citations else None
        self.rows: list[tuple] = []
        self.answers: list[str] = []  # each row's answer, "" for a failed call (too short to tell: UNKNOWN)
        self.languages: list[str] = []  # and its question's language
        self.n = 0
        self._language_of = language_of
        self._fh = path.open("wb")

    def flush(self) -> None:
        if not self.rows:
            return
        block = np.empty(len(self.rows), dtype=self.dtype)
        for (name, _), column in zip(FIELDS, zip(*self.rows, strict=True), strict=True):
            block[name] = column
        if self._language_of is None:
            block[LANGUAGE[0]] = UNKNOWN
        else:
            block[LANGUAGE[0]] = list(map(self._language_of, self.answers, self.languages))
        if self.citation_rows is not None:
            for (name, _), column in zip(CITATIONS, zip(*self.citation_rows, strict=True), strict=True):
                block[name] = column
            self.citation_rows.clear()
        block.tofile(self._fh)
        self.n += block.size
        self.rows.clear()
        self.answers.clear()
        self.languages.clear()

    def close(self) -> None:
        self.flush()
        self._fh.close()


@dataclass
class RowColumns:
    """Every share's columns in file order, and the models each share met (its ``model`` codes index them)."""

    files: list[Path]
    names: list[list[str]]  # per share, its models in the order it met them
    citations: bool
    models: list[str] = field(init=False)  # every model, in the order the file names them first

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for names in self.names:
            for name in names:
                index.setdefault(name, len(index))
        self.models = list(index)
        self._remaps = [np.array([index[n] for n in names] or [0], dtype=np.int32) for names in self.names]

    @property
    def rows(self) -> int:
        itemsize = row_dtype(self.citations).itemsize
        return sum(path.stat().st_size // itemsize for path in self.files)

    def chunks(self, rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(index of its first row, records) in file order, each record's ``model`` an index of :attr:`models`."""
        dtype, start, rows = row_dtype(self.citations), 0, rows or CHUNK_ROWS
        for path, remap in zip(self.files, self._remaps, strict=True):
            with path.open("rb") as fh:
                while True:
                    chunk = np.fromfile(fh, dtype=dtype, count=rows)
                    if not chunk.size:
                        break
                    chunk["model"] = remap[chunk["model"]]
                    yield start, chunk
                    start += chunk.size

    def remove(self) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)
