"""Issue 46's acceptance: the HR help-desk bot over the TTS handbook, rebuilt (benchmarks/sample/bots/handbook_bot.py:
its own chunker at ``##``-``####`` capped at 220 words, chunk IDs and site URLs with anchors, its own BM25, five
citation styles, 1-3 citations per answer, wrong citations planted), run through ``grace run`` set up as
docs/how-to/own-references.md says (the site's rewrite rule, and the map of its chunk IDs the bot writes by asking
grace), and every citation checked against the truth computed apart from grace: the articles holding the text it
points to, by shared text (benchmarks/shared_text.py).

Before, set up this way, 33 of 77 citations were unmapped and the figures about half the truth (precision 17.4%
against 37.7%, recall 29.3% against 59.7%).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict

import pytest

from harness.run_folder.run_dir import RunDir
from tests.conftest import ROOT, run_grace, shared

pytestmark = pytest.mark.slow  # the bot answers the shared handbook in five styles: 94 s to set up

BOT_FILE = ROOT / "benchmarks" / "sample" / "bots" / "handbook_bot.py"
SITE = "https://handbook.tts.gsa.gov/"
QUESTIONS = 29


def _load(name: str, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class Truth:
    """The articles holding the text each of the bot's references points to, by shared text alone."""

    def __init__(self, bot, pages, articles: list[dict]):
        self.bot, self.pages = bot, pages
        self.by_page: dict[str, list[dict]] = defaultdict(list)
        for a in articles:
            self.by_page[a["source"]].append(a)
        self.source = {a["id"]: a["source"] for a in articles}
        self._pages: dict[str, object] = {}
        self.chunks = {c.id: c for c in bot.chunk_pages(pages)}
        self.quotes = {f'"{bot.quote(c)}"'.strip('"'): c for c in self.chunks.values()}

    def page(self, name: str):
        if name not in self._pages:
            text = shared_text.Page
            raw, _ = self.bot.read_page(self.pages / name)
            self._pages[name] = (raw, text.of(raw, [(a["id"], a["text"]) for a in self.by_page[name]]))
        return self._pages[name]

    def of_url(self, url: str) -> set[str]:
        path, _, anchor = url.removeprefix(SITE).partition("#")
        name = next(p for p in self.by_page if self.bot.page_url(p) == SITE + path)
        raw, text = self.page(name)
        if not anchor:
            return text.all_articles()
        heads = self.bot.headings(raw, self.bot.read_page(self.pages / name)[1])
        [i] = [i for i, h in enumerate(heads) if h.anchor == anchor]
        return text.held(*self.bot.led_to(raw, heads, i))

    def of_chunk(self, chunk, words: int | None = None) -> set[str]:
        raw, text = self.page(chunk.page)
        kept = self.bot.kept_words(raw, chunk.start, chunk.end)
        end = kept[words - 1][1] if words is not None and len(kept) >= words else chunk.end
        return text.held(chunk.start if words is None else kept[0][0], end)

    def of(self, reference: str) -> set[str]:
        if reference.startswith(SITE):
            return self.of_url(reference)
        if reference in self.chunks:
            return self.of_chunk(self.chunks[reference])
        return self.of_chunk(self.quotes[reference.strip().strip('"')], self.bot.QUOTE_WORDS)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The KB, a 29-question gold set labelled by shared text, the map the bot writes, and the run."""
    pages = shared("tts-handbook/pages")
    root = tmp_path_factory.mktemp("handbook-bot")
    global shared_text
    shared_text = _load("shared_text", ROOT / "benchmarks" / "shared_text.py")
    bot = _load("handbook_bot_under_test", BOT_FILE)
    code, out = run_grace("kb", "build", pages, "--out", root / "kb", "--no-lint")
    assert code == 0, out
    articles = [json.loads(x) for x in (root / "kb" / "articles.jsonl").read_text().splitlines()]
    truth = Truth(bot, pages, articles)
    # questions on sections of the handbook (one every so often), each answered by the articles holding its text
    headed = [c for c in truth.chunks.values() if "#" in c.url and len(c.text.split()) >= 60]
    picked = headed[:: len(headed) // QUESTIONS][:QUESTIONS]
    with (root / "gold.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse"])
        for n, c in enumerate(picked, 1):
            w.writerow([f"q{n:02d}", f"What does the handbook say about {c.heading.lower()}?",
                        ";".join(sorted(truth.of_url(c.url), key=int)), "false"])
    # the how-to's setup: the map of its chunk IDs, written by the bot asking grace; its site's rewrite rule
    made = subprocess.run([sys.executable, str(BOT_FILE), "--write-map", str(root / "kb"), str(root / "map.csv")],
                          capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert made.returncode == 0, made.stderr
    (root / "board.toml").write_text(f'''
[[models]]
spec = "python:{BOT_FILE}:answer"
name = "handbook-bot"

[models.citations]
map = "map.csv"
rewrite = {{"{SITE}" = ""}}
''')
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "board.toml",
                          "--out", root / "run")
    assert code == 0 and "Traceback" not in out, out
    lines = [json.loads(x) for x in RunDir(root / "run").scores.read_text().splitlines()]
    rows = list(csv.DictReader((root / "gold.csv").open(encoding="utf-8")))
    gold = {r["question_id"]: set(r["expected_citations"].split(";")) for r in rows}
    asked = {r["question_id"]: r["question"] for r in rows}
    return {"root": root, "truth": truth, "lines": lines, "gold": gold, "bot": bot, "asked": asked}


def citations(setup):
    """(question, reference, the articles grace resolved it to, the articles holding what it points to)."""
    truth = setup["truth"]
    return [(s["question_id"], c["reference"], set(c["articles"]), truth.of(c["reference"]))
            for s in setup["lines"] for c in s.get("citations") or []]


def figures(rows, gold, source, cited_by) -> dict[str, float]:
    """Per answer, then averaged: article-level precision (the share of its citations whose set holds a gold article)
    and recall under "any of" (1 when one does), and the same by page."""
    per: dict[str, list[set[str]]] = defaultdict(list)
    for q, _, got, true in rows:
        per[q].append(cited_by(got, true))
    out = {}
    for level, key in (("article", lambda ids: ids), ("page", lambda ids: {source[a] for a in ids})):
        p = [sum(bool(key(s) & key(gold[q])) for s in sets) / len(sets) for q, sets in per.items()]
        r = [float(any(key(s) & key(gold[q]) for s in per.get(q, []))) for q in gold]
        out[f"{level} precision"], out[f"{level} recall"] = sum(p) / len(p), sum(r) / len(r)
    return out


def test_the_bot_cites_in_five_styles_with_wrong_citations_planted(setup):
    texts = {s["question_id"]: s for s in setup["lines"]}
    assert len(texts) == QUESTIONS
    styles = {setup["bot"].plan(q)[0] for q in setup["asked"].values()}
    assert styles == set(setup["bot"].STYLES)
    counts = {len(s.get("citations") or []) for s in texts.values()}
    assert counts <= {1, 2, 3} and len(counts) > 1
    rows = citations(setup)
    gold = setup["gold"]
    wrong = [r for r in rows if r[3] and not r[3] & gold[r[0]]]
    assert wrong  # citations whose text answers nothing the question asks: the bot's planted ones among them


def test_every_citation_maps_to_the_articles_holding_what_it_points_to_and_none_outside(setup):
    rows = citations(setup)
    outside = [(ref, got, true) for _, ref, got, true in rows if got - true]
    unmapped = [(ref, true) for _, ref, got, true in rows if not got and true]
    exact = [r for r in rows if r[2] == r[3]]
    print(f"{len(rows)} citations: {len(exact)} exactly the truth's set, {len(unmapped)} unmapped, {len(outside)} outside")
    assert outside == []
    assert len(exact) >= 0.95 * len(rows), (len(exact), len(rows), unmapped)
    assert len(rows) > 40


def test_article_and_page_figures_are_within_three_points_of_the_truth(setup):
    """Computed here from the citations as grace resolved them and from the truth, by the per-citation definitions
    (the scoring of set-valued citations that reports them is branch h-scorepath's, issue 46)."""
    rows, gold, source = citations(setup), setup["gold"], setup["truth"].source
    grace_says = figures(rows, gold, source, lambda got, true: got)
    true = figures(rows, gold, source, lambda got, true: true)
    print("grace:", grace_says, "truth:", true)
    for name, value in true.items():
        assert abs(grace_says[name] - value) <= 0.03, (name, grace_says[name], value)
    assert 0 < true["article precision"] < 1 and true["page recall"] >= true["article recall"]


def test_the_reported_figures_are_within_three_points_of_the_truth(setup):
    """report.json's article-level precision and recall (per citation; recall under the gold's default "any of")
    within 3 points of the truth by shared text, the page-level figures beside them, the rule stated."""
    rows, gold, source = citations(setup), setup["gold"], setup["truth"].source
    true = figures(rows, gold, source, lambda got, true: true)
    report = json.loads((setup["root"] / "run" / "report.json").read_text())
    cit = report["models"]["handbook-bot"]["citations"]
    print("report:", {k: cit[k] for k in ("precision", "recall", "page_precision", "page_recall")}, "truth:", true)
    assert abs(cit["precision"] - true["article precision"]) <= 0.03, (cit["precision"], true)
    assert abs(cit["recall"] - true["article recall"]) <= 0.03, (cit["recall"], true)
    assert abs(cit["page_precision"] - true["page precision"]) <= 0.03, (cit["page_precision"], true)
    assert abs(cit["page_recall"] - true["page recall"]) <= 0.03, (cit["page_recall"], true)
    assert cit["page_precision"] >= cit["precision"] and cit["page_recall"] >= cit["recall"]
    assert "per citation" in cit["rule"] and "any" in cit["rule"]
    board = (setup["root"] / "run" / "leaderboard.md").read_text()
    assert "Page precision" in board
