"""Latency that is the model's: grace's engine against a one-slot server at a concurrency it does not serve.

The fake server in its llama.cpp mode works on ``--slots`` requests at a time for ``--latency`` seconds each and
queues the rest, recording each request's time in its queue and in its slot. Prints, for the calls of one model at
``--concurrency``, the server's own median time in a slot (the truth), the model's time per call as grace tells it
(``service_ms``), the time the calls waited (``queue_ms`` plus the server's queue), and what the latency column
showed before (``latency_ms``: from sending to answer); with ``--timings`` the server says each call's time.

    python benchmarks/perf/bench_model_latency.py [--calls 60] [--concurrency 8] [--slots 1] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.perf.bench_runner import jobs  # noqa: E402
from harness.prompts import load_template  # noqa: E402
from harness.providers import make_provider  # noqa: E402
from harness.providers.base import ModelSpec  # noqa: E402
from harness.run_folder.run_dir import RunDir  # noqa: E402
from harness.runner.engine import RunPlan  # noqa: E402
from harness.runner.session import RunSettings, run_calls  # noqa: E402
from harness.testing import FakeAPIServer, cite_first_id  # noqa: E402
from harness.testing.fake_api import LocalServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--slots", type=int, default=1)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--timings", action="store_true", help="the server sends llama-server's timings")
    args = ap.parse_args()
    local = LocalServer(slots=args.slots, timings=args.timings)
    with tempfile.TemporaryDirectory() as tmp, FakeAPIServer(latency=args.latency, responder=cite_first_id,
                                                             local=local) as srv:
        spec = ModelSpec("openai", "bench-model", base_url=srv.openai_base_url, api_key="x")
        plan = RunPlan(spec, make_provider(spec), jobs(args.calls, "q"))
        t0 = time.perf_counter()
        run_calls([plan], load_template(None), "bench", RunDir(Path(tmp)),
                  RunSettings(concurrency=args.concurrency, use_cache=False))
        wall = time.perf_counter() - t0
        rows = [json.loads(line) for line in (Path(tmp) / "responses.jsonl").read_text().splitlines()]
        served = [slot for _, slot in srv.served]
    st = plan.stats
    told = [r["service_ms"] / 1000 for r in rows if r.get("service_ms") is not None]
    waited = [(r.get("queue_ms") or 0) / 1000 + (r["latency_ms"] - r["service_ms"]) / 1000
              for r in rows if r.get("service_ms") is not None]
    print(f"model latency: {args.calls} calls at concurrency {args.concurrency}, server with {args.slots} slot(s), "
          f"{args.latency} s a call{', its own timings' if args.timings else ''}")
    print(f"  server's own median time in a slot   {statistics.median(served):.3f} s   (the truth)")
    print(f"  grace's p50 of the model's own time  {statistics.median(told):.3f} s   "
          f"({len(told)} of {len(rows)} told; from {', '.join(sorted({r.get('service_from') or '-' for r in rows}))})")
    print(f"  p50 time waiting in a queue          {statistics.median(waited):.3f} s")
    print(f"  p50 from sending to answer (before)  {statistics.median(r['latency_ms'] for r in rows) / 1000:.3f} s")
    print(f"  slots: {st.server_slots} ({st.slots_from}); busy {st.busy_s:.1f} s of {wall:.1f} s; "
          f"time per 1,000 calls {st.busy_s / args.calls * 1000 / 60:.1f} min")


if __name__ == "__main__":
    main()
