"""``--rerank``: an LLM (or a local cross-encoder) reorders the retriever's top candidates before the top k."""

from __future__ import annotations

import json

import pytest

import grace as api
from harness.core.errors import WorkFailed
from harness.run_folder.run_dir import RunDir
from harness.runner.rerank import load_rerank_template, parse_ranking
from harness.testing.fake_api import FakeAPIServer, Reply, cite_first_id, prompt_text
from tests.conftest import run_grace, small_bench

IDS_RE = r"\[ID:\s*([^\]\s]+)\s*\]"


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 8, ["can I bring my dog"])


def reversing(body):
    """Rank the candidates in reverse of the order shown; answer other prompts by citing the first article."""
    import re

    text = prompt_text(body)
    if '"ranking"' in text:
        return json.dumps({"ranking": list(reversed(re.findall(IDS_RE, text.rpartition("\nQuestion:")[0])))})
    return cite_first_id(body)


def test_parse_ranking_keeps_only_shown_ids_and_appends_the_ones_left_out():
    shown = ["1", "2", "3", "4"]
    assert parse_ranking('{"ranking": ["3", "1"]}', shown) == ["3", "1", "2", "4"]
    assert parse_ranking('```json\n{"ranking": ["[ID: 4]", "ID: 2", "9", "4"]}\n```', shown) == ["4", "2", "1", "3"]
    assert parse_ranking('{"ranking": [{"id": "2"}]}', shown) == ["2", "1", "3", "4"]
    assert parse_ranking("I think article 3 is best", shown) is None
    assert parse_ranking('{"ranking": ["99"]}', shown) is None
    assert parse_ranking(None, shown) is None


def test_the_template_shows_every_candidate_and_the_question():
    from harness.providers.base import RetrievedArticle

    tmpl = load_rerank_template()
    msgs = tmpl.messages("how long is parental leave", [RetrievedArticle("7", "Leave > Parental", "x " * 2000, 1.0),
                                                         RetrievedArticle("9", "Travel", "Book flights.", 0.5)])
    user = msgs[-1]["content"]
    assert "[ID: 7] Leave > Parental" in user and "[ID: 9] Travel" in user and user.endswith("how long is parental leave")
    assert len(user) < 2_000  # long articles are cut to a snippet


def test_rerank_reorders_the_candidates_and_is_cached_and_recorded(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=reversing) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        plain = api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "plain", k=4)
        assert plain.ok
        result = api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "run", k=2,
                         rerank="openai:reranker-model", rerank_depth=4)
        assert result.ok and len(srv.requests) == 9  # one ranking per question
        before = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "plain").response_rows()}
        after = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "run").response_rows()}
        assert after == {q: list(reversed(ids))[:2] for q, ids in before.items()}
        info = api.load_run(tmp_path / "run").info
        assert info.config.rerank["reranker"] == "openai:reranker-model" and info.config.rerank["depth"] == 4
        assert info.config.rerank["changed"] == 9 and info.config.rerank["calls"]["calls"] == 9
        srv.clear()
        api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "again", k=2,
                rerank="openai:reranker-model", rerank_depth=4)
        assert not srv.requests  # every ranking came from the cache


def test_an_unreadable_ranking_keeps_the_retrievers_order(bench, tmp_path, monkeypatch):
    def all_but_dogs(body):  # one readable ranking, eight unreadable ones
        return reversing(body) if "dog" in prompt_text(body) else "The first one looks best."

    with FakeAPIServer(responder=all_but_dogs) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        plain = api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "plain", k=2)
        api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "run", k=2, rerank="openai:r")
        assert plain.ok
        same = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "plain").response_rows()}
        reranked = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "run").response_rows()}
        assert {q: v for q, v in same.items() if q != "r1"} == {q: v for q, v in reranked.items() if q != "r1"}
        assert api.load_run(tmp_path / "run").info.config.rerank["kept_order"] == 8
        srv.responder = lambda body: "The first one looks best."  # no usable ranking at all: no model is asked
        with pytest.raises(WorkFailed, match="no usable ranking for any of 9 question"):
            api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "none", k=2, rerank="openai:r2")
        assert not RunDir(tmp_path / "none").responses.exists()


def test_dry_run_prices_the_reranking_and_a_refused_key_stops_before_answering(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=reversing) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                              "--rerank", "openai:gpt-4o-mini", "--out", tmp_path / "dry", "--dry-run")
        assert code == 0 and "(reranking)" in out and not srv.requests, out
        srv.enqueue(*[Reply.unauthorized()] * 20)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                              "--rerank", "openai:gpt-4o-mini", "--out", tmp_path / "run")
        assert code != 0 and "reranker was stopped" in out and "Traceback" not in out
        assert not RunDir(tmp_path / "run").responses.exists()


def test_cross_encoder_without_the_optional_extra_says_how_to_install(bench, tmp_path):
    try:
        import sentence_transformers  # noqa: F401

        pytest.skip("sentence-transformers is installed here; this checks the message without it")
    except ImportError:
        pass
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--rerank", "cross-encoder", "--out", tmp_path / "run")
    assert code != 0 and "grace-eval[local]" in out and "Traceback" not in out


def test_kb_eval_shows_what_reranking_and_a_teams_own_retriever_buy(bench, tmp_path, monkeypatch):
    code, out = run_grace("kb", "search", bench / "kb", "--queries", bench / "gold.csv", "-k", "4",
                          "--out", tmp_path / "ours.jsonl")
    assert code == 0, out
    with FakeAPIServer(responder=reversing) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, out = run_grace("kb", "eval", bench / "kb", "--gold", bench / "gold.csv", "-k", "1,4", "--bootstrap",
                              "200", "--retrieved", tmp_path / "ours.jsonl", "--rerank", "openai:r",
                              "--rerank-depth", "4", "--json", tmp_path / "eval.json")
        assert code == 0, out
        assert "file:ours.jsonl" in out and "+ rerank" in out and "call(s)" in out
        rows = {r["retriever"]: r for r in json.loads((tmp_path / "eval.json").read_text())["retrievers"]}
        default = next(k for k in rows if not k.startswith("file:") and "rerank" not in k)
        # the file holds the KB's own ranking: the same recall; the reversing reranker moves the top-1 down
        assert rows["file:ours.jsonl"]["recall"] == rows[default]["recall"]
        assert rows[f"{default} + rerank"]["recall"]["4"] == rows[default]["recall"]["4"]
        assert rows[f"{default} + rerank"]["recall"]["1"] < rows[default]["recall"]["1"]
        calls = len(srv.requests)
        assert calls == 8  # the 8 answerable questions once: the file's reranking is the same prompts, cached
