"""Anthropic native citations: the articles sent as document blocks with citations enabled (the real SDK against the
fake server), the spans the API returns mapped to their articles, each checked to exist in it, and the articles
cited scored like any citation."""

from __future__ import annotations

import json

import pytest

from harness.testing.api_formats import cite_documents
from harness.testing.fake_api import FakeAPIServer
from tests.conftest import run_grace, sample_bench

N = 12


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("native"), N)


def aws(monkeypatch, tmp_path):
    """Fake AWS keys and region; nothing read from this machine's ~/.aws."""
    for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_REGION", "us-east-1"),
                        ("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config")),
                        ("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials")),
                        ("AWS_EC2_METADATA_DISABLED", "true")):
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_native_citations_are_mapped_checked_and_scored(bench, tmp_path, monkeypatch, provider):
    if provider == "bedrock":
        pytest.importorskip("boto3")
        aws(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAPIServer(responder=cite_documents) as srv:
        board = tmp_path / "board.toml"
        entries = []
        for name in ("claude-cites", "claude-misquotes"):
            url = srv.anthropic_base_url if provider == "anthropic" else srv.bedrock_base_url
            entries.append(f'[[models]]\nspec = "{provider}:{name}"\nbase_url = "{url}"\n'
                           "options = { native_citations = true }\n")
        board.write_text("\n".join(entries), encoding="utf-8")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--config", board)
        assert code == 0, out
        first = srv.requests[0].body
    user = first["messages"][0]["content"]
    if provider == "anthropic":
        documents = [b for b in user if b.get("type") == "document"]
        assert all(d["source"]["type"] == "text" and d["title"].startswith("[ID: ") for d in documents)
        data = documents[0]["source"]["data"]
    else:
        documents = [b["document"] for b in user if "document" in b]
        assert all(d["format"] == "txt" and "text" in d["source"] for d in documents)
        assert len({d["name"] for d in documents}) == 3  # unique names, as Converse wants
        data = documents[0]["source"]["text"]
    assert len(documents) == 3 and all(d["citations"] == {"enabled": True} for d in documents)
    prompt = user[-1]["text"]
    assert data not in prompt and "the documents above" in prompt  # the articles are not sent twice
    rows = [json.loads(line) for line in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    for row in rows:
        top = row["retrieved_ids"][0]
        assert row["citations"] == [top]  # the document cited, mapped to its article
        (span,) = row["cited_spans"]
        assert span["article"] == top
        good = row["model"] == f"{provider}:claude-cites"
        assert span["found"] is good and span["at_offsets"] is good
    articles = {json.loads(line)["id"]: json.loads(line) for line in (bench / "kb" / "articles.jsonl").open()}
    for row in rows:  # checked apart from grace: the quoted text is (or is not) at its offsets in the article
        span = row["cited_spans"][0]
        text = articles[span["article"]]["text"]
        assert (text[span["start"]:span["end"]] == span["text"]) is (row["model"] == f"{provider}:claude-cites")
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    native = report["native_citations"]
    assert native[f"{provider}:claude-cites"]["found"] == native[f"{provider}:claude-cites"]["spans"] == N
    assert native[f"{provider}:claude-misquotes"]["found"] == 0
    assert native[f"{provider}:claude-misquotes"]["answers_with_unfound_span"] == N
    # scored like any citation: citing the top article is correct exactly where the top article is a gold one
    import csv
    import re

    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        gold = {r["question_id"]: set(filter(None, re.split(r"[;|]", r["expected_citations"])))
                for r in csv.DictReader(fh)}
    hits = sum(row["retrieved_ids"][0] in gold[row["question_id"]] for row in rows
               if row["model"] == f"{provider}:claude-cites")
    assert report["models"][f"{provider}:claude-cites"]["accuracy"] == pytest.approx(hits / N, abs=1e-6)


def test_native_citations_option_must_be_a_boolean(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    board = tmp_path / "board.toml"
    board.write_text('[[models]]\nspec = "anthropic:claude-x"\noptions = { native_citations = "yes" }\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                          "--config", board)
    assert code != 0 and "options.native_citations must be true or false" in out and "Traceback" not in out
