"""The spot-check judge's meta-eval with a REAL model: SmolLM2-135M-Instruct through llama.cpp, beside the offline judge.

Why: the meta-eval is how a team picks a judge with evidence, and its figures mean something only for a model that
really ran. This starts llama-cpp-python's server (benchmarks/local/llama_server.py: GRACE_LLAMA_PYTHON, GRACE_GGUF),
runs ``grace spotcheck meta-eval`` in each mode (the support cases; GroUSE's answer-quality cases with the first mode
only, since their calls are the same in both), runs the offline ``baseline:lexical`` judge on the same cases, and
prints one Markdown table with the machine, versions and wall times. Every call is made afresh (``--no-cache``), one
at a time (the server works on one request at a time).

    GRACE_LLAMA_PYTHON=/path/to/venv/bin/python python benchmarks/judge_meta_eval_real.py --n-threads 1
    python benchmarks/judge_meta_eval_real.py --base-url http://127.0.0.1:8093/v1   # a server already running

About 10 to 30 minutes on 2 cores, most of it the answer-quality cases' long prompts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRACE = [sys.executable, "-m", "harness.cli.app"]
sys.path.insert(0, str(ROOT / "benchmarks" / "local"))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "?")
    mem = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")), 0)
    return f"{cpu}, {os.cpu_count()} cores, {mem / 1024 / 1024:.1f} GiB RAM, {platform.system()} {platform.release()}"


def llama_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import llama_cpp; print(llama_cpp.__version__)"], capture_output=True,
                         text=True, timeout=60)
    return out.stdout.strip() or "?"


def meta_eval(judge: str, mode: str, out: Path, extra: list[str]) -> tuple[dict, float, list[str]]:
    cmd = [*GRACE, "spotcheck", "meta-eval", "--judge", judge, "--mode", mode, "--out", str(out), "--force",
           "--show", "0", *extra]
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode not in (0, 1):  # 1: no usable verdict at all is still a figure
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return json.loads(out.read_text()), wall, ["grace", *cmd[3:]]


def pct(v: dict) -> str:
    return f"{v['passed']} / {v['cases']}"


def table(results: dict[str, dict]) -> str:
    """Support and quality figures, one column per (judge, mode)."""
    cols = list(results)
    first = next(iter(results.values()))
    lines = ["| | " + " | ".join(cols) + " |", "| --- |" + " --- |" * len(cols)]
    for m in first["per_mode"]:
        lines.append(f"| {m.replace('_', ' ')} | " + " | ".join(pct(r["per_mode"][m]) for r in results.values()) + " |")
    lines.append("| **support, all** | " + " | ".join(
        f"**{r['passed']} / {r['cases']}** ({100 * r['pass_rate']:.1f}%)" for r in results.values()) + " |")
    lines.append("| unsupported caught | " + " | ".join(
        f"{100 * r['unsupported_caught']:.1f}% (n={r['n_unsupported']})" for r in results.values()) + " |")
    lines.append("| supported accepted | " + " | ".join(
        f"{100 * r['supported_accepted']:.1f}% (n={r['n_supported']})" for r in results.values()) + " |")
    lines.append("| kappa vs expected (readable verdicts) | " + " | ".join(
        f"{'n/a' if r['kappa'] is None else format(r['kappa'], '.2f')} (n={r['kappa_n']})" for r in results.values())
        + " |")
    lines.append("| unreadable after the strict retry | " + " | ".join(f"{r['unreadable']}" for r in results.values())
                 + " |")
    def quality(r: dict, cell) -> str:
        return cell(r["quality"]) if "quality" in r else "(same calls as the first mode)"

    for m in first["quality"]["per_mode"]:
        lines.append(f"| GroUSE: {m.replace('_', ' ')} | " + " | ".join(
            quality(r, lambda q: pct(q["per_mode"][m])) for r in results.values()) + " |")  # noqa: B023
    lines.append("| **GroUSE, all** | " + " | ".join(quality(
        r, lambda q: f"**{q['passed']} / {q['cases']}** ({100 * q['pass_rate']:.1f}%)") for r in results.values()) + " |")
    lines.append("| GroUSE unreadable after the strict retry | " + " | ".join(
        quality(r, lambda q: str(q["unreadable"])) for r in results.values()) + " |")
    lines.append("| wall time | " + " | ".join(f"{r['_wall']:.0f} s" for r in results.values()) + " |")
    return "\n".join(lines)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--n-threads", type=int, default=1, help="llama.cpp threads [default: 1]")
    cli.add_argument("--n-ctx", type=int, default=4096, help="server context size [default: 4096]")
    cli.add_argument("--base-url", default=None, help="use this running server instead of starting one")
    cli.add_argument("--model", default="smollm2", help="the server's model alias [default: smollm2]")
    cli.add_argument("--modes", default="segments,claims", help="meta-eval modes [default: segments,claims]")
    cli.add_argument("--out-dir", type=Path, default=Path("judge-meta-eval-real"), help="JSON results go here")
    args = cli.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    from llama_server import LlamaServer, find_python_and_gguf

    python, gguf = find_python_and_gguf()
    server = None
    if args.base_url is None:
        server = LlamaServer(model=args.model, n_ctx=args.n_ctx, n_threads=args.n_threads).start()
    base_url = args.base_url or server.base_url
    results: dict[str, dict] = {}
    commands = []
    try:
        for i, mode in enumerate(modes):
            out = args.out_dir / f"llamacpp-{mode}.json"
            res, wall, cmd = meta_eval(f"llamacpp:{args.model}", mode, out, [
                "--base-url", base_url, "--concurrency", "1", "--no-cache", *(["--no-quality"] if i else [])])
            results[f"SmolLM2-135M, {mode}"] = {**res, "_wall": wall}
            commands.append(" ".join(cmd))
            print(f"{mode}: {res['passed']}/{res['cases']} support, {wall:.0f} s", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.stop()
    for i, mode in enumerate(modes):
        res, wall, cmd = meta_eval("baseline:lexical", mode, args.out_dir / f"lexical-{mode}.json",
                                   ["--no-quality"] if i else [])
        results[f"offline lexical, {mode}"] = {**res, "_wall": wall}
        commands.append(" ".join(cmd))

    print(f"Judge meta-eval, {datetime.now(UTC).date().isoformat()}")
    print(f"- model: {gguf.name} (llamacpp:{args.model}), llama-cpp-python {llama_version(python)}, "
          f"n_threads {args.n_threads if server else '(server as started)'}, n_ctx {args.n_ctx}")
    print(f"- machine: {machine()}")
    print(f"- commands: {'; '.join(f'`{c}`' for c in commands)}\n")
    print(table(results))


if __name__ == "__main__":
    main()
