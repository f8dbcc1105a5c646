"""The offline pipeline end to end on the bundled sample benchmark, as the demo runs it."""

from __future__ import annotations

import json

from kb_builder.gold import read_gold
from tests.conftest import SAMPLE, run_grace, write


def test_sample_pipeline_run_score_spotcheck_rescore(tmp_path):
    kb, run = tmp_path / "kb", tmp_path / "run"
    assert run_grace("kb", "build", SAMPLE / "handbook", "--out", kb)[0] == 0
    code, out = run_grace("run", "--kb", kb, "--gold", SAMPLE / "gold.csv", "--model", "baseline:top1",
                          "--model", "baseline:threshold", "--out", run)
    assert code == 0, out
    report = json.loads((run / "report.json").read_text())
    top1 = report["models"]["baseline:top1"]
    assert top1["n"] == 90 and 0.3 < top1["accuracy"] < 0.8
    assert top1["refusal"]["should_refuse_did"] == 0.0  # top1 never refuses
    assert report["models"]["baseline:threshold"]["refusal"]["should_refuse_did"] > 0
    assert "report.html" in out and (run / "report.html").exists() and (run / "leaderboard.md").exists()
    code, out = run_grace("spotcheck", "run", run, "--kb", kb, "--judge", "baseline:lexical", "--sample", "10")
    assert code == 0, out
    spot = json.loads((run / "report.json").read_text())["spotcheck"]
    assert spot["judge"]["calibrated"] is False and set(spot["models"]) == {"baseline:top1", "baseline:threshold"}
    # re-scoring the same run folder keeps the spot-check, marked as earlier
    code, out = run_grace("score", run / "responses.jsonl", "--gold", SAMPLE / "gold.csv", "--kb", kb, "--out", run)
    assert code == 0, out
    again = json.loads((run / "report.json").read_text())["spotcheck"]
    assert again["models"] == spot["models"] and "earlier scoring" in again["notes"]
    html = (run / "report.html").read_text()
    assert "judge not calibrated" in html


def test_gold_rows_still_being_labelled_are_not_gold(tmp_path):
    gold = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse,status\n"
                 "q1,a,1,false,labelled\nq2,b,,false,unlabelled\nq3,c,,false,skipped\nq4,d,,true,\n")
    assert [q.question_id for q in read_gold(gold)] == ["q1", "q4"]
