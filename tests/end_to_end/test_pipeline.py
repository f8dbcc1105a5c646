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


def test_ten_labels_from_the_annotation_server_make_a_gold_set_eval_and_score_accept(tmp_path):
    """Issue 5's acceptance on the sample benchmark, through the app's HTTP API (the browser tests drive the page)."""
    import csv
    import threading
    import urllib.request

    from annotations.server import AnnotationApp
    from annotations.state import AnnotationSession
    from harness.web import make_server
    from kb_builder.loader import load_kb

    kb_dir = tmp_path / "kb"
    assert run_grace("kb", "build", SAMPLE / "handbook", "--out", kb_dir)[0] == 0
    truth = {q.question_id: q for q in read_gold(SAMPLE / "gold.csv")}
    questions = write(tmp_path / "questions.csv", "question_id,question\n" + "".join(
        f'{q.question_id},"{q.question}"\n' for q in list(truth.values())[:25]))
    kb = load_kb(kb_dir)
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=questions, annotator="new-user")
    app = AnnotationApp(session, kb.retriever())
    server = make_server(app, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for qid in list(truth)[:10]:
            q = truth[qid]
            body = {"question_id": qid, "status": "labelled", "must_refuse": q.must_refuse,
                    "expected_citations": [] if q.must_refuse else q.expected_citations[:1]}
            req = urllib.request.Request(f"{base}/api/label", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req) as resp:
                assert resp.status == 200
    finally:
        server.shutdown()
        session.close()
    with (tmp_path / "gold.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sum(r["status"] == "labelled" for r in rows) == 10 and {r["annotator"] for r in rows if r["status"] == "labelled"} == {"new-user"}
    gold = read_gold(tmp_path / "gold.csv")
    assert len(gold) == 10  # the 15 questions not labelled yet are not gold
    code, out = run_grace("kb", "eval", kb_dir, "--gold", tmp_path / "gold.csv")
    assert code == 0 and "recall@1" in out, out
    code, out = run_grace("run", "--kb", kb_dir, "--gold", tmp_path / "gold.csv", "--model", "baseline:top1",
                          "--out", tmp_path / "run")
    assert code == 0, out
    assert json.loads((tmp_path / "run" / "report.json").read_text())["models"]["baseline:top1"]["n"] == 10
    code, out = run_grace("annotations", "validate", tmp_path / "gold.csv", "--kb", kb_dir)
    assert code == 0 and "OK: no errors" in out and "15 unlabelled" in out, out
