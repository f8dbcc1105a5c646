"""Suggestions from a run's consensus and the gold audit (issue 10, parts 1 and 2).

The acceptance figures come from the bundled sample benchmark: a seeded panel of
five simulated models (accuracies 0.9 to 0.7, mistakes aimed at near-duplicate
articles, see harness.testing.panel) and labels planted on near-duplicates.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.scoring.label_audit import audit, read_suspects
from harness.scoring.votes import collect, votes_from_responses
from harness.testing.panel import plant_label_errors, simulate_panel
from kb_builder.gold import GoldQuestion, read_gold
from tests.conftest import SAMPLE, run_grace, small_bench, write

ACCURACIES = [0.9, 0.85, 0.8, 0.75, 0.7]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")
    assert code == 0, out
    from kb_builder.loader import load_kb

    return root, load_kb(root / "kb"), read_gold(SAMPLE / "gold.csv")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_gold(path: Path, questions: list[GoldQuestion]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"])
        for q in questions:
            w.writerow([q.question_id, q.question, "", ";".join(q.expected_citations), str(q.must_refuse).lower(), ""])
    return path


def truth(q: GoldQuestion) -> str:
    return "REFUSE" if q.must_refuse else ";".join(sorted(q.expected_citations))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_audit_flags_labels_moved_to_near_duplicates_with_few_false_flags(sample, tmp_path, seed):
    root, kb, gold = sample
    responses = write_jsonl(tmp_path / "responses.jsonl", simulate_panel(kb, gold, ACCURACIES, seed=seed))
    corrupted, planted = plant_label_errors(kb, gold, 8, seed=seed)
    bad_gold = write_gold(tmp_path / "gold.csv", corrupted)
    code, out = run_grace("annotations", "audit", bad_gold, "--kb", root / "kb", "--run", responses,
                          "--out", tmp_path / "suspects.csv")
    assert code == 0, out
    suspects = read_suspects(tmp_path / "suspects.csv")
    per_question = {s.question_id: s for s in suspects if s.kind != "near_duplicates"}
    caught = planted & set(per_question)
    assert len(caught) >= 7, (planted, per_question.keys())
    assert len(set(per_question) - planted) <= 2
    by_id = {q.question_id: q for q in gold}
    for qid in caught:  # the suggestion names the article the label was moved away from
        assert per_question[qid].kind == "other_article"
        assert per_question[qid].suggested == truth(by_id[qid])
        assert per_question[qid].agree > per_question[qid].voters / 2
    assert f"{len(suspects)} suspect(s)" in out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_consensus_suggestions_agree_with_the_true_labels(sample, tmp_path, seed):
    root, kb, gold = sample
    responses = write_jsonl(tmp_path / "responses.jsonl", simulate_panel(kb, gold, ACCURACIES, seed=seed))
    code, out = run_grace("annotations", "suggest", SAMPLE / "gold.csv", "--kb", root / "kb", "--run", responses,
                          "--out", tmp_path / "s.csv")
    assert code == 0, out
    from annotations.suggestions import read_suggestions

    got = read_suggestions(tmp_path / "s.csv")
    assert set(got) == {q.question_id for q in gold}
    covered = [q for q in gold if got[q.question_id].usable]
    right = sum(got[q.question_id].suggested == truth(q) for q in covered)
    assert len(covered) >= 0.85 * len(gold)
    assert right / len(covered) >= 0.9, (right, len(covered))
    for s in got.values():
        assert s.source == f"run:{responses}" and s.voters <= len(ACCURACIES)
        assert s.usable == (s.support is not None and s.support >= 0.6 and s.voters >= 2)


def q(qid: str, cites: str = "", refuse: bool = False) -> GoldQuestion:
    return GoldQuestion(qid, f"question {qid}", [c for c in cites.split(";") if c], refuse)


def votes(*rows: tuple[str, str, str | None]):
    return collect((qid, model, vote, None) for qid, model, vote in rows)


def test_rules_multi_article_gold_refusals_and_minimum_voters():
    v = votes(("a", "m1", "18"), ("a", "m2", "18"), ("a", "m3", "17"),  # gold 17;18: agreement
              ("b", "m1", "5"), ("b", "m2", "5"), ("b", "m3", "REFUSE"),  # must_refuse answered from 5
              ("c", "m1", "REFUSE"), ("c", "m2", "REFUSE"), ("c", "m3", "REFUSE"),  # every model refuses
              ("d", "m1", "9"),  # one voter: never enough
              ("e", "m1", "9"), ("e", "m2", "9"), ("e", "m3", "3"), ("e", "m4", "3"))  # 2 of 4: not most
    found = {s.question_id: s for s in audit([q("a", "17;18"), q("b", refuse=True), q("c", "4"), q("d", "1"),
                                              q("e", "3")], v, {"5": "Lunch"})}
    assert set(found) == {"b", "c"}
    assert found["b"].kind == "refuse_answered" and found["b"].suggested == "5" and "5 (Lunch)" in found["b"].reason
    assert found["c"].kind == "all_refuse" and found["c"].agree == 3


def test_all_refuse_needs_every_model_that_was_asked():
    v = collect([("c", "m1", "REFUSE", None), ("c", "m2", "REFUSE", None), ("c", "m3", None, None)])
    assert audit([q("c", "4")], v) == []  # m3 gave no clear vote: not every model refused


def test_repeats_vote_once_per_model_and_ties_abstain():
    v = collect([("a", "m1", "1", None), ("a", "m1", "1", None), ("a", "m1", "2", None),
                 ("a", "m2", "1", None), ("a", "m2", "2", None)])
    assert v["a"].by_model == {"m1": "1"} and v["a"].asked == {"m1", "m2"}


def test_near_duplicate_pairs_swapped_both_ways_get_one_row():
    rows = []
    for qid, gold_id, cited in [("a1", "7", "8"), ("a2", "7", "8"), ("b1", "8", "7"), ("b2", "8", "7"), ("c", "7", "7")]:
        rows += [(qid, "m1", cited), (qid, "m2", gold_id), (qid, "m3", gold_id)]
    gold = [q("a1", "7"), q("a2", "7"), q("b1", "8"), q("b2", "8"), q("c", "7")]
    found = audit(gold, votes(*rows), {"7": "Leave", "8": "Leave policy"})
    assert [s.kind for s in found] == ["near_duplicates"]
    assert found[0].question_ids == ["a1", "a2", "b1", "b2"] and "merge them in the KB" in found[0].reason


def test_votes_from_a_run_folder_read_citations_like_the_scorer(tmp_path):
    rows = [{"question_id": "q1", "model": "m", "repeat": 0, "response": "See the policy [ID: 2].", "retrieval_scores": [3.5]},
            {"question_id": "q2", "model": "m", "repeat": 0, "response": "I cannot answer that from the articles."},
            {"question_id": "q3", "model": "m", "repeat": 0, "response": "Both [ID: 1] and [ID: 2]."},
            {"question_id": "q4", "model": "m", "repeat": 0, "response": None, "error": {"kind": "server", "message": "x",
                                                                                         "attempts": 1}}]
    v = votes_from_responses(rows, {"1", "2"})
    assert v["q1"].by_model == {"m": "2"} and v["q1"].top_score == 3.5
    assert v["q2"].by_model == {"m": "REFUSE"}
    assert v["q3"].by_model == {} and v["q4"].by_model == {} and v["q4"].asked == {"m"}


def test_scored_run_lists_labels_to_check_in_report_and_html_escaped(tmp_path):
    bench = small_bench(tmp_path, 8, ["can I bring my dog"])
    gold = (bench / "gold.csv").read_text().replace("q1,how long is parental leave (variant 1),,2,", "q1,<b>x</b>,,3,")
    write(bench / "gold.csv", gold)
    from kb_builder.gold import read_gold as rg

    rows = []
    for g in rg(bench / "gold.csv"):
        right = "2" if g.question_id == "q1" else (None if g.must_refuse else g.expected_citations[0])
        for m in ("a", "b", "c"):
            text = "I cannot answer that from the articles." if right is None else f"Answer. [ID: {right}]"
            rows.append({"question_id": g.question_id, "model": m, "repeat": 0, "response": text})
    write_jsonl(bench / "responses.jsonl", rows)
    code, out = run_grace("score", bench / "responses.jsonl", "--gold", bench / "gold.csv", "--kb", bench / "kb",
                          "--out", bench / "run")
    assert code == 0, out
    report = json.loads((bench / "run" / "report.json").read_text())
    block = report["label_suspects"]
    assert block["n"] == 1 and block["top"][0]["question_id"] == "q1" and block["top"][0]["suggested"] == "2"
    assert any("contradicted by most of the 3 models that are not baselines" in w for w in report["warnings"])
    assert block["models"] == ["a", "b", "c"]
    code, out = run_grace("report", bench / "run", "--kb", bench / "kb")
    assert code == 0, out
    html = (bench / "run" / "report.html").read_text()
    assert 'id="labels"' in html and "Labels to check" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def _contradicting_run(tmp_path: Path, cites: dict[str, str], providers: dict[str, str] | None = None) -> dict:
    """q1's gold says article 3; each model cites ``cites[model]`` for it (2 contradicts, 3 agrees) and the gold
    elsewhere. ``providers``: a run.json naming each model's provider (a baseline by another name). The report."""
    import hashlib

    from harness.run_folder.run_dir import RunDir
    from harness.run_folder.run_records import ModelEntry, RunConfig, RunGold, RunInfo, RunKb

    bench = small_bench(tmp_path, 8, [])
    write(bench / "gold.csv", (bench / "gold.csv").read_text().replace("(variant 1),,2,", "(variant 1),,3,"))
    rows = [{"question_id": g.question_id, "model": m, "repeat": 0,
             "response": f"Answer. [ID: {cites[m] if g.question_id == 'q1' else g.expected_citations[0]}]"}
            for g in read_gold(bench / "gold.csv") for m in cites]
    (bench / "run").mkdir()
    write_jsonl(bench / "run" / "responses.jsonl", rows)
    if providers:
        gold = bench / "gold.csv"
        RunDir(bench / "run").write_run_info(RunInfo(
            grace_version="test", started_at="2025-03-01T09:00:00+00:00", status="finished",
            kb=RunKb(path=str(bench / "kb"), kb_hash="x", articles=4),
            gold=RunGold(path=str(gold), hash=hashlib.sha256(gold.read_bytes()).hexdigest()[:16], questions=8,
                         must_refuse=0),
            templates={}, config=RunConfig(k=2, repeats=1, concurrency=1, cache=False, read_cache=False,
                                           max_attempts=1, seed=0, output_mode="inline"),
            models=[ModelEntry(name=m, provider=p, model=m) for m, p in providers.items()]))
    code, out = run_grace("score", bench / "run" / "responses.jsonl", "--gold", bench / "gold.csv", "--kb",
                          bench / "kb")
    assert code == 0, out
    return json.loads((bench / "run" / "report.json").read_text())


def test_the_labels_to_check_count_only_models_that_are_not_baselines(tmp_path):
    """Issue 47: two retrieval baselines citing the same top article are one opinion. Two baselines (one by its
    provider in run.json, one by its name) against one LLM: no banner, no section, where the old rule flagged q1
    (2 of 3 voters). Two LLMs against two baselines: flagged on the LLMs' votes, 2 of 2 (the old rule: 2 of 4, none)."""
    report = _contradicting_run(tmp_path / "a", {"floor": "2", "baseline:top1": "2", "llm-a": "3"},
                                {"floor": "baseline", "baseline:top1": "baseline", "llm-a": "openai"})
    assert report["label_suspects"] is None
    assert not any("contradicted" in w for w in report["warnings"])
    old = audit(read_gold(tmp_path / "a" / "gold.csv"), _votes(tmp_path / "a"))
    assert [s.question_id for s in old] == ["q1"]  # every model's votes, as 'grace annotations audit' counts them
    report = _contradicting_run(tmp_path / "b", {"llm-a": "2", "llm-b": "2", "baseline:top1": "3",
                                                 "baseline:threshold": "3"})
    block = report["label_suspects"]
    assert block["models"] == ["llm-a", "llm-b"] and block["n"] == 1
    assert (block["top"][0]["question_id"], block["top"][0]["agree"], block["top"][0]["voters"]) == ("q1", 2, 2)
    assert any("contradicted by most of the 2 models that are not baselines" in w for w in report["warnings"])


def _votes(bench: Path) -> dict:
    rows = [json.loads(line) for line in (bench / "run" / "responses.jsonl").read_text().splitlines()]
    return votes_from_responses(rows, {"1", "2", "3", "4"})


def test_single_model_run_has_no_label_section(tmp_path):
    bench = small_bench(tmp_path, 4, [])
    rows = [{"question_id": f"q{i}", "model": "a", "repeat": 0, "response": "Answer. [ID: 1]"} for i in range(4)]
    write_jsonl(bench / "responses.jsonl", rows)
    code, out = run_grace("score", bench / "responses.jsonl", "--gold", bench / "gold.csv", "--kb", bench / "kb",
                          "--out", bench / "run")
    assert code == 0, out
    assert json.loads((bench / "run" / "report.json").read_text())["label_suspects"] is None


def test_suggest_and_audit_errors_are_clear(sample, tmp_path):
    root, _, _ = sample
    code, out = run_grace("annotations", "suggest", SAMPLE / "gold.csv", "--kb", root / "kb", "--out", tmp_path / "s.csv")
    assert code == 2 and "give --run" in out
    code, out = run_grace("annotations", "audit", SAMPLE / "gold.csv", "--kb", root / "kb", "--run", tmp_path / "nope",
                          "--out", tmp_path / "x.csv")
    assert code == 2 and "not found" in out and "Traceback" not in out
    write(tmp_path / "bad.csv", "question_id,agree\nq1,many\n")
    from harness.core.errors import GraceError

    with pytest.raises(GraceError, match=r"bad.csv:2: agree must be a whole number"):
        read_suspects(tmp_path / "bad.csv")


def test_the_scorers_numpy_votes_equal_the_plain_rule():
    import random

    from harness.scoring.votes import votes_from_codes

    rng = random.Random(1)
    qids, models, labels = [f"q{i}" for i in range(30)], ["a", "b", "c"], ["1", "2", "REFUSE", None]
    for _ in range(100):
        rows = [(rng.randrange(30), rng.randrange(3), rng.randrange(4)) for _ in range(rng.randrange(1, 300))]
        plain = collect((qids[qi], models[mi], labels[p], None) for qi, mi, p in rows)
        fast = votes_from_codes(*zip(*rows, strict=True), qids, models, labels)
        assert {k: (v.by_model, v.asked) for k, v in fast.items()} == {k: (v.by_model, v.asked) for k, v in plain.items()}


def test_audit_checks_gold_citations_against_the_kb_before_advising(sample, tmp_path):
    """Measured: gold citing 999 and 2;ghost was not flagged, and one suggestion advised 'then list both: 1;999'."""
    root, kb, gold = sample
    responses = write_jsonl(tmp_path / "responses.jsonl", simulate_panel(kb, gold, ACCURACIES, seed=0))
    rows = list(gold)
    first, second = next(q for q in rows if not q.must_refuse), [q for q in rows if not q.must_refuse][1]
    ghosts = {first.question_id: ["999"], second.question_id: [second.expected_citations[0], "ghost"]}
    edited = [GoldQuestion(q.question_id, q.question, ghosts.get(q.question_id, q.expected_citations), q.must_refuse)
              for q in rows]
    bad_gold = write_gold(tmp_path / "gold.csv", edited)
    code, out = run_grace("annotations", "audit", bad_gold, "--kb", root / "kb", "--run", responses,
                          "--out", tmp_path / "suspects.csv")
    assert code == 2, out
    line_of = {q.question_id: i for i, q in enumerate(edited, 2)}
    assert f"gold.csv:{line_of[first.question_id]}: question '{first.question_id}' cites article(s) 999 not in the KB" in out
    assert f"gold.csv:{line_of[second.question_id]}: question '{second.question_id}' cites article(s) ghost" in out
    assert not (tmp_path / "suspects.csv").exists()
    assert "999;" not in out and ";999" not in out
