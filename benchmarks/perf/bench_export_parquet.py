"""How fast is ``grace export RUN --to parquet``? Goal: at most 2x the time ``grace score`` takes on the same run.

Generates the 1,000,000-response run of ``bench_scoring.py`` (same KB, gold set and responses, same seed), scores
it in a child process (as ``grace score`` does: scores.jsonl and report.json), then exports it to parquet in
another child process (the tidy table of ``harness.exports.table`` read from scores.jsonl, responses.jsonl and the
gold file, written as ``results.parquet``), and prints both times and their ratio. The export is timed twice: cold
(its first read of the files) and warm, since the scorer read the same files just before.

    python benchmarks/perf/bench_export_parquet.py                      # 1,000,000 responses
    python benchmarks/perf/bench_export_parquet.py --responses 100000 --keep /tmp/bench-export
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scoring import make_gold, make_kb, make_responses  # noqa: E402 - the same synthetic run

SCORE = """
import json, sys, time
t0 = time.perf_counter()
from harness.scoring import score_responses
report = score_responses(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], seed=0, bootstrap=int(sys.argv[5]))
print(json.dumps({"seconds": time.perf_counter() - t0, "n": report.responses.n,
                  "accuracy": {name: m.accuracy for name, m in report.models.items()}}))
"""

EXPORT = """
import json, resource, sys, time
t0 = time.perf_counter()
from harness.workflows.export import export_run
done = export_run(sys.argv[1], "parquet")
took = time.perf_counter() - t0
print(json.dumps({"seconds": took, "rows": done.rows, "location": done.location,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHECK = """
import json, sys
try:
    import duckdb
    rows = duckdb.sql(f"select model, avg(correct::int) from '{sys.argv[1]}' group by model").fetchall()
    print(json.dumps({"by": "DuckDB", "accuracy": {m: round(a, 6) for m, a in rows}}))
except ImportError:
    import pandas
    means = pandas.read_parquet(sys.argv[1], columns=["model", "correct"]).groupby("model").correct.mean()
    print(json.dumps({"by": "pandas", "accuracy": {m: round(float(a), 6) for m, a in means.items()}}))
"""


def child(code: str, *args: str) -> tuple[dict, float]:
    env = {**os.environ, "GRACE_TOKENIZER": "approx"}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if proc.returncode:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="write the files here and keep them")
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        run = folder / "run"
        run.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        ids = make_kb(folder / "kb", args.articles, rng)
        gold = make_gold(folder / "gold.csv", ids, args.questions, rng)
        make_responses(run / "responses.jsonl", ids, gold, args.responses, rng)
        size = (run / "responses.jsonl").stat().st_size
        print(f"generated {args.responses:,} responses ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f}s")
        scored, score_wall = child(SCORE, str(run / "responses.jsonl"), str(folder / "gold.csv"), str(folder / "kb"),
                                   str(run), str(args.bootstrap))
        print(f"grace score: {scored['n']:,} responses in {scored['seconds']:.1f}s "
              f"(child wall incl. imports {score_wall:.1f}s)")
        walls = []
        for attempt in ("first", "second"):
            done, wall = child(EXPORT, str(run))
            walls.append(wall)
            out = Path(done["location"])
            print(f"grace export --to parquet ({attempt}): {done['rows']:,} rows in {done['seconds']:.1f}s "
                  f"(child wall incl. imports {wall:.1f}s, peak memory {done['peak_mb']:,.0f} MB); "
                  f"{out.name} {out.stat().st_size / 1e6:.0f} MB")
        check, _ = child(CHECK, str(out))
        same = check["accuracy"] == scored["accuracy"]
        print(f"{check['by']} avg(correct) per model equals report.json accuracy: {same}")
        ratio = max(walls) / score_wall
        print(f"goal: export <= 2x score: {max(walls):.1f}s / {score_wall:.1f}s = {ratio:.2f}x, "
              + ("met" if ratio <= 2 else "NOT met"))


if __name__ == "__main__":
    main()
