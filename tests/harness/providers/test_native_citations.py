"""Anthropic native citations: the articles sent as document blocks with citations enabled (the real SDK against the
fake server), the spans the API returns mapped to their articles, each checked to exist in it, and the articles
cited scored like any citation."""

from __future__ import annotations

import json

import pytest

import harness as grace
from harness.testing.api_formats import cite_documents
from harness.testing.fake_api import FakeAPIServer
from tests.conftest import SAMPLE, run_grace

N = 12


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    grace.build_kb(SAMPLE / "handbook", root / "kb")
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines()
    (root / "gold.csv").write_text("\n".join(lines[:N + 1]) + "\n", encoding="utf-8")
    return root


def test_native_citations_are_mapped_checked_and_scored(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAPIServer(responder=cite_documents) as srv:
        board = tmp_path / "board.toml"
        entries = []
        for name in ("claude-cites", "claude-misquotes"):
            entries.append(f'[[models]]\nspec = "anthropic:{name}"\nbase_url = "{srv.anthropic_base_url}"\n'
                           "options = { native_citations = true }\n")
        board.write_text("\n".join(entries), encoding="utf-8")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--config", board)
        assert code == 0, out
        first = srv.requests[0].body
    user = first["messages"][0]["content"]
    documents = [b for b in user if b["type"] == "document"]
    assert len(documents) == 3 and all(d["citations"] == {"enabled": True} for d in documents)
    assert all(d["source"]["type"] == "text" and d["title"].startswith("[ID: ") for d in documents)
    prompt = user[-1]["text"]
    assert documents[0]["source"]["data"] not in prompt  # the articles are not sent twice
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    for row in rows:
        top = row["retrieved_ids"][0]
        assert row["citations"] == [top]  # the document cited, mapped to its article
        (span,) = row["cited_spans"]
        assert span["article"] == top
        good = row["model"] == "anthropic:claude-cites"
        assert span["found"] is good and span["at_offsets"] is good
    articles = {json.loads(line)["id"]: json.loads(line) for line in (bench / "kb" / "articles.jsonl").open()}
    for row in rows:  # checked apart from grace: the quoted text is (or is not) at its offsets in the article
        span = row["cited_spans"][0]
        text = articles[span["article"]]["text"]
        assert (text[span["start"]:span["end"]] == span["text"]) is (row["model"] == "anthropic:claude-cites")
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    native = report["native_citations"]
    assert native["anthropic:claude-cites"]["found"] == native["anthropic:claude-cites"]["spans"] == N
    assert native["anthropic:claude-misquotes"]["found"] == 0
    assert native["anthropic:claude-misquotes"]["answers_with_unfound_span"] == N
    # scored like any citation: citing the top article is correct exactly where the top article is a gold one
    import csv
    import re

    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        gold = {r["question_id"]: set(filter(None, re.split(r"[;|]", r["expected_citations"])))
                for r in csv.DictReader(fh)}
    hits = sum(row["retrieved_ids"][0] in gold[row["question_id"]] for row in rows
               if row["model"] == "anthropic:claude-cites")
    assert report["models"]["anthropic:claude-cites"]["accuracy"] == pytest.approx(hits / N, abs=1e-6)


def test_native_citations_option_must_be_a_boolean(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    board = tmp_path / "board.toml"
    board.write_text('[[models]]\nspec = "anthropic:claude-x"\noptions = { native_citations = "yes" }\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                          "--config", board)
    assert code != 0 and "options.native_citations must be true or false" in out and "Traceback" not in out
