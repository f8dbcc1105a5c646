"""ClapNQ as an external retrieval and refusal benchmark for grace.

Builds a GRACE-style KB from the ClapNQ dev passages (each answerable and
unanswerable question brings its Wikipedia passage; an unanswerable question's
passage is on topic but does not answer it), a gold set (answerable -> its
passage, unanswerable -> must_refuse), then reports retrieval recall@k for the
chosen retrievers side by side (one ``grace kb eval`` table, bootstrap 95% intervals)
and the offline baselines' leaderboard, all through the real ``grace`` commands.
Reads ``../shared/data/clapnq``; nothing is copied into the repo. ClapNQ is a check,
not a tuning set: grace's retrieval settings were chosen on other data.

    python benchmarks/external/clapnq.py [--data ../shared/data/clapnq] [--out /tmp/clapnq] [--embedders bm25,bm25f,hybrid] [--no-run]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def prepare(data: Path, out: Path) -> tuple[Path, Path]:
    articles: dict[str, dict] = {}
    gold_rows = []
    for kind in ("answerable", "unanswerable"):
        path = data / "annotated_data" / "dev" / f"clapnq_dev_{kind}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            ids = []
            for p in q["passages"]:
                key = p["title"] + "\n" + p["text"][:200]
                if key not in articles:
                    articles[key] = {"id": str(len(articles) + 1), "title": p["title"], "text": p["text"].strip()}
                ids.append(articles[key]["id"])
            answerable = kind == "answerable"
            answer = (q.get("output") or [{}])[0].get("answer", "") if answerable else ""
            gold_rows.append({"question_id": q["id"], "question": q["input"], "expected_answer": answer,
                              "expected_citations": ";".join(ids) if answerable else "",
                              "must_refuse": "false" if answerable else "true", "notes": kind})
    kb = out / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    (kb / "articles.jsonl").write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in articles.values()), encoding="utf-8")
    gold = out / "gold.csv"
    with gold.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(gold_rows[0]))
        w.writeheader()
        w.writerows(gold_rows)
    print(f"ClapNQ dev: {len(articles)} passages as articles, {len(gold_rows)} questions "
          f"({sum(r['must_refuse'] == 'true' for r in gold_rows)} must_refuse) -> {out}")
    return kb, gold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "clapnq")
    ap.add_argument("--out", type=Path, default=Path("/tmp/grace-clapnq"))
    ap.add_argument("--embedders", default="bm25,bm25f", help="comma separated, e.g. bm25,bm25f,hybrid (hybrid needs grace-eval[local])")
    ap.add_argument("--no-run", action="store_true", help="retrieval only: skip the baselines' grace run")
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"{args.data} not found: this benchmark reads the shared ClapNQ data set")
    from harness.cli.app import main as grace

    kb, gold = prepare(args.data, args.out)
    embedders = [x for e in args.embedders.split(",") if e for x in ("--embedder", e)]
    t0 = time.perf_counter()
    try:
        grace(["kb", "eval", str(kb), "--gold", str(gold), "-k", "1,3,5,10", *embedders, "--show-misses", "0",
               "--json", str(args.out / "retrieval.json")])
    except SystemExit as exc:
        if exc.code:
            raise
    print(f"  ({time.perf_counter() - t0:.1f} s)")
    if args.no_run:
        return
    try:
        grace(["run", "--kb", str(kb), "--gold", str(gold), "--model", "baseline:top1", "--model", "baseline:threshold",
               "--out", str(args.out / "run")])
    except SystemExit as exc:
        if exc.code:
            raise


if __name__ == "__main__":
    main()
