"""Retrieval recall on the Helvia Playbook-RAG queries, with grace's own article labels.

The data set says what a bot should do with each of its 122 queries (answer, ask,
correct, decline) but not which article answers them. ``helvia_labels.csv`` beside
this file holds those labels, made by reading the 59 articles of ``map.json`` as
``grace kb build --articles`` imports them (IDs 1..59): for each ``answer`` and
``correct`` query the article(s) that answer it, and for each ``ask`` query those
covering the alternatives it must ask about (any one counts as found). Several
IDs mean near-duplicates that both answer (the systems guide repeats the process
guides). Only the labels are stored: this script joins them with the shared data at
run time, refusing a row whose query text no longer matches its hash, or an ID whose
map.json row moved, so a changed data set cannot be scored against stale labels.

Prints one ``grace kb eval`` table per query group (recall@k and MRR with bootstrap
95% intervals, a row per retriever):

    python benchmarks/external/helvia_retrieval.py [--embedders bm25,bm25f,hybrid] [--out /tmp/grace-helvia-retrieval]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.core.errors import GraceError, where  # noqa: E402

LABELS = Path(__file__).with_name("helvia_labels.csv")
DATA = ROOT.parent / "shared" / "data" / "helvia-playbook-rag"
GROUPS = {"answer": ("answer",), "answer+correct": ("answer", "correct"), "ask": ("ask",)}
LABEL_COLUMNS = ["row", "query_sha", "dataset_id", "expected", "expected_citations", "map_rows", "certainty", "note"]


@dataclass
class Labelled:
    row: int
    dataset_id: str
    expected: str  # the data set's action: answer, ask or correct
    query: str
    citations: list[str]
    certainty: str


def query_sha(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:10]


def join_labels(dataset: Path, kb_articles: Path, labels: Path = LABELS) -> list[Labelled]:
    """Labels joined with the data set's queries; any drift between the two is an error naming the row."""
    with dataset.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    map_row = {}
    for line in kb_articles.read_text(encoding="utf-8").splitlines():
        art = json.loads(line)
        map_row[str(art["id"])] = str(art.get("rowRef", "")).rpartition(":")[2]
    out: list[Labelled] = []
    with labels.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != LABEL_COLUMNS:
            raise GraceError(f"{where(labels, 1)}: header must be {','.join(LABEL_COLUMNS)}")
        for lab in reader:
            line = reader.line_num
            n = int(lab["row"])
            if not 1 <= n <= len(rows):
                raise GraceError(f"{where(labels, line)}: row {n} is not in {dataset} ({len(rows)} queries)")
            data = rows[n - 1]
            if query_sha(data["query"]) != lab["query_sha"]:
                raise GraceError(f"{where(labels, line)}: query {n} of {dataset} is not the one labelled "
                                 f"(hash {query_sha(data['query'])}, label has {lab['query_sha']}); "
                                 "the data set changed: relabel that row")
            ids = [x for x in lab["expected_citations"].split(";") if x]
            want_rows = lab["map_rows"].split(";")
            got_rows = [map_row.get(i) for i in ids]
            if got_rows != want_rows:
                raise GraceError(f"{where(labels, line)}: article IDs {';'.join(ids)} are map.json rows "
                                 f"{';'.join(str(r) for r in got_rows)} in this KB, not {';'.join(want_rows)} as labelled; "
                                 "the import numbers articles differently now: remap the IDs")
            out.append(Labelled(n, data["id"], data["expected"], data["query"], ids, lab["certainty"]))
    return out


def write_gold(path: Path, labelled: list[Labelled], actions: tuple[str, ...]) -> int:
    picked = [x for x in labelled if x.expected in actions]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"])
        for x in picked:
            w.writerow([f"r{x.row:03d}", x.query, "", ";".join(x.citations), "false", f"{x.dataset_id} ({x.certainty})"])
    return len(picked)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=Path("/tmp/grace-helvia-retrieval"))
    ap.add_argument("--embedders", default="bm25,bm25f", help="comma separated, e.g. bm25,bm25f,hybrid (hybrid needs grace-eval[local])")
    ap.add_argument("-k", default="1,3,5")
    args = ap.parse_args()
    if not (args.data / "dataset.csv").exists():
        print(f"skipped: {args.data} not found; this benchmark reads the shared Helvia Playbook-RAG data "
              "(dataset.csv and map.json), which is not copied into the repository", file=sys.stderr)
        return
    from harness.cli.app import main as run  # returns when a command succeeds; exits non-zero when it fails

    kb = args.out / "kb"
    run(["kb", "build", "--articles", str(args.data / "map.json"), "--out", str(kb)])
    try:
        labelled = join_labels(args.data / "dataset.csv", kb / "articles.jsonl")
    except GraceError as exc:
        sys.exit(f"error: {exc}")
    several = sum(len(x.citations) > 1 for x in labelled)
    print(f"{len(labelled)} labelled queries ({several} with several acceptable articles); "
          f"certainty: " + ", ".join(f"{c} {sum(x.certainty == c for x in labelled)}" for c in ("clear", "several", "judgement")))
    embedders = [x for e in args.embedders.split(",") if e for x in ("--embedder", e)]
    for group, actions in GROUPS.items():
        gold = args.out / f"gold-{group.replace('+', '-')}.csv"
        n = write_gold(gold, labelled, actions)
        print(f"\n== {group}: {n} queries ==")
        run(["kb", "eval", str(kb), "--gold", str(gold), "-k", args.k, *embedders, "--show-misses", "0",
             "--json", str(gold.with_suffix(".json"))])


if __name__ == "__main__":
    main()
