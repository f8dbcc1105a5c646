"""The LLM judge end to end: the real openai SDK against the local fake API server, the real engine and cache.

The run folder is hand-written (scores.jsonl per docs/report-schema.md, responses.jsonl per the runner's
contract), so these tests do not depend on the scorer.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from harness.providers.base import ModelSpec
from harness.providers.openai_chat import OpenAIChatProvider
from harness.spotcheck.judge import load_judge_template
from harness.spotcheck.judging import Judge, JudgeSettings
from harness.spotcheck.meta_eval import load_cases, run_meta_eval
from harness.testing import FakeAPIServer, Reply, prompt_text
from tests.conftest import run_grace, write

ARTICLES = [
    {"id": "1", "title": "Leave > PTO", "text": "Lisbon staff get 25 working days of paid time off per year."},
    {"id": "2", "title": "Pay > Bonus", "text": "The annual bonus target is 10% of base salary for levels L1 to L4."},
]
ANSWERS = {  # question_id -> (answer text, outcome)
    "q1": ("Lisbon staff get 25 days of paid time off [ID: 1].", "correct"),
    "q2": ("The bonus target is 99% of base salary [ID: 2].", "correct"),
    "q3": ("Lisbon staff get 25 days [ID: 1].\n\nIn short, 25 days.", "correct"),
    "q4": ("The bonus target is 10% [ID: 1].", "wrong_citation"),
    "r1": ("I don't have enough information to answer this question.", "correct_refusal"),
}


def score_row(qid: str, outcome: str, cited: list[str]) -> dict:
    refused = outcome == "correct_refusal"
    return {"schema_version": 1, "question_id": qid, "model": "m", "repeat": 0, "cited_ids": cited, "refused": refused,
            "outcome": outcome, "extraction": "inline", "strict_cited_ids": cited, "strict_refused": refused,
            "strict_outcome": outcome, "must_refuse": refused, "expected_citations": [] if refused else cited,
            "retrieved_ids": ["1", "2"], "expected_retrieved": None if refused else True, "cost_usd": None,
            "latency_ms": None, "input_tokens": None, "output_tokens": None}


@pytest.fixture()
def run(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    responses, scores = [], []
    for qid, (text, outcome) in ANSWERS.items():
        cited = re.findall(r"\[ID: (\w+)\]", text)
        responses.append({"schema_version": 1, "question_id": qid, "model": "m", "repeat": 0, "response": text,
                          "error": None})
        scores.append(score_row(qid, outcome, cited))
    write(tmp_path / "run" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in responses))
    write(tmp_path / "run" / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in scores))
    return tmp_path


def segment_of(body: dict) -> str:
    return re.search(r"<segment>\n(.*?)\n</segment>", prompt_text(body), re.S).group(1)


def judge_reply(body: dict) -> str:
    """A fake judge: anything mentioning 99 is unsupported."""
    seg = segment_of(body)
    return json.dumps({"explanation": f"checked {seg!r}", "supported": "99" not in seg})


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=judge_reply) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def spotcheck(run_dir, *extra):
    code, out = run_grace("spotcheck", "run", run_dir / "run", "--kb", run_dir / "kb", "--judge", "openai:judge-mini",
                          "--max-attempts", "1", *extra)
    assert code == 0, out
    return json.loads((run_dir / "run" / "spotcheck.json").read_text()), out


def test_openai_judge_json_mode_temperature_zero_and_both_passes(run, srv):
    spot, out = spotcheck(run)
    assert len(srv.requests) == 4  # q1, q2, q3 cited + q3's uncited conclusion; misses and refusals are not checked
    body = srv.requests[0].body
    assert body["model"] == "judge-mini" and body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "judgement" and fmt["json_schema"]["strict"]
    assert list(fmt["json_schema"]["schema"]["properties"]) == ["explanation", "supported"]  # reason, then decide
    assert any("verified parts of the answer" in prompt_text(r.body) for r in srv.requests)  # pass 2 prompt
    m = spot["models"]["m"]
    assert (m["hits"], m["n"], m["n_segments"]) == (3, 3, 4)
    assert m["groundedness"] == pytest.approx(3 / 4)
    assert m["hallucination_rate"] == pytest.approx(1 / 3)
    # 5 responses: 3 correct answers, 1 correct refusal -> risk = 1 - (1/5 + 3/5 * (1 - 1/3))
    assert m["hallucination_risk"] == pytest.approx(1 - (0.2 + 0.6 * 2 / 3))
    assert spot["judge"]["name"] == "openai:judge-mini" and spot["judge"]["kind"] == "llm"
    assert spot["judge"]["calibrated"] is False and "judge not calibrated" in out
    rows = [json.loads(x) for x in (run / "run" / "spotcheck" / "judgements.jsonl").read_text().splitlines()]
    assert {r["judge_model"] for r in rows} == {"judge-mini"}
    assert all(r["prompt_hash"] and r["template_hash"] == load_judge_template().sha256 for r in rows)
    bad = next(r for r in rows if r["question_id"] == "q2")
    assert bad["supported"] is False and "99" in bad["explanation"]
    assert spot["judge_calls"]["calls"] == 4 and spot["judgements"]["n"] == 4
    assert not (run / "run" / "report.json").exists()  # a scores folder without a report: nothing to update


def test_rerun_costs_nothing_and_repeats_make_fresh_calls(run, srv):
    spotcheck(run)
    assert len(srv.requests) == 4
    spot, _ = spotcheck(run)  # the judgements file already holds every verdict
    assert len(srv.requests) == 4 and spot["judge_calls"]["reused_from_file"] == 4
    shutil.rmtree(run / "run" / "spotcheck")
    spot, _ = spotcheck(run)  # no file, but the response cache answers
    assert len(srv.requests) == 4 and spot["judge_calls"]["cached"] == 4
    spot, _ = spotcheck(run, "--repeats", "3")  # repeats 1 and 2 are new calls, repeat 0 is reused
    assert len(srv.requests) == 4 + 8
    assert spot["variance"]["repeats"] == 3 and spot["variance"]["max_spread"] == 0.0
    assert spot["models"]["m"]["groundedness_per_repeat"] == [0.75, 0.75, 0.75]


def test_failed_judge_calls_are_reported_and_retried_next_time(run, srv):
    srv.enqueue(Reply.error(400, "bad request"))
    spot, out = spotcheck(run)
    assert spot["judge_calls"]["errors"] == 1 and spot["models"]["m"]["n_incomplete"] == 1
    assert spot["models"]["m"]["n"] == 2 and "not fully judged" in out
    before = len(srv.requests)
    spot, _ = spotcheck(run)
    # only the failed call is made again (and, if it was a cited segment of q3, its conclusion after it)
    assert len(srv.requests) - before in (1, 2)
    assert spot["models"]["m"]["n"] == 3 and spot["judge_calls"]["errors"] == 0


def test_unreadable_verdicts_are_kept_as_unjudged(run, srv):
    srv.responder = lambda body: "I am not sure." if "99" in segment_of(body) else judge_reply(body)
    spot, _ = spotcheck(run)
    rows = [json.loads(x) for x in (run / "run" / "spotcheck" / "judgements.jsonl").read_text().splitlines()]
    bad = next(r for r in rows if r["question_id"] == "q2")
    assert bad["supported"] is None and bad["parse_error"] and bad["response"] == "I am not sure."
    assert spot["models"]["m"]["n"] == 2 and spot["models"]["m"]["hallucination_rate"] == 0.0


def test_meta_eval_through_the_openai_sdk_in_json_object_mode(tmp_path, srv):
    cases = [c for c in load_cases() if c.id in ("num-01", "para-01", "exact-01")]
    spec = ModelSpec("openai", "judge-mini", base_url=srv.openai_base_url, api_key="k", params={"temperature": 0},
                     options={"json_mode": "json_object"})
    srv.responder = lambda body: json.dumps({"explanation": "x", "supported": "22" not in segment_of(body)})
    result = run_meta_eval(Judge(spec, OpenAIChatProvider(spec), load_judge_template()), cases, JudgeSettings(max_attempts=1))
    assert srv.requests[0].body["response_format"] == {"type": "json_object"}
    assert result["passed"] == 3 and result["pass_rate"] == 1.0
    again = run_meta_eval(Judge(spec, OpenAIChatProvider(spec), load_judge_template()), cases, JudgeSettings())
    assert again["calls"]["cached"] == 3 and len(srv.requests) == 3
