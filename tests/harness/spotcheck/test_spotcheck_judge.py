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
from harness.spotcheck.judge_calls import Judge, JudgeSettings
from harness.spotcheck.judge_prompt import STRICT_INSTRUCTION, load_judge_template
from harness.spotcheck.meta_eval import load_cases, run_meta_eval
from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI
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
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run_dir / "run", "--kb", run_dir / "kb", "--judge", "openai:judge-mini",
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


# --- unreadable verdicts: not cached, asked again once with a stricter prompt, counted --------------------------------

def judgements(run) -> list[dict]:
    return [json.loads(x) for x in (run / "run" / "spotcheck" / "judgements.jsonl").read_text().splitlines()]


def test_a_garbage_verdict_is_asked_again_strictly_and_never_cached(run, srv):
    # a weak judge: rambles unless told to reply with only the JSON object
    srv.responder = lambda body: judge_reply(body) if STRICT_INSTRUCTION in prompt_text(body) else "Well, it depends."
    spot, out = spotcheck(run)
    assert len(srv.requests) == 4 + 4  # every first reply unreadable, every one asked again
    strict = [STRICT_INSTRUCTION in prompt_text(r.body) for r in srv.requests]
    assert strict == [False] * 3 + [True] * 3 + [False, True]  # pass 1 and its retries, then pass 2 and its retry
    firsts = [r for r, s in zip(srv.requests, strict, strict=True) if not s]
    retries = [r for r, s in zip(srv.requests, strict, strict=True) if s]
    assert all(prompt_text(r.body).rstrip().endswith(STRICT_INSTRUCTION) for r in retries)
    assert {segment_of(r.body) for r in firsts} == {segment_of(r.body) for r in retries}  # the same segments
    rows = judgements(run)
    assert [r["retry"] for r in rows] == [False] * 3 + [True] * 3 + [False, True]  # pass 1, its retries, pass 2
    assert all(r["supported"] is None and r["parse_error"] for r in rows if not r["retry"])
    assert all(r["supported"] is not None for r in rows if r["retry"])
    assert len({r["prompt_hash"] for r in rows}) == 8  # the retry is another prompt, so another cache key
    m = spot["models"]["m"]
    assert (m["n"], m["n_verdicts"], m["n_unreadable"], m["n_retried"], m["n_retry_recovered"]) == (3, 4, 0, 4, 4)
    assert m["groundedness"] == pytest.approx(3 / 4) and spot["judge_calls"]["retried"] == 4
    assert "4 asked again for an unreadable verdict" in out
    # the file holds readable verdicts now: reused, nothing asked
    spot, _ = spotcheck(run)
    assert len(srv.requests) == 8 and spot["judge_calls"]["reused_from_file"] == 4
    # without the file, the unreadable first replies were never cached: asked again; the retries come from the cache
    shutil.rmtree(run / "run" / "spotcheck")
    spot, _ = spotcheck(run)
    assert len(srv.requests) == 8 + 4 and spot["judge_calls"]["cached"] == 4 and spot["judge_calls"]["calls"] == 4


def test_verdicts_unreadable_even_asked_again_are_counted_shown_and_asked_again_next_run(run, srv):
    srv.responder = lambda body: "Sorry, I cannot tell." if "99" in segment_of(body) else judge_reply(body)
    spot, out = spotcheck(run)
    assert len(srv.requests) == 4 + 1  # q2's segment asked twice
    m = spot["models"]["m"]
    assert (m["n"], m["n_incomplete"], m["n_verdicts"], m["n_unreadable"], m["n_retried"]) == (2, 1, 4, 1, 1)
    assert "m: 1 of 4 verdicts unreadable" in " ".join(out.split())
    assert any("1 of 4 verdicts unreadable" in w for w in spot["warnings"])
    assert spot["judge_calls"]["unreadable"] == 1
    q2 = [r for r in judgements(run) if r["question_id"] == "q2"]
    assert [(r["retry"], r["supported"]) for r in q2] == [(False, None), (True, None)]
    spot, _ = spotcheck(run)  # not reused from the file, not in the cache: both prompts asked again
    assert len(srv.requests) == 5 + 2 and spot["judge_calls"]["reused_from_file"] == 3
    assert {STRICT_INSTRUCTION in prompt_text(r.body) for r in srv.requests[5:]} == {False, True}


def test_a_handful_of_answers_gets_no_interval_and_every_figure_shows_its_n(run, srv):
    spot, out = spotcheck(run)
    m = spot["models"]["m"]
    assert m["n"] == 3 < MIN_ANSWERS_FOR_CI and spot["min_answers_for_ci"] == MIN_ANSWERS_FOR_CI
    assert m["groundedness_ci95"] is None and m["hallucination_rate_ci95"] is None and m["hallucination_risk_ci95"] is None
    assert m["display"]["groundedness"] == "75.0% (n=3, too few for an interval)"
    assert m["groundedness_n"] == m["hallucination_rate_n"] == m["hallucination_risk_n"] == 3
    assert "too few for an interval" in m["ci_note"]
    flat = " ".join(out.split())
    assert "(n=3, too few" in flat and "[" not in flat.split("Halluc. risk")[-1].split("judge calls")[0]
    assert "No interval is given from fewer than 10 checked answers" in spot["notes"]


def test_truncated_answers_are_skipped_and_counted(run, srv):
    path = run / "run" / "responses.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for r in rows:
        r["finish_reason"] = "length" if r["question_id"] == "q1" else "stop"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spot, out = spotcheck(run)
    m = spot["models"]["m"]
    assert (m["hits"], m["truncated_skipped"], m["n"]) == (3, 1, 2)
    assert len(srv.requests) == 3 and not any("Lisbon staff get 25 days of paid" in segment_of(r.body)
                                              for r in srv.requests)
    assert "m: 1 truncated answer skipped (cut off by max_tokens)" in " ".join(out.split())
    assert spot["sample"]["models"]["m"]["hits"] == 2  # the sample is drawn from the answers not cut off
    for reason in ("max_tokens", "MAX_TOKENS", "FinishReason.MAX_TOKENS"):  # Anthropic's and Gemini's words for it
        rows[0]["finish_reason"] = reason
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert spotcheck(run)[0]["models"]["m"]["truncated_skipped"] == 1
    # the scorer's own flag counts too (a score row with "truncated": true)
    rows[0]["finish_reason"] = "stop"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = run / "run" / "scores.jsonl"
    srows = [json.loads(x) for x in scores.read_text().splitlines()]
    scores.write_text("".join(json.dumps(dict(r, truncated=r["question_id"] == "q2")) + "\n" for r in srows))
    m = spotcheck(run)[0]["models"]["m"]
    assert (m["truncated_skipped"], m["n"], m["hits"]) == (1, 2, 3)


def test_json_answers_are_checked_by_their_answer_text_not_their_keys(tmp_path, srv):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    answers = {  # a trailing comma and a quote: the field names must not be asked of the article as quotes
        "j1": '{"answer": "Lisbon staff get \\"25 working days\\" of paid time off.", "citation": "1",}',
        "j2": '```json\n{"answer": "The bonus target is 10% of base salary.", "citation": 2}\n```',
        "j3": '{"citation": "1", "explanation": "Lisbon staff get 25 working days."}',
    }
    write(tmp_path / "run" / "responses.jsonl", "".join(json.dumps(
        {"schema_version": 1, "question_id": q, "model": "m", "repeat": 0, "response": t, "error": None}) + "\n"
        for q, t in answers.items()))
    write(tmp_path / "run" / "scores.jsonl", "".join(json.dumps(score_row(q, "correct", ["1" if q != "j2" else "2"]))
                                                     + "\n" for q in answers))
    spot, _ = spotcheck(tmp_path)
    rows = judgements(tmp_path)
    assert not [r for r in rows if r["source"] == "quote"] and spot["models"]["m"]["quote_failures"] == 0
    assert {r["question_id"]: r["segment_text"] for r in rows} == {
        "j1": 'Lisbon staff get "25 working days" of paid time off.',
        "j2": "The bonus target is 10% of base salary.",
        "j3": "Lisbon staff get 25 working days."}
    assert sorted(segment_of(r.body) for r in srv.requests) == sorted(r["claim"] for r in rows)
    assert spot["models"]["m"]["groundedness"] == 1.0


# --- the model options of grace run -----------------------------------------------------------------------------------

def test_max_tokens_defaults_to_1024_is_recorded_and_is_part_of_the_cache_key(run, srv):
    spot, out = spotcheck(run)
    assert {r.body["max_tokens"] for r in srv.requests} == {1024}
    assert spot["judge"]["max_tokens"] == 1024 and spot["judge"]["params"]["max_tokens"] == 1024
    assert "max_tokens 1024" in out
    shutil.rmtree(run / "run" / "spotcheck")
    spot, _ = spotcheck(run, "--max-tokens", "300")
    assert len(srv.requests) == 8 and {r.body["max_tokens"] for r in srv.requests[4:]} == {300}  # not cache hits
    assert spot["judge"]["max_tokens"] == 300 and spot["judge_calls"]["cached"] == 0


def test_json_mode_timeout_base_url_and_api_key_env_reach_the_judge(run, srv, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("MY_JUDGE_KEY", "secret-123")
    spot, _ = spotcheck(run, "--json-mode", "json_object", "--timeout", "7.5", "--base-url", srv.openai_base_url,
                        "--api-key-env", "MY_JUDGE_KEY", "--max-tokens", "64")
    body = srv.requests[0].body
    assert body["response_format"] == {"type": "json_object"} and body["max_tokens"] == 64
    assert srv.requests[0].headers["authorization"] == "Bearer secret-123"
    j = spot["judge"]
    assert (j["options"], j["timeout_s"], j["base_url"]) == ({"json_mode": "json_object"}, 7.5, srv.openai_base_url)
    assert "secret-123" not in (run / "run" / "spotcheck.json").read_text()


def test_the_provider_judges_the_json_mode_and_the_limit_is_checked(run, srv):
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run / "run", "--kb", run / "kb", "--judge", "openai:judge-mini",
                          "--json-mode", "yaml")
    assert code == 2 and "json_mode must be one of" in out and not srv.requests
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run / "run", "--kb", run / "kb", "--judge", "openai:judge-mini",
                          "--max-tokens", "0")
    assert code == 2 and "--max-tokens" in out and not srv.requests


def test_meta_eval_takes_the_same_options_and_retries_unreadable_verdicts(tmp_path, srv):
    cases = tmp_path / "cases.jsonl"
    write(cases, "".join(json.dumps(c) + "\n" for c in [
        {"id": "a", "failure_mode": "number_changed", "article": "Staff get 25 days.", "segment": "Staff get 30 days.",
         "expected": "unsupported"},
        {"id": "b", "failure_mode": "exact_restatement", "article": "Staff get 25 days.", "segment": "Staff get 25 days.",
         "expected": "supported"}]))
    srv.responder = lambda body: ("no idea" if STRICT_INSTRUCTION not in prompt_text(body)
                                  else json.dumps({"explanation": "x", "supported": "30" not in segment_of(body)}))
    code, out = run_grace("spotcheck", "meta-eval", "--mode", "segments", "--no-quality", "--judge", "openai:judge-mini",
                          "--cases", cases, "--max-tokens", "128", "--out", tmp_path / "m.json")
    assert code == 0, out
    assert len(srv.requests) == 4 and {r.body["max_tokens"] for r in srv.requests} == {128}
    result = json.loads((tmp_path / "m.json").read_text())
    assert result["passed"] == 2 and result["retried"] == 2 and result["unreadable"] == 0
    assert "100.0% (n=2)" in out
