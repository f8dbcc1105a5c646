"""The fixed cost of every command: whole ``grace`` processes against a fake server, as a user runs them.

One ``openai:`` model on a local fake OpenAI server with a fixed latency; the
sample handbook's KB and a gold set of N questions (the sample's 90, repeated
with variations). Each figure is a whole process (start-up, imports, KB load,
retrieval, calls, scoring, reports), the median of ``--repeats`` runs, with its
CPU seconds (user + system of the child), printed beside the goal:

    grace run, N calls, C connections, L s latency    wall / ideal; CPU ms per call in the calls phase
                                                      (the run's CPU less the cached re-run's and the SDK import's)
    the same command again, every answer cached
    the same, collect only (--no-score)
    grace score / grace report on that folder
    python -X importtime breakdown of the cached re-run (top imports)
    with --phases: a run's and a score's wall time phase by phase (benchmarks/perf/phases.py)

    python benchmarks/perf/bench_commands.py [--calls 400] [--concurrency 20] [--latency 0.5] [--repeats 3] [--phases]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.testing import FakeAPIServer, cite_first_id  # noqa: E402

GOALS = {"run": "ideal / 0.90", "cached": "<= 1.5 s", "no_score": "-", "score": "<= 0.4 s", "report": "<= 0.3 s"}


USE_MODULE = False  # --module: always ``python -m harness.cli.app`` (to time another checkout, via PYTHONPATH)


def grace(args: list[str], env: dict[str, str], importtime: bool = False) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the child's user + system) and stderr of one ``grace`` process.

    The installed ``grace`` command when this Python has one (what users run), else ``python -m harness.cli.app``.
    """
    script = Path(sys.executable).with_name("grace")
    if importtime or USE_MODULE or not script.exists():
        cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "harness.cli.app", *args]
    else:
        cmd = [str(script), *args]
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = os.times()
    if proc.returncode != 0:
        sys.exit(f"grace {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, proc.stderr


def make_gold(path: Path, n: int) -> None:
    rows = list(csv.DictReader((ROOT / "benchmarks" / "sample" / "gold.csv").open(encoding="utf-8")))
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for i in range(n):
            r = dict(rows[i % len(rows)])
            r["question_id"] = f"{r['question_id']}-{i}"
            if i >= len(rows):
                r["question"] += f" (asked by team {i // len(rows)})"
            w.writerow(r)


def top_imports(stderr: str, n: int = 12) -> list[tuple[float, str]]:
    """The slowest top-level imports of a ``-X importtime`` trace (cumulative microseconds)."""
    out = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)", line)
        if m and len(m.group(2)) <= 1:
            out.append((int(m.group(1)) / 1e6, m.group(3)))
    return sorted(out, reverse=True)[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--phases", action="store_true", help="also print where a run's and a score's time goes")
    ap.add_argument("--module", action="store_true",
                    help="run python -m harness.cli.app from this checkout, not the installed grace command")
    args = ap.parse_args()
    global USE_MODULE
    USE_MODULE = args.module
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "GRACE_CACHE_DIR": str(tmp / "cache"), "OPENAI_API_KEY": "x", "PYTHONPATH": str(ROOT),
               "COLUMNS": "120"}
        subprocess.run([sys.executable, "-m", "harness.cli.app", "kb", "build", str(ROOT / "benchmarks/sample/handbook"),
                        "--out", str(tmp / "kb")], env=env, check=True, capture_output=True)
        make_gold(tmp / "gold.csv", args.calls)
        figures: dict[str, list[tuple[float, float]]] = {k: [] for k in GOALS}
        imports: list[tuple[float, str]] = []
        sdk_cpu: list[float] = []  # CPU of importing the SDK alone: paid once per run, not per call
        phase_lines: list[str] = []
        with FakeAPIServer(latency=args.latency, responder=cite_first_id) as srv:
            env["OPENAI_BASE_URL"] = srv.openai_base_url
            for rep in range(args.repeats):
                shutil.rmtree(tmp / "cache", ignore_errors=True)
                out = tmp / f"run{rep}"
                base = ["run", "--kb", str(tmp / "kb"), "--gold", str(tmp / "gold.csv"), "-m", "openai:bench",
                        "--concurrency", str(args.concurrency)]
                figures["run"].append(grace([*base, "--out", str(out)], env)[:2])
                figures["cached"].append(grace([*base, "--out", str(tmp / f"cached{rep}")], env)[:2])
                figures["no_score"].append(grace([*base, "--out", str(tmp / f"collect{rep}"), "--no-score"], env)[:2])
                figures["score"].append(grace(["score", str(out / "responses.jsonl"), "--gold", str(tmp / "gold.csv"), "--kb",
                                               str(tmp / "kb")], env)[:2])
                figures["report"].append(grace(["report", str(out)], env)[:2])
                before = os.times()
                subprocess.run([sys.executable, "-c", "import openai"], env=env, check=True)
                after = os.times()
                sdk_cpu.append(after.children_user - before.children_user + after.children_system - before.children_system)
            _, _, trace = grace([*base, "--out", str(tmp / "trace"), "--no-score"], env, importtime=True)
            if args.phases:  # one more run and score, each under benchmarks/perf/phases.py
                shutil.rmtree(tmp / "cache", ignore_errors=True)
                for cmd in ([*base, "--out", str(tmp / "phases")],
                            ["score", str(tmp / "phases" / "responses.jsonl"), "--gold", str(tmp / "gold.csv"),
                             "--kb", str(tmp / "kb")]):
                    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("phases.py")), *cmd], env=env,
                                          capture_output=True, text=True, check=True)
                    phase_lines += [ln for ln in proc.stderr.splitlines() if ln.startswith(("phases", "  "))]
            imports = top_imports(trace)
    ideal = args.calls * args.latency / args.concurrency
    print(f"grace commands: {args.calls} calls, concurrency {args.concurrency}, latency {args.latency}s, "
          f"median of {args.repeats} (wall s / CPU s); ideal run {ideal:.1f}s")
    for name, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        extra = ""
        if name == "run":
            # the calls phase's CPU: the run's, less what the cached re-run (the same work but the calls) and
            # the SDK import cost
            cached = statistics.median(c for _, c in figures["cached"])
            per_call = (cpu - cached - statistics.median(sdk_cpu)) / args.calls * 1000
            extra = (f"  {ideal / wall:.2f} of ideal (goal 0.90); calls phase {per_call:.1f} ms CPU per call "
                     f"(goal <= 3 ms); whole process {cpu / args.calls * 1000:.1f} ms per call")
        print(f"  {name:<10} {wall:6.2f} s  CPU {cpu:5.2f} s   goal {GOALS[name]}{extra}")
    print("  slowest imports of a cached collect (--no-score), cumulative seconds:")
    for secs, mod in imports:
        print(f"    {secs:6.3f}  {mod}")
    for line in phase_lines:
        print(line)


if __name__ == "__main__":
    main()
