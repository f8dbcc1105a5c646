"""--mode claims: atomic claims with supported / partial / unsupported verdicts, through the real engine and SDK.

The fake judge splits at " and " and checks each claim against the source the way a careful reader would for these
hand-made cases: a claim naming a number the source lacks is unsupported, "at most" where the source has no limit
is partial. The run folder is hand-written, as in test_spotcheck_judge.
"""

from __future__ import annotations

import csv
import json
import re

import pytest

from harness.spotcheck.claims import Claim, parse_claims, parse_verdicts
from harness.spotcheck.segmentation import segment_answer
from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import run_grace, write

ARTICLES = [
    {"id": "1", "title": "Leave > PTO", "text": "Lisbon staff get 25 working days of paid time off per year. "
                                               "Requests need your manager's approval."},
    {"id": "2", "title": "Pay > Bonus", "text": "The annual bonus target is 10% of base salary for levels L1 to L4."},
    {"id": "3", "title": "Travel > Trains", "text": "Book trains in the travel portal."},
]
ANSWERS = {  # question_id -> (answer, outcome, expected, retrieved)
    # one segment, one supported and one invented fact: one verdict in segments mode, two claims here
    "q1": ("Lisbon staff get 25 days of paid time off and they get 3 extra days at Christmas [ID: 1].", "correct",
           ["1"], ["1", "2"]),
    "q2": ("The bonus target is 10% of base salary [ID: 2].", "correct", ["2"], ["2", "1"]),
    "q3": ("Requests need your manager's approval and take at most 2 days to approve [ID: 1].", "correct",
           ["1"], ["1", "3"]),
    "q4": ("Book trains in the travel portal [ID: 1].", "wrong_citation", ["3"], ["1", "3"]),
    "q5": ("Trains are booked by phone.", "no_citation", ["3"], ["3"]),
    "r1": ("I don't have enough information to answer this question.", "correct_refusal", [], ["1"]),
}


def score_row(qid, outcome, cited, expected, retrieved):
    refused = outcome == "correct_refusal"
    return {"schema_version": 2, "question_id": qid, "model": "m", "repeat": 0, "cited_ids": cited, "refused": refused,
            "outcome": outcome, "extraction": "inline", "strict_cited_ids": cited, "strict_refused": refused,
            "strict_outcome": outcome, "must_refuse": refused, "expected_citations": expected,
            "retrieved_ids": retrieved, "expected_retrieved": bool(set(expected) & set(retrieved)), "cost_usd": None,
            "latency_ms": None, "input_tokens": None, "output_tokens": None}


@pytest.fixture()
def run(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    responses, scores = [], []
    for qid, (text, outcome, expected, retrieved) in ANSWERS.items():
        cited = re.findall(r"\[ID: (\w+)\]", text)
        responses.append({"question_id": qid, "model": "m", "repeat": 0, "response": text, "error": None})
        scores.append(score_row(qid, outcome, cited, expected, retrieved))
    write(tmp_path / "run" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in responses))
    write(tmp_path / "run" / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in scores))
    return tmp_path


def judge(body):
    text = prompt_text(body)
    if "<answer>" in text:  # extraction: each segment cut at " and "
        segs = re.findall(r"^\[(\d+)\] (.*?)  \(cites", text, re.M)
        return json.dumps({"claims": [{"segment": int(n), "claim": part.strip().rstrip(".")}
                                      for n, seg in segs for part in seg.split(" and ")
                                      if "enough information" not in seg]})  # a refusal makes no claim
    source = re.search(r"<source>\n(.*?)\n</source>", text, re.S).group(1)
    claims = re.findall(r"^\[(\d+)\] (.*)$", text.split("<claims>")[1], re.M)
    out = []
    for n, claim in claims:
        numbers = set(re.findall(r"\d+", claim)) - set(re.findall(r"\d+", source))
        verdict = "partial" if "at most" in claim else "unsupported" if numbers else "supported"
        if not numbers and "portal" in claim and "portal" not in source:
            verdict = "unsupported"
        if "phone" in claim:
            verdict = "unsupported"
        out.append({"claim": int(n), "explanation": "checked", "evidence": source.split(". ")[0] + ".",
                    "verdict": verdict})
    return json.dumps({"verdicts": out})


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=judge) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def spot(root, *extra):
    code, out = run_grace("spotcheck", "run", root / "run", "--kb", root / "kb", "--judge", "openai:judge-mini",
                          "--max-attempts", "1", "--bootstrap", "200", *extra)
    assert code == 0, out
    return json.loads((root / "run" / "spotcheck.json").read_text()), out


def claim_rows(root):
    return [json.loads(x) for x in (root / "run" / "spotcheck" / "claims.jsonl").read_text().splitlines()]


def test_a_segment_mixing_a_fact_and_an_invention_gets_two_verdicts(run, srv):
    spotfile, out = spot(run)
    assert spotfile["mode"] == "claims" and spotfile["scope"] == "hits"
    rows = {(r["question_id"], r["claim_index"]): r for r in claim_rows(run)}
    assert rows[("q1", 0)]["verdict"] == "supported" and rows[("q1", 1)]["verdict"] == "unsupported"
    assert rows[("q1", 1)]["claim"] == "they get 3 extra days at Christmas" and rows[("q1", 1)]["citations"] == ["1"]
    assert rows[("q1", 0)]["evidence"] == "Lisbon staff get 25 working days of paid time off per year."
    assert rows[("q3", 1)]["verdict"] == "partial"
    m = spotfile["models"]["m"]
    # hits: q1 (2 claims, 1 unsupported), q2 (1 supported), q3 (1 supported, 1 partial): 3 of 5 claims supported
    assert (m["n"], m["n_claims"]) == (3, 5)
    assert m["faithfulness"] == pytest.approx(3 / 5) and m["partial_rate"] == pytest.approx(1 / 5)
    assert m["hallucination_rate"] == pytest.approx(1 / 3)  # an answer with >= 1 unsupported claim; partial is not
    assert m["coverage"] == 1.0 and m["coverage_n"] == 3
    assert "too few for an interval" in m["display"]["faithfulness"]  # 3 answers: no CI
    # two calls per answer: extract, then verify the claims under its one citation
    assert spotfile["judge_calls"]["calls"] == 6 and len(srv.requests) == 6
    kinds = [("<answer>" in prompt_text(r.body)) for r in srv.requests]
    assert kinds.count(True) == 3
    assert all(r.body["temperature"] == 0 for r in srv.requests)
    # the human labels of claims: one row per claim, in their own CSV
    review = list(csv.DictReader((run / "run" / "spotcheck_claims_review.csv").open()))
    assert len(review) == 5 and review[1]["segment_text"] == "they get 3 extra days at Christmas"
    assert "Faithfulness" in out and "Coverage" in out
    # asking again costs nothing: every call is in the cache
    srv.clear()
    again, _ = spot(run)
    assert srv.requests == [] and again["judge_calls"]["cached"] == 6
    assert again["models"]["m"]["faithfulness"] == m["faithfulness"]


def test_scopes_answered_and_all(run, srv):
    answered, out = spot(run, "--scope", "answered")
    m = answered["models"]["m"]
    # q4 cites the wrong article (its claim is not in article 1), q5 cites nothing (checked against what it was shown)
    assert m["hits"] == 5 and m["n"] == 5 and m["hallucination_risk"] is None
    rows = {(r["question_id"], r["claim_index"]): r for r in claim_rows(run)}
    assert rows[("q4", 0)]["verdict"] == "unsupported" and rows[("q4", 0)]["checked_against"] == ["1"]
    assert rows[("q5", 0)]["checked_against"] == ["3"] and rows[("q5", 0)]["verdict"] == "unsupported"
    assert m["coverage"] == pytest.approx((1 + 1 + 1 + 0 + 0) / 5)  # q4 and q5 did not cite the article holding it
    everything, _ = spot(run, "--scope", "all")
    assert everything["models"]["m"]["n"] == 6  # the refusal too: it makes no claim
    assert not any(r["question_id"] == "r1" and r.get("kind") == "claim" for r in claim_rows(run))


def test_unreadable_claims_are_asked_again_strictly_and_never_cached(run, srv):
    def once_garbled(body):
        if "<answer>" in prompt_text(body) and "Reply with only one JSON object" not in prompt_text(body):
            return "Sure, here are the claims: the first one, and another."
        return judge(body)

    srv.responder = once_garbled
    spotfile, _ = spot(run)
    assert spotfile["models"]["m"]["n"] == 3 and spotfile["models"]["m"]["n_extraction_failed"] == 0
    strict = [r for r in srv.requests if "Reply with only one JSON object" in prompt_text(r.body)]
    assert len(strict) == 3
    srv.clear()
    spot(run)
    # the garbled replies were not cached: asked again (and answered again from the cache once readable)
    assert len(srv.requests) == 3


def test_the_offline_judge_does_claims_too(run):
    code, out = run_grace("spotcheck", "run", run / "run", "--kb", run / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    rows = {(r["question_id"], r["claim_index"]): r for r in claim_rows(run)}
    # it cuts at sentences, ";" and ", and": q1's one clause holds "3" and "Christmas", not in the source
    assert rows[("q1", 0)]["verdict"] == "unsupported" and ("q1", 1) not in rows
    assert rows[("q2", 0)]["verdict"] == "supported"
    assert rows[("q2", 0)]["evidence"] == "The annual bonus target is 10% of base salary for levels L1 to L4."
    spotfile = json.loads((run / "run" / "spotcheck.json").read_text())
    assert spotfile["judge"]["kind"] == "lexical" and spotfile["models"]["m"]["n"] == 3


def test_calibration_of_claims_gives_kappa_per_class(run, srv):
    spot(run)
    path = run / "run" / "spotcheck_claims_review.csv"
    rows = list(csv.DictReader(path.open()))
    human = {"Lisbon staff get 25 days of paid time off": "true", "they get 3 extra days at Christmas": "false",
             "The bonus target is 10% of base salary": "true", "Requests need your manager's approval": "partial",
             "take at most 2 days to approve": "partial"}
    for r in rows:
        r["supported"] = human[r["segment_text"]]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    code, out = run_grace("spotcheck", "calibrate", path, run / "run" / "spotcheck.json")
    assert code == 0, out
    calib = json.loads((run / "run" / "calibration.json").read_text())
    assert calib["mode"] == "claims" and calib["n"] == 5
    assert calib["confusion_classes"]["partial"]["supported"] == 1 and calib["confusion_classes"]["partial"]["partial"] == 1
    assert calib["kappa_per_class"]["unsupported"]["kappa"] == 1.0  # the one unsupported claim, agreed
    assert calib["agreement"] == pytest.approx(4 / 5)
    assert calib["kappa_multiclass"] is not None and 0 < calib["kappa_multiclass"] < 1
    assert "per class" in out
    spotfile = json.loads((run / "run" / "spotcheck.json").read_text())
    assert spotfile["judge"]["calibrated"] and spotfile["judge"]["kappa_per_class"]["unsupported"] == 1.0


def test_reading_claims_and_verdicts():
    segs = segment_answer("Leave is 25 days [ID: 1]. Bonus is 10% [ID: 2].", {"1", "2"})
    claims = parse_claims('```json\n{"claims": [{"segment": 2, "claim": "Bonus is 10%"}, '
                          '{"segment": 9, "claim": "stray"}, "Leave is 25 days"]}\n```', segs)
    assert claims == [Claim(0, 1, "Bonus is 10%", ("2",)), Claim(1, -1, "stray", ()), Claim(2, -1, "Leave is 25 days", ())]
    assert parse_claims("no json here", segs) is None and parse_claims('{"claims": []}', segs) == []
    got = parse_verdicts('{"verdicts": [{"claim": 2, "verdict": "Partially supported"}, '
                         '{"claim": 1, "verdict": "supported", "evidence": "x"}]}', 2)
    assert [v.verdict for v in got] == ["supported", "partial"] and got[0].evidence == "x"
    assert parse_verdicts('{"verdicts": [{"claim": 1, "verdict": "maybe"}]}', 1) is None
    assert parse_verdicts('{"verdicts": [{"claim": 1, "verdict": "supported"}]}', 2) is None  # one short


def test_meta_eval_in_claims_mode_reports_per_failure_mode(tmp_path):
    out = tmp_path / "meta.json"
    code, text = run_grace("spotcheck", "meta-eval", "--judge", "baseline:lexical", "--out", out)
    assert code == 0, text
    result = json.loads(out.read_text())
    assert result["mode"] == "claims" and result["cases"] >= 46
    assert result["per_mode"]["world_knowledge"]["pass_rate"] == 1.0
    assert result["per_mode"]["correct_paraphrase"]["pass_rate"] == 0.0  # the word-overlap judge fails paraphrases


def test_dry_run_counts_the_calls_and_makes_none(run, srv, monkeypatch):
    args = ["spotcheck", "run", run / "run", "--kb", run / "kb", "--judge", "openai:judge-mini", "--dry-run"]
    monkeypatch.delenv("OPENAI_API_KEY")  # a dry run needs no key
    code, out = run_grace(*args)
    assert code == 0, out
    assert srv.requests == [] and not (run / "run" / "spotcheck.json").exists()
    rows = [line for line in out.splitlines() if "claims:" in line]
    assert re.search(r"│\s*3\s*│\s*0\s*│", rows[0]) and "~3" in rows[1], out  # 3 extractions; ~3 verifications
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    spot(run)
    code, out = run_grace(*args)
    rows = [line for line in out.splitlines() if "claims:" in line]
    assert re.search(r"│\s*0\s*│\s*3\s*│", rows[0]), out  # all cached now
