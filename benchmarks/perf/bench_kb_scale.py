"""Does ``grace kb build`` (which lints the KB it builds) stay near linear in time and bounded in memory?

Goal: 10, 20 and 50 MB of Markdown build, lint included, in time roughly linear
in size and under 2 GB peak memory at 50 MB, whatever the text is like. Three
kinds of text, generated in a temp folder:

    unique    every paragraph new: words drawn (Zipf) from a 60,000-word made-up vocabulary
    repeated  one handbook written again and again (twice up to 20 MB, then 10 MB five times: a folder
              exported twice, mirrored pages):
              every article has near duplicates, the case that made pairwise lint quadratic
    small     a 20-word vocabulary: every article shares every word with every other

Each build is a whole ``grace kb build`` process; its wall time, its peak memory
(max RSS of the child) and the lint line it prints are shown, with the lint's own
seconds from a second process that lints the built KB (``grace kb lint --json``).

    python benchmarks/perf/bench_kb_scale.py                        # 10, 20, 50 MB x the three kinds
    python benchmarks/perf/bench_kb_scale.py --sizes 10 --kinds unique --keep /tmp/kbscale
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = ("leave policy employee manager request approval days annual travel expense "
         "claim office laptop password remote contract pension training review team").split()
GOAL_MB = 2048


def vocabulary(rng: random.Random, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "ve", "zo", "shi", "pra", "dex", "mon", "tur", "gal", "fen", "bro"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choices(syll, k=rng.randint(2, 4))))
    return sorted(words)


def write_handbook(path: Path, megabytes: float, words: list[str], seed: int) -> int:
    """About ``megabytes`` MB of Markdown: chapters of a few sections, each 2-6 paragraphs of Zipf-drawn words."""
    rng = random.Random(seed)
    cum, acc = [], 0.0
    for r in range(len(words)):
        acc += 1.0 / (r + 1)
        cum.append(acc)  # cumulative: rng.choices would otherwise add up 60,000 weights at every call
    target, size, n = int(megabytes * 1_000_000), 0, 0
    with path.open("w", encoding="utf-8") as fh:
        while size < target:
            n += 1
            out = [f"# Chapter {n}: {' '.join(rng.choices(words, cum_weights=cum, k=3)).title()}"]
            for s in range(rng.randint(2, 6)):
                out.append(f"## {' '.join(rng.choices(words, cum_weights=cum, k=rng.randint(2, 5))).capitalize()} {n}.{s}")
                for _ in range(rng.randint(2, 6)):
                    sents = (" ".join(rng.choices(words, cum_weights=cum, k=rng.randint(8, 24))).capitalize() + "."
                             for _ in range(rng.randint(2, 6)))
                    out.append(" ".join(sents))
            chunk = "\n\n".join(out) + "\n\n"
            fh.write(chunk)
            size += len(chunk.encode())
    return size


def make_source(folder: Path, kind: str, mb: float) -> Path:
    src = folder / f"{kind}-{mb:g}mb.md"
    if kind == "unique":
        write_handbook(src, mb, vocabulary(random.Random(1), 60_000), seed=int(mb))
    elif kind == "small":
        write_handbook(src, mb, SMALL, seed=int(mb))
    else:  # repeated: one handbook written again and again (half the size up to 20 MB, then 10 MB)
        part = mb / 2 if mb <= 20 else 10
        base = folder / f"base-{part:g}mb.md"
        if not base.exists():
            write_handbook(base, part, vocabulary(random.Random(1), 60_000), seed=10)
        text = base.read_text(encoding="utf-8")
        with src.open("w", encoding="utf-8") as fh:
            for _ in range(round(mb / part)):
                fh.write(text)
    return src


def grace(args: list[str], env: dict[str, str], timeout: float) -> tuple[float, float, str, int]:
    """Wall seconds, peak RSS (MB) of this child alone (os.wait4's rusage), its output and exit code."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli.app", *args], env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        log.seek(0)
        out = log.read() + (f"stopped after {timeout:.0f}s" if wall > timeout else "")
    return wall, usage.ru_maxrss / 1024, out, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[10, 20, 50], help="file sizes in MB")
    ap.add_argument("--kinds", nargs="+", choices=("unique", "repeated", "small"), default=["unique", "repeated", "small"])
    ap.add_argument("--timeout", type=float, default=900, help="stop a build after this many seconds")
    ap.add_argument("--keep", type=Path, default=None, help="write the files and KBs here and keep them")
    args = ap.parse_args()
    env = {**os.environ, "GRACE_TOKENIZER": os.environ.get("GRACE_TOKENIZER", "approx"), "COLUMNS": "200",
           "PYTHONPATH": str(ROOT)}
    print(f"cores here: {os.cpu_count()}; tokenizer: {env['GRACE_TOKENIZER']}; goal: near-linear time, "
          f"peak memory < {GOAL_MB} MB at 50 MB")
    print(f"{'kind':9} {'MB':>4} {'articles':>9} {'build s':>8} {'s/MB':>5} {'peak MB':>8} {'lint s':>7}  lint line")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for kind in args.kinds:
            for mb in args.sizes:
                src = make_source(folder, kind, mb)
                size = src.stat().st_size / 1e6
                kb = folder / f"kb-{kind}-{mb:g}"
                wall, peak, out, rc = grace(["kb", "build", str(src), "--out", str(kb)], env, args.timeout)
                lint_line = next((ln.strip() for ln in out.splitlines() if ln.startswith("lint")), out.strip()[-160:])
                notes = sum(ln.startswith("note:") for ln in out.splitlines())
                lint_line += f" [{notes} note(s): what lint left out]" if notes else ""
                articles = next((ln.split()[0] for ln in out.splitlines() if " articles from " in ln), "?")
                lint_s = float("nan")
                if rc == 0:
                    lint_s, _, _, _ = grace(["kb", "lint", str(kb), "--json"], env, args.timeout)
                print(f"{kind:9} {size:4.0f} {articles:>9} {wall:8.1f} {wall / size:5.2f} {peak:8.0f} {lint_s:7.1f}  "
                      f"{lint_line[:110]}", flush=True)
                if not args.keep:
                    src.unlink()


if __name__ == "__main__":
    main()
