"""The worked example of docs/how-to/own-references.md, run as the page runs it: a bot with its own chunk IDs, URLs
and footnotes (benchmarks/sample/bots/footnote_bot.py) beside a GRACE model on one leaderboard."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.run_folder.scores import iter_scores
from tests.conftest import ROOT, SAMPLE, run_grace

BOT = ROOT / "benchmarks" / "sample" / "bots" / "footnote_bot.py"
SITE = "https://handbook.larkspur.example/"


@pytest.mark.slow  # a run of the footnote bot: 14 s
def test_the_footnote_bot_is_scored_by_the_articles_its_references_mean(tmp_path):
    kb, run = tmp_path / "kb", tmp_path / "run"
    assert run_grace("kb", "build", SAMPLE / "handbook", "--out", kb)[0] == 0
    # the map of its chunk IDs, written by asking grace where each chunk's URL lands (the page's step 1)
    made = subprocess.run([sys.executable, str(BOT), "--write-map", str(kb), str(tmp_path / "lk-map.csv")],
                          capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert made.returncode == 0, made.stderr
    rows = (tmp_path / "lk-map.csv").read_text().splitlines()
    assert rows[0] == "their_id,article_id" and len(rows) > 40
    assert "unmapped: lk-" in made.stderr  # the chunks spanning several articles are named, never guessed
    (tmp_path / "board.toml").write_text(f"""
[[models]]
spec = "python:{BOT}:answer"
name = "footnote-bot"

[models.citations]
scoring = "multi"
reads = "references"
map = "lk-map.csv"
rewrite = {{"{SITE}" = ""}}

[[models]]
spec = "baseline:top1"
""")
    code, out = run_grace("run", "--kb", kb, "--gold", SAMPLE / "gold.csv", "--config", tmp_path / "board.toml",
                          "--out", run)
    assert code == 0, out
    report = json.loads((run / "report.json").read_text())
    bot, top1 = report["models"]["footnote-bot"], report["models"]["baseline:top1"]
    assert "citations" not in top1  # the GRACE model is scored as ever
    cit = bot["citations"]
    assert (cit["scoring"], cit["reads"]) == ("multi", "references")
    lines = [s for _, s in iter_scores(run / "scores.jsonl") if s["model"] == "footnote-bot"]
    answerable = [s for s in lines if not s["must_refuse"]]
    # the figures are the means of the per-answer figures the lines carry
    assert abs(cit["recall"] - sum(s["cit_recall"] for s in answerable) / len(answerable)) < 1e-6
    assert cit["precision_ci95"][0] <= cit["precision"] <= cit["precision_ci95"][1]
    q001 = next(s for s in lines if s["question_id"] == "q001")
    assert q001["outcome"] == "correct" and q001["cited_ids"][0] == "33"
    assert q001["cit_precision"] == 0.5 and q001["cit_recall"] == 1.0  # the right article and a second one
    assert [c["how"] for c in q001["citations"]] == ["rewrite", "rewrite"]
    # every footnote was read through the answer's own Sources list: a reference is a URL, never "1" or "2"
    refs = [c["reference"] for s in lines for c in s["citations"]]
    assert refs and all(r.startswith(SITE) for r in refs)
    assert cit["n_unmapped"] == sum(not c["articles"] for s in lines for c in s["citations"]) < len(refs) // 20
    # its own retrieval (chunk IDs) is mapped through the map file: coverage is known
    assert q001["retrieved_ids"][0] == "33" and q001["coverage"] is not None
    board = (run / "leaderboard.md").read_text()
    assert "footnote-bot" in board and "multi, references" in board
