"""The bm25f default, old bm25 KBs, ``grace kb eval`` side by side with intervals, and the Helvia labels."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from harness.core.errors import GraceError
from kb_builder.gold import read_gold
from kb_builder.kb_records import Article
from kb_builder.loader import load_kb
from kb_builder.retrieval.evaluate import compare_retrievers, evaluate_retrieval
from kb_builder.retrieval.lexical import BM25FRetriever, BM25Retriever
from tests.conftest import BODY, ROOT, run_grace, shared, write

FILLER = "Ask your manager first and keep the receipts for the records. "


def arts(*rows: tuple[str, str]) -> list[Article]:
    return [Article(id=str(i), title=t, text=x) for i, (t, x) in enumerate(rows, 1)]


def test_bm25f_weighs_the_breadcrumb_above_a_passing_mention():
    kb = arts(("Leave > Bereavement leave", "Up to five days when a close relative dies. " + FILLER),
              ("Leave > Annual leave", "Twenty-five days a year; bereavement is separate. " + FILLER * 3))
    (hits,) = BM25FRetriever.build(kb).search_many(["how much bereavement leave"], 2)
    assert [h.id for h in hits] == ["1", "2"] and hits[0].score > hits[1].score > 0


def test_bm25f_stop_words_drop_question_words_but_keep_policy_words():
    r = BM25FRetriever.build(arts(("Leave", "Time off to look after a relative.")))
    toks = r._tokens("How can I take time off to look after my mother?")
    assert {"how", "can", "i", "my", "to"}.isdisjoint(toks)
    assert "off" in toks and "after" in toks


def test_bm25f_pads_a_query_with_no_known_word_like_bm25():
    kb = arts(("Sick leave", "Ten days."), ("Per diem", "45 EUR a day."))
    for retriever in (BM25Retriever(kb), BM25FRetriever.build(kb)):
        (hits,) = retriever.search_many(["zzz qqq"], 5)
        assert [h.id for h in hits] == ["1", "2"] and all(h.score == 0 for h in hits)


def test_bm25f_index_is_saved_in_the_kb_folder_and_loaded_instead_of_rebuilt(tmp_path, monkeypatch):
    import kb_builder.retrieval.lexical as lexical
    from kb_builder.build import build_kb
    from kb_builder.loader import load_kb

    src = write(tmp_path / "src" / "travel.md", f"# Travel\n\n## Booking\n\nBook flights in the portal. {BODY}\n\n"
                f"## Per diem\n\nThe meal allowance is 45 EUR a day. {BODY}\n")
    build_kb(src, tmp_path / "kb")
    queries = ["meal allowance per day", "how do I book a flight", "zzz"]
    fresh = load_kb(tmp_path / "kb").retriever().search_many(queries, 2)
    saved = list((tmp_path / "kb" / "index").glob("bm25f-*.npz"))
    assert len(saved) == 1

    def no_build(*a, **k):
        raise AssertionError("the saved index should have been loaded")

    monkeypatch.setattr(lexical.BM25FRetriever, "build", classmethod(no_build))
    assert load_kb(tmp_path / "kb").retriever().search_many(queries, 2) == fresh
    monkeypatch.undo()
    saved[0].write_bytes(b"damaged")  # a damaged index is rebuilt, not an error
    assert load_kb(tmp_path / "kb").retriever().search_many(queries, 2) == fresh
    write(src, src.read_text() + "\n## Taxis\n\nTaxis need a receipt.\n")
    build_kb(src, tmp_path / "kb")  # another KB hash: a new index replaces the old one
    load_kb(tmp_path / "kb").retriever().search_many(queries, 2)
    assert len(list((tmp_path / "kb" / "index").glob("bm25f-*.npz"))) == 1


def test_new_kbs_use_bm25f_and_old_bm25_kbs_keep_bm25(tmp_path):
    src = write(tmp_path / "src" / "leave.md", f"# Leave\n\n## Sick leave\n\nTen days of sick leave. {BODY}\n\n## Parental leave\n\nSixteen weeks. {BODY}\n")
    code, out = run_grace("kb", "build", src.parent, "--out", tmp_path / "new")
    assert code == 0, out
    assert json.loads((tmp_path / "new" / "manifest.json").read_text())["embedder"] == "bm25f"
    assert load_kb(tmp_path / "new").retriever().name == "bm25f"
    # a KB built before bm25f existed: its manifest says bm25 (or has no embedder field at all)
    code, out = run_grace("kb", "build", src.parent, "--out", tmp_path / "old", "--embedder", "bm25")
    assert code == 0, out
    manifest = json.loads((tmp_path / "old" / "manifest.json").read_text())
    del manifest["embedder"]
    write(tmp_path / "old" / "manifest.json", json.dumps(manifest))
    assert load_kb(tmp_path / "old").retriever().name == "bm25"
    # a rebuild keeps the KB's retriever unless one is named
    write(tmp_path / "old" / "manifest.json", json.dumps({**manifest, "embedder": "bm25"}))
    code, out = run_grace("kb", "build", src.parent, "--out", tmp_path / "old")
    assert code == 0, out
    assert json.loads((tmp_path / "old" / "manifest.json").read_text())["embedder"] == "bm25"
    code, out = run_grace("kb", "index", tmp_path / "old", "--embedder", "bm25f")
    assert code == 0 and "indexed with bm25f" in out, out


def _bench(tmp_path):
    kb_dir = tmp_path / "kb"
    write(kb_dir / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in [
        {"id": "1", "title": "Leave > Sick leave", "text": "Ten days of paid sick leave for your own illness. " + FILLER},
        {"id": "2", "title": "Leave > Family-care leave", "text": "Five days to look after a sick child. " + FILLER},
        {"id": "3", "title": "Travel > Per diem", "text": "Meal allowance of 45 EUR per day on trips. " + FILLER},
    ]))
    gold = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n"
                 "q1,how many paid sick days for my own illness,1,false\n"
                 "q2,days to look after my sick child,2,false\n"
                 "q3,meal allowance per day on a trip,3,false\n"
                 "q4,what is the dress code,,true\n")
    return kb_dir, gold


def test_eval_compares_retrievers_in_one_table_and_explains_what_cannot_run(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    kb_dir, gold = _bench(tmp_path)
    code, out = run_grace("kb", "eval", kb_dir, "--gold", gold, "--embedder", "bm25", "--embedder", "bm25f",
                          "--embedder", "openai", "--json", tmp_path / "r.json")
    assert code == 0, out
    assert "Retrieval (bm25, bm25f, openai) on 3 answerable questions (1 must_refuse not counted)" in out
    assert "not run because" in out and "OPENAI_API_KEY" in out and "Traceback" not in out
    assert out.count("recall@1") == 1  # one table, not one per retriever
    data = json.loads((tmp_path / "r.json").read_text())
    rows = {r["retriever"]: r for r in data["retrievers"]}
    assert set(rows) == {"bm25", "bm25f", "openai"} and "OPENAI_API_KEY" in rows["openai"]["error"]
    lo, hi = rows["bm25f"]["mrr_ci"]
    assert lo <= rows["bm25f"]["mrr"] <= hi and set(rows["bm25f"]["recall_ci"]) == {"1", "3", "5"}


def test_eval_of_one_retriever_that_cannot_run_is_still_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    kb_dir, gold = _bench(tmp_path)
    code, out = run_grace("kb", "eval", kb_dir, "--gold", gold, "--embedder", "openai")
    assert code == 2 and "OPENAI_API_KEY" in out


def test_bootstrap_intervals_are_seeded_paired_and_bracket_the_value(tmp_path):
    kb_dir, gold = _bench(tmp_path)
    kb, questions = load_kb(kb_dir), read_gold(gold)
    a = compare_retrievers(kb, questions, ["bm25", "bm25f", "nope"], [1, 3], bootstrap=500, seed=3)
    b = compare_retrievers(kb, questions, ["bm25", "bm25f", "nope"], [1, 3], bootstrap=500, seed=3)
    assert [r.result.recall_ci for r in a[:2]] == [r.result.recall_ci for r in b[:2]]
    assert a[2].result is None and "unknown embedder 'nope'" in a[2].error
    for row in a[:2]:
        res = row.result
        for k in (1, 3):
            assert res.recall_ci[k][0] <= res.recall[k] <= res.recall_ci[k][1]
        assert res.mrr_ci[0] <= res.mrr <= res.mrr_ci[1]
    plain = evaluate_retrieval(kb.retriever("bm25f"), questions, [1, 3])
    assert plain.recall_ci == {} and plain.mrr_ci is None and plain.n_answerable == 3 and plain.n_refuse == 1


def test_recall_at_k_gets_wilsons_interval_never_a_point(tmp_path):
    """Issue 47: recall@k is a share of questions: all 3 found is Wilson's [43.9%, 100%] (scipy's, computed apart),
    where the bootstrap said [100%, 100%]; MRR, a mean, keeps its bootstrap."""
    from scipy.stats import binomtest

    kb_dir, gold = _bench(tmp_path)
    res = evaluate_retrieval(load_kb(kb_dir).retriever("bm25f"), read_gold(gold), [1, 3], bootstrap=500, seed=3)
    for k in (1, 3):
        found = round(res.recall[k] * res.n_answerable)
        truth = binomtest(found, res.n_answerable).proportion_ci(method="wilson")
        assert res.recall_ci[k] == pytest.approx([truth.low, truth.high], abs=1.1e-6)
    assert res.recall[3] == 1.0 and res.recall_ci[3][0] < 0.5


# --- the Helvia Playbook-RAG labels (benchmarks/external/helvia_labels.csv) ---

LABELS = ROOT / "benchmarks" / "external" / "helvia_labels.csv"


def _helvia():
    import importlib.util

    spec = importlib.util.spec_from_file_location("helvia_retrieval", ROOT / "benchmarks" / "external" / "helvia_retrieval.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def test_helvia_label_file_is_well_formed():
    with LABELS.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 105 and len({r["row"] for r in rows}) == 105
    for r in rows:
        ids = r["expected_citations"].split(";")
        assert ids and all(i.isdigit() and 1 <= int(i) <= 59 for i in ids), r
        assert len(r["map_rows"].split(";")) == len(ids) and len(ids) == len(set(ids)), r
        assert r["expected"] in {"answer", "ask", "correct"} and r["certainty"] in {"clear", "several", "judgement"}
        assert (len(ids) > 1) == (r["certainty"] == "several") or r["certainty"] == "judgement", r
        assert len(r["query_sha"]) == 10 and r["note"], r


def test_helvia_labels_join_the_shared_data_and_refuse_drift(tmp_path):
    data = shared("helvia-playbook-rag")
    code, out = run_grace("kb", "build", "--articles", data / "map.json", "--out", tmp_path / "kb")
    assert code == 0, out
    mod = _helvia()
    labelled = mod.join_labels(data / "dataset.csv", tmp_path / "kb" / "articles.jsonl")
    assert len(labelled) == 105 and {x.expected for x in labelled} == {"answer", "ask", "correct"}
    assert sum(x.expected == "answer" for x in labelled) == 52
    # a query edited in the data set is caught by its hash
    rows = list(csv.DictReader((data / "dataset.csv").open(encoding="utf-8", newline="")))
    rows[36]["query"] += " (edited)"
    changed = tmp_path / "dataset.csv"
    with changed.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(GraceError, match=r"helvia_labels.csv:\d+: query 37 .* relabel that row"):
        mod.join_labels(changed, tmp_path / "kb" / "articles.jsonl")


def test_helvia_script_skips_with_a_message_when_the_shared_data_is_absent(tmp_path, monkeypatch, capsys):
    mod = _helvia()
    monkeypatch.setattr(sys, "argv", ["helvia_retrieval.py", "--data", str(tmp_path / "absent"), "--out", str(tmp_path / "out")])
    mod.main()
    assert "skipped:" in capsys.readouterr().err and not (tmp_path / "out").exists()
