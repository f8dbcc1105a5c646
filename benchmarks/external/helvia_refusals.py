"""Refusal check on a real GRACE-style KB: the Helvia Playbook-RAG decline queries.

The Helvia knowledge map (59 self-contained HR articles on external workers,
many near-duplicate topics) is imported with ``grace kb build --articles``; its
17 ``decline`` queries (out-of-scope and missing-coverage questions the KB does
not answer) become a must_refuse gold set. A model's ``should_refuse_did`` on
it is its refusal rate where refusing is the only right answer. The dataset has
no article labels for its answerable queries, so those are not scored here.

    python benchmarks/external/helvia_refusals.py [--model openai:gpt-4o-mini ...]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "helvia-playbook-rag")
    ap.add_argument("--out", type=Path, default=Path("/tmp/grace-helvia"))
    ap.add_argument("--model", action="append", default=None, help="models to run (default: the offline baselines)")
    args = ap.parse_args()
    if not args.data.exists():
        sys.exit(f"{args.data} not found: this benchmark reads the shared Helvia Playbook-RAG data")
    from harness.cli.app import main as grace

    rows = [r for r in csv.DictReader((args.data / "dataset.csv").open(encoding="utf-8")) if r["expected"] == "decline"]
    args.out.mkdir(parents=True, exist_ok=True)
    gold = args.out / "declines.csv"
    with gold.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"])
        for r in rows:
            w.writerow([r["id"], r["query"], "", "", "true", r["case"]])
    print(f"{len(rows)} decline queries -> {gold}")
    models = args.model or ["baseline:top1", "baseline:threshold"]
    # a gold set of refusals only cannot fit a threshold (refusing everything would win), so the
    # offline floor uses a fixed BM25 score: the default 2.0 is low, i.e. a lenient refuser. The KB is
    # pinned to plain bm25 because that cut is on its scale (bm25f scores run about half as high)
    calls = [["kb", "build", "--articles", str(args.data / "map.json"), "--out", str(args.out / "kb"), "--embedder", "bm25"],
             ["run", "--kb", str(args.out / "kb"), "--gold", str(gold), "--out", str(args.out / "run"),
              *[x for m in models for x in ("--model", m)], *([] if args.model else ["--threshold", "2.0"])]]
    for argv in calls:
        try:
            grace(argv)
        except SystemExit as exc:
            if exc.code:
                raise
    from harness.run_folder.run_dir import RunDir

    for name, m in RunDir(args.out / "run").read_report().models.items():
        print(f"{name}: refused {m.refusal.should_refuse_did:.0%} of {m.n} decline queries")


if __name__ == "__main__":
    main()
