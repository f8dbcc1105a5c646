"""A leaderboard-sized ``grace run``: 20 models x 10,000 questions x 5 repeats = 1,000,000 calls, grace's own cost.

The models are scripted (they answer at once, with no server, cache or network), so what is measured is the run's
own overhead from planning to report: retrieval, planning, building and keying every request, writing every row,
progress, the final rewrite of ``responses.jsonl`` in a stable order, ``run.json``, and then scoring and reports.
Goals (issue 40): peak memory <= 1 GB at 1,000,000 calls, grace's CPU well under 1 ms a call.

Each step runs in a child process of its own, as a user runs it, and prints its wall time, CPU (the child and the
scoring workers it forks) and peak memory (the largest process's RSS):

1. ``run --no-score``: plan, every call, the rewrite, ``run.json``;
2. the same run again on the finished folder (a resume): plans, finds every answer done, asks nothing, then
   scores and reports the folder (``grace run``'s last step);
3. ``score``: ``grace score`` of the responses alone, for comparison with ``bench_scoring.py``.

    python benchmarks/perf/bench_million.py --calls 100000
    python benchmarks/perf/bench_million.py --calls 1000000 --keep /tmp/million
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import make_gold, make_kb  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

RUN = """
import json, os, sys, time
from rich.console import Console
from harness.providers.base import ModelSpec
from harness.workflows.run import run
kb, gold, out, models, repeats, concurrency, no_score = sys.argv[1:8]
specs = [ModelSpec("scripted", f"m{i:02d}", options={"default": "Ten days of annual leave a year. [ID: {top_id}]"})
         for i in range(int(models))]
console = Console(file=open(os.devnull, "w"), force_terminal=True, width=120)  # the progress bar, drawn unseen
t0 = time.perf_counter()
result = run(kb, gold, specs, out=out, repeats=int(repeats), concurrency=int(concurrency), no_score=no_score == "1",
             progress=True, console=console)
print(json.dumps({"seconds": time.perf_counter() - t0, "resumed": result.resumed,
                  "planned": sum(c["planned"] for c in result.counts.values()),
                  "done": sum(c["done"] for c in result.counts.values()), "errors": result.errors}))
"""

SCORE = """
import json, sys, time
from harness.scoring import score_responses
t0 = time.perf_counter()
report = score_responses(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], seed=0)
print(json.dumps({"seconds": time.perf_counter() - t0, "n": report.responses.n}))
"""

# runs one step and reports what it and its children (the scoring workers) used: RUSAGE_CHILDREN of this launcher
LAUNCH = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall": time.perf_counter() - t0, "cpu": u.ru_utime + u.ru_stime,
                  "peak_mb": u.ru_maxrss / 1024, "stdout": p.stdout, "stderr": p.stderr[-3000:]}))
"""


def step(label: str, code: str, *args: object) -> dict:
    env = {**os.environ, "GRACE_TOKENIZER": "approx", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", LAUNCH, sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(proc.stderr)
    out = json.loads(proc.stdout)
    if out["rc"]:
        sys.exit(f"{label} failed:\n{out['stderr']}")
    out["result"] = json.loads(out["stdout"].strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000, help="models x questions x repeats (default 1,000,000)")
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--keep", type=Path, default=None, help="make the files here and keep them")
    args = ap.parse_args()
    questions = max(1, args.calls // (args.models * args.repeats))
    calls = questions * args.models * args.repeats
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        shutil.rmtree(folder / "run", ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["GRACE_CACHE_DIR"] = str(folder / "cache")
        make_kb(folder / "kb", args.articles, rng)
        ids = [json.loads(line)["id"] for line in (folder / "kb" / "articles.jsonl").open()]
        make_gold(folder / "gold.csv", ids, questions, rng)
        print(f"{calls:,} calls: {args.models} scripted models x {questions:,} questions x {args.repeats} repeats, "
              f"concurrency {args.concurrency}, {args.articles} articles; {os.cpu_count()} cores here")
        kb, gold, run = folder / "kb", folder / "gold.csv", folder / "run"
        first = step("run", RUN, kb, gold, run, args.models, args.repeats, args.concurrency, 1)
        r = first["result"]
        assert r["done"] == calls and r["errors"] == 0, r
        size = (run / "responses.jsonl").stat().st_size
        again = step("resume", RUN, kb, gold, run, args.models, args.repeats, args.concurrency, 0)
        a = again["result"]
        assert a["planned"] == 0 and a["resumed"]["done"] == calls, a  # nothing answered is asked again
        score = step("score", SCORE, run / "responses.jsonl", gold, kb, folder / "scored")
        rows = [("run --no-score (plan, calls, rewrite, run.json)", first),
                ("resume: plan, nothing asked; score and report", again), ("grace score alone", score)]
        print(f"responses.jsonl: {size / 1e6:,.0f} MB")
        print(f"{'step':<52} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'CPU/call ms':>12}")
        for label, s in rows:
            print(f"{label:<52} {s['wall']:8.1f} {s['cpu']:8.1f} {s['peak_mb']:8.0f} {s['cpu'] / calls * 1000:12.3f}")
        peak = max(s["peak_mb"] for _, s in rows)
        print(f"goals: peak <= 1,000 MB: {peak:,.0f} MB, {'met' if peak <= 1000 else 'NOT met'}; run overhead well "
              f"under 1 ms a call: {first['cpu'] / calls * 1000:.3f} ms")


if __name__ == "__main__":
    main()
