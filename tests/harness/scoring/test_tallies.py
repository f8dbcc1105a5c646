"""Scoring in bounded memory (issue 45): the row pass's columns go to a file and are tallied a chunk at a time.

A 2 GB log (3 million rows) peaked at 677 MB while scoring, a 200 MB one at 138 MB: every row's columns were held
until the report was built. The figures must not change by a bit, whatever the chunk, the number of workers or the
order of the rows: the tests score the same runs with tiny chunks, tiny leaves and buckets, and hold the figures to
numpy's and to counts made here from the scores lines, not from grace's tallies.
"""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import harness.scoring.row_columns as row_columns
import harness.scoring.row_pass as row_pass
import harness.scoring.spilled as spilled
import harness.scoring.tallies as tallies
from harness.core.hashing import FileHashInThread
from harness.run_folder.outcome_table import outcomes_where
from harness.run_folder.run_records import CitationSettings
from harness.scoring import score_responses
from tests.citation_runs import grace_rows, masked, sample_bench, write_rows
from tests.conftest import SAMPLE

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

MULTI = {"sys": CitationSettings(scoring="multi", reads="ids")}  # the system's citations scored several per answer


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("tallies"))


def _small_steps(monkeypatch) -> None:
    """Chunks of 5 rows, series summed in leaves of 128 and selected above 4 values, buckets of 16 keys: every
    bounded path taken many times over a run of a hundred rows."""
    monkeypatch.setattr(row_columns, "CHUNK_ROWS", 5)
    monkeypatch.setattr(spilled, "LEAF", 128)  # numpy's pairwise summation splits above 128: no smaller leaf is exact
    monkeypatch.setattr(spilled, "WHOLE", 4)
    monkeypatch.setattr(tallies, "_BUCKET_ROWS", 16)


def _score(bench, folder: Path, rows: list[dict], **kw):
    kb, gold = bench
    write_rows(folder / "responses.jsonl", rows)
    report = score_responses(folder / "responses.jsonl", gold, kb, folder, seed=3, bootstrap=kw.pop("bootstrap", 200),
                             **kw)
    return report, (folder / "report.json").read_text(encoding="utf-8"), (folder / "scores.jsonl").read_bytes()


@pytest.mark.parametrize("seed", range(4))
def test_a_spilled_series_sums_and_percentiles_are_numpys_to_the_bit(tmp_path, monkeypatch, seed):
    """Summed in leaves where numpy's pairwise summation splits, and its percentiles from order statistics found
    16 bits at a time, a series on disk gives np.sum, np.mean and np.percentile exactly (ties, a single value,
    magnitudes from 1e-6 to 1e6, segments interleaved with another series)."""
    monkeypatch.setattr(spilled, "LEAF", 128)
    monkeypatch.setattr(spilled, "WHOLE", 50)
    rng = np.random.default_rng(seed)
    spill = spilled.Spill(tmp_path / "spill")
    try:
        for n in (1, 2, 7, 129, 1000, 4099):
            values = [rng.random(n) * 10.0 ** rng.integers(-6, 6, n), rng.integers(0, 9, n).astype(float),
                      np.round(rng.exponential(300, n), 1)][seed % 3]
            series, other = spill.series(), spill.series()
            start = 0
            while start < n:
                stop = min(n, start + int(rng.integers(1, 300)))
                series.add(values[start:stop])
                other.add(rng.random(3))
                start = stop
            assert np.array_equal(series.values(), values)
            assert series.sum() == np.sum(values) and series.mean() == np.mean(values)
            assert series.percentiles([50, 95]) == list(np.percentile(values, [50, 95]))
    finally:
        spill.close()


def test_the_report_is_the_same_whatever_the_chunk_and_the_workers(bench, tmp_path, monkeypatch):
    """A GRACE run in every form (failed calls, a system's own retrieval, structured citations scored several per
    answer, three repeats): report.json and scores.jsonl byte for byte the same from one chunk as from chunks of
    five rows, and from two workers."""
    kb, gold = bench
    rows = grace_rows(gold)
    _, whole, whole_scores = _score(bench, tmp_path / "whole", rows, citations=MULTI)
    _small_steps(monkeypatch)
    for name, workers in (("chunks", 1), ("workers", 2)):
        _, text, scores = _score(bench, tmp_path / name, rows, citations=MULTI, workers=workers)
        assert masked(text) == masked(whole) and scores == whole_scores, name


def test_the_figures_are_those_counted_from_the_scores_lines(bench, tmp_path, monkeypatch):
    """Tallied a few rows at a time, each model's counts, accuracy, cost, tokens and latency percentiles are those
    counted here from its scores lines with plain Python and numpy over the whole column, and the percentiles of
    the time calls waited in a queue those of the rows that record it."""
    _small_steps(monkeypatch)
    kb, gold = bench
    rows = grace_rows(gold)
    rng = random.Random(45)
    for i, row in enumerate(rows):
        if i % 7:  # every seventh row records no wait (an older grace's)
            row["queue_ms"] = round(rng.uniform(0, 5000), 1)
    report, _, scores = _score(bench, tmp_path / "run", rows)
    lines = [json.loads(x) for x in scores.decode().splitlines()]
    hits = outcomes_where(correct=True)
    for model in ("gpt-a", "gpt-b", "sys"):
        mine = [x for x in lines if x["model"] == model]
        m = report.models[model]
        assert m.n == len(mine) and m.n_questions == len({x["question_id"] for x in mine})
        assert {k: v for k, v in m.outcomes.items() if v} == dict(Counter(x["outcome"] for x in mine))
        assert m.accuracy == round(sum(x["outcome"] in hits for x in mine) / len(mine), 6)
        latency = np.array([x["latency_ms"] for x in mine])
        assert [m.latency.p50_ms, m.latency.p95_ms] == [round(float(v), 3) for v in np.percentile(latency, [50, 95])]
        assert m.cost.total_usd == round(float(np.sum([x["cost_usd"] for x in mine])), 8)
        assert m.cost.input_tokens == sum(x["input_tokens"] for x in mine)
        queued = np.array([x["queue_ms"] for x in rows if x["model"] == model and "queue_ms" in x])
        assert [m.latency.queued_p50_ms, m.latency.queued_p95_ms] == [
            round(float(v), 3) for v in np.percentile(queued, [50, 95])]


def test_superseded_rows_anywhere_in_the_file_are_dropped_as_a_dict_keeps_the_last(bench, tmp_path, monkeypatch):
    """A re-run appends its retries, and a file written as calls finished is in no order: the last line of each
    model, question and repeat is scored, wherever the earlier ones are (buckets of 16 keys over 120 lines)."""
    _small_steps(monkeypatch)
    kb, gold = bench
    rnd = random.Random(45)
    rows = grace_rows(gold)
    rnd.shuffle(rows)
    retries = [dict(rnd.choice(rows), response=f"retried [ID: {rnd.randint(1, 61)}]", error=None) for _ in range(20)]
    mixed = rows + retries
    last = {}
    for i, row in enumerate(mixed):
        last[row["model"], row["question_id"], row.get("repeat", 0)] = i
    kept = [row for i, row in enumerate(mixed) if last[row["model"], row["question_id"], row.get("repeat", 0)] == i]
    report, _, scores = _score(bench, tmp_path / "mixed", mixed)
    expected, _, expected_scores = _score(bench, tmp_path / "kept", kept)
    assert report.responses.n == len(kept) == len(rows)
    assert scores == expected_scores
    assert any(f"{len(mixed) - len(kept)} response(s) were superseded" in w for w in report.warnings)
    for name, m in expected.models.items():
        assert report.models[name].model_dump() == m.model_dump()


def _peak_scoring(bench, path: Path, out: Path) -> int:
    kb, gold = bench
    gc.collect()  # the garbage of earlier tests is not this scoring's
    tracemalloc.start()
    try:
        score_responses(path, SAMPLE / "gold.csv", kb, out, bootstrap=0, workers=1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_scoring_memory_does_not_grow_with_the_rows(bench, tmp_path, monkeypatch):
    """Four times the rows, the same peak: the rows' columns are on disk and tallied a chunk at a time. Before, each
    added row cost 85 bytes at the peak (its columns, and their copies while superseded rows were looked for).
    Buffers that stop growing at a fixed size (the lines written at once, a chunk) are made small so the test
    needs few rows; the sample gold set's 90 questions keep the repeats (which the report lists) few, and answers
    citing one of four articles keep the distinct (question, answer) pairs (which agreement counts) few."""
    monkeypatch.setattr(row_pass, "_FLUSH_EVERY", 500)
    monkeypatch.setattr(row_columns, "CHUNK_ROWS", 1000)
    # the file hashed after the pass, not in a thread beside it: its 1 MB block lands on the peak or not by timing
    monkeypatch.setattr(FileHashInThread, "start", lambda self: None)
    gold = [line.split(",")[0] for line in (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines()[1:]]
    rnd = random.Random(45)
    peaks = []
    for n in (4_000, 16_000):
        rows = [{"question_id": gold[i % len(gold)], "model": f"bot-{i // len(gold) % 3}", "repeat": i // (3 * len(gold)),
                 "response": "The policy says so, in detail. " * 8 + f"[ID: {rnd.choice('1234')}]",
                 "retrieved_ids": [str(rnd.randint(1, 61)) for _ in range(3)], "cost_usd": rnd.random() / 100,
                 "latency_ms": rnd.uniform(100, 3000), "input_tokens": 900, "output_tokens": 60} for i in range(n)]
        path = write_rows(tmp_path / f"{n}.jsonl", rows)  # over 1 MB: the file hash reads it in 1 MB blocks either way
        peaks.append(_peak_scoring(bench, path, tmp_path / f"out{n}"))
    per_row = (peaks[1] - peaks[0]) / 12_000
    assert per_row < 12, (peaks, per_row)
