"""Overhead of a ``python:`` system: an instant function against ``baseline:top1`` on the same questions.

Both go through the same engine; the system also takes the cache (a lookup and a
save per call, as for any model with an endpoint) and the boundary around user
code: each request and answer crosses a pipe to the worker process the function
runs in (harness.providers.user_code), and the worker starts once per run. Acceptance (issue 30): a
system that answers at once runs 10,000 questions in at most 1.5x the time
``baseline:top1`` takes. Each figure is the best of ``--rounds`` fresh runs
(a new run folder and an empty cache each time), timed twice: the run itself
(``no_score``: retrieval and the calls) and the run with scoring and reports.

    python benchmarks/perf/bench_python_system.py [--questions 10000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import grace  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "sample"
PIPELINE = '''
def answer(request):
    """Answers at once, citing grace's first article: all the time measured is grace's."""
    return f"See the policy. [ID: {request.articles[0].id}]"


async def answer_async(request):
    return f"See the policy. [ID: {request.articles[0].id}]"
'''


def gold_file(n: int, out: Path) -> Path:
    """``n`` questions made from the sample gold set's, each text made distinct (no two share a cache key)."""
    with (SAMPLE / "gold.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    with out.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse"])
        for i in range(n):
            r = rows[i % len(rows)]
            w.writerow([f"b{i:05d}", f"{r['question']} (case {i})", r["expected_citations"], r["must_refuse"]])
    return out


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (the worker a python: system runs in)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def timed(tmp: Path, kb: Path, gold: Path, model: str, score: bool) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (grace's and its worker's): on a shared machine the wall clock
    counts other programs' work too, the CPU time only the run's."""
    out = tmp / "run"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(tmp / "cache", ignore_errors=True)
    c0, t0 = cpu_seconds(), time.perf_counter()
    result = grace.run(kb=kb, gold=gold, models=[model], out=out, no_score=not score)
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    counts = result.counts[model]
    assert counts["errors"] == 0 and counts["done"] == counts["planned"], counts
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    logging.getLogger("grace").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        os.environ["GRACE_CACHE_DIR"] = str(tmp / "cache")
        grace.build_kb(SAMPLE / "handbook", tmp / "kb")
        kb = tmp / "kb"
        gold = gold_file(args.questions, tmp / "gold.csv")
        (tmp / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
        models = {"baseline:top1": "baseline:top1", "python: (sync)": f"python:{tmp / 'pipeline.py'}:answer",
                  "python: (async)": f"python:{tmp / 'pipeline.py'}:answer_async"}
        figures: dict[tuple[str, bool], tuple[float, float]] = {}
        for score in (False, True):
            for label, model in models.items():
                times = [timed(tmp, kb, gold, model, score) for _ in range(args.rounds)]
                figures[label, score] = (min(t for t, _ in times), min(c for _, c in times))
    base = {s: figures["baseline:top1", s] for s in (False, True)}
    print(f"python: system overhead, {args.questions:,} questions, best of {args.rounds} (seconds, wall clock and "
          "CPU of grace and its worker; ratio to baseline:top1, acceptance <= 1.5)")
    for label in models:
        (run, run_cpu), (full, full_cpu) = figures[label, False], figures[label, True]
        print(f"  {label:16} run {run:6.2f} s ({run / base[False][0]:.2f}x), CPU {run_cpu:6.2f} s "
              f"({run_cpu / base[False][1]:.2f}x)   run + score + report {full:6.2f} s ({full / base[True][0]:.2f}x), "
              f"CPU {full_cpu:6.2f} s ({full_cpu / base[True][1]:.2f}x)")

if __name__ == "__main__":
    main()
