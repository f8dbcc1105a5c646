"""GroUSE-style answer quality: the grading call, its figures in spotcheck.json and the report, and the meta-eval."""

from __future__ import annotations

import json
import re

import pytest

from harness.spotcheck.quality import MODES, load_quality_cases, meets, parse_grades
from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import run_grace, write
from tests.harness.spotcheck.test_spotcheck_claims import ANSWERS, ARTICLES, judge, score_row

QUESTIONS = {"q1": "How much paid time off do Lisbon staff get?", "q2": "What is the bonus target?",
             "q3": "Who approves leave requests?", "q4": "Where do I book trains?", "q5": "How do I book trains?",
             "r1": "Where is the gym?"}


def grader(body):
    """Claims steps as in test_spotcheck_claims; the quality call graded from what the prompt shows."""
    text = prompt_text(body)
    if "<gold>" not in text:
        return judge(body)
    answer = re.search(r"<answer>\n(.*?)\n</answer>", text, re.S).group(1)
    no_gold = "(none: no article holds the answer)" in text
    refuses = "enough information" in answer
    return json.dumps({"answer_refuses": refuses, "relevancy_justification": "", "relevancy": None if refuses else 5,
                       "completeness_justification": "", "completeness": None if no_gold else (1 if refuses else 4),
                       "faithfulness_justification": "", "faithfulness": None if refuses else (2 if "3 extra" in answer else 5),
                       "usefulness_justification": "", "usefulness": None})


@pytest.fixture()
def run(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    rows, scores = [], []
    for qid, (text, outcome, expected, retrieved) in ANSWERS.items():
        cited = re.findall(r"\[ID: (\w+)\]", text)
        rows.append({"question_id": qid, "model": "m", "repeat": 0, "response": text, "error": None})
        scores.append(score_row(qid, outcome, cited, expected, retrieved))
    write(tmp_path / "run" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write(tmp_path / "run" / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in scores))
    write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n" + "".join(
        f'{q},"{t}",{";".join(ANSWERS[q][2])},{str(not ANSWERS[q][2]).lower()}\n' for q, t in QUESTIONS.items()))
    return tmp_path


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=grader) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def test_quality_grades_each_checked_answer_against_its_gold_article(run, srv):
    code, out = run_grace("spotcheck", "run", run / "run", "--kb", run / "kb", "--judge", "openai:judge-mini",
                          "--scope", "all", "--quality", "--gold", run / "gold.csv", "--bootstrap", "100")
    assert code == 0, out
    graded = [r for r in srv.requests if "<gold>" in prompt_text(r.body)]
    assert len(graded) == 6  # one call per checked answer, on top of the claims calls
    q4 = next(prompt_text(r.body) for r in graded if "Where do I book trains?" in prompt_text(r.body))
    # the judge sees the question, the gold article (3), the articles shown (1 and 3) and the answer
    gold = q4.split("<gold>")[1].split("</gold>")[0]
    shown = q4.split("<shown>")[1].split("</shown>")[0]
    assert "[ID: 3]" in gold and "[ID: 1]" not in gold and "[ID: 1]" in shown and "[ID: 3]" in shown
    assert "Book trains in the travel portal [ID: 1]." in q4.split("<answer>")[1]
    spot = json.loads((run / "run" / "spotcheck.json").read_text())
    g = spot["models"]["m"]["quality"]
    assert g["n"] == 6 and g["n_refusals"] == 1
    assert g["relevancy"] == 5 and g["relevancy_n"] == 5  # the refusal: relevancy does not apply
    assert g["completeness_n"] == 5  # r1 has no gold article
    assert g["faithfulness"] == pytest.approx((2 + 5 * 4) / 5)
    assert spot["quality"]["path"] == "spotcheck/quality.jsonl"
    lines = (run / "run" / "spotcheck" / "quality.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(x)["readable"] for x in lines)
    assert "Answer quality, GroUSE-style" in out


def test_quality_in_the_report(tmp_path):
    from tests.conftest import small_bench

    root = small_bench(tmp_path, 8, ["where is the gym"])
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--model", "baseline:top1",
                          "--out", root / "run")
    assert code == 0, out
    code, out = run_grace("spotcheck", "run", root / "run", "--judge", "baseline:lexical", "--all", "--quality")
    assert code == 0, out
    report = json.loads((root / "run" / "report.json").read_text())
    block = report["spotcheck"]
    assert block["mode"] == "claims" and block["scope"] == "hits"
    m = block["models"]["baseline:top1"]
    assert m["quality"]["n"] == m["n"] and m["faithfulness"] is not None and m["n_claims"] >= m["n"]
    html = (root / "run" / "report.html").read_text()
    assert "Answer quality (GroUSE-style)" in html and "Faithfulness" in html and "Coverage" in html


def test_reading_grades_and_conditions():
    g = parse_grades('Sure: {"answer_refuses": false, "relevancy": "4", "completeness": null, "faithfulness": 5,'
                     ' "usefulness": "no"}')
    assert (g.relevancy, g.completeness, g.faithfulness, g.usefulness, g.refuses) == (4, None, 5, False, False)
    assert parse_grades('{"relevancy": 7, "completeness": 1, "faithfulness": 1, "usefulness": null}') is None
    assert parse_grades('{"relevancy": 3}') is None
    assert meets(4, "<5") and not meets(5, "<5") and meets(None, "null") and meets(2, "not null")
    assert meets(True, "yes") and not meets(None, "no") and not meets(None, ">=4")


def test_the_quality_cases_cover_grouses_seven_failure_modes():
    cases = load_quality_cases()
    assert {c.failure_mode for c in cases} == set(MODES) and len(MODES) == 7
    assert all(sum(c.failure_mode == m for c in cases) >= 3 for m in MODES)
    acceptance = [c for c in cases if c.failure_mode == "positive_acceptance"]
    assert any(c.expect.get("relevancy") == "null" and c.gold for c in acceptance)  # a refusal with a gold article
    rejection = [c for c in cases if c.failure_mode == "negative_rejection"]
    assert all(not c.gold and c.expect.get("completeness") == "null" for c in rejection)


def test_meta_eval_reports_a_pass_rate_per_grouse_mode(tmp_path, monkeypatch):
    """A judge that grades every answer 5 and never says null fails exactly the cases that need a low grade or a null."""
    def always_five(body):
        text = prompt_text(body)
        if "<gold>" in text:
            return json.dumps({"answer_refuses": False, "relevancy": 5, "completeness": 5, "faithfulness": 5,
                               "usefulness": None})
        return json.dumps({"verdicts": [{"claim": 1, "explanation": "", "evidence": "", "verdict": "supported"}]})

    with FakeAPIServer(responder=always_five) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        out = tmp_path / "meta.json"
        code, text = run_grace("spotcheck", "meta-eval", "--judge", "openai:judge-mini", "--out", out)
        assert code == 0, text
    q = json.loads(out.read_text())["quality"]
    assert q["cases"] == 21 and set(q["per_mode"]) == set(MODES)
    cases = {c.id: c for c in load_quality_cases()}
    expected = {m: sum(all(meets({"relevancy": 5, "completeness": 5, "faithfulness": 5, "usefulness": None}[k], cond)
                           for k, cond in c.expect.items()) for c in cases.values() if c.failure_mode == m)
                for m in MODES}
    assert {m: v["passed"] for m, v in q["per_mode"].items()} == expected
    assert q["per_mode"]["negative_rejection"]["passed"] == 0  # every rejection case needs a null completeness
    assert "GroUSE failure mode" in text


def test_the_usefulness_share_gets_wilsons_interval_the_grades_a_bootstrap():
    """Issue 47: usefulness is yes or no, a share: 12 of 12 useful refusals is Wilson's [75.8%, 100%] (scipy's,
    computed apart), never [100%, 100%]; a 1-5 grade, a mean, keeps its bootstrap."""
    from scipy.stats import binomtest

    from harness.spotcheck.quality import quality_figures

    rows = [{"readable": True, "answer_refuses": True, "relevancy": 4, "completeness": None, "faithfulness": None,
             "usefulness": True} for _ in range(12)]
    q = quality_figures(rows, bootstrap=200)
    truth = binomtest(12, 12).proportion_ci(method="wilson")
    assert q["usefulness"] == 1.0 and q["usefulness_ci95"] == pytest.approx([truth.low, 1.0], abs=1.1e-6)
    assert q["relevancy"] == 4.0 and q["relevancy_ci95"] == [4.0, 4.0]
