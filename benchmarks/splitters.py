"""How well each ``grace kb build --splitter`` recovers a handbook's articles once its headings are gone.

A flat PDF export keeps a page's heading text as plain lines but loses the
marks that made them headings. This script makes that from Markdown handbooks
whose gold sets were labelled on the heading-based build, and measures each
splitter on it against the heading-based build of the same pages:

1. **Strip the headings.** Every Markdown heading (ATX ``#`` lines, setext
   underlines, ``<h1>``-``<h6>`` tags) becomes a plain paragraph of the same
   words (``--headings para``, the default: what a PDF export gives), or is
   dropped with its words (``--headings drop``: text with no title lines at
   all, so only the paragraphs' own words are left to find topics with).
   Front matter (a page title) is kept, as a PDF keeps its document title.
2. **Build** the stripped pages with each splitter (``headings``, which on
   such text can only cut where the token budget runs out; ``semantic``; and
   ``llm:PROVIDER:MODEL`` when ``--llm`` names one), and the original pages
   with ``headings`` as the reference.
3. **Lint** each KB: confusable pairs and articles not self-contained
   (``grace kb lint``'s counts).
4. **Recall@3** on the handbook's gold questions. The gold labels name
   articles of the reference build, so each labelled article is mapped to the
   article of the new KB that holds the largest share of its word 5-grams (the
   same source page; ties: all of them), and a question counts as found when
   any mapped article is in the top 3. ``coverage`` is the mean share of a gold
   article's 5-grams its mapped article holds: 100% means every labelled
   article survived whole. The reference row uses the labels as they are.

    python benchmarks/splitters.py [--only tts-en,clef-en] [--headings para|drop] [--out DIR]
        [--llm llm:llamacpp:smollm2 --base-url http://127.0.0.1:8097/v1] [--pages N] [--json FILE]

``--pages N`` measures on the N source pages with the most labelled questions
only (every row, so the rows stay comparable): for a slow local model.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE / "external"))

from handbooks import HANDBOOKS, check_labels, read_labels  # noqa: E402

from harness.core.errors import GraceError  # noqa: E402

_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_HTML_HEADING = re.compile(r"<h([1-6])(\s[^>]*)?>(.*?)</h\1>", re.I | re.S)
_FRONT = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*\n", re.S)
GRAM = 5


def strip_headings(text: str, mode: str) -> str:
    """``text`` with its Markdown headings turned into plain paragraphs (``para``) or dropped (``drop``)."""
    m = _FRONT.match(text)
    front, body = (text[: m.end()], text[m.end():]) if m else ("", text)
    lines = body.split("\n")
    out: list[str] = []
    fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fence = not fence
        if fence:
            out.append(line)
            continue
        atx = _ATX.match(line)
        setext = (_SETEXT.match(line) and i > 0 and lines[i - 1].strip() and out and out[-1] == lines[i - 1]
                  and not _ATX.match(lines[i - 1]))
        if setext:  # the line above was the heading's text: already kept as a line; make it a paragraph
            if mode == "drop":
                out.pop()
            out.append("")
            continue
        if atx:
            words = (atx.group(1) or "").strip()
            out += ["", words, ""] if mode == "para" and words else [""]
            continue
        out.append(line)
    flat = "\n".join(out)
    flat = _HTML_HEADING.sub(lambda h: f"<p>{h.group(3)}</p>" if mode == "para" else "", flat)
    return front + flat


def strip_tree(src: Path, dest: Path, mode: str, keep: set[str] | None = None) -> Path:
    """A copy of ``src`` (a folder or one file) with every Markdown page's headings stripped (see above)."""
    if dest.exists():
        shutil.rmtree(dest)
    files = [(src, src.name)] if src.is_file() else [(p, p.relative_to(src).as_posix()) for p in sorted(src.rglob("*"))
                                                       if p.is_file()]
    for path, rel in files:
        if keep is not None and rel not in keep:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() in (".md", ".markdown", ".mdx"):
            target.write_text(strip_headings(path.read_text(encoding="utf-8"), mode), encoding="utf-8")
        else:
            shutil.copyfile(path, target)
    return dest


def grams(text: str) -> set[tuple[str, ...]]:
    from kb_builder.language import surface_words

    w = surface_words(text)
    if len(w) < GRAM:
        return {tuple(w)} if w else set()
    return {tuple(w[i:i + GRAM]) for i in range(len(w) - GRAM + 1)}


def map_labels(ref_kb, new_kb, ids: set[str]) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Each reference article ID -> the new KB's articles (same source) holding most of its word 5-grams."""
    by_source: dict[str | None, list] = {}
    for a in new_kb.articles:
        by_source.setdefault(a.source, []).append((a.id, grams(a.text)))
    mapping, coverage = {}, {}
    for aid in ids:
        art = ref_kb.by_id.get(aid)
        if art is None:
            continue
        g = grams(art.text)
        scored = [(len(g & ng), nid) for nid, ng in by_source.get(art.source, [])]
        best = max((s for s, _ in scored), default=0)
        mapping[aid] = [nid for s, nid in scored if s == best and best > 0]
        coverage[aid] = best / len(g) if g else 0.0
    return mapping, coverage


def recall_at(kb, rows: list[dict[str, str]], labels: dict[str, list[str]], k: int = 3) -> tuple[float, int]:
    """Share of answerable questions with a labelled (mapped) article in the KB retriever's top ``k``."""
    asked = [r for r in rows if r["must_refuse"] == "false"]
    hits = kb.retriever().search_many([r["question"] for r in asked], k)
    found = 0
    for r, hs in zip(asked, hits, strict=True):
        want = {m for i in r["expected_citations"].split(";") if i for m in labels.get(i, [i])}
        found += any(h.id in want for h in hs)
    return (found / len(asked) if asked else 0.0), len(asked)


def measure(name: str, splitter: str, src: Path, out: Path, rows, ref_kb, calls=None) -> dict:
    from harness.workflows.kb import build_kb, lint_kb

    t0 = time.perf_counter()
    result = build_kb(src, out, splitter=splitter, calls=calls)
    seconds = time.perf_counter() - t0
    kb = result.kb
    counts = lint_kb(kb).counts
    ids = {i for r in rows for i in r["expected_citations"].split(";") if i}
    if ref_kb is None:
        labels, cover = {i: [i] for i in ids}, {i: 1.0 for i in ids}
    else:
        labels, cover = map_labels(ref_kb, kb, ids)
    recall, n = recall_at(kb, rows, labels)
    row = {"handbook": name, "splitter": splitter, "articles": len(kb.articles),
           "confusable": counts.get("confusable", 0), "not_self_contained": counts.get("not_self_contained", 0),
           "recall@3": round(recall, 3), "questions": n,
           "coverage": round(sum(cover.values()) / len(cover), 3) if cover else None,
           "seconds": round(seconds, 1), "fallbacks": len(result.fallbacks)}
    if result.model_calls is not None:
        row["model_calls"] = result.model_calls
    return row


def busiest_pages(rows, ref_kb, n: int) -> set[str]:
    counts: Counter[str] = Counter()
    for r in rows:
        for i in r["expected_citations"].split(";"):
            if i and i in ref_kb.by_id and ref_kb.by_id[i].source:
                counts[ref_kb.by_id[i].source] += 1
    return {s for s, _ in counts.most_common(n)}


def main() -> int:
    from harness.runner.model_options import ModelOptions
    from harness.workflows.calls import ModelCalls
    from harness.workflows.kb import build_kb

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--only", default="", help="handbooks, comma separated [default: all four]")
    cli.add_argument("--headings", choices=["para", "drop"], default="para")
    cli.add_argument("--llm", default=None, help="also measure --splitter llm:PROVIDER:MODEL")
    cli.add_argument("--base-url", default=None, help="the llm's base URL (a llama.cpp server, the fake API server)")
    cli.add_argument("--timeout", type=float, default=None, help="seconds per model call")
    cli.add_argument("--pages", type=int, default=None, help="only the N pages with the most labelled questions")
    cli.add_argument("--out", type=Path, default=Path("/tmp/grace-splitters"))
    cli.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = cli.parse_args()
    names = [n for n in (args.only.split(",") if args.only else HANDBOOKS) if n]
    calls = ModelCalls(concurrency=1, options=ModelOptions(base_url=args.base_url, timeout=args.timeout))
    table = []
    for name in names:
        pages = HANDBOOKS[name]
        if not pages.exists():
            print(f"{name}: {pages} is absent, skipped", file=sys.stderr)
            continue
        gold = HERE / "external" / name / "gold.csv"
        rows = read_labels(gold)
        work = args.out / name
        work.mkdir(parents=True, exist_ok=True)
        ref = build_kb(pages, work / "reference", splitter="headings")
        check_labels(gold, rows, work / "reference" / "articles.jsonl")
        src = pages
        if args.pages:
            keep = busiest_pages(rows, ref.kb, args.pages)
            src = _copy(pages, work / "pages", keep)
            rows = [r for r in rows if r["must_refuse"] == "true"
                    or all(ref.kb.by_id[i].source in keep for i in r["expected_citations"].split(";") if i)]
        # the pages as they are: the labels as given (a subset's build numbers articles apart: mapped like the rest)
        original = work / "kb-original-headings"
        if original.exists():
            shutil.rmtree(original)
        table.append({**measure(name, "headings", src, original, rows, ref.kb if args.pages else None),
                      "splitter": "headings (headings kept)"})
        flat = strip_tree(src, work / f"flat-{args.headings}", args.headings)
        for splitter in ["headings", "semantic", *([args.llm] if args.llm else [])]:
            kb_dir = work / f"kb-{args.headings}-{splitter.replace(':', '_')}"
            if kb_dir.exists():
                shutil.rmtree(kb_dir)
            row = measure(name, splitter, flat, kb_dir, rows, ref.kb, calls if splitter.startswith("llm:") else None)
            table.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"\nheadings stripped: {args.headings}" + (f"; the {args.pages} pages with the most labelled questions"
                                                     if args.pages else ""))
    print("| handbook | splitter | articles | confusable | not self-contained | recall@3 | coverage | questions |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['handbook']} | {r['splitter']} | {r['articles']:,} | {r['confusable']} | {r['not_self_contained']} "
              f"| {r['recall@3']:.3f} | {r['coverage']:.0%} | {r['questions']} |")
    for r in table:
        if "model_calls" in r:
            c = r["model_calls"]
            print(f"{r['handbook']} {r['splitter']}: {c['calls']} call(s), {c['cached']} cached, {c['errors']} failed, "
                  f"{r['fallbacks']} text(s) split by semantic instead (answer unreadable), {r['seconds']}s")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return 0


def _copy(src: Path, dest: Path, keep: set[str]) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    for rel in keep:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel if src.is_dir() else src, target)
    return dest


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
