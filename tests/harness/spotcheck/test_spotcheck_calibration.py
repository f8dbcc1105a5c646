"""Judge calibration against human labels (checked against scikit-learn), the review CSV, and the judge meta-eval."""

from __future__ import annotations

import csv
import json
import random

import pytest

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec
from harness.providers.scripted import ScriptedProvider
from harness.spotcheck.calibration import agreement_stats, cohen_kappa
from harness.spotcheck.judge_calls import Judge
from harness.spotcheck.judge_prompt import load_judge_template, make_judge
from harness.spotcheck.meta_eval import MODES, load_cases, run_meta_eval
from harness.spotcheck.review import read_labels, write_review_csv
from harness.spotcheck.spotcheck_records import REVIEW_COLUMNS
from tests.conftest import run_grace, write
from tests.harness.spotcheck.test_spotcheck_judge import run  # noqa: F401 - the hand-written run folder fixture


@pytest.mark.parametrize("seed", range(5))
def test_calibration_numbers_match_scikit_learn(seed):
    from sklearn.metrics import cohen_kappa_score, precision_score, recall_score

    rng = random.Random(seed)
    human = [rng.random() < 0.3 for _ in range(60)]
    judge = [h if rng.random() < 0.8 else not h for h in human]
    s = agreement_stats(human, judge)
    assert s["kappa"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-6)
    assert s["precision_unsupported"] == pytest.approx(precision_score(human, judge), abs=1e-6)
    assert s["recall_unsupported"] == pytest.approx(recall_score(human, judge), abs=1e-6)
    c = s["confusion"]
    assert c["tp"] + c["fp"] + c["fn"] + c["tn"] == 60 and s["n"] == 60


def test_degenerate_calibration_is_none_not_a_number():
    assert cohen_kappa([True] * 5, [True] * 5) is None
    s = agreement_stats([False] * 4, [False] * 4)
    assert s["precision_unsupported"] is None and s["recall_unsupported"] is None and s["agreement"] == 1.0


def lexical_spotcheck(run_dir):
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run_dir / "run", "--kb", run_dir / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    return run_dir / "run"


def label(path, verdicts: dict[tuple[str, int], str], reviewer="ana", edit=None):
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for r in rows:
        key = (r["question_id"], int(r["segment_index"]))
        if key in verdicts:
            r.update(supported=verdicts[key], reviewer=reviewer, note="checked")
        if edit and key == edit[0]:
            r["segment_text"] = edit[1]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_review_csv_then_calibrate_marks_the_judge(run):  # noqa: F811
    out = lexical_spotcheck(run)
    review = out / "spotcheck_review.csv"
    rows = list(csv.DictReader(review.open(encoding="utf-8")))
    assert tuple(rows[0]) == REVIEW_COLUMNS and len(rows) == 4
    assert all(r["supported"] == "" and r["note"] == "" for r in rows) and rows[0]["segment_text"]
    # the lexical judge: q1 supported; q2 (99%) unsupported; q3 cited supported, conclusion "In short" unsupported
    label(review, {("q1", 0): "true", ("q2", 0): "false", ("q3", 0): "true", ("q3", 1): "yes"})
    code, text = run_grace("spotcheck", "calibrate", review, out / "spotcheck.json")
    assert code == 0, text
    calib = json.loads((out / "calibration.json").read_text())
    assert calib["n"] == 4 and calib["confusion"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 2}
    assert calib["precision_unsupported"] == 0.5 and calib["recall_unsupported"] == 1.0
    assert calib["kappa"] == pytest.approx(0.5)
    [d] = calib["disagreements"]
    assert (d["question_id"], d["human"], d["judge"], d["reviewer"]) == ("q3", "supported", "unsupported", "ana")
    judge = json.loads((out / "spotcheck.json").read_text())["judge"]
    assert judge["calibrated"] is True and judge["kappa"] == pytest.approx(0.5) and judge["n"] == 4
    # a re-run keeps both the calibration (same judge and template) and the labels already typed
    lexical_spotcheck(run)
    assert json.loads((out / "spotcheck.json").read_text())["judge"]["calibrated"] is True
    kept = {(r["question_id"], r["segment_index"]): r["supported"] for r in csv.DictReader(review.open(encoding="utf-8"))}
    assert kept[("q2", "0")] == "false" and kept[("q3", "1")] == "yes"


def test_stale_and_unknown_labels_are_left_out(run):  # noqa: F811
    out = lexical_spotcheck(run)
    review = out / "spotcheck_review.csv"
    label(review, {("q1", 0): "true", ("q2", 0): "false"}, edit=(("q1", 0), "A different answer text [ID: 1]."))
    with review.open("a", encoding="utf-8") as fh:
        fh.write("m,q9,0,0,1,Not judged,false,,bob\n")
    code, text = run_grace("spotcheck", "calibrate", review, out / "spotcheck.json")
    assert code == 0, text
    calib = json.loads((out / "calibration.json").read_text())
    assert (calib["n"], calib["n_stale"], calib["n_unmatched"]) == (1, 1, 1)


def test_bad_human_labels_name_the_line(tmp_path, run):  # noqa: F811
    out = lexical_spotcheck(run)
    bad = write(tmp_path / "h.csv", "model,question_id,repeat,segment_index,segment_text,supported,note,reviewer\n"
                                    "m,q1,0,0,x,maybe,,\n")
    with pytest.raises(GraceError, match=r"h\.csv:2: supported must be true or false"):
        read_labels(bad)
    code, text = run_grace("spotcheck", "calibrate", write(tmp_path / "e.csv", "model,question_id\n"), out / "spotcheck.json")
    assert code == 2 and "missing column(s) repeat, segment_index, supported" in text
    code, text = run_grace("spotcheck", "calibrate", write(tmp_path / "u.csv", ",".join(REVIEW_COLUMNS) + "\n"),
                           out / "spotcheck.json")
    assert code == 2 and "no labelled rows" in text


def test_review_csv_merge_never_overwrites_labels(tmp_path):
    path = tmp_path / "review.csv"
    rows = [{"model": "m", "question_id": "q1", "repeat": 0, "segment_index": 0, "citation": "1", "segment_text": "A [ID: 1]"},
            {"model": "m", "question_id": "q2", "repeat": 0, "segment_index": 0, "citation": "1", "segment_text": "B [ID: 1]"}]
    write_review_csv(path, rows)
    label(path, {("q1", 0): "false", ("q2", 0): "true"})
    changed = [dict(rows[0]), dict(rows[1], segment_text="B changed [ID: 1]")]
    assert write_review_csv(path, changed[:1] + changed[1:]) == 1
    got = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [(r["question_id"], r["segment_text"], r["supported"]) for r in got] == [
        ("q1", "A [ID: 1]", "false"), ("q2", "B changed [ID: 1]", "")]


# --- meta-eval -------------------------------------------------------------------------------------------------------

def test_built_in_cases_cover_every_failure_mode():
    cases = load_cases()
    assert 30 <= len(cases) <= 60 and len({c.id for c in cases}) == len(cases)
    assert {c.failure_mode for c in cases} == set(MODES)
    for c in cases:
        assert c.expected_supported is (c.failure_mode in ("correct_paraphrase", "exact_restatement", "as_written"))
        assert c.segment and c.article
        assert (c.segment in c.article) is (c.failure_mode == "exact_restatement")
        # a sentence copied with its citation as an answer writes it: read as the spot-check reads, it is the
        # article's own sentence; every other case's segment is its claim already
        assert (c.claim in c.article and c.claim != c.segment) is (c.failure_mode == "as_written")
        assert (c.claim == c.segment) is (c.failure_mode != "as_written")


def test_meta_eval_on_a_scripted_judge_reports_pass_rate_per_mode():
    cases = load_cases()
    # a judge that calls everything supported except number and entity problems, and never explains well
    replies = {c.id: json.dumps({"explanation": "scripted", "supported": c.failure_mode not in
                                 ("number_changed", "entity_swapped")}) for c in cases}
    replies["para-01"] = "no idea"  # an unreadable verdict is a failed case, not a pass
    spec = ModelSpec("scripted", "judge", options={"responses": replies})
    result = run_meta_eval(Judge(spec, ScriptedProvider(spec), load_judge_template()), cases)
    rates = {m: v["pass_rate"] for m, v in result["per_mode"].items()}
    assert rates["number_changed"] == rates["entity_swapped"] == 1.0
    assert rates["negation"] == rates["scope_widened"] == rates["world_knowledge"] == rates["partially_supported"] == 0.0
    assert rates["correct_paraphrase"] == pytest.approx(5 / 6) and rates["exact_restatement"] == 1.0
    assert rates["as_written"] == 1.0
    assert result["passed"] == 12 + 5 + 4 + 6 and result["cases"] == len(cases)
    assert {f["id"] for f in result["failures"]} >= {"para-01", "neg-01"}
    assert result["supported_accepted"] == pytest.approx(15 / 16)


def test_lexical_judge_meta_eval_profile(tmp_path):
    out = tmp_path / "meta.json"
    code, text = run_grace("spotcheck", "meta-eval", "--judge", "baseline:lexical", "--out", out)
    assert code == 0, text
    assert "number_changed" in text and "correct_paraphrase" in text
    result = json.loads(out.read_text())
    rates = {m: v["pass_rate"] for m, v in result["per_mode"].items()}
    # what a word-overlap judge can and cannot see
    assert rates["world_knowledge"] == rates["partially_supported"] == rates["exact_restatement"] == 1.0
    # a sentence copied with its citation, read as written: its marker, "(see ...)" or "Source:" is no word of it
    assert rates["as_written"] == 1.0
    assert rates["number_changed"] >= 0.8
    assert rates["entity_swapped"] <= 0.5 and rates["correct_paraphrase"] <= 0.2


def test_meta_eval_cases_file_errors_name_the_line(tmp_path):
    bad = write(tmp_path / "cases.jsonl", '{"id": "a", "failure_mode": "x", "article": "t", "segment": "s", '
                                          '"expected": "supported"}\n{"id": "b", "expected": "maybe"}\n')
    with pytest.raises(GraceError, match=r"cases\.jsonl:2: a case needs"):
        load_cases(bad)
    spec, _ = make_judge("baseline:lexical")
    assert spec.name == "baseline:lexical"
