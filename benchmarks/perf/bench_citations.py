"""What does reading citations as references cost ``grace score``? Goal: resolving them adds <= 10% on 1M responses.

Generates a synthetic KB whose articles come from documents with headings (500 articles, 100 documents), a gold
set (10,000 questions) and two responses files of the same answers (10 models):

* ``refs.jsonl``: a shipped bot's citations: its own references (``section-3/doc-3.html#heading-2``, a URL of the
  same page, a title, now and then an ID of its own index that maps to nothing) given as data or as footnotes
  ``[1][2]`` with a "Sources:" list, 1 to 3 per answer, and its own retrieval list (5 references);
* ``ids.jsonl``: the same answers citing the same articles by KB ID (structured citations, or ``[ID: x]`` in
  the text for the footnote answers), its retrieval list as IDs.

Then it scores, each in a child process (imports included, like ``grace score``):

1. ``ids.jsonl`` as GRACE reads it today (no citation settings: the code path before issue 39);
2. ``ids.jsonl`` read as IDs and scored several citations per answer (``reads = "ids"``, ``scoring = "multi"``);
3. ``refs.jsonl`` read as references and scored several per answer (``reads = "references"``, ``"multi"``).

The acceptance compares 3 with 2: the same rows and the same multi-citation scoring, with and without resolving
the references (markers, source lists, the resolver, quote checks). 3 against 1 is printed too: everything the
multi-citation reading adds to today's GRACE scoring. Temp files are deleted at the end (a million rows: ~1 GB).

    python benchmarks/perf/bench_citations.py                      # 1,000,000 responses
    python benchmarks/perf/bench_citations.py --responses 100000 --workers 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("leave policy employee manager request approval days annual carry over travel expense receipt "
         "claim reimbursement office security laptop password remote work contract benefits pension "
         "training budget the a of to in for and is are within after before must should can").split()

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from harness.run_folder.run_records import CitationSettings
from harness.scoring import score_responses
mode = sys.argv[7]
settings = None if mode == "grace" else CitationSettings(scoring="multi", reads=mode)
models = [f"model-{m}" for m in range(10)]
report = score_responses(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], seed=0, bootstrap=int(sys.argv[5]),
                         workers=int(sys.argv[6]) or None,
                         citations=None if settings is None else {m: settings for m in models})
took = time.perf_counter() - t0
blocks = [m.citations for m in report.ranked() if m.citations is not None]
print(json.dumps({"seconds": took, "n": report.responses.n, "accuracy": report.ranked()[0].accuracy,
                  "f1": blocks[0].f1 if blocks else None, "unmapped": sum(b.n_unmapped for b in blocks),
                  "citations": sum(b.n_citations for b in blocks)}))
"""


def make_kb(folder: Path, n_articles: int, per_doc: int, rng: random.Random) -> list[dict]:
    """Articles from documents of ``per_doc`` headings each: the sources and headings references name."""
    folder.mkdir(parents=True, exist_ok=True)
    articles = []
    for i in range(n_articles):
        doc, k = divmod(i, per_doc)
        heading = f"Heading {k} of {rng.choice(WORDS)} {doc}"
        articles.append({"id": str(i + 1), "title": f"Document {doc} > {heading}", "heading_path": [heading],
                         "source": f"section-{doc % 7}/doc-{doc}.html", "text": " ".join(rng.choices(WORDS, k=60))})
    with (folder / "articles.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(a) + "\n" for a in articles)
    return articles


def make_gold(path: Path, ids: list[str], n_questions: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    gold = []
    with path.open("w", encoding="utf-8") as fh:
        fh.write("question_id,question,expected_citations,must_refuse\n")
        for i in range(n_questions):
            expected = rng.sample(ids, 1 if rng.random() < 0.8 else 2)
            gold.append((f"q{i}", expected))
            fh.write(f"q{i},How does {rng.choice(WORDS)} work?,{';'.join(expected)},false\n")
    return gold


def reference(a: dict, rng: random.Random) -> str:
    """How a bot names an article: its path and heading, the same page's URL, or its title."""
    slug = "-".join(a["heading_path"][0].lower().split())
    form = rng.random()
    if form < 0.6:
        return f"{a['source']}#{slug}"
    if form < 0.9:
        return f"https://intranet.example.com/handbook/{a['source']}#{slug}"
    return a["title"]


def make_responses(refs: Path, ids_path: Path, articles: list[dict], gold, n: int, rng: random.Random) -> None:
    n_models = 10
    repeats = max(1, -(-n // (n_models * len(gold))))
    written = 0
    with refs.open("w", encoding="utf-8") as fr, ids_path.open("w", encoding="utf-8") as fi:
        for m in range(n_models):
            for r in range(repeats):
                a_lines, b_lines = [], []
                for qid, expected in gold:
                    if written >= n:
                        break
                    answer = " ".join(rng.choices(WORDS, k=rng.randint(20, 60))).capitalize()
                    cited = [expected[0] if rng.random() < 0.5 + 0.04 * m else rng.choice(articles)["id"]]
                    cited += [rng.choice(articles)["id"] for _ in range(rng.choice((0, 0, 1, 2)))]
                    cited = list(dict.fromkeys(cited))
                    refs_of = [reference(articles[int(c) - 1], rng) for c in cited]
                    own = f"chunk-{rng.randint(1, 10**6)}" if rng.random() < 0.05 else None
                    retrieved = list(dict.fromkeys(cited + [rng.choice(articles)["id"] for _ in range(4)]))[:5]
                    base = {"question_id": qid, "model": f"model-{m}", "repeat": r, "error": None, "cost_usd": 0.0004,
                            "latency_ms": 812.5, "input_tokens": 1800, "output_tokens": 90}
                    if rng.random() < 0.5:  # footnotes and a source list in the text
                        marks = "".join(f"[{k}]" for k in range(1, len(refs_of) + 1))
                        listed = "\n".join(f"[{k}] {ref}" for k, ref in enumerate(refs_of, 1))
                        a = {**base, "response": f"{answer} {marks}.\n\nSources:\n{listed}"}
                        b = {**base, "response": f"{answer} " + " ".join(f"[ID: {c}]" for c in cited) + "."}
                    else:  # citations as data
                        a = {**base, "response": answer + ".", "citations": refs_of + ([own] if own else [])}
                        b = {**base, "response": answer + ".", "citations": cited + ([own] if own else [])}
                    a["system_retrieved"] = [reference(articles[int(c) - 1], rng) for c in retrieved]
                    b["system_retrieved"] = retrieved
                    a_lines.append(json.dumps(a))
                    b_lines.append(json.dumps(b))
                    written += 1
                if a_lines:
                    fr.write("\n".join(a_lines) + "\n")
                    fi.write("\n".join(b_lines) + "\n")


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (their own finished workers included): on a shared machine the
    wall time of a child swings with the load, its CPU time much less, so the ratios are taken on it."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def score(folder: Path, responses: Path, mode: str, bootstrap: int, workers: int) -> dict:
    out = folder / f"out-{mode}"
    cmd = [sys.executable, "-c", CHILD, str(responses), str(folder / "gold.csv"), str(folder / "kb"), str(out),
           str(bootstrap), str(workers), mode]
    t0, cpu0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "GRACE_TOKENIZER": "approx"})
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - t0
    result["cpu"] = _children_cpu() - cpu0  # the child's and its scoring workers' CPU seconds
    (out / "scores.jsonl").unlink(missing_ok=True)  # ~500 MB a million: not kept
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=0, help="scoring processes (default: grace's choice)")
    ap.add_argument("--rounds", type=int, default=1, help="score each file this many times; the fastest counts")
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="grace-bench-citations-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        articles = make_kb(folder / "kb", args.articles, 5, rng)
        gold = make_gold(folder / "gold.csv", [a["id"] for a in articles], args.questions, rng)
        refs, ids = folder / "refs.jsonl", folder / "ids.jsonl"
        make_responses(refs, ids, articles, gold, args.responses, rng)
        print(f"generated {args.responses:,} responses twice (references {refs.stat().st_size / 1e6:.0f} MB, "
              f"KB IDs {ids.stat().st_size / 1e6:.0f} MB), {args.questions:,} questions, {args.articles} articles "
              f"in {time.perf_counter() - t0:.1f}s")
        runs = [("today's GRACE reading (no citation settings)", ids, "grace"),
                ("read as KB IDs, scored multi", ids, "ids"),
                ("read as references, scored multi", refs, "references")]
        best = {}
        for _ in range(args.rounds):
            for _label, path, mode in runs:
                r = score(folder, path, mode, args.bootstrap, args.workers)
                if mode not in best or r["cpu"] < best[mode]["cpu"]:
                    best[mode] = r
        for label, _, mode in runs:
            r = best[mode]
            extra = "" if r["f1"] is None else (f"; citation F1 {r['f1']:.3f}, {r['citations']:,} citations, "
                                                f"{r['unmapped']:,} unmapped")
            print(f"  {label:<46} {r['n']:,} responses: {r['cpu']:.1f} CPU s, {r['seconds']:.1f}s in score_responses "
                  f"= {r['n'] / r['seconds']:,.0f} responses/s (child wall {r['wall']:.1f}s){extra}")
        resolving = best["references"]["cpu"] / best["ids"]["cpu"] - 1
        multi = best["ids"]["cpu"] / best["grace"]["cpu"] - 1
        overall = best["references"]["cpu"] / best["grace"]["cpu"] - 1
        print(f"CPU time: reading and resolving references vs the same rows read as KB IDs (both scored multi): "
              f"{resolving:+.1%}; multi scoring of KB IDs vs today's GRACE scoring: {multi:+.1%}; references "
              f"multi vs today's GRACE scoring: {overall:+.1%}")
        print(f"goal: resolving citations adds <= 10% to grace score on 1,000,000 responses: "
              f"{'met' if resolving <= 0.10 else 'NOT met'} ({args.responses:,} responses, workers: "
              f"{args.workers or 'auto'}, cores here: {os.cpu_count()})")


if __name__ == "__main__":
    main()
