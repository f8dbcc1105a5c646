"""Regenerate harness/spotcheck/citation_cases.jsonl: multi-citation meta-eval cases with known labels.

Each case is a short answer citing two articles of this handbook (A and B, from different documents), its
sentences made so their label is known without a judge:

* copied word for word from the article it cites: ``own``;
* copied from the answer's other cited article, but cited to this one: ``other`` (misattributed);
* copied from the article it cites with one figure changed (an invented number): ``none``;
* where the article names an office, country, currency or approver, a sentence of it with that swapped for its
  counterpart (Lisbon for Toronto, EUR for CAD, ...): ``none``, though a word-overlap judge finds every word;
* every third case, a sentence of A citing both A and B (two citations, one supports it): ``own``.

Then the first WRITTEN of those answers again, as a shipped bot or a GRACE prompt writes them (``written-*``):
footnotes after the full stop with a ``Sources:`` list, a link after the sentence (``… notice. (see [A](url))``,
``See [A](url).``), GRACE's ``[ID: x]`` after the full stop with a bare ``[ID: x].`` closing the answer. The
meta-eval reads each (``reads``: references or ids) and must get back the sentences and citations written, the
labels staying as above: a sentence is judged on the sentence as written, its citation attached to it.

Usage: ``python benchmarks/sample/make_citation_cases.py`` (builds the sample KB in a temporary folder with
``grace kb build``; seeded, so the file only changes when the handbook does).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "harness" / "spotcheck" / "citation_cases.jsonl"
CASES = 12
WRITTEN = 4
SITE = "https://handbook.larkspur.example/"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NUMBER = re.compile(r"\b\d+\b")


def sentences(text: str) -> list[str]:
    """Plain sentences of 8 to 40 words (no list items, no headings, no line breaks)."""
    out = []
    for para in text.replace("**", "").split("\n"):  # markdown emphasis is no part of what an answer copies
        for s in _SENTENCE.split(re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", "", para).strip()):  # no bullet
            if 8 <= len(s.split()) <= 40 and s[-1:] in ".!?" and ":" not in s and "\u2022" not in s:
                out.append(s)
    return out


def invented(sentence: str, *texts: str) -> str | None:
    """The sentence with its first number changed to one neither article holds: a figure no source backs."""
    m = _NUMBER.search(sentence)
    if not m:
        return None
    n = int(m.group(0))
    for new in (n + 7, n * 3 + 1, n + 13):
        if not any(re.search(rf"\b{new}\b", t) for t in texts):
            return sentence[:m.start()] + str(new) + sentence[m.end():]
    return None


SWAPS = (("Lisbon", "Toronto"), ("Portugal", "Canada"), ("EUR", "CAD"), ("manager", "HR business partner"))


def swapped(sentence: str, *texts: str) -> str | None:
    """The sentence with one office, country, currency or approver swapped for its counterpart: every word of it
    may still occur in the article (a word-overlap judge passes it), yet the article does not say it."""
    for x, y in SWAPS:
        for old, new in ((x, y), (y, x)):
            if re.search(rf"\b{old}\b", sentence) and not re.search(rf"\b{new}\b", sentence):
                out = re.sub(rf"\b{old}\b", new, sentence)
                if not any(out.replace("*", "") in t.replace("*", "") for t in texts):
                    return out
    return None


def build(articles: list[dict]) -> list[dict]:
    rng = random.Random(39)
    by_doc: dict[str, list[dict]] = {}
    for a in articles:
        by_doc.setdefault(a["source"], []).append(a)
    usable = [a for a in articles if len(sentences(a["text"])) >= 3 and any(_NUMBER.search(s) for s in sentences(a["text"]))]
    rng.shuffle(usable)
    cases: list[dict] = []
    used: set[str] = set()
    for a in usable:
        if len(cases) == CASES:
            break
        if a["id"] in used:
            continue
        b = next((x for x in usable if x["id"] not in used and x["id"] != a["id"] and x["source"] != a["source"]), None)
        if b is None:
            break
        sa, sb = sentences(a["text"]), sentences(b["text"])
        numbered = [s for s in sa if _NUMBER.search(s) and invented(s, a["text"], b["text"])]
        if not numbered:
            continue
        used |= {a["id"], b["id"]}
        fake_from = rng.choice(numbered)
        own_a = rng.choice([s for s in sa if s != fake_from] or sa)
        other = rng.choice(sb)
        own_b = rng.choice([s for s in sb if s != other] or sb)
        rows = [
            {"text": own_a, "cites": [a["id"]], "expected": "own"},
            {"text": other, "cites": [a["id"]], "expected": "other"},
            {"text": invented(fake_from, a["text"], b["text"]), "cites": [a["id"]], "expected": "none"},
            {"text": own_b, "cites": [b["id"]], "expected": "own"},
        ]
        swap = next((x for s in sa if s not in (own_a, fake_from) and (x := swapped(s, a["text"], b["text"]))), None)
        if swap:
            rows.append({"text": swap, "cites": [a["id"]], "expected": "none"})
        if len(cases) % 3 == 2:
            both = rng.choice([s for s in sa if s not in (own_a, fake_from)] or [own_a])
            rows.append({"text": both, "cites": [a["id"], b["id"]], "expected": "own"})
        rng.shuffle(rows)
        cases.append({
            "id": f"cit-{len(cases) + 1:02d}",
            "articles": [{"id": x["id"], "title": x["title"], "source": x["source"], "text": x["text"]} for x in (a, b)],
            "sentences": rows,
            "note": f"from the sample handbook: {a['source']} ({a['title']}) and {b['source']} ({b['title']})",
        })
    return cases


def _url(article: dict) -> str:
    """The page of the handbook's site an article's document is published at."""
    return SITE + re.sub(r"\.(md|html)$", "", article["source"])


def _link(article: dict) -> str:
    return f"[{article['title'].rpartition(' > ')[2]}]({_url(article)})"


def written(case: dict, style: int) -> dict:
    """``case`` written out in one citation style (its sentences, citations and labels unchanged)."""
    rows, arts = case["sentences"], case["articles"]
    number = {a["id"]: n for n, a in enumerate(arts, 1)}
    by_id = {a["id"]: a for a in arts}
    parts = []
    for i, r in enumerate(rows):
        text, cites = r["text"], r["cites"]
        if style == 0:  # footnotes, after the full stop or before it, and a source list
            marks = "".join(f"[{number[c]}]" for c in cites)
            parts.append(f"{text}{marks}" if i % 2 else f"{text[:-1]} {marks}{text[-1]}")
        elif style == 1:  # a link after the sentence: in brackets with "see", as a sentence of its own, or before the stop
            links = ", ".join(_link(by_id[c]) for c in cites)
            parts.append([f"{text} (see {links})", f"{text} See {links}.", f"{text[:-1]} ({links}){text[-1]}"][i % 3])
        else:  # GRACE's [ID: x], after the full stop (style 2: read by KB ID; 3: read as references)
            parts.append(f"{text} " + " ".join(f"[ID: {c}]" for c in cites))
    answer = " ".join(parts)
    if style == 0:
        answer += "\n\nSources:\n" + "\n".join(f"[{n}] {_url(a)}" if n % 2 else f"[{n}] {_link(a)}"
                                               for n, a in enumerate(arts, 1))
    elif style >= 2:  # the closing citation the grounded prompt asks for: the last sentence's, on a line of its own
        answer += f"\n\n[ID: {rows[-1]['cites'][0]}]."
    return {"id": f"written-{style + 1:02d}", "reads": "ids" if style == 2 else "references",
            **({"rewrite": {SITE: ""}} if style in (0, 1) else {}),
            "articles": arts, "answer": answer, "sentences": rows,
            "note": f"{case['id']} as written: " + ("footnotes and a source list", "links after the sentences",
                                                    "[ID: x] after the full stop and closing the answer, read by KB ID",
                                                    "[ID: x] after the full stop and closing the answer, read as "
                                                    "references")[style]}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        subprocess.run([sys.executable, "-m", "harness.cli.app", "kb", "build", str(HERE / "handbook"), "--out",
                        str(kb), "--no-lint"], check=True, cwd=ROOT, capture_output=True)
        articles = [json.loads(line) for line in (kb / "articles.jsonl").read_text(encoding="utf-8").splitlines()]
    cases = build(articles)
    cases += [written(c, i) for i, c in enumerate(cases[:WRITTEN])]
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    labels = [s["expected"] for c in cases for s in c["sentences"]]
    print(f"{OUT}: {len(cases)} cases, {len(labels)} sentences "
          f"({', '.join(f'{k} {labels.count(k)}' for k in ('own', 'other', 'none'))})")


if __name__ == "__main__":
    main()
