"""Runner throughput against a local fake OpenAI-compatible server with fixed latency.

At concurrency C and latency L the best possible throughput is C/L calls per
second. Prints achieved/ideal for N calls, the harness's own overhead per call
(the same engine with an offline provider, so only grace's work is timed), and
the time of a cache-hit re-run of the same calls.

    python benchmarks/perf/bench_runner.py [--calls 400] [--concurrency 20] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.prompts import load_template  # noqa: E402
from harness.providers import make_provider  # noqa: E402
from harness.providers.base import ModelSpec, RetrievedArticle  # noqa: E402
from harness.run_folder.run_dir import RunDir  # noqa: E402
from harness.runner.engine import AnswerJob, RunPlan  # noqa: E402
from harness.runner.session import RunSettings, run_calls  # noqa: E402
from harness.testing import FakeAPIServer, cite_first_id  # noqa: E402

ARTICLES = [RetrievedArticle(str(i), f"Policy {i}", "Employees receive ten days of leave. " * 40, 1.0 / i) for i in range(1, 4)]


def jobs(n: int, tag: str) -> list[AnswerJob]:
    return [AnswerJob(f"{tag}{i}", f"Question number {i} about leave?", 0, ARTICLES) for i in range(n)]


def timed_run(spec: ModelSpec, n: int, out: Path, settings: RunSettings, tag: str) -> float:
    plan = RunPlan(spec, make_provider(spec), jobs(n, tag))
    plan.provider.check_ready()
    t0 = time.perf_counter()
    run_calls([plan], load_template(None), "bench", RunDir(out), settings)
    elapsed = time.perf_counter() - t0
    assert plan.stats.done == n and plan.stats.errors == 0, plan.stats
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["GRACE_CACHE_DIR"] = str(tmp / "cache")
        settings = RunSettings(concurrency=args.concurrency)
        with FakeAPIServer(latency=args.latency, responder=cite_first_id) as srv:
            spec = ModelSpec("openai", "bench-model", base_url=srv.openai_base_url, api_key="x")
            cold = timed_run(spec, args.calls, tmp / "run1", settings, "q")
            ideal = args.calls * args.latency / args.concurrency
            warm = timed_run(spec, args.calls, tmp / "run2", settings, "q")
            served = len(srv.requests)
        with FakeAPIServer(latency=0.0, responder=cite_first_id) as srv0:
            spec0 = ModelSpec("openai", "bench-model", base_url=srv0.openai_base_url, api_key="x")
            e2e = timed_run(spec0, 400, tmp / "run3", RunSettings(concurrency=1, use_cache=False), "z")
        scripted = ModelSpec("scripted", "bench", options={"default": "Ten days. [ID: {top_id}]"})
        n_off = 5000
        offline = timed_run(scripted, n_off, tmp / "run4", RunSettings(concurrency=args.concurrency), "s")
    print(f"runner benchmark: {args.calls} calls, concurrency {args.concurrency}, server latency {args.latency}s")
    print(f"  cold run        {cold:7.2f} s   ideal {ideal:.2f} s   achieved/ideal {ideal / cold:.3f}   "
          f"({args.calls / cold:.1f} calls/s; ideal {args.concurrency / args.latency:.1f})")
    print(f"  cache-hit rerun {warm:7.2f} s   ({args.calls / warm:,.0f} calls/s; server saw {served} requests in total)")
    print(f"  harness overhead per call (offline provider, {n_off} calls): {offline / n_off * 1000:.3f} ms")
    print(f"  sequential round trip incl. SDK + local HTTP (latency 0): {e2e / 400 * 1000:.2f} ms per call")


if __name__ == "__main__":
    main()
