"""How fast is ``grace score``? Goal: 1,000,000 responses in <= 15 s on 2 quiet cores, within 2x of a naive floor.

Generates a synthetic KB (500 articles, numeric and slug IDs), a gold set
(10,000 questions, 10% must_refuse) and a responses file in a temp folder, in
every form the scorer reads (canonical, [ID:x], (ID: x), bare [x], ID lists,
JSON bare / fenced / in prose, exact and paraphrased refusals, invalid IDs,
no citation, failed calls), with retrieved_ids, cost, latency and tokens on
every row. Then it scores the file end to end (reading, extraction, metrics,
bootstrap, writing scores.jsonl and report.json) in a child process and prints
the wall time, responses per second and the child's peak memory; then the
naive floor (JSON parse, one regex, scikit-learn P/R/F) on the same file, in
the same kind of child process, so the ratio is measured in one run.

    python benchmarks/perf/bench_scoring.py                 # 1,000,000 responses
    python benchmarks/perf/bench_scoring.py --responses 100000 --keep /tmp/bench
    python benchmarks/perf/bench_scoring.py --workers 1     # one core
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
import json, resource, sys, time
from harness.scoring import score_responses
t0 = time.perf_counter()
workers = int(sys.argv[6]) or None
report = score_responses(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], seed=0, bootstrap=int(sys.argv[5]),
                         workers=workers)
took = time.perf_counter() - t0
print(json.dumps({"seconds": took, "n": report.responses.n, "models": len(report.models),
                  "accuracy": {m.model: m.accuracy for m in report.ranked()}}))
"""

# The floor the issue measures against: what any scorer must do at least (parse every line, find one citation,
# P/R/F per article), with nothing grace adds (strict and lenient extraction, refusals, outcomes, bootstrap CIs,
# significance, scores.jsonl). Same files, same kind of child process.
FLOOR = """
import csv, json, re, sys, time
t0 = time.perf_counter()
from sklearn.metrics import precision_recall_fscore_support
gold = {}
with open(sys.argv[2], newline="", encoding="utf-8") as fh:
    for row in csv.DictReader(fh):
        gold[row["question_id"]] = "REFUSE" if row["must_refuse"] == "true" else row["expected_citations"].split(";")[0]
cite = re.compile(r"\\[ID:\\s*([^\\],]+)")
truth, pred = [], []
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        row = json.loads(line)
        m = cite.search(row["response"] or "")
        pred.append(m.group(1).strip() if m else "NONE")
        truth.append(gold[row["question_id"]])
p, r, f, _ = precision_recall_fscore_support(truth, pred, average="macro", zero_division=0)
print(json.dumps({"seconds": time.perf_counter() - t0, "n": len(pred), "macro_f1": f}))
"""


def make_kb(folder: Path, n_articles: int, rng: random.Random) -> list[str]:
    ids = [str(i) if i % 2 else f"uid-kb-{i}" for i in range(1, n_articles + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "articles.jsonl").open("w", encoding="utf-8") as fh:
        for aid in ids:
            text = " ".join(rng.choices(WORDS, k=60))
            fh.write(json.dumps({"id": aid, "title": f"Article {aid}", "text": text}) + "\n")
    return ids


def make_gold(path: Path, ids: list[str], n_questions: int, rng: random.Random) -> list[tuple[str, bool, list[str]]]:
    gold = []
    with path.open("w", encoding="utf-8") as fh:
        fh.write("question_id,question,expected_citations,must_refuse\n")
        for i in range(n_questions):
            must = rng.random() < 0.1
            expected = [] if must else rng.sample(ids, 1 if rng.random() < 0.8 else 2)
            gold.append((f"q{i}", must, expected))
            fh.write(f"q{i},How does {rng.choice(WORDS)} work for {rng.choice(WORDS)}?,{';'.join(expected)},{str(must).lower()}\n")
    return gold


def response_text(rng: random.Random, answer: str, cite: str, form: float) -> str:
    if form < 0.55:
        return f"{answer} [ID: {cite}]"
    if form < 0.62:
        return f"{answer} [ID:{cite}]."
    if form < 0.67:
        return f"**Answer:** {answer} (ID: {cite})"
    if form < 0.71:
        return f"{answer} [{cite}]"
    if form < 0.75:
        return json.dumps({"answer": answer, "citation": cite})
    if form < 0.78:
        return "Here is the answer:\n```json\n" + json.dumps({"answer": answer, "citation": cite}) + "\n```"
    if form < 0.81:
        return f"{answer} It takes 25 days. [ID: {cite}, {rng.randint(1, 499)}]"
    if form < 0.86:
        return "I don't have enough information to answer this question."
    if form < 0.89:
        return f"The provided articles do not contain information about {rng.choice(WORDS)}. See [ID: {cite}]"
    if form < 0.92:
        return f"I cannot find any information about {rng.choice(WORDS)} in the provided articles."
    if form < 0.95:
        return f"{answer} [ID: uid-kb-{rng.randint(5000, 6000)}]"
    return answer


def make_responses(path: Path, ids: list[str], gold, n_responses: int, rng: random.Random) -> None:
    n_models = 10
    repeats = max(1, n_responses // (n_models * len(gold)))
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for m in range(n_models):
            skill = 0.5 + 0.04 * m
            for r in range(repeats):
                lines = []
                for qid, _must, expected in gold:
                    if written >= n_responses:
                        break
                    answer = " ".join(rng.choices(WORDS, k=rng.randint(20, 60))).capitalize() + "."
                    cite = expected[0] if expected and rng.random() < skill else rng.choice(ids)
                    retrieved = rng.sample(ids, 5)
                    if expected and rng.random() < 0.8:
                        retrieved[rng.randrange(5)] = expected[0]
                    row = {"question_id": qid, "model": f"model-{m}", "repeat": r,
                           "response": response_text(rng, answer, cite, rng.random()),
                           "retrieved_ids": retrieved, "error": None, "cost_usd": 0.0004,
                           "latency_ms": rng.uniform(300, 3000), "input_tokens": 1800, "output_tokens": 90}
                    if rng.random() < 0.002:
                        row.update(response=None, error={"kind": "timeout", "message": "timed out"})
                    lines.append(json.dumps(row))
                    written += 1
                fh.write("\n".join(lines) + "\n")


def _children_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=0, help="scoring processes (default: grace's choice)")
    ap.add_argument("--keep", type=Path, default=None, help="write the files here and keep them")
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        ids = make_kb(folder / "kb", args.articles, rng)
        gold = make_gold(folder / "gold.csv", ids, args.questions, rng)
        make_responses(folder / "responses.jsonl", ids, gold, args.responses, rng)
        size = (folder / "responses.jsonl").stat().st_size
        print(f"generated {args.responses:,} responses ({size / 1e6:.0f} MB), {args.questions:,} questions, "
              f"{args.articles} articles in {time.perf_counter() - t0:.1f}s")
        cmd = [sys.executable, "-c", CHILD, str(folder / "responses.jsonl"), str(folder / "gold.csv"),
               str(folder / "kb"), str(folder / "out"), str(args.bootstrap), str(args.workers)]
        t1, cpu0 = time.perf_counter(), _children_cpu()
        env = {**os.environ, "GRACE_TOKENIZER": "approx"}  # no tokenizer download; the scorer needs no counts
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall, cpu = time.perf_counter() - t1, _children_cpu() - cpu0
        if proc.returncode:
            sys.exit(proc.stderr)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        n = result["n"]
        cores = args.workers or "auto"
        print(f"score_responses (workers: {cores}, cores here: {os.cpu_count()}): {n:,} responses, "
              f"{result['models']} models in {result['seconds']:.1f}s "
              f"= {n / result['seconds']:,.0f} responses/s (child process wall time incl. imports {wall:.1f}s)")
        print(f"peak memory (child max RSS): {peak_mb:,.0f} MB")
        print(f"scores.jsonl: {(folder / 'out' / 'scores.jsonl').stat().st_size / 1e6:.0f} MB; "
              f"report.json: {(folder / 'out' / 'report.json').stat().st_size / 1e6:.1f} MB")
        t2, cpu0 = time.perf_counter(), _children_cpu()
        floor = subprocess.run([sys.executable, "-c", FLOOR, str(folder / "responses.jsonl"), str(folder / "gold.csv")],
                               capture_output=True, text=True, env=env)
        floor_wall, floor_cpu = time.perf_counter() - t2, _children_cpu() - cpu0
        if floor.returncode:
            print(f"naive floor could not run (it needs scikit-learn): {floor.stderr.strip().splitlines()[-1]}")
            floor_wall = None
        else:
            print(f"naive floor (json.loads + one regex + scikit-learn P/R/F, child process wall): {floor_wall:.1f}s")
            # on a machine other jobs keep busy, wall times say more about them than about the scorer: CPU as well
            print(f"CPU: score_responses {cpu:.1f}s (all its processes), floor {floor_cpu:.1f}s "
                  f"({cpu / floor_cpu:.2f}x)")
        per_million = wall / n * 1_000_000
        goal = f"goal: 1,000,000 responses in <= 15 s on a quiet machine: {per_million:.1f} s per million, " + (
            "met" if per_million <= 15 else "NOT met")
        if floor_wall:
            goal += f"; within 2x of the floor: {wall / floor_wall:.2f}x, " + ("met" if wall <= 2 * floor_wall else "NOT met")
        print(goal)


if __name__ == "__main__":
    main()
