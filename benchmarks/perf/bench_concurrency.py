"""grace's engine at high concurrency: does throughput stay near ideal, and grace's CPU per call flat, as connections grow?

The calls go through grace's own engine (``run_calls``, the openai provider, the response cache and
responses.jsonl) to an OpenAI-compatible fake server on aiohttp in a process of its own
(:mod:`harness.testing.aio_api`), which answers after a fixed latency and is not the limit at a thousand
connections. For each concurrency C the run makes min(--calls, 40 C) calls (40 rounds of the latency, so
concurrency 20 takes 20 s rather than 500), and prints the wall time, its share of the ideal N * L / C,
grace's CPU seconds (user + system of this process, the SDK imported beforehand; the server's are its own, shown
apart) and CPU ms per call.

The replicas case (``--replicas``): one model on three servers that each work on ``--slots`` requests at once
(a GPU server's batch; the rest queue), one killed once a third of the calls are done. Grace should drop it, say so, and go on
at the throughput of two: printed before and after the kill, against the servers' capacity.

    python benchmarks/perf/bench_concurrency.py [--calls 20000] [--concurrency 20,500,1000] [--latency 0.5]
        [--replicas/--no-replicas] [--http/--no-http] [--pools] [--slots 20] [--replica-calls 4000] [--transport auto|httpx]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.prompts import load_template  # noqa: E402
from harness.providers import make_provider  # noqa: E402
from harness.providers.base import ModelSpec, RetrievedArticle  # noqa: E402
from harness.run_folder.run_dir import RunDir  # noqa: E402
from harness.runner.engine import AnswerJob, RunPlan  # noqa: E402
from harness.runner.session import RunSettings, run_calls  # noqa: E402
from harness.testing.aio_api import AioFakeServer  # noqa: E402

ARTICLES = [RetrievedArticle(str(i), f"Policy {i}", "Employees receive ten days of leave. " * 40, 1.0 / i) for i in range(1, 4)]
ROUNDS = 40  # calls per connection at most: 40 rounds of the latency


def jobs(n: int, tag: str) -> list[AnswerJob]:
    return [AnswerJob(f"{tag}{i}", f"Question number {i} about leave?", 0, ARTICLES) for i in range(n)]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(spec: ModelSpec, n: int, concurrency: int, out: Path, tag: str) -> tuple[float, float, RunPlan]:
    plan = RunPlan(spec, make_provider(spec), jobs(n, tag))
    plan.provider.check_ready()
    c0, t0 = cpu(), time.perf_counter()
    run_calls([plan], load_template(None), "bench", RunDir(out), RunSettings(concurrency=concurrency))
    return time.perf_counter() - t0, cpu() - c0, plan


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def concurrency_case(levels: list[int], calls: int, latency: float, tmp: Path, provider: str = "openai") -> None:
    what = "openai provider" if provider == "openai" else "an http: system (its bot endpoint)"
    print(f"concurrency: {what} through run_calls, aiohttp fake server in its own process, latency {latency}s")
    print(f"{'calls':>7} {'conc.':>6} {'wall s':>8} {'ideal s':>8} {'of ideal':>9} {'calls/s':>8} {'grace CPU s':>12} "
          f"{'ms/call':>8} {'server CPU s':>13}  load")
    for c in levels:
        n = min(calls, ROUNDS * c)
        with AioFakeServer(latency=latency) as srv:
            spec = (ModelSpec("openai", "bench-model", base_url=srv.openai_base_url, api_key="x") if provider == "openai"
                    else ModelSpec("http", srv.bot_url))
            s0 = srv.cpu_seconds() or 0.0
            wall, used, plan = timed(spec, n, c, tmp / f"{provider}{c}", f"c{c}-")
            served = (srv.cpu_seconds() or 0.0) - s0
        assert plan.stats.done == n and plan.stats.errors == 0, plan.stats
        ideal = n * latency / c
        print(f"{n:>7,} {c:>6} {wall:>8.2f} {ideal:>8.2f} {ideal / wall:>9.3f} {n / wall:>8.1f} {used:>12.2f} "
              f"{used / n * 1000:>8.3f} {served:>13.2f}  {load()}", flush=True)


def rate(samples: list[tuple[float, int]], lo: int, hi: int) -> float:
    """Calls per second between the moments ``lo`` and ``hi`` calls were done (from the sampled progress)."""
    t_lo = next((t for t, d in samples if d >= lo), None)
    t_hi = next((t for t, d in samples if d >= hi), None)
    return (hi - lo) / (t_hi - t_lo) if t_lo is not None and t_hi is not None and t_hi > t_lo else float("nan")


def replicas_case(calls: int, latency: float, slots: int, tmp: Path) -> None:
    """Three replicas of ``slots`` each, one killed once a third of the calls are done: the throughput before and
    after (from progress sampled every 0.1 s, leaving out the ramp at the start and the tail at the end)."""
    servers = [AioFakeServer(latency=latency, slots=slots).start() for _ in range(3)]
    try:
        urls = [s.openai_base_url for s in servers]
        spec = ModelSpec("openai", "bench-replicas", base_url=urls[0], replicas=urls, api_key="x")
        plan = RunPlan(spec, make_provider(spec), jobs(calls, "r"))
        plan.provider.check_ready()
        samples: list[tuple[float, int]] = []
        killed: list[int] = []
        finished = threading.Event()

        def watch() -> None:
            while not finished.is_set():
                samples.append((time.perf_counter(), plan.stats.done))
                if not killed and plan.stats.done >= calls // 3:
                    servers[1].kill()
                    killed.append(plan.stats.done)
                finished.wait(0.1)

        thread = threading.Thread(target=watch, daemon=True)
        c0, t0 = cpu(), time.perf_counter()
        thread.start()
        run_calls([plan], load_template(None), "bench", RunDir(tmp / "replicas"), RunSettings(concurrency=3 * slots))
        wall, used = time.perf_counter() - t0, cpu() - c0
        finished.set()
        thread.join()
        answered = [s.stats()["answered"] for i, s in enumerate(servers) if i != 1]
    finally:
        for s in servers:
            s.stop()
    st, at = plan.stats, killed[0] if killed else calls
    before = rate(samples, calls // 20, at)
    after = rate(samples, at + calls // 20, calls - calls // 20)
    three = 3 * slots / latency  # calls per second the three can serve
    print(f"replicas: {calls:,} calls, 3 replicas x {slots} slots, latency {latency}s, concurrency {3 * slots}; "
          f"replica 2 killed after {at:,} calls")
    print(f"  wall {wall:.2f} s; before the kill {before:.0f} calls/s (capacity of three {three:.0f}); after "
          f"{after:.0f} calls/s (capacity of two {2 * three / 3:.0f}: {after / (2 * three / 3):.3f} of it)")
    print(f"  answered {st.done - st.errors:,} of {st.done:,}, errors {st.errors}, retries {st.retries}; the two "
          f"live servers answered {answered}; grace CPU {used:.2f} s ({used / calls * 1000:.3f} ms/call)")
    print(f"  replicas in run.json: {plan.provider.learned().get('replicas', [])}")


def pools_case(latency: float, calls: int = 3000, in_flight: int = 300) -> None:
    """The transports side by side, the openai SDK's ``post`` alone (no engine): httpx's one pool, httpx split into
    pools of 20 connections (one SDK client each, calls taken in turn), and aiohttp's one pool."""
    import asyncio

    import openai

    messages = [{"role": "system", "content": "x" * 500},
                {"role": "user", "content": "Employees receive ten days [ID: 3]. " * 100}]
    body = {"model": "bench-model", "messages": messages, "max_tokens": 100}

    async def measure(url: str, label: str, k: int, make) -> None:
        clients = [openai.AsyncOpenAI(api_key="x", base_url=url, max_retries=0, timeout=120, http_client=make())
                   for _ in range(k)]
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with gate:
                await clients[i % k].post("/chat/completions", body=body, cast_to=object)

        await asyncio.gather(*(one(i) for i in range(in_flight)))  # connections open before the clock starts
        c0, t0 = cpu(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        used, wall = cpu() - c0, time.perf_counter() - t0
        print(f"  {label:<30} {used / calls * 1000:6.2f} ms/call  wall {wall:6.2f} s  load {load()}", flush=True)
        for c in clients:
            await c.close()

    print(f"pools: the openai SDK's post alone, {calls:,} calls, {in_flight} in flight, latency {latency}s")
    with AioFakeServer(latency=latency) as srv:
        url = srv.openai_base_url
        asyncio.run(measure(url, "httpx, one pool", 1, openai.DefaultAsyncHttpxClient))
        asyncio.run(measure(url, f"httpx, {in_flight // 20} pools of 20", in_flight // 20, openai.DefaultAsyncHttpxClient))
        asyncio.run(measure(url, "aiohttp, one pool", 1, openai.DefaultAioHttpClient))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--concurrency", default="20,500,1000")
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--replicas", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--http", action=argparse.BooleanOptionalAction, default=True,
                    help="also an http: system at concurrency 500 (the bot endpoint, httpx's interface on aiohttp)")
    ap.add_argument("--pools", action=argparse.BooleanOptionalAction, default=False,
                    help="also the transports side by side under the SDK alone: httpx, httpx in pools of 20, aiohttp")
    ap.add_argument("--slots", type=int, default=20, help="requests each replica works on at once")
    ap.add_argument("--replica-calls", type=int, default=4000)
    ap.add_argument("--transport", choices=("auto", "httpx"), default="auto",
                    help="httpx: grace's fallback transport (GRACE_HTTP_TRANSPORT=httpx), for the before/after")
    args = ap.parse_args()
    if args.transport == "httpx":
        os.environ["GRACE_HTTP_TRANSPORT"] = "httpx"
    logging.basicConfig(level=logging.WARNING, format="  [grace] %(message)s")
    import openai  # noqa: F401 - imported before the clock starts: CPU per call is the steady state, not imports

    from harness.providers import transport

    print(f"transport: {transport.name()} (GRACE_HTTP_TRANSPORT={os.environ.get(transport.ENV, '')!r}); "
          f"load average at the start {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GRACE_CACHE_DIR"] = str(Path(tmp) / "cache")
        levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
        if levels:
            concurrency_case(levels, args.calls, args.latency, Path(tmp))
        if args.http:
            concurrency_case([max(c for c in levels if c <= 500)] if any(c <= 500 for c in levels) else [500],
                             args.calls, args.latency, Path(tmp), provider="http")
        if args.pools:
            pools_case(args.latency)
        if args.replicas:
            replicas_case(args.replica_calls, args.latency, args.slots, Path(tmp))


if __name__ == "__main__":
    main()
