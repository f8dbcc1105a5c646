"""What the report says of the rows, counted a chunk at a time: no figure needs every row at once.

Every whole-run figure of a model is a function of a few counts (outcomes, labels, refusals, retrieval), of counts
per question (the pairwise tests, the category slices, prediction-powered figures), per repeat, per (question,
answer) (agreement across repeats, the models' votes for the label audit), per (true, predicted) label (the
per-article metrics), or of a float series (cost, latency, time queued, a citation model's means: kept on disk,
:mod:`harness.scoring.spilled`). The row pass's columns (:mod:`harness.scoring.row_columns`) are read back in file
order a chunk at a time and added into a :class:`ModelTally` per model, so memory follows the models, questions,
repeats and labels, never the rows: a 2 GB log is scored in what a 200 MB one is.

Every figure is the one computed from whole columns before, to the bit: integer counts are exact in any order, a
per-question sum of floats is added row by row in file order (as ``np.bincount`` added it), and a mean of floats
is numpy's pairwise sum of the series in file order.

Superseded rows (a re-run appends its retry of a failed call: the last line per model, question and repeat
counts) are found first, by :func:`superseded`, in memory that follows the (model, question) pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.scoring.extraction import RULES
from harness.scoring.markers import PROBLEMS
from harness.scoring.outcomes import HIT_CODES, OUTCOME_CODE, OUTCOMES
from harness.scoring.row_columns import CITATIONS, WARNING_BITS, RowColumns
from harness.scoring.spilled import Spill
from kb_builder.references import WARNINGS

N_OUTCOMES = len(OUTCOMES)
ERROR = OUTCOME_CODE["error"]
FORBIDDEN = OUTCOME_CODE["forbidden_citation"]
HOW_COLUMNS = tuple(name for name, _ in CITATIONS if name.startswith("how_"))

_BUCKET_ROWS = 1 << 18  # (key, row) records held at once when superseded rows are looked for out of order


class CountTable:
    """Rows (or sums of integer columns) by int64 key, merged chunk by chunk: sized by the distinct keys."""

    def __init__(self, width: int = 1) -> None:
        self.keys = np.empty(0, dtype=np.int64)
        self.sums = np.empty((0, width), dtype=np.int64)

    def add(self, keys: np.ndarray, values: np.ndarray | None = None) -> None:
        if not keys.size:
            return
        if values is None:
            values = np.ones((keys.size, 1), dtype=np.int64)
        keys = np.concatenate([self.keys, keys.astype(np.int64, copy=False)])
        values = np.concatenate([self.sums, values.astype(np.int64, copy=False).reshape(-1, self.sums.shape[1])])
        self.keys, inverse = np.unique(keys, return_inverse=True)
        self.sums = np.zeros((self.keys.size, values.shape[1]), dtype=np.int64)
        np.add.at(self.sums, inverse.ravel(), values)

    @property
    def counts(self) -> np.ndarray:
        return self.sums[:, 0]


@dataclass
class RetrievalTally:
    """What retrieval_split needs: the rows whose retrieval is known, the largest k, and hits when an expected
    article was retrieved or missed."""

    known: int = 0
    k: int = -1
    got: int = 0
    missed: int = 0
    hits_got: int = 0
    hits_missed: int = 0

    def add(self, retrieved_len: np.ndarray, expected_retrieved: np.ndarray, hits: np.ndarray) -> None:
        known = retrieved_len >= 0
        if known.any():
            self.known += int(known.sum())
            self.k = max(self.k, int(retrieved_len.max()))
        got, missed = expected_retrieved == 1, expected_retrieved == 0
        self.got += int(got.sum())
        self.missed += int(missed.sum())
        self.hits_got += int(hits[got].sum())
        self.hits_missed += int(hits[missed].sum())


@dataclass
class Shape:
    """What every tally needs to know of the run before its rows: the labels and the questions."""

    labels: int  # label codes: the KB's articles, unknown expected IDs, REFUSE, none
    must: np.ndarray  # per question of the report: must_refuse
    answerable: np.ndarray  # per question of the report: neither must_refuse nor unlabelled
    citations: bool = False  # the columns have each row's citation figures
    population: int = 0  # with machine labels: every question (the report's first, then the machine file's)
    machine_keys: np.ndarray | None = None  # sorted question * labels + label of every machine label

    @property
    def questions(self) -> int:
        return int(self.must.size)


class CitationTally:
    """A model's citation figures (``models[m].citations``): sums, counts, series and per-question sums."""

    def __init__(self, shape: Shape, spill: Spill) -> None:
        nq = shape.questions
        self.n_answerable = self.n_citing = self.n_citations = self.n_unmapped = 0
        self.quotes_checked = self.quotes_missing = 0
        self.how = np.zeros(len(HOW_COLUMNS), dtype=np.int64)
        self.warnings = np.zeros(len(WARNINGS), dtype=np.int64)  # citations per named reference problem
        self.problems = np.zeros(len(PROBLEMS), dtype=np.int64)  # answers with each marker problem (PROBLEM_BIT)
        self.hit_sum = 0.0
        self.precision, self.recall, self.f1 = spill.series(), spill.series(), spill.series()
        self.correct, self.coverage = spill.series(), spill.series()
        self.page_precision, self.page_recall = spill.series(), spill.series()
        self.q_answerable = np.zeros(nq, dtype=np.int64)
        self.q_f1, self.q_recall, self.q_page_recall = np.zeros(nq), np.zeros(nq), np.zeros(nq)
        self.q_citing = np.zeros(nq, dtype=np.int64)
        self.q_precision, self.q_page_precision = np.zeros(nq), np.zeros(nq)

    def add(self, r: np.ndarray, answerable_q: np.ndarray) -> None:
        q = r["q"]
        answerable = answerable_q[q]
        citing = r["n_citations"] > 0
        precise = answerable & citing
        self.n_answerable += int(answerable.sum())
        self.n_citing += int(precise.sum())
        self.n_citations += int(r["n_citations"].sum())
        self.n_unmapped += int(r["n_unmapped"].sum())
        self.how += np.array([int(r[name].sum()) for name in HOW_COLUMNS], dtype=np.int64)
        packed = r["warnings"]
        if packed.any():
            self.warnings += [int(((packed >> (WARNING_BITS * i)) & 0xFF).sum()) for i in range(len(WARNINGS))]
        self.quotes_checked += int(r["quotes_checked"].sum())
        self.quotes_missing += int(r["quotes_missing"].sum())
        problems = r["problems"]
        if problems.any():
            self.problems += [int(((problems >> i) & 1).sum()) for i in range(len(PROBLEMS))]
        rows_a, rows_p = r[answerable], r[precise]
        self.precision.add(rows_p["cit_precision"])
        self.recall.add(rows_a["cit_recall"])
        self.f1.add(rows_a["cit_f1"])
        self.page_precision.add(rows_p["cit_page_precision"])
        self.page_recall.add(rows_a["cit_page_recall"])
        self.hit_sum += float(rows_a["cit_hit"].astype(np.float64).sum())
        for series, values in ((self.correct, r["cit_correct"]), (self.coverage, r["coverage"])):
            series.add(values[~np.isnan(values)])
        # per question, added row by row in file order (as np.bincount with weights adds): the same floats
        qa, qp = rows_a["q"], rows_p["q"]
        self.q_answerable += np.bincount(qa, minlength=self.q_answerable.size)
        np.add.at(self.q_f1, qa, rows_a["cit_f1"])
        np.add.at(self.q_recall, qa, rows_a["cit_recall"])
        np.add.at(self.q_page_recall, qa, rows_a["cit_page_recall"])
        self.q_citing += np.bincount(qp, minlength=self.q_citing.size)
        np.add.at(self.q_precision, qp, rows_p["cit_precision"])
        np.add.at(self.q_page_precision, qp, rows_p["cit_page_precision"])


class PpiTally:
    """A model's rows over every question (the human-labelled ones and the machine file's): per question, its
    answers, hits under the human label and under the machine label, and refusals among the answered calls."""

    def __init__(self, shape: Shape) -> None:
        n = shape.population
        self.q_n, self.q_hits, self.q_machine = (np.zeros(n, dtype=np.int64) for _ in range(3))
        self.q_ok, self.q_refused = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)

    def add(self, r: np.ndarray, shape: Shape) -> None:
        n, q, oc = self.q_n.size, r["q"], r["outcome"]
        valid = (oc != ERROR) & (oc != FORBIDDEN)
        keys = shape.machine_keys if shape.machine_keys is not None else np.empty(0, dtype=np.int64)
        machine = valid & np.isin(q.astype(np.int64) * shape.labels + r["pred"], keys)
        ok = oc != ERROR
        self.q_n += np.bincount(q, minlength=n)
        self.q_hits += np.bincount(q[np.isin(oc, HIT_CODES)], minlength=n)
        self.q_machine += np.bincount(q[machine], minlength=n)
        self.q_ok += np.bincount(q[ok], minlength=n)
        self.q_refused += np.bincount(q[ok & (r["refused"] == 1)], minlength=n)


class ModelTally:
    """Everything the report says of one model's rows (see the module's docstring), added a chunk at a time."""

    def __init__(self, shape: Shape, spill: Spill) -> None:
        nq = shape.questions
        self.n = 0
        self.outcomes = np.zeros(N_OUTCOMES, dtype=np.int64)
        self.strict = np.zeros(N_OUTCOMES, dtype=np.int64)
        self.rules = np.zeros(len(RULES), dtype=np.int64)
        self.told = self.other_language = 0  # answers whose language could be told; in another language
        self.cut = self.cut_empty = 0  # cut off by the output limit; of them, with nothing read
        self.limits_cut, self.limits = CountTable(), CountTable()  # max_tokens of the cut-off rows; of every row
        self.labels = CountTable()  # true * labels + predicted
        self.should = self.should_refused = self.answerable = self.answerable_refused = 0
        self.valid = self.valid_refused = 0
        self.checked = 0  # rows checked for permission
        self.own = 0  # rows whose system said what it retrieved
        self.retrieval, self.own_retrieval = RetrievalTally(), RetrievalTally()
        self.repeats = CountTable(width=2)  # repeat -> (rows, hits)
        self.q_n = np.zeros(nq, dtype=np.int64)
        self.q_hits = np.zeros(nq, dtype=np.int64)
        self.answers = CountTable()  # question * labels * outcomes + predicted * outcomes + outcome
        self.cost, self.latency, self.queued = spill.series(), spill.series(), spill.series()
        self.in_tokens = self.out_tokens = 0
        self.citations = CitationTally(shape, spill) if shape.citations else None

    def add(self, r: np.ndarray, shape: Shape) -> None:
        oc, sc, q = r["outcome"], r["strict"], r["q"]
        hits = np.isin(oc, HIT_CODES)
        nq = self.q_n.size
        self.n += r.size
        self.outcomes += np.bincount(oc, minlength=N_OUTCOMES)
        self.strict += np.bincount(sc, minlength=N_OUTCOMES)
        self.rules += np.bincount(r["rule"], minlength=len(RULES))
        told = r["other_language"]
        self.told += int((told >= 0).sum())
        self.other_language += int((told == 1).sum())
        truncated, limits = r["truncated"], r["max_tokens"]
        cut = truncated > 0
        self.cut += int(cut.sum())
        self.cut_empty += int((truncated == 2).sum())
        self.limits.add(limits[limits >= 0])
        self.limits_cut.add(limits[cut & (limits >= 0)])
        self.labels.add(r["true"].astype(np.int64) * shape.labels + r["pred"])
        must, valid, refused = shape.must[q], oc != ERROR, r["refused"] == 1
        should, answerable = must & valid, ~must & valid
        self.should += int(should.sum())
        self.should_refused += int((refused & should).sum())
        self.answerable += int(answerable.sum())
        self.answerable_refused += int((refused & answerable).sum())
        self.valid += int(valid.sum())
        self.valid_refused += int((refused & valid).sum())
        self.checked += int((r["checked"] == 1).sum())
        own = r["own_retrieval"] == 1
        self.own += int(own.sum())
        self.retrieval.add(r["retrieved_len"], r["expected_retrieved"], hits)
        self.own_retrieval.add(r["retrieved_len"][own], r["expected_retrieved"][own], hits[own])
        self.repeats.add(r["repeat"], np.stack([np.ones(r.size, dtype=np.int64), hits], axis=1))
        self.q_n += np.bincount(q, minlength=nq)
        self.q_hits += np.bincount(q[hits], minlength=nq)
        self.answers.add((q.astype(np.int64) * shape.labels + r["pred"]) * N_OUTCOMES + oc)
        for series, values in ((self.cost, r["cost"]), (self.latency, r["latency"]), (self.queued, r["queued"])):
            series.add(values[~np.isnan(values)])
        tokens_in, tokens_out = r["in_tokens"], r["out_tokens"]
        self.in_tokens += int(tokens_in[tokens_in >= 0].sum())
        self.out_tokens += int(tokens_out[tokens_out >= 0].sum())
        if self.citations is not None:
            self.citations.add(r, shape.answerable)

    # what the report's blocks read

    @property
    def hits(self) -> int:
        return int(self.outcomes[list(HIT_CODES)].sum())

    @property
    def strict_hits(self) -> int:
        return int(self.strict[list(HIT_CODES)].sum())

    def answered(self) -> np.ndarray:
        """The questions this model answered (indices)."""
        return np.flatnonzero(self.q_n)

    def per_question(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Questions answered, and ``sums`` over each one's rows divided by its rows (significance.per_question)."""
        answered = self.answered()
        return answered, sums[answered] / self.q_n[answered]


@dataclass
class RunTally:
    """Every model's tally, in the order the file names them; rows counted, superseded rows left out."""

    models: list[str]
    tallies: list[ModelTally]
    ppi: list[PpiTally] | None  # with machine labels: every model's rows over every question
    rows: int = 0  # rows of the report (with machine labels: of the human-labelled questions)
    all_rows: int = 0  # every row scored, superseded ones left out
    dropped: int = 0  # superseded rows

    @property
    def checked(self) -> int:
        return sum(t.checked for t in self.tallies)


def tally(columns: RowColumns, shape: Shape, spill: Spill, dropped: np.ndarray,
          kept: Callable[[np.ndarray], None] | None = None) -> RunTally:
    """Add every row of ``columns`` but the ``dropped`` ones (sorted row indices) into its model's tally.

    With machine labels (``shape.population``) the report's tallies take only the rows of its own questions, and
    the PPI tallies every row. ``kept`` is given, chunk by chunk in file order, which rows stay in the report
    (for the scores lines to keep)."""
    run = RunTally(columns.models, [ModelTally(shape, spill) for _ in columns.models],
                   [PpiTally(shape) for _ in columns.models] if shape.population else None,
                   dropped=int(dropped.size))
    for start, chunk in columns.chunks():
        keep = np.ones(chunk.size, dtype=bool)
        if dropped.size:
            lo, hi = np.searchsorted(dropped, [start, start + chunk.size])
            keep[dropped[lo:hi] - start] = False
        rows = chunk[keep]
        run.all_rows += rows.size
        if run.ppi is not None:
            for mi, part in _by_model(rows):
                run.ppi[mi].add(part, shape)
            ours = chunk["q"] < shape.questions
            keep &= ours
            rows = chunk[keep]
        run.rows += rows.size
        for mi, part in _by_model(rows):
            run.tallies[mi].add(part, shape)
        if kept is not None:
            kept(keep)
    return run


def _by_model(rows: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Each model's rows of a chunk, in file order."""
    if not rows.size:
        return
    model = rows["model"]
    if (model == model[0]).all():
        yield int(model[0]), rows
        return
    order = np.argsort(model, kind="stable")
    rows = rows[order]
    starts = np.r_[0, np.flatnonzero(np.diff(rows["model"])) + 1, rows.size]
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        yield int(rows["model"][a]), rows[a:b]


def superseded(columns: RowColumns, n_questions: int, scratch: Path) -> np.ndarray:
    """The rows a later line of the same model, question and repeat replaces (sorted row indices).

    A file whose repeats rise within each (model, question), as ``grace run`` and ``grace import-logs`` write it,
    has none, which one pass proves holding one repeat per pair. Otherwise every row's (pair, repeat, row) is
    sorted out by hash into bucket files in ``scratch``, each small enough to sort in memory."""
    pairs = len(columns.models) * max(1, n_questions)
    last = np.full(pairs, -1, dtype=np.int64)  # the latest repeat of each (model, question)
    for _, chunk in columns.chunks():
        pair = chunk["model"].astype(np.int64) * n_questions + chunk["q"]
        repeat = chunk["repeat"].astype(np.int64)
        order = np.argsort(pair, kind="stable")
        pair, repeat = pair[order], repeat[order]
        same = pair[1:] == pair[:-1]
        first = np.r_[True, ~same]
        if (repeat[1:][same] <= repeat[:-1][same]).any() or (repeat[first] <= last[pair[first]]).any():
            return _superseded_by_buckets(columns, n_questions, scratch)
        latest = np.r_[~same, True]
        last[pair[latest]] = repeat[latest]
    return np.empty(0, dtype=np.int64)


def _superseded_by_buckets(columns: RowColumns, n_questions: int, scratch: Path) -> np.ndarray:
    buckets = max(1, -(-columns.rows // _BUCKET_ROWS))
    paths = [scratch.with_name(f"{scratch.name}.keys{b}") for b in range(buckets)]
    dropped = []
    try:
        files = [p.open("wb") for p in paths]
        try:
            for start, chunk in columns.chunks():
                pair = chunk["model"].astype(np.int64) * n_questions + chunk["q"]
                repeat = chunk["repeat"].astype(np.int64)
                records = np.stack([pair, repeat, np.arange(start, start + chunk.size, dtype=np.int64)], axis=1)
                mixed = (pair.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ repeat.astype(np.uint64)
                bucket = ((mixed * np.uint64(0xC2B2AE3D27D4EB4F)) >> np.uint64(33)) % np.uint64(buckets)
                for b in np.unique(bucket).tolist():
                    records[bucket == b].tofile(files[b])
        finally:
            for fh in files:
                fh.close()
        for path in paths:
            records = np.fromfile(path, dtype=np.int64).reshape(-1, 3)
            path.unlink()
            order = np.lexsort((records[:, 2], records[:, 1], records[:, 0]))
            pair, repeat, row = records[order, 0], records[order, 1], records[order, 2]
            later = np.r_[(pair[1:] == pair[:-1]) & (repeat[1:] == repeat[:-1]), False]  # not the last of its key
            dropped.append(row[later])
    finally:
        for path in paths:
            path.unlink(missing_ok=True)
    return np.sort(np.concatenate(dropped)) if dropped else np.empty(0, dtype=np.int64)
