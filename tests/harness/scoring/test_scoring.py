"""``grace score`` end to end on hand-written responses: outcomes, metrics, statistics, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.core.errors import GraceError
from harness.run_folder.report import read_report
from harness.run_folder.scores import ScoreLine
from harness.scoring import REFUSAL_SENTENCE, score_responses
from harness.scoring.significance import compact_letters, holm, mcnemar_exact
from harness.stats.bootstrap import bootstrap_cis
from tests.conftest import run_grace, write

ARTICLES = ["5", "17", "18", "50", "uid-kb-5", "uid-kb-50"]
# question_id, expected_citations, must_refuse
GOLD = [
    ("q_correct", "17", False),
    ("q_lenient", "18;5", False),
    ("q_refuse", "", True),
    ("q_refuse_para", "", True),
    ("q_false_refusal", "50", False),
    ("q_invalid", "17", False),
    ("q_unanswerable", "", True),
    ("q_nocite", "17", False),
    ("q_multi", "17", False),
    ("q_wrong", "uid-kb-5", False),
    ("q_json", "18", False),
    ("q_error", "17", False),
    ("q_refuse_cite", "", True),
]
# the model "alpha": question_id -> (response, outcome, extraction rule, strict outcome)
ALPHA = {
    "q_correct": ("Annual leave is 25 days. [ID: 17]", "correct", "inline", "correct"),
    "q_lenient": ("Send receipts within 30 days (ID: 5).", "correct", "lenient", "no_citation"),
    "q_refuse": (REFUSAL_SENTENCE, "correct_refusal", "inline", "correct_refusal"),
    "q_refuse_para": ("The provided articles do not contain information about parking.", "correct_refusal",
                      "lenient", "answered_unanswerable"),
    "q_false_refusal": ("I cannot find any information about pets in the provided articles.", "false_refusal",
                        "lenient", "no_citation"),
    "q_invalid": ("Leave is 25 days. [ID: 999]", "invalid_citation", "inline", "invalid_citation"),
    "q_unanswerable": ("Parking is free for staff. [ID: 18]", "answered_unanswerable", "inline",
                       "answered_unanswerable"),
    "q_nocite": ("Annual leave is 25 days.", "no_citation", "none", "no_citation"),
    "q_multi": ("Leave is 25 days [ID: 17, 18]", "multiple_citations", "lenient", "no_citation"),
    "q_wrong": ("See the policy [ID: uid-kb-50]", "wrong_citation", "inline", "wrong_citation"),
    "q_json": ('```json\n{"answer": "Book through the portal.", "citation": 18}\n```', "correct", "json",
               "no_citation"),
    "q_error": (None, "error", "none", "error"),
    "q_refuse_cite": (f"{REFUSAL_SENTENCE} The closest article is [ID: 17].", "correct_refusal", "inline",
                      "correct_refusal"),
}


@pytest.fixture(autouse=True)
def _offline_tokens(monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")


def make_kb(folder: Path) -> Path:
    lines = [json.dumps({"id": a, "title": f"Article {a}", "text": f"Text of article {a}."}) for a in ARTICLES]
    write(folder / "articles.jsonl", "\n".join(lines) + "\n")
    return folder


def make_gold(path: Path, gold=GOLD) -> Path:
    rows = ["question_id,question,expected_citations,must_refuse"]
    rows += [f"{q},What about {q}?,{e},{str(m).lower()}" for q, e, m in gold]
    return write(path, "\n".join(rows) + "\n")


def response_row(qid: str, model: str, text: str | None, **extra) -> dict:
    row = {"question_id": qid, "model": model, "response": text, "error": None}
    if text is None:
        row["error"] = {"kind": "timeout", "message": "timed out after 3 retries"}
    row.update(extra)
    return row


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def bench(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = make_gold(tmp_path / "gold.csv")
    return tmp_path, kb, gold


def read_scores(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]


def test_every_outcome_and_extraction_form(bench):
    tmp, kb, gold = bench
    rows = [response_row(q, "alpha", text) for q, (text, *_) in ALPHA.items()]
    responses = write_jsonl(tmp / "responses.jsonl", rows)
    report = score_responses(responses, gold, kb, tmp / "out")
    scores = {s["question_id"]: s for s in read_scores(tmp / "out")}
    assert len(scores) == len(ALPHA)
    for qid, (_, outcome, rule, strict_outcome) in ALPHA.items():
        s = scores[qid]
        assert (s["outcome"], s["extraction"], s["strict_outcome"]) == (outcome, rule, strict_outcome), qid
        ScoreLine.model_validate(s)
    assert scores["q_multi"]["cited_ids"] == ["17", "18"]
    assert scores["q_refuse_cite"]["cited_ids"] == ["17"] and scores["q_refuse_cite"]["refused"] is True
    assert scores["q_invalid"]["cited_ids"] == ["999"]

    m = report.models["alpha"]
    expected_counts = {}
    for _, outcome, _, _ in ALPHA.values():
        expected_counts[outcome] = expected_counts.get(outcome, 0) + 1
    assert {k: v for k, v in m.outcomes.items() if v} == expected_counts
    assert m.model == "alpha" and m.n == 13 and m.n_questions == 13 and m.repeats == 1
    hits = expected_counts["correct"] + expected_counts["correct_refusal"]
    assert m.accuracy == round(hits / 13, 6)
    strict_hits = sum(o in ("correct", "correct_refusal") for *_, o in ALPHA.values())
    assert m.strict_accuracy == round(strict_hits / 13, 6)
    assert m.invalid_citation_rate == round(1 / 13, 6)
    assert m.error_count == 1
    assert m.extraction_rules == {"json": 1, "inline": 6, "lenient": 4, "none": 2}  # an error reads as "none"
    # refusal calibration: 4 must_refuse, 3 refused; 8 answerable without errors, 1 refused
    assert m.refusal.model_dump() == {"should_refuse_did": 0.75, "should_answer_did": 0.875, "calibration": 0.8125}
    on_disk = json.loads((tmp / "out" / "report.json").read_text())
    assert on_disk == report.model_dump(mode="json") and "model" not in on_disk["models"]["alpha"]
    assert read_report(tmp / "out" / "report.json") == report  # what is read back is what was written
    assert report.gold.n_questions == 13 and report.gold.n_must_refuse == 4
    assert report.kb.n_articles == len(ARTICLES)
    assert any("failed call" in w for w in report.warnings)


def test_metrics_match_scikit_learn(bench):
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    tmp, kb, gold = bench
    rows = [response_row(q, "alpha", text) for q, (text, *_) in ALPHA.items()]
    responses = write_jsonl(tmp / "responses.jsonl", rows)
    m = score_responses(responses, gold, kb, tmp / "out").models["alpha"]

    # labels rebuilt from scores.jsonl with the rules of the issue, independently of the scorer
    y_true, y_pred = [], []
    for s in read_scores(tmp / "out"):
        if s["must_refuse"]:
            t = "REFUSE"
        else:
            t = next((c for c in s["cited_ids"] if c in s["expected_citations"]), s["expected_citations"][0])
        if s["refused"]:
            p = "REFUSE"
        elif len(s["cited_ids"]) == 1 and s["cited_ids"][0] in ARTICLES:
            p = s["cited_ids"][0]
        else:
            p = "none"
        y_true.append(t)
        y_pred.append(p)
    labels = [a for a in ARTICLES if a in y_true or a in y_pred] + ["REFUSE"]
    assert list(m.per_class) == labels
    p, r, f, sup = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    for i, label in enumerate(labels):
        assert m.per_class[label].model_dump() == pytest.approx(
            {"precision": p[i], "recall": r[i], "f1": f[i], "support": sup[i]}, abs=1e-6)
    for avg in ("macro", "weighted"):
        ap, ar, af, _ = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0, average=avg)
        figures = (getattr(m, f"{avg}_precision"), getattr(m, f"{avg}_recall"), getattr(m, f"{avg}_f1"))
        assert figures == pytest.approx((ap, ar, af), abs=1e-6)
    conf_labels = labels[:-1] + ["REFUSE", "none"]
    assert m.confusion.labels == conf_labels
    assert m.confusion.matrix == confusion_matrix(y_true, y_pred, labels=conf_labels).tolist()


def test_retrieval_decomposition_cost_and_latency(bench):
    tmp, kb, gold = bench
    rows = [
        response_row("q_correct", "alpha", "[ID: 17]", retrieved_ids=["17", "5"], cost_usd=0.002, latency_ms=100,
                     input_tokens=1000, output_tokens=20),
        response_row("q_nocite", "alpha", "[ID: 17]", retrieved_ids=["5", "18"], cost_usd=0.004, latency_ms=300,
                     input_tokens=1000, output_tokens=40),
        response_row("q_multi", "alpha", "[ID: 5]", retrieved_ids=["17", "5"], cost_usd=None, latency_ms=200),
        response_row("q_lenient", "alpha", "[ID: 18]", retrieved_ids=[18, 50]),  # numbers are read as IDs
        response_row("q_refuse", "alpha", REFUSAL_SENTENCE, retrieved_ids=["50"]),
        response_row("q_wrong", "alpha", "[ID: uid-kb-5]"),  # no retrieval info on this row
    ]
    m = score_responses(write_jsonl(tmp / "r.jsonl", rows), gold, kb, tmp / "out").models["alpha"]
    scores = {s["question_id"]: s for s in read_scores(tmp / "out")}
    assert scores["q_correct"]["expected_retrieved"] is True
    assert scores["q_nocite"]["expected_retrieved"] is False
    assert scores["q_refuse"]["expected_retrieved"] is None  # must_refuse: nothing to retrieve
    assert scores["q_wrong"]["expected_retrieved"] is None
    assert scores["q_lenient"]["retrieved_ids"] == ["18", "50"]
    # answerable rows with retrieval: q_correct (hit, retrieved), q_nocite (missed: it cites 17, which it was
    # not shown, so unshown_citation, a miss), q_multi (miss, retrieved), q_lenient (hit, retrieved)
    assert scores["q_nocite"]["outcome"] == "unshown_citation"
    assert m.retrieval.model_dump() == {"k": 2, "recall_at_k": 0.75, "n_retrieved": 3, "n_missed": 1,
                              "accuracy_when_retrieved": round(2 / 3, 6), "accuracy_when_missed": 0.0}
    assert m.cost.model_dump() == {"total_usd": 0.006, "per_1k_questions_usd": 3.0, "input_tokens": 2000,
                                   "output_tokens": 60}
    assert m.latency.model_dump() == {"p50_ms": 200.0, "p95_ms": 290.0, "queued_p50_ms": None, "queued_p95_ms": None}


def test_no_retrieval_or_cost_fields(bench):
    tmp, kb, gold = bench
    rows = [{"question_id": "q_correct", "model": "alpha", "response": "[ID: 17]"}]
    report = score_responses(write_jsonl(tmp / "r.jsonl", rows), gold, kb, tmp / "out")
    m = report.models["alpha"]
    assert m.retrieval is None and m.repeat_stats is None
    assert m.cost.model_dump() == {"total_usd": None, "per_1k_questions_usd": None, "input_tokens": 0,
                                   "output_tokens": 0}
    assert m.latency.model_dump() == {"p50_ms": None, "p95_ms": None, "queued_p50_ms": None, "queued_p95_ms": None}
    assert any("answered 1 of 13" in w for w in report.warnings)


def test_repeats_agreement_and_spread(bench):
    tmp, kb, gold = bench
    # repeat 0 and 1 agree on everything; repeat 2 gets q_nocite right and q_correct wrong
    answers = {
        0: {"q_correct": "[ID: 17]", "q_nocite": "no idea", "q_refuse": REFUSAL_SENTENCE, "q_json": "[ID: 18]"},
        1: {"q_correct": "[ID: 17]", "q_nocite": "no idea", "q_refuse": REFUSAL_SENTENCE, "q_json": "[ID: 18]"},
        2: {"q_correct": "[ID: 5]", "q_nocite": "[ID: 17]", "q_refuse": REFUSAL_SENTENCE, "q_json": "[ID: 18]"},
    }
    rows = [response_row(q, "alpha", t, repeat=r) for r, qs in answers.items() for q, t in qs.items()]
    report = score_responses(write_jsonl(tmp / "r.jsonl", rows), gold, kb, tmp / "out", bootstrap=200)
    m = report.models["alpha"]
    assert m.n == 12 and m.n_questions == 4 and m.repeats == 3
    assert m.accuracy == 0.75
    stats = m.repeat_stats
    assert stats.n_repeats == 3
    assert stats.accuracy_per_repeat == [0.75, 0.75, 0.75]
    assert stats.accuracy_std == 0.0
    assert stats.question_agreement == pytest.approx((2 / 3 + 2 / 3 + 1 + 1) / 4, abs=1e-6)


def test_accuracy_interval_is_wilsons_over_questions(bench):
    """The headline interval is Wilson's score interval over the questions (scipy's, computed apart), strict
    accuracy's too; repeats of a question do not narrow it; --bootstrap 0 means no interval."""
    from scipy.stats import binomtest

    tmp, kb, gold = bench
    rows = [response_row(q, "alpha", text) for q, (text, *_) in ALPHA.items()]
    responses = write_jsonl(tmp / "r.jsonl", rows)
    a = score_responses(responses, gold, kb, tmp / "a", seed=7).models["alpha"]
    n, right = len(ALPHA), sum(o in ("correct", "correct_refusal") for _, o, _, _ in ALPHA.values())
    strict = sum(o in ("correct", "correct_refusal") for *_, o in ALPHA.values())
    for got, hits in ((a.accuracy_ci95, right), (a.strict_accuracy_ci95, strict)):
        truth = binomtest(hits, n).proportion_ci(method="wilson")
        assert got == pytest.approx([truth.low, truth.high], abs=1.1e-6)
    assert (a.ci_low, a.ci_high) == tuple(a.accuracy_ci95)
    thrice = [dict(r, repeat=k) for r in rows for k in range(3)]
    again = score_responses(write_jsonl(tmp / "r3.jsonl", thrice), gold, kb, tmp / "b").models["alpha"]
    assert again.n == 3 * n and again.accuracy_ci95 == a.accuracy_ci95
    none = score_responses(responses, gold, kb, tmp / "c", bootstrap=0).models["alpha"]
    assert none.accuracy_ci95 is None and none.ci_low is None


def test_bootstrap_resamples_questions_and_is_seeded():
    """The bootstrap that means (citation F1, MRR) still use: one value per question, seeded."""
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    [ci] = bootstrap_cis([values], 2000, seed=0)
    assert ci[0] < values.mean() < ci[1] and bootstrap_cis([values], 2000, seed=0) == [ci]
    # at an extreme it collapses to a point: why a share takes Wilson's interval instead
    assert bootstrap_cis([np.ones(5)], 500, seed=1) == [[1.0, 1.0]]


def test_pairwise_mcnemar_holm_and_letters(bench):
    tmp, kb, gold = bench
    answerable = [q for q, e, m in GOLD if not m and q != "q_error"]  # 8 questions, expected first IDs below
    first = {q: e.split(";")[0] for q, e, m in GOLD}
    rows = []
    for q in answerable:
        rows.append(response_row(q, "strong", f"[ID: {first[q]}]"))  # all 8 right
        rows.append(response_row(q, "weak", "I am not sure."))  # all 8 missed
        rows.append(response_row(q, "mid", f"[ID: {first[q]}]" if q in answerable[:5] else "?"))  # 5 right
    report = score_responses(write_jsonl(tmp / "r.jsonl", rows), gold, kb, tmp / "out", bootstrap=100)
    assert report.leaderboard == ["strong", "mid", "weak"]
    pairs = {(p.a, p.b): p for p in report.pairwise}
    sw = pairs[("strong", "weak")]
    assert (sw.n, sw.a_only, sw.b_only) == (8, 8, 0)
    from scipy.stats import binomtest

    assert sw.p_value == pytest.approx(binomtest(8, 8, 0.5).pvalue)
    raw = [pairs[k].p_value for k in [("strong", "mid"), ("strong", "weak"), ("mid", "weak")]]
    adjusted = [pairs[k].p_adjusted for k in [("strong", "mid"), ("strong", "weak"), ("mid", "weak")]]
    assert adjusted == pytest.approx(holm(raw))
    assert sw.significant is True  # p = 2/256, Holm x3 = 0.023
    assert pairs[("strong", "mid")].significant is False
    groups = {m.model: m.significance_group for m in report.ranked()}
    assert groups["strong"] != groups["weak"] and not set(groups["strong"]) & set(groups["weak"])
    assert set(groups["mid"]) & set(groups["strong"])
    assert [m.rank for m in report.ranked()] == [1, 2, 3]


def test_statistics_helpers():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert compact_letters(["a", "b", "c"], {frozenset(("a", "c"))}) == {"a": "a", "b": "ab", "c": "b"}
    assert compact_letters(["a", "b", "c"], set()) == {"a": "a", "b": "a", "c": "a"}
    all_diff = {frozenset(p) for p in [("a", "b"), ("a", "c"), ("b", "c")]}
    assert compact_letters(["a", "b", "c"], all_diff) == {"a": "a", "b": "b", "c": "c"}


def test_later_line_supersedes_an_earlier_one(bench):
    tmp, kb, gold = bench
    rows = [response_row("q_correct", "alpha", None), response_row("q_nocite", "alpha", "[ID: 17]"),
            response_row("q_correct", "alpha", "[ID: 17]")]  # the retry of the failed call
    report = score_responses(write_jsonl(tmp / "r.jsonl", rows), gold, kb, tmp / "out")
    scores = read_scores(tmp / "out")
    assert [(s["question_id"], s["outcome"]) for s in scores] == [("q_nocite", "correct"), ("q_correct", "correct")]
    assert report.models["alpha"].n == 2 and report.models["alpha"].error_count == 0
    assert any("superseded" in w for w in report.warnings)


def test_gold_ids_missing_from_kb_bom_and_numeric_ids(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = make_gold(tmp_path / "gold.csv", [("101", "17", False), ("102", "77", False)])
    rows = [{"question_id": 101, "model": "alpha", "response": "[ID: 17]", "repeat": None},
            {"question_id": "102", "model": "alpha", "response": "[ID: 77]"}]
    responses = tmp_path / "r.jsonl"
    responses.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in rows).encode())
    report = score_responses(responses, gold, kb, tmp_path / "out")
    m = report.models["alpha"]
    assert m.outcomes["correct"] == 1 and m.outcomes["invalid_citation"] == 1
    assert m.per_class["77"].model_dump() == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert any("not KB article IDs (77)" in w for w in report.warnings)
    assert [s["question_id"] for s in read_scores(tmp_path / "out")] == ["101", "102"]


BAD_LINES = [
    ('{"question_id": "q_correct", "model": "alpha", "response": "x"', "not valid JSON"),
    ('["q_correct", "alpha", "x"]', "expected a JSON object"),
    ('{"question_id": "q_correct", "response": "x"}', "missing field 'model'"),
    ('{"question_id": "q_correct", "model": "alpha"}', "missing field 'response'"),
    ('{"question_id": "q_nope", "model": "alpha", "response": "x"}', "unknown question_id 'q_nope'"),
    ('{"question_id": "q_correct", "model": "alpha", "response": null}', "'response' must be"),
    ('{"question_id": "q_correct", "model": "alpha", "response": "x", "repeat": -1}', "'repeat'"),
    ('{"question_id": "q_correct", "model": "alpha", "response": "x", "retrieved_ids": "17"}', "'retrieved_ids'"),
    ('{"question_id": "q_correct", "model": "alpha", "response": "x", "cost_usd": "cheap"}', "'cost_usd'"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_bad_line_names_file_and_line(bench, line, message):
    tmp, kb, gold = bench
    good = json.dumps(response_row("q_correct", "alpha", "[ID: 17]"))
    path = write(tmp / "responses.jsonl", f"{good}\n\n{line}\n{good}\n")  # the blank line 2 still counts
    with pytest.raises(GraceError) as exc:
        score_responses(path, gold, kb, tmp / "out")
    assert f"responses.jsonl:3: {message}" in str(exc.value)
    assert not (tmp / "out" / "scores.jsonl").exists()


def test_empty_file_and_missing_file(bench):
    tmp, kb, gold = bench
    with pytest.raises(GraceError, match="no responses"):
        score_responses(write(tmp / "empty.jsonl", "\n"), gold, kb, tmp / "out")
    with pytest.raises(GraceError, match="not found"):
        score_responses(tmp / "missing.jsonl", gold, kb, tmp / "out")


def test_workers_give_identical_output(bench):
    tmp, kb, gold = bench
    rows = [response_row(q, m, text, repeat=r) for r in range(20) for m in ("alpha", "beta")
            for q, (text, *_) in ALPHA.items()]
    responses = write_jsonl(tmp / "r.jsonl", rows)
    one = score_responses(responses, gold, kb, tmp / "one", workers=1, bootstrap=100)
    two = score_responses(responses, gold, kb, tmp / "two", workers=2, bootstrap=100)
    assert (tmp / "one" / "scores.jsonl").read_bytes() == (tmp / "two" / "scores.jsonl").read_bytes()
    assert one.model_dump(exclude={"created_at", "responses"}) == two.model_dump(exclude={"created_at", "responses"})
    assert one.responses.n == two.responses.n
    # a bad line in the second worker's share is reported with its line number in the whole file
    lines = responses.read_text().splitlines()
    lines[400] = '{"question_id": "q_correct", "model": "alpha"}'
    write(responses, "\n".join(lines) + "\n")
    with pytest.raises(GraceError, match=r"r\.jsonl:401: missing field 'response'"):
        score_responses(responses, gold, kb, tmp / "bad", workers=2)


def test_cli_score_and_bad_line(bench):
    tmp, kb, gold = bench
    rows = [response_row(q, "alpha", text) for q, (text, *_) in ALPHA.items()]
    responses = write_jsonl(tmp / "responses.jsonl", rows)
    code, out = run_grace("score", responses, "--gold", gold, "--kb", kb, "--out", tmp / "out", "--bootstrap", "100")
    assert code == 0, out
    assert "scored 13 responses" in out
    report = json.loads((tmp / "out" / "report.json").read_text())
    assert report["bootstrap_samples"] == 100 and report["leaderboard"] == ["alpha"]
    write(responses, responses.read_text() + "not json\n")
    code, out = run_grace("score", responses, "--gold", gold, "--kb", kb, "--out", tmp / "out2")
    assert code == 2
    assert "responses.jsonl:14: not valid JSON" in out
