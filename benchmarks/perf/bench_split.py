"""How fast is ``grace kb build`` on one large Markdown file? Target: 50 MB in under 30 s on 2 cores.

Generates one Markdown handbook per size (default 5, 10, 20 and 50 MB) in a temp
folder: front matter, headings at levels 1-5, paragraphs with links and
emphasis, bullet and numbered lists, tables, code fences, navigation lists, and
some very long sections (hundreds of paragraphs under one heading, which the
splitter must cut by blocks). For each size one child process times loading
(parsing and cleaning the Markdown) and splitting it into articles, and a
second, fresh one times the whole ``build_kb`` into a new KB folder (loading,
splitting, token counts and hashes, IDs, writing, and whatever else a build
does); each reports its own peak memory (max RSS; a helper process that reads
or counts the second half of a large file is not included).

    python benchmarks/perf/bench_split.py                       # 5, 10, 20, 50 MB
    python benchmarks/perf/bench_split.py --sizes 1 5 --keep /tmp/bench-split
    python benchmarks/perf/bench_split.py --shape flat              # thousands of sections under one title
    python benchmarks/perf/bench_split.py --splitting /tmp/old_splitting.py   # time another splitting.py

``--splitting`` loads that file as ``kb_builder.splitting`` before anything
imports it, so an older version of the splitter can be timed against the tree's
loaders and store (e.g. ``git show HEAD~3:kb_builder/splitting.py > /tmp/old.py``).
Token counts use grace's offline approximation unless GRACE_TOKENIZER is set.
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

WORDS = ("leave policy employee manager request approval days annual carry over travel expense receipt "
         "claim reimbursement office security laptop password remote work contract benefits pension "
         "training budget portal review deadline team project account onboarding access badge "
         "the a of to in for and is are within after before must should can your with on by").split()
TOPICS = ("Sick leave", "Parental leave", "Travel booking", "Per diem", "Expense claims", "Laptop setup",
          "Password rules", "Remote work", "Pension plan", "Training budget", "Jury duty", "Office access",
          "Performance reviews", "Onboarding checklist", "Offboarding", "Security incidents", "Mileage")

CHILD = """
import importlib.util, json, resource, sys, time
from pathlib import Path
if sys.argv[3]:
    spec = importlib.util.spec_from_file_location("kb_builder.splitting", sys.argv[3])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kb_builder.splitting"] = mod
    spec.loader.exec_module(mod)
from kb_builder.build import build_kb
from kb_builder.documents import load_file
from kb_builder.splitting import Splitter
src, out = Path(sys.argv[1]), Path(sys.argv[2])
if sys.argv[4] == "build":  # a fresh process: nothing counted or parsed before
    t0 = time.perf_counter()
    result = build_kb(src, out)
    res = {"build": time.perf_counter() - t0, "articles": len(result.kb.articles)}
else:
    t0 = time.perf_counter()
    doc = load_file(src, src.name)
    t1 = time.perf_counter()
    drafts = Splitter().split(doc)
    res = {"load": t1 - t0, "split": time.perf_counter() - t1, "sections": len(doc.sections), "drafts": len(drafts)}
res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(res))
"""


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 22))
    if rng.random() < 0.15:
        i = rng.randrange(len(words))
        words[i] = f"[{words[i]}](https://handbook.example.com/{rng.choice(WORDS)}/{rng.randint(1, 999)})"
    if rng.random() < 0.1:
        i = rng.randrange(len(words))
        words[i] = f"**{words[i]}**"
    if rng.random() < 0.05:
        words.append(f"({rng.randint(1, 40)} days)")
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(2, 7)))


def block(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        return paragraph(rng)
    if r < 0.75:
        return "\n".join(f"- {sentence(rng)}" for _ in range(rng.randint(3, 8)))
    if r < 0.83:
        return "\n".join(f"{i}. {sentence(rng)}" for i in range(1, rng.randint(3, 7)))
    if r < 0.93:
        rows = ["| Item | Rate | Notes |", "| --- | --- | --- |"]
        rows += [f"| {rng.choice(WORDS).title()} | {rng.randint(1, 500)} EUR | {' '.join(rng.choices(WORDS, k=6))} |"
                 for _ in range(rng.randint(2, 10))]
        return "\n".join(rows)
    if r < 0.97:
        return "```\n# not a heading: code\n" + "\n".join(f"run {w}" for w in rng.choices(WORDS, k=5)) + "\n```"
    return "> " + sentence(rng)


def section(rng: random.Random, level: int, out: list[str], depth_left: int) -> None:
    out.append(f"{'#' * level} {rng.choice(TOPICS)} {rng.choice(WORDS)} {rng.randint(1, 99)}")
    long = rng.random() < 0.005
    for _ in range(rng.randint(80, 250) if long else rng.randint(1, 6)):
        out.append(block(rng))
    if rng.random() < 0.05:
        out.append("## See also" if level == 1 else f"{'#' * min(level + 1, 6)} See also")
        out.append("\n".join(f"- [{t}](/{t.lower().replace(' ', '-')}/)" for t in rng.sample(TOPICS, 4)))
    if depth_left:
        for _ in range(rng.randint(0, 4)):
            section(rng, min(level + 1, 6), out, depth_left - 1)


def make_markdown(path: Path, megabytes: float, seed: int = 0, shape: str = "mixed") -> int:
    """Write about ``megabytes`` MB of Markdown to ``path``; returns the size in bytes.

    ``mixed``: chapters with sub-sections 0-3 levels deep, 1% of sections very long.
    ``flat``: every topic a level-2 section of a few blocks right under the title
    (a long FAQ, or many pages exported into one file): the shape that was quadratic.
    """
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    size = 0
    with path.open("w", encoding="utf-8") as fh:
        head = "---\ntitle: Staff handbook\nlast_reviewed: 2026-01-01\n---\n\n# Staff handbook\n\nWelcome. " + paragraph(rng) + "\n\n"
        fh.write(head)
        size += len(head.encode())
        while size < target:
            out: list[str] = []
            if shape == "flat":
                out += [f"## {rng.choice(TOPICS)} {rng.randint(1, 10**6)}", *(block(rng) for _ in range(rng.randint(2, 5)))]
            else:
                section(rng, 2, out, depth_left=rng.choice((0, 0, 0, 1, 1, 2)))
            chunk = "\n\n".join(out) + "\n\n"
            fh.write(chunk)
            size += len(chunk.encode())
    return size


def run_child(src: Path, out: Path, splitting: Path | None, what: str, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(out), str(splitting or ""), what],
                          capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[5, 10, 20, 50], help="file sizes in MB")
    ap.add_argument("--shape", choices=("mixed", "flat"), default="mixed", help="outline of the generated file")
    ap.add_argument("--splitting", type=Path, default=None, help="time this splitting.py instead of the tree's")
    ap.add_argument("--no-build", action="store_true", help="time loading and splitting only, not the whole build")
    ap.add_argument("--keep", type=Path, default=None, help="write the files and KBs here and keep them")
    args = ap.parse_args()
    env = {**os.environ, "GRACE_TOKENIZER": os.environ.get("GRACE_TOKENIZER", "approx")}
    label = args.splitting or "kb_builder/splitting.py"
    print(f"splitting: {label}; shape: {args.shape}; tokenizer: {env['GRACE_TOKENIZER'] or 'tiktoken'}; "
          f"cores here: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for mb in args.sizes:
            src = folder / f"handbook-{mb:g}mb.md"
            t0 = time.perf_counter()
            size = make_markdown(src, mb, shape=args.shape)
            gen = time.perf_counter() - t0
            r = run_child(src, folder / f"kb-{mb:g}mb", args.splitting, "stages", env)
            mbs = size / 1e6
            line = (f"{mbs:5.1f} MB (generated in {gen:.1f}s): {r['sections']:,} sections -> {r['drafts']:,} articles; "
                    f"load {r['load']:.1f}s, split {r['split']:.1f}s ({mbs / max(r['split'], 1e-9):.2f} MB/s), "
                    f"peak memory {r['peak_mb']:,.0f} MB")
            if not args.no_build:
                b = run_child(src, folder / f"kb-{mb:g}mb", args.splitting, "build", env)
                line += f"; whole build {b['build']:.1f}s ({mbs / b['build']:.2f} MB/s), peak memory {b['peak_mb']:,.0f} MB"
            print(line, flush=True)
            if not args.keep:
                src.unlink()
    print("target: 50 MB built in under 30 s")


if __name__ == "__main__":
    main()
