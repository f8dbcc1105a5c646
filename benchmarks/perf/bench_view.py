"""How fast is ``grace view``, and ``grace compare``, on 100,000 questions x 10 models (1,000,000 responses)?

Goals (issue 21): the first page <= 2 s after start, any filter or page <= 1 s, a question <= 0.3 s, the
viewer's resident memory <= 500 MB; ``grace compare`` of two such runs <= 15 s.

Two run folders are generated with ``bench_scoring.py``'s generator (same KB and gold set; run B's answers
drawn with another seed, so questions flip both ways) and scored with ``score_responses``. Then, each as a
user runs it (the real ``grace`` command in a child process, talking HTTP):

- ``grace compare A B --json``: wall time;
- ``grace view A`` with an empty cache: the first page (the HTML and the Runs page's data) after start, while
  the index is built in the background; the time until the grid answers; the indexer's and the server's peak
  memory (VmHWM, sampled from /proc);
- ``grace view A`` again (index cached): the first page, the first grid page, every filter, sort, search and
  page below, twenty question pages, a comparison of two models, and the server's peak memory;
- ``grace view A B``: the grid's "flipped between runs" filters and the runs' comparison.

    python benchmarks/perf/bench_view.py                                 # 100,000 questions, ~4 minutes
    python benchmarks/perf/bench_view.py --questions 5000 --keep /tmp/vb # smaller; --keep reuses the files
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
QUERIES = [
    "", "outcome=miss", "model=model-3&outcome=wrong_citation", "model=model-0&outcome=hit", "outcome=invalid_citation",
    "article=17", "disagree=1", "suspect=1", "missed=1", "truncated=1", "q=pension", "q=annual+leave+policy",
    "q=reimbursement&outcome=miss", "sort=id", "sort=hardest", "sort=easiest", "sort=disagreement",
    "sort=hardest&disagree=1&page=3", "page=2", "page=1000", "page=LAST",
]
TWO_RUN_QUERIES = ["", "flip=any", "model=model-3&flip=regressed", "model=model-7&flip=improved&outcome=hit",
                   "flip=any&q=pension&sort=hardest"]


def _generator():
    spec = importlib.util.spec_from_file_location("bench_scoring", HERE / "bench_scoring.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCORE = """
import sys
from harness.scoring import score_responses
score_responses(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], seed=0, bootstrap=int(sys.argv[5]))
"""


def make_runs(folder: Path, questions: int, articles: int, bootstrap: int) -> tuple[Path, Path]:
    """Two scored run folders over one KB and gold set (kept and reused when already there)."""
    a, b = folder / "run-a", folder / "run-b"
    if (a / "report.json").exists() and (b / "report.json").exists():
        print(f"reusing the runs in {folder}")
        return a, b
    gen = _generator()
    t0 = time.perf_counter()
    rng = random.Random(0)
    ids = gen.make_kb(folder / "kb", articles, rng)
    gold = gen.make_gold(folder / "gold.csv", ids, questions, rng)
    for run, seed in ((a, 0), (b, 1)):
        run.mkdir(parents=True, exist_ok=True)
        gen.make_responses(run / "responses.jsonl", ids, gold, questions * 10, random.Random(seed))
    print(f"generated 2 runs of {questions * 10:,} responses ({questions:,} questions x 10 models) "
          f"in {time.perf_counter() - t0:.0f}s")
    env = _env(folder / "unused-cache")
    for run in (a, b):
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-c", SCORE, str(run / "responses.jsonl"), str(folder / "gold.csv"),
                        str(folder / "kb"), str(run), str(bootstrap)], check=True, env=env)
        print(f"scored {run.name} in {time.perf_counter() - t1:.0f}s")
    return a, b


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "GRACE_CACHE_DIR": str(cache), "GRACE_TOKENIZER": "approx"}


def _status(pid: int, field: str) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return 0


class Memory:
    """Peak resident memory (VmHWM) of the server and of every process it starts (the indexer), from /proc."""

    def __init__(self, pid: int):
        self.pid, self.server, self.children = pid, 0, 0
        self._stop = False
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _kids(self) -> list[int]:
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.pid:
                out.append(int(stat.parent.name))
        return out

    def _watch(self) -> None:
        while not self._stop:
            self.server = max(self.server, _status(self.pid, "VmHWM"))
            for kid in self._kids():
                self.children = max(self.children, _status(kid, "VmHWM"))
            time.sleep(0.2)

    def stop(self) -> None:
        self._stop = True
        self._thread.join()
        self.server = max(self.server, _status(self.pid, "VmHWM"))


class Viewer:
    """``grace view PATHS --no-open --port 0`` in a child process, as a user starts it."""

    def __init__(self, paths: list[Path], cache: Path):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", "from harness.cli.app import entry; entry()", "view",
                                      *map(str, paths), "--no-open", "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=_env(cache))
        self.memory = Memory(self.proc.pid)
        self.url = ""
        for line in self.proc.stdout:
            if line.startswith("open http"):
                self.url = line.split()[1]
                break
        if not self.url:
            raise SystemExit(f"grace view did not start: {self.proc.stdout.read()}")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()

    def get(self, path: str) -> tuple[float, bytes]:
        t0 = time.perf_counter()
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=120) as r:
            body = r.read()
        return time.perf_counter() - t0, body

    def json(self, path: str) -> tuple[float, dict]:
        took, body = self.get(path)
        return took, json.loads(body)

    def first_page(self) -> float:
        """Seconds from the start of the process until the Runs page (HTML and data) has answered."""
        self.get("/")
        self.get("/static/view.js")
        self.get("/api/runs")
        return time.perf_counter() - self.started

    def grid_ready(self, runs: str) -> float:
        while True:
            _, data = self.json(f"/api/questions?runs={runs}")
            if "waiting" not in data:
                return time.perf_counter() - self.started
            if data["waiting"].get("state") == "failed":
                raise SystemExit(f"indexing failed: {data['waiting']['problem']}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.memory.stop()


def _times(label: str, values: list[float]) -> str:
    return (f"{label}: median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms "
            f"over {len(values)}")


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--articles", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="write the runs here and keep them (reused next time)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        a, b = make_runs(folder, args.questions, args.articles, args.bootstrap)
        n = sum(1 for _ in (a / "scores.jsonl").open("rb"))
        print(f"runs: {a} and {b}, {n:,} scored responses each")

        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", "from harness.cli.app import entry; entry()", "compare", str(a),
                               str(b), "--json", str(Path(tmp) / "compare.json")], capture_output=True, text=True,
                              env=_env(Path(tmp) / "cache-compare"))
        compare_s = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(proc.stdout + proc.stderr)
        flips = json.loads((Path(tmp) / "compare.json").read_text())["models"]
        print(f"grace compare A B --json: {compare_s:.1f} s ({sum(len(m['improved']) + len(m['regressed']) for m in flips):,} "
              f"flipped questions over {len(flips)} models)")

        cache = Path(tmp) / "cache"
        cold = Viewer([a], cache)
        cold_first = cold.first_page()
        cold_grid = cold.grid_ready("run-a")
        cold.stop()
        print(f"cold start (no index yet): first page {cold_first:.2f} s after start; grid ready {cold_grid:.1f} s "
              f"after start (the index built in a child process); indexer peak {cold.memory.children} MB, "
              f"server peak {cold.memory.server} MB")

        warm = Viewer([a], cache)
        first = warm.first_page()
        ready = warm.grid_ready("run-a")
        print(f"warm start (index cached): first page {first:.2f} s after start; first grid page {ready:.2f} s "
              "after start")
        _, top = warm.json("/api/questions?runs=run-a")
        grid_times = []
        for q in QUERIES:
            q = q.replace("LAST", str(top["pages"]))
            took, data = warm.json(f"/api/questions?runs=run-a&{q}")
            grid_times.append(took)
            print(f"  {q or '(no filter)':<40} {data['total']:>7,} questions  {took * 1000:6.0f} ms")
        qids = [row["id"] for row in top["rows"][:10]] + [f"q{i}" for i in random.Random(3).sample(
            range(args.questions), min(10, args.questions))]
        question_times = [warm.json(f"/api/question?runs=run-a&id={q}")[0] for q in qids]
        took_cmp, data = warm.json("/api/compare?a=run-a&b=run-a&ma=model-3&mb=model-7")
        print(_times("filters, sorts, search, pages", grid_times))
        print(_times("question pages", question_times))
        print(f"compare page, two models of run A: {took_cmp:.2f} s ({data['models'][0]['n_improved']:,} improved)")
        warm.stop()
        print(f"viewer server memory, one run: peak {warm.memory.server} MB resident")

        both = Viewer([a, b], cache)
        both.grid_ready("run-a,run-b")  # run B's index is built now, in the background
        two = []
        for q in TWO_RUN_QUERIES:
            took, data = both.json(f"/api/questions?runs=run-a,run-b&{q}")
            two.append(took)
            print(f"  two runs: {q or '(no filter)':<36} {data['total']:>7,} questions  {took * 1000:6.0f} ms")
        took_runs, _ = both.json("/api/compare?a=run-a&b=run-b")
        both.stop()
        print(_times("two-run grid filters", two))
        print(f"compare page, run A vs run B, 10 models: {took_runs:.2f} s; viewer server memory, two runs: peak "
              f"{both.memory.server} MB resident")

        worst_filter = max(grid_times + two)
        peak = max(cold.memory.server, warm.memory.server, both.memory.server)
        print("goals: "
              f"first page <= 2 s: cold {cold_first:.2f} s, warm {first:.2f} s, {_verdict(max(cold_first, first) <= 2)}; "
              f"filter/page <= 1 s: max {worst_filter:.2f} s, {_verdict(worst_filter <= 1)}; "
              f"question <= 0.3 s: max {max(question_times):.3f} s, {_verdict(max(question_times) <= 0.3)}; "
              f"memory <= 500 MB: server peak {peak} MB, {_verdict(peak <= 500)} (indexer, a separate process: "
              f"{cold.memory.children} MB); compare <= 15 s: {compare_s:.1f} s, {_verdict(compare_s <= 15)}")


if __name__ == "__main__":
    main()
