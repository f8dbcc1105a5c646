"""grace's CPU per turn of a search loop at concurrency 100: what running a model's tools costs beyond the call itself.

One model searches the sample handbook (BM25) for itself: ``search-twice``, the scripted model that searches twice
and then answers (three turns, two tool calls a question), served by the aiohttp fake server in a process of its
own (:mod:`harness.testing.aio_api`) after a fixed latency. The same number of plain calls (the model shown the
top 3, one call a question) is run beside it. Printed: grace's CPU seconds (user + system of this process; the
server's are its own) and CPU ms per turn for each, and the difference: what the loop adds per turn (its tool
calls run, their BM25 searches, the conversation rebuilt and keyed, each turn cached, the row's record).

Target (issue 48): the loop adds at most 0.5 ms of grace CPU per turn at concurrency 100.

    python benchmarks/perf/bench_tool_loop.py [--questions 1500] [--concurrency 100] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.prompts import load_template  # noqa: E402
from harness.providers import make_provider  # noqa: E402
from harness.providers.base import ModelSpec, RetrievedArticle  # noqa: E402
from harness.run_folder.run_dir import RunDir  # noqa: E402
from harness.run_folder.run_records import SearchSettings  # noqa: E402
from harness.runner.engine import AnswerJob, RunPlan  # noqa: E402
from harness.runner.session import RunSettings, run_calls  # noqa: E402
from harness.runner.tool_loop import attach_loops  # noqa: E402
from harness.testing.aio_api import AioFakeServer  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def questions(n: int) -> list[str]:
    with (ROOT / "benchmarks" / "sample" / "gold.csv").open(encoding="utf-8") as fh:
        base = [r["question"] for r in csv.DictReader(fh)]
    return [f"{base[i % len(base)]} (variant {i})" for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=1500)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    os.environ["GRACE_CACHE_DIR"] = tempfile.mkdtemp(prefix="grace-bench-cache-")
    import grace
    from kb_builder.loader import load_kb

    tmp = Path(tempfile.mkdtemp(prefix="grace-bench-loop-"))
    grace.build_kb(ROOT / "benchmarks" / "sample" / "handbook", tmp / "kb")
    kb = load_kb(tmp / "kb")
    retriever = kb.retriever()
    texts = questions(args.questions)
    top = retriever.search_many(texts, 3)
    jobs = [AnswerJob(f"q{i}", t, 0, [RetrievedArticle(h.id, kb.by_id[h.id].title, kb.by_id[h.id].text, h.score)
                                      for h in hits]) for i, (t, hits) in enumerate(zip(texts, top, strict=True))]
    template = load_template(None, search=True)
    print(f"search loop: {args.questions:,} questions, concurrency {args.concurrency}, latency {args.latency}s, "
          f"aiohttp fake server in its own process, BM25 over the sample handbook ({len(kb.articles)} articles)")
    print(f"{'case':<26} {'turns':>7} {'wall s':>8} {'grace CPU s':>12} {'ms/turn':>8} {'server CPU s':>13}")
    per_turn = {}
    with AioFakeServer(latency=args.latency) as srv:
        import openai  # noqa: F401 - imported before the clock starts, as in a run that has sent its first call

        for case, searches in (("plain (top 3 pushed)", False), ("search loop (search-twice)", True)):
            spec = ModelSpec("openai", "search-twice", base_url=srv.openai_base_url, api_key="x",
                             search=SearchSettings(max_tool_calls=6) if searches else None)
            plan = RunPlan(spec, make_provider(spec), jobs)
            plan.provider.check_ready()
            attach_loops([plan], kb, None, 3)
            s0, c0, t0 = srv.cpu_seconds() or 0.0, cpu(), time.perf_counter()
            run_calls([plan], template, "bench", RunDir(tmp / case.split()[0]), RunSettings(concurrency=args.concurrency))
            wall, used = time.perf_counter() - t0, cpu() - c0
            served = (srv.cpu_seconds() or 0.0) - s0
            assert plan.stats.errors == 0 and plan.stats.done == len(jobs), plan.stats
            turns = len(jobs) * (3 if searches else 1)
            per_turn[searches] = used / turns * 1000
            print(f"{case:<26} {turns:>7,} {wall:>8.2f} {used:>12.2f} {per_turn[searches]:>8.3f} {served:>13.2f}",
                  flush=True)
    added = per_turn[True] - per_turn[False]
    print(f"the loop adds {added:.3f} ms of grace CPU per turn (target <= 0.5 ms): "
          f"{'met' if added <= 0.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
