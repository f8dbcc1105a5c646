"""``grace spotcheck run`` on a real small run: ``grace kb build``, ``grace run --model baseline:top1``, then spot-check."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import run_grace, small_bench


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    root = small_bench(tmp_path_factory.mktemp("spot"), 12, ["what is the capital of france"])
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--model", "baseline:top1",
                          "--out", root / "run")
    assert code == 0, out
    return root


@pytest.fixture()
def bench(real_run, tmp_path):
    """A private copy, so each test writes its own spot-check files."""
    shutil.copytree(real_run / "run", tmp_path / "run")
    return real_run, tmp_path / "run"


def test_lexical_spotcheck_of_baseline_hits_lands_in_the_report(bench):
    root, run = bench
    code, out = run_grace("spotcheck", "run", run, "--kb", root / "kb", "--judge", "baseline:lexical", "--sample", "20")
    assert code == 0, out
    assert "judge not calibrated" in out
    spot = json.loads((run / "spotcheck.json").read_text())
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    hits = sum(s["outcome"] == "correct" for s in scores)
    assert hits >= 8
    m = spot["models"]["baseline:top1"]
    assert m["hits"] == hits and m["n"] == min(20, hits)
    # top1 copies a sentence of the article it cites: the word-overlap judge supports (nearly) all of it
    assert m["groundedness"] >= 0.9 and m["hallucination_rate"] <= 0.1
    report = json.loads((run / "report.json").read_text())
    acc = report["models"]["baseline:top1"]["accuracy"]
    assert m["accuracy"] == pytest.approx(acc)
    assert m["hallucination_risk"] == pytest.approx(1 - acc * (1 - m["hallucination_rate"]), abs=1e-6)
    lo, hi = m["hallucination_risk_ci95"]
    assert lo <= m["hallucination_risk"] <= hi
    block = report["spotcheck"]
    assert block["judge"]["name"] == "baseline:lexical" and block["judge"]["calibrated"] is False
    assert block["judge"]["kind"] == "lexical" and "lower quality" in block["judge"]["label"]
    assert block["models"]["baseline:top1"]["groundedness_ci95"] and block["path"] == "spotcheck.json"
    assert "word-overlap" in block["notes"]
    html = (run / "report.html").read_text()
    assert "baseline:lexical" in html and "judge not calibrated" in html
    # the default is claims: one row per claim, and the human labels of claims in their own CSV
    assert spot["mode"] == "claims" and spot["scope"] == "hits" and m["faithfulness"] == m["groundedness"]
    assert m["n_claims"] >= m["n"] and spot["review_csv"] == "spotcheck_claims_review.csv"
    assert (run / "spotcheck_claims_review.csv").exists() and (run / "spotcheck" / "claims.jsonl").exists()
    assert not (run / "spotcheck_review.csv").exists()
    assert spot["schema_version"] == 1 and spot["sample"]["per_model"] == 20


def test_a_small_sample_reports_no_interval_in_the_report_either(bench):
    root, run = bench
    code, out = run_grace("spotcheck", "run", run, "--kb", root / "kb", "--judge", "baseline:lexical", "--sample", "3")
    assert code == 0, out
    block = json.loads((run / "report.json").read_text())["spotcheck"]
    m = block["models"]["baseline:top1"]
    assert m["n"] == 3 and m["groundedness_ci95"] is None and m["hallucination_risk_ci95"] is None
    assert m["display"]["groundedness"].endswith("(n=3, too few for an interval)")
    assert block["min_answers_for_ci"] == 10 and "No interval is given from fewer than 10" in block["notes"]
    html = (run / "report.html").read_text()
    assert "too few for an interval" in html and "(n=3" in html


def test_scores_folder_reads_answers_from_the_path_report_json_records(bench, tmp_path):
    root, run = bench
    scores_dir = tmp_path / "scores-only"
    scores_dir.mkdir()
    for name in ("scores.jsonl", "report.json"):
        shutil.copy(run / name, scores_dir / name)
    code, out = run_grace("spotcheck", "run", scores_dir / "scores.jsonl", "--judge", "baseline:lexical", "--all")
    assert code == 0, out  # the KB too comes from report.json
    spot = json.loads((scores_dir / "spotcheck.json").read_text())
    assert spot["run"]["responses"] == str(root / "run" / "responses.jsonl")  # the run that was scored
    assert spot["sample"]["all"] is True


@pytest.mark.parametrize("args, message", [
    (["--sample", "5", "--all"], "not both"),
    (["--judge", "baseline:top1"], "not a judge"),
    (["--judge", "openai:gpt-4o-mini"], "OPENAI_API_KEY"),
    (["--repeats", "0"], "must be 1 or more"),
    (["--model", "nobody"], "no responses from nobody"),
])
def test_user_errors_exit_2_with_a_clear_message(bench, args, message):
    root, run = bench
    judge = [] if "--judge" in args else ["--judge", "baseline:lexical"]
    code, out = run_grace("spotcheck", "run", run, "--kb", root / "kb", *judge, *args)
    assert code == 2 and message in out, out


def test_missing_scores_or_answer_text_is_an_error(bench, tmp_path):
    root, run = bench
    code, out = run_grace("spotcheck", "run", tmp_path, "--kb", root / "kb", "--judge", "baseline:lexical")
    assert code == 2 and "no scores.jsonl" in out
    (run / "responses.jsonl").write_text("")
    code, out = run_grace("spotcheck", "run", run, "--kb", root / "kb", "--judge", "baseline:lexical")
    assert code == 2 and "have no answer text" in out


def test_spotcheck_group_help():
    code, out = run_grace("spotcheck", "--help")
    assert code == 0 and all(c in out for c in ("run", "calibrate", "meta-eval"))
