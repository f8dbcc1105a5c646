"""Retrieval recall on the multilingual and extra English handbooks, tuning and held-out parts apart.

Each handbook folder beside this file holds ``SOURCE.txt`` (where the pages come
from, their licence, what was kept), ``pages/`` (the Markdown, data only) and
``gold.csv``: paraphrased questions written for grace, each labelled with the
article IDs that ``grace kb build pages --out KB`` gives the answering articles
(``expected_titles`` repeats their titles, so a build that numbers articles
differently is caught instead of scored against stale labels), and a ``split``
column dealing every question into ``tuning`` or ``heldout`` by the SHA-256 of its
ID, fixed before anything was tuned. A default retriever changes only on what the
held-out part shows. ``tts-en`` has no pages: it reads the TTS handbook from the
shared data beside the repository.

    python benchmarks/external/handbooks.py [--embedders bm25,bm25f,char4,bm25f+char4,use,hybrid:use] [--only etalab-fr] [--out DIR]

prints one ``grace kb eval`` table (recall@k and MRR with bootstrap 95% intervals,
a row per retriever) per handbook and part, then all of them as one Markdown table (the README's).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from harness.core.errors import GraceError, where  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
HANDBOOKS = {  # name -> the folder (or file) its KB is built from
    "etalab-fr": HERE / "etalab-fr" / "pages",
    "berlin-opendata-de": HERE / "berlin-opendata-de" / "pages",
    "clef-en": HERE / "clef-en" / "pages",
    "tts-en": SHARED / "tts-handbook",
}
SPLITS = ("tuning", "heldout")
COLUMNS = ["question_id", "question", "expected_citations", "must_refuse", "split", "expected_titles"]


def read_labels(gold: Path) -> list[dict[str, str]]:
    with gold.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != COLUMNS:
            raise GraceError(f"{where(gold, 1)}: header must be {','.join(COLUMNS)}")
        rows = list(reader)
    for n, row in enumerate(rows, 2):
        if row["split"] not in SPLITS:
            raise GraceError(f"{where(gold, n)}: split must be tuning or heldout, got {row['split']!r}")
    return rows


def check_labels(gold: Path, rows: list[dict[str, str]], articles: Path) -> None:
    """Every labelled ID is the article it was labelled on (same title) in this build, else an error naming the row."""
    titles = {}
    for line in articles.read_text(encoding="utf-8").splitlines():
        art = json.loads(line)
        titles[str(art["id"])] = art["title"]
    for n, row in enumerate(rows, 2):
        ids = [i for i in row["expected_citations"].split(";") if i]
        want = [t for t in row["expected_titles"].split(" || ") if t]
        got = [titles.get(i) for i in ids]
        if got != want:
            raise GraceError(f"{where(gold, n)}: article(s) {';'.join(ids)} are titled {got} in this build, not {want} "
                             "as labelled; the build numbers articles differently now: relabel the row")


def write_part(rows: list[dict[str, str]], split: str, path: Path) -> int:
    picked = [r for r in rows if r["split"] == split]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS[:4])
        w.writerows([r[c] for c in COLUMNS[:4]] for r in picked)
    return sum(r["must_refuse"] == "false" for r in picked)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/grace-handbooks"))
    ap.add_argument("--embedders", default="bm25,bm25f,char4,bm25f+char4",
                    help="comma separated, e.g. bm25,bm25f,char4,bm25f+char4,use,hybrid:use,bm25f+char4+use")
    ap.add_argument("--only", default="", help="comma separated handbook names (default: all)")
    ap.add_argument("--splits", default="tuning,heldout")
    ap.add_argument("-k", default="1,3,5")
    args = ap.parse_args()
    from harness.cli.app import main as run  # returns when a command succeeds; exits non-zero when it fails

    names = [n for n in args.only.split(",") if n] or list(HANDBOOKS)
    embedders = [x for e in args.embedders.split(",") if e for x in ("--embedder", e)]
    results: list[tuple[str, str, int, Path]] = []
    for name in names:
        source, gold = HANDBOOKS[name], HERE / name / "gold.csv"
        if not source.exists():
            print(f"skipped {name}: {source} not found (shared data is not copied into the repository)", file=sys.stderr)
            continue
        kb = args.out / name / "kb"
        run(["kb", "build", str(source), "--out", str(kb)])
        rows = read_labels(gold)
        try:
            check_labels(gold, rows, kb / "articles.jsonl")
        except GraceError as exc:
            sys.exit(f"error: {exc}")
        for split in [s for s in args.splits.split(",") if s]:
            part = args.out / name / f"gold-{split}.csv"
            n = write_part(rows, split, part)
            print(f"\n== {name}, {split}: {n} answerable questions ==")
            run(["kb", "eval", str(kb), "--gold", str(part), "-k", args.k, *embedders, "--show-misses", "0",
                 "--json", str(part.with_suffix(".json")), "--force"])
            results.append((name, split, n, part.with_suffix(".json")))
    print("\n" + markdown_table(results))


def markdown_table(results: list[tuple[str, str, int, Path]]) -> str:
    """The README's table: a row per handbook, part and retriever; recall@k with 95% intervals, then MRR."""
    lines = ["| handbook | part | retriever | recall@1 | recall@3 | recall@5 | MRR |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, split, n, path in results:
        for i, r in enumerate(json.loads(path.read_text(encoding="utf-8"))["retrievers"]):
            if "recall" not in r:
                continue  # a retriever that could not run here: its reason is in the printed table
            cells = [f"{r['recall'][k]:.3f} ({r['recall_ci'][k][0]:.2f}–{r['recall_ci'][k][1]:.2f})" for k in ("1", "3", "5")]
            head = [name, f"{split} ({n})"] if i == 0 else ["", ""]
            lines.append("| " + " | ".join([*head, r["retriever"], *cells, f"{r['mrr']:.3f}"]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
