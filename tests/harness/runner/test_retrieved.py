"""``grace run --retrieved FILE``: the leaderboard on a team's own retrieval instead of grace's."""

from __future__ import annotations

import json

import pytest

import grace as api
from harness.run_folder.run_dir import RunDir
from tests.conftest import run_grace, small_bench, write


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 8, ["can I bring my dog"])


def ids_of(bench):
    return [json.loads(line)["id"] for line in (bench / "kb" / "articles.jsonl").read_text().splitlines()]


def test_kb_search_output_runs_as_retrieved_and_matches_graces_own_retrieval(bench, tmp_path):
    code, out = run_grace("kb", "search", bench / "kb", "--queries", bench / "gold.csv", "-k", "3",
                          "--out", tmp_path / "retrieved.jsonl")
    assert code == 0, out
    own = api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "own")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--retrieved", tmp_path / "retrieved.jsonl", "--out", tmp_path / "theirs")
    assert code == 0, out
    mine = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "own").response_rows()}
    theirs = {r["question_id"]: r["retrieved_ids"] for r in RunDir(tmp_path / "theirs").response_rows()}
    assert mine == theirs
    info = api.load_run(tmp_path / "theirs").info
    assert info.config.retrieved.path.endswith("retrieved.jsonl") and own.leaderboard


def test_a_production_retrievers_ranking_is_used_as_given(bench, tmp_path):
    ids = ids_of(bench)
    gold = [line.split(",")[0] for line in (bench / "gold.csv").read_text().splitlines()[1:]]
    ranking = list(reversed(ids))  # deliberately not grace's order, bare IDs without scores
    write(tmp_path / "prod.jsonl", "".join(json.dumps({"question_id": q, "retrieved": ranking}) + "\n" for q in gold))
    api.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "run", k=2,
            retrieved=tmp_path / "prod.jsonl")
    rows = RunDir(tmp_path / "run").response_rows()
    assert {tuple(r["retrieved_ids"]) for r in rows} == {tuple(ranking[:2])}
    assert rows[0]["retrieval_scores"] == [1.0, 0.5]  # no scores given: 1 / rank
    report = api.load_run(tmp_path / "run").report
    assert report.models["baseline:top1"].retrieval.k == 2


@pytest.mark.parametrize(("line", "message"), [
    ('{"question_id": "q0", "retrieved": ["no-such-article"]}', r"retrieved.jsonl:2: article ID\(s\) 'no-such-article'"),
    ('{"question_id": "q0", "retrieved": "17"}', r"retrieved.jsonl:2: 'retrieved' must be a list"),
    ("not json", r"retrieved.jsonl:2: not valid JSON"),
    ('{"question_id": "q1", "retrieved": []}', r"retrieved.jsonl:2: question 'q1' is listed twice"),
])
def test_a_bad_retrieved_file_names_the_line_and_the_fix(bench, tmp_path, line, message):
    first = json.dumps({"question_id": "q1", "retrieved": ids_of(bench)[:3]})
    path = write(tmp_path / "retrieved.jsonl", first + "\n" + line + "\n")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--retrieved", path, "--out", tmp_path / "run")
    assert code != 0 and "Traceback" not in out
    import re

    assert re.search(message, out.replace("\n", " ")), out


def test_every_gold_question_needs_a_line_and_embedder_cannot_be_mixed_in(bench, tmp_path):
    path = write(tmp_path / "retrieved.jsonl", json.dumps({"question_id": "q1", "retrieved": ids_of(bench)[:3]}) + "\n")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--retrieved", path, "--out", tmp_path / "run")
    assert code != 0 and "gold question(s) have no line" in out and "q0" in out
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--retrieved", path, "--embedder", "bm25", "--out", tmp_path / "run")
    assert code != 0 and "not both" in out
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--retrieved", tmp_path / "absent.jsonl", "--out", tmp_path / "run")
    assert code != 0 and "not found" in out


def test_a_ranking_of_the_retrievers_own_documents_is_mapped_and_the_unmapped_are_counted_and_named(bench, tmp_path):
    """Issue 39: a production retriever ranks its own chunks, paths and URLs. Before, any such ID stopped the run
    (no way to map it); with --retrieved-map each maps through the file and the KB's own records (as a system's
    citations do), and one that maps to nothing is left out of the prompt, counted and named: never an article."""
    from kb_builder.loader import load_kb

    kb = load_kb(bench / "kb")
    ids = ids_of(bench)
    booking = next(a.id for a in kb.articles if a.heading_path and a.heading_path[-1] == "Booking")
    write(tmp_path / "chunks.csv", f"their_id,article_id\nchunk-A,{ids[3]}\nchunk-A2,{ids[3]}\n")
    gold = [line.split(",")[0] for line in (bench / "gold.csv").read_text().splitlines()[1:]]
    ranking = ["chunk-A", "travel.md#Booking", "chunk-lost", "chunk-A2", ids[0]]
    path = write(tmp_path / "prod.jsonl", "".join(json.dumps({"question_id": q, "retrieved": ranking}) + "\n"
                                                  for q in gold))
    args = ("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "-k", "3",
            "--retrieved", path)
    code, out = run_grace(*args, "--out", tmp_path / "unmapped")
    assert code == 2 and "'chunk-A'" in out and "--retrieved-map" in out, out  # without a map: the fix is named
    code, out = run_grace(*args, "--retrieved-map", tmp_path / "chunks.csv", "--out", tmp_path / "run")
    assert code == 0, out
    flat = " ".join(out.split())
    assert f"{len(gold)} ranked entries (1 distinct ID(s)) map to no KB article" in flat and "'chunk-lost'" in flat
    rows = RunDir(tmp_path / "run").response_rows()
    assert {tuple(r["retrieved_ids"]) for r in rows} == {(ids[3], booking, ids[0])}  # chunk-A2 is chunk-A's article
    record = api.load_run(tmp_path / "run").info.config.retrieved
    assert (record.map, record.mapped, record.unmapped, record.unmapped_ids) == (
        str((tmp_path / "chunks.csv").resolve()), 3 * len(gold), len(gold), ["chunk-lost"])
    write(tmp_path / "bad.csv", "chunk-A,99999\n")
    code, out = run_grace(*args, "--retrieved-map", tmp_path / "bad.csv", "--out", tmp_path / "bad")
    assert code == 2 and f"{tmp_path / 'bad.csv'}:1" in out and "not in the KB" in out and "Traceback" not in out
