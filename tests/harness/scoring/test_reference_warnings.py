"""Issue 46's bad input, scored: a reference whose anchor matches two headings, or that cites a page of 300
articles, stays unmapped (never a guess) and the report names the problem and its count (report.json's
``reference_warnings`` and a line of ``warnings``); a map row naming an unknown article stops the run with its file
and line (tests/harness/runner/test_citation_settings.py), and says how to fix it."""

from __future__ import annotations

import json

import pytest

import grace
from harness.core.errors import GraceError
from harness.run_folder.run_records import CitationSettings
from harness.scoring import score_responses
from kb_builder.references import read_mapping
from tests.conftest import write
from tests.kb_builder.handbook_pages import write_pages

BOT = {"bot": CitationSettings(scoring="multi", reads="references")}


def _score(root, kb, rows, expected):
    (root / "gold.csv").write_text("question_id,question,expected_citations,must_refuse\n"
                                   + "".join(f"q{i},Question {i}?,{expected},false\n" for i in range(len(rows))))
    run = root / "run"
    run.mkdir()
    (run / "responses.jsonl").write_text("".join(
        json.dumps({"question_id": f"q{i}", "model": "bot", "response": f"It says so [1].\n\nSources:\n[1] {ref}"})
        + "\n" for i, ref in enumerate(rows)))
    report = score_responses(run / "responses.jsonl", root / "gold.csv", kb, run, bootstrap=0, seed=1, citations=BOT)
    lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    return report, lines


def test_an_anchor_two_headings_share_is_unmapped_and_named_in_the_report(tmp_path):
    kb = grace.build_kb(write_pages(tmp_path / "src"), tmp_path / "kb").kb
    report, lines = _score(tmp_path, tmp_path / "kb", ["travel.md#Rules", "travel.md#Rules", "leave.md#annual"],
                           kb.articles[0].id)
    assert [c["articles"] for line in lines[:2] for c in line["citations"]] == [[], []]
    assert "matches 2 headings of travel.md" in lines[0]["citations"][0]["note"]
    c = report.models["bot"].citations
    assert c.reference_warnings == {"ambiguous-anchor": 2} and c.n_unmapped == 2
    assert any(w.startswith("bot: 2 citation(s) ambiguous-anchor: the anchor matches headings") for w in report.warnings)


def test_a_page_of_300_articles_is_unmapped_and_named_in_the_report(tmp_path):
    many = "".join(f"## Topic {i}\n\nTopic {i} is about item {i}: " + " ".join(f"w{i}x{k}" for k in range(60))
                   + ".\n\n" for i in range(300))
    kb = grace.build_kb(write(tmp_path / "big" / "all.md", many), tmp_path / "kb").kb
    report, lines = _score(tmp_path, tmp_path / "kb", ["all.md", "all.md#topic-17"], kb.articles[17].id)
    assert lines[0]["citations"][0]["articles"] == [] and "300 articles" in lines[0]["citations"][0]["note"]
    assert lines[1]["citations"][0]["articles"] == [kb.articles[17].id] and lines[1]["outcome"] == "correct"
    c = report.models["bot"].citations
    assert c.reference_warnings == {"page-too-large": 1}
    assert any("1 citation(s) page-too-large" in w for w in report.warnings)
    assert report.model_dump(mode="json")["models"]["bot"]["citations"]["reference_warnings"] == {"page-too-large": 1}


def test_a_map_row_naming_an_unknown_article_says_where_and_how_to_fix_it(tmp_path):
    path = write(tmp_path / "map.csv", "chunk-1,a1\nchunk-2,zz\n")
    with pytest.raises(GraceError, match=r"map.csv:2: article 'zz' is not in the KB .*correct the ID .* or drop the row"):
        read_mapping(path, {"a1"})
