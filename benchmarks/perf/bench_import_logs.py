"""Peak memory and time of ``grace import-logs`` on a large production log (issue 37: a 2 GB log under 500 MB).

The log is generated on the fly in a temporary folder (deleted afterwards), at the size asked: records like a
deployed system writes them (a question, a model, an answer of a few hundred characters citing an article, the
retrieved IDs, user, groups, latency, tokens, cost, a timestamp), answering the sample gold set's questions in
several spellings, with a few malformed lines and questions no gold question asks. ``--distinct`` questions
(default: the gold set's and 1,000 others) are asked over and over, as users do; without ``--gold`` each one
becomes a question of the run. The import runs as its own process (``grace import-logs``, as a user runs it)
and its peak resident memory is read from the kernel (``ru_maxrss`` of that child, from ``wait4``: the largest of
the process and its scoring workers), with its CPU time.

    python benchmarks/perf/bench_import_logs.py [--mb 200] [--no-gold] [--distinct 1000] [--keep]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "benchmarks" / "sample"
MODELS = ("bot-a", "bot-b", "bot-c")
FILLER = ("The handbook says this applies to every employee after the probation period, and the request goes "
          "through the manager first; the details, exceptions and the form to fill in are in the article. ")


def write_log(path: Path, megabytes: float, kb_ids: list[str], distinct: int, seed: int = 0) -> int:
    """A log of about ``megabytes`` MB; returns its number of lines."""
    rnd = random.Random(seed)
    with (SAMPLE / "gold.csv").open(encoding="utf-8") as fh:
        gold = list(csv.DictReader(fh))
    others = [f"Question {i} that no gold question asks: how does policy {i} apply to a contractor?"
              for i in range(distinct)]
    target, written, n = int(megabytes * 1e6), 0, 0
    with path.open("w", encoding="utf-8") as fh:
        block = []
        while written < target:
            n += 1
            if n % 997 == 0:
                line = "{not json" if n % 2 else json.dumps({"answer": "no question"})
            else:
                if rnd.random() < 0.5 and others:
                    question, qid = rnd.choice(others), None
                else:
                    g = rnd.choice(gold)
                    question = g["question"] if rnd.random() < 0.5 else g["question"].upper()
                    qid = g["question_id"] if rnd.random() < 0.3 else None
                cite = rnd.choice(kb_ids)
                rec = {"question": question, "model": MODELS[n % 3], "user": f"user{n % 501}",
                       "user_groups": ["staff", "emea"], "prompt_hash": f"p{n % 7}",
                       "timestamp": f"2026-03-01T10:{n % 60:02d}:{n % 59:02d}Z", "latency_ms": 100.0 + n % 900,
                       "input_tokens": 800 + n % 50, "output_tokens": 60 + n % 40, "cost_usd": 0.0012,
                       "retrieved_ids": [cite, *rnd.sample(kb_ids, 4)], "citations": [cite],
                       "answer": FILLER[: 200 + n % 200] + f" [ID: {cite}]"}
                if qid:
                    rec["question_id"] = qid
                if n % 101 == 0:
                    rec = {k: v for k, v in rec.items() if k not in ("answer", "citations")}
                    rec["error"] = "upstream timeout after 30 s"
                line = json.dumps(rec)
            block.append(line)
            written += len(line) + 1
            if len(block) >= 10_000:
                fh.write("\n".join(block) + "\n")
                block.clear()
        if block:
            fh.write("\n".join(block) + "\n")
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200, help="log size in MB (default 200)")
    ap.add_argument("--no-gold", action="store_true", help="import without --gold (the logs' own questions)")
    ap.add_argument("--distinct", type=int, default=1000, help="questions besides the gold set's (default 1000)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grace-bench-import-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    grace = [sys.executable, "-c", "from harness.cli.app import entry; entry()"]
    try:
        kb = tmp / "kb"
        subprocess.run([*grace, "kb", "build", str(SAMPLE / "handbook"), "--out", str(kb)], env=env, check=True,
                       capture_output=True)
        kb_ids = [json.loads(line)["id"] for line in (kb / "articles.jsonl").read_text(encoding="utf-8").splitlines()]
        log = tmp / "production.jsonl"
        t0 = time.perf_counter()
        lines = write_log(log, args.mb, kb_ids, args.distinct)
        size = log.stat().st_size
        print(f"log: {size / 1e6:,.0f} MB, {lines:,} lines (written in {time.perf_counter() - t0:.0f} s)", flush=True)
        cmd = [*grace, "import-logs", str(log), "--kb", str(kb), "--out", str(tmp / "run"), "--bootstrap", "200"]
        if not args.no_gold:
            cmd += ["--gold", str(SAMPLE / "gold.csv")]
        out_path = tmp / "import.out"
        t0 = time.perf_counter()
        with out_path.open("wb") as out:
            child = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
            # this child's own peak, and its scoring workers' (the largest of them), not the KB build's
            _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        peak_mb = usage.ru_maxrss / 1024  # KiB on Linux
        print(f"import-logs ({'no gold' if args.no_gold else 'with gold'}): exit {code}, "
              f"{elapsed:.1f} s, peak RSS {peak_mb:,.0f} MB, CPU {usage.ru_utime + usage.ru_stime:.0f} s "
              f"({size / 1e6 / max(elapsed, 1e-9):,.1f} MB/s of log)")
        said = out_path.read_text(encoding="utf-8", errors="replace")
        if code:
            print(said[-3000:])
        else:
            print(next((line for line in said.splitlines() if line.startswith("imported")), "")[:300])
            responses = tmp / "run" / "responses.jsonl"
            print(f"responses.jsonl: {responses.stat().st_size / 1e6:,.0f} MB")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
