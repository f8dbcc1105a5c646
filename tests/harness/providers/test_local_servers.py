"""Self-hosted OpenAI-compatible servers (llama.cpp, Ollama, vLLM...): what they do that hosted APIs do not.

The fake server's local mode reproduces what a user measured on a real llama.cpp
server: ``json_schema`` rejected with HTTP 500 and a validation body, one request
worked on at a time, answers cut off at ``max_tokens``. Real SDK clients, real
engine, real run folders.
"""

from __future__ import annotations

import json

import pytest

from harness.providers import make_provider
from harness.providers.base import ModelSpec
from harness.providers.http_errors import from_status
from harness.testing import FakeAPIServer, Reply, cite_first_id, prompt_text
from harness.testing.fake_api import LocalServer
from tests.conftest import run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 10, ["what is the capital of france", "can I bring my dog to work"])


def rows_of(run_dir):
    return [json.loads(x) for x in (run_dir / "responses.jsonl").read_text().splitlines()]


def run_info(run_dir):
    return json.loads((run_dir / "run.json").read_text())


def json_answer(body):
    """A small model's JSON answer: the first shown ID as the citation."""
    cited = cite_first_id(body)
    ident = cited.rpartition("[ID: ")[2].rstrip("]") if "[ID: " in cited else None
    return json.dumps({"answer": "It is explained there.", "citation": ident})


def grace_run(bench, srv, *extra, out="run"):
    return run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:smollm2",
                     "--out", bench / out, "--no-score", *extra)


# --- error classes ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "message", "kind"), [
    (500, "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
          "'json_object' [type=literal_error]", "invalid_request"),
    (400, "This model's maximum context length is 2048 tokens. However, you requested 3100 tokens", "context_length"),
    (500, "Requested tokens (5000) exceed context window of 4096", "context_length"),
    (404, 'model "llama9" not found, try pulling it first', "unknown_model"),
    (404, "The model `gpt-9` does not exist or you do not have access to it.", "unknown_model"),
    (422, "Unprocessable Entity", "bad_request"),
])
def test_permanent_errors_are_not_retried(status, message, kind):
    err = from_status(status, message)
    assert (err.kind, err.retryable) == (kind, False)


@pytest.mark.parametrize(("status", "message"), [(500, "Internal Server Error"), (503, "model is loading"),
                                                 (502, "Bad Gateway"), (529, "Overloaded")])
def test_transient_errors_are_retried(status, message):
    assert from_status(status, message).retryable


def test_a_validation_error_is_tried_once_not_six_times(bench, local_env):
    with FakeAPIServer(responder=cite_first_id) as srv:
        local_env(srv)
        srv.enqueue(Reply.error(500, "1 validation error for CreateChatCompletionRequest\nstop\n  Input should be a valid list"))
        code, out = grace_run(bench, srv, "--concurrency", "1")
        assert code == 0, out  # one bad call does not stop the model: the other eleven are answered
        failed = [r for r in rows_of(bench / "run") if r["error"]]
        assert len(failed) == 1 and failed[0]["error"]["attempts"] == 1
        assert failed[0]["error"]["kind"] == "invalid_request" and "Input should be" in failed[0]["error"]["message"]
        assert len(srv.requests) == 12


def test_unknown_model_stops_the_model_at_once(bench, local_env):
    with FakeAPIServer(responder=lambda body: Reply.error(404, f'model "{body["model"]}" not found, try pulling it first')) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--concurrency", "1")
        assert code == 1, out
        assert len(srv.requests) == 1
        assert "does not serve this model" in out and 'model "smollm2" not found' in out
        rows = rows_of(bench / "run")
        assert len(rows) == 12 and sum(r["error"]["kind"] == "not_tried" for r in rows) == 11


def test_a_model_whose_first_calls_all_fail_permanently_is_stopped(bench, local_env):
    with FakeAPIServer(responder=lambda body: Reply.error(400, "This model's maximum context length is 512 tokens")) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--concurrency", "1")
        assert code == 1, out
        assert len(srv.requests) == 3  # PERMANENT_AFTER, each tried once
        assert "first 3 calls all failed" in out and "maximum context length" in out


# --- JSON mode fallback -------------------------------------------------------------------------------------------
def test_json_mode_falls_back_to_json_object_with_the_schema_once_per_endpoint(bench, local_env):
    with FakeAPIServer(responder=json_answer, local=LocalServer(slots=2)) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--output-mode", "json", "--concurrency", "4")
        assert code == 0, out
        rows = rows_of(bench / "run")
        assert len(rows) == 12 and not any(r["error"] for r in rows)
        assert srv.rejected == 1  # the first call found out; the other calls waited for it
        formats = [r.body.get("response_format", {}).get("type") for r in srv.requests]
        assert formats.count("json_schema") == 1 and formats.count("json_object") == 12
        # llama-cpp-python takes the schema beside json_object and builds its grammar from it
        assert all("schema" in r.body["response_format"] for r in srv.requests
                   if r.body["response_format"]["type"] == "json_object")
        assert {r["json_mode"] for r in rows} == {"json_object_schema"}
        entry = run_info(bench / "run")["models"][0]
        assert entry["json_mode"] == "json_object_schema"
        assert entry["json_mode_reason"].startswith("server rejected json_schema")


def test_json_mode_falls_back_to_the_prompt_when_no_format_is_taken(bench, local_env):
    def server(body):
        if "response_format" in body:
            return Reply.error(400, "Unsupported parameter: 'response_format' is not supported with this model.")
        return json_answer(body)

    with FakeAPIServer(responder=server) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--output-mode", "json", "--concurrency", "3")
        assert code == 0, out
        # json_schema, json_object with the schema, bare json_object
        assert sum(r.body.get("response_format") is not None for r in srv.requests) == 3
        rows = rows_of(bench / "run")
        assert len(rows) == 12 and {r["json_mode"] for r in rows} == {"prompt"} and not any(r["error"] for r in rows)
        assert "json_schema and json_object_schema and json_object" in run_info(bench / "run")["models"][0]["json_mode_reason"]


def test_a_forced_json_mode_is_used_as_given(bench, local_env, tmp_path):
    with FakeAPIServer(responder=json_answer, local=LocalServer(slots=4)) as srv:
        local_env(srv)
        config = write(tmp_path / "board.toml", '[[models]]\nspec = "openai:smollm2"\noptions = {json_mode = "json_object"}\n')
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--out", bench / "run", "--no-score", "--output-mode", "json")
        assert code == 0, out
        assert srv.rejected == 0 and {r.body["response_format"]["type"] for r in srv.requests} == {"json_object"}


def test_a_non_format_error_does_not_change_the_json_mode(bench, local_env):
    with FakeAPIServer(responder=json_answer) as srv:
        local_env(srv)
        srv.enqueue(Reply.error(400, "This model's maximum context length is 512 tokens"))
        code, out = grace_run(bench, srv, "--output-mode", "json", "--concurrency", "1")
        assert code == 0, out
        assert {r.body["response_format"]["type"] for r in srv.requests} == {"json_schema"}
        assert "json_mode" not in run_info(bench / "run")["models"][0]


# --- slow, single-slot servers --------------------------------------------------------------------------------------
def test_local_endpoints_get_a_generous_default_timeout():
    local = make_provider(ModelSpec("openai", "m", base_url="http://127.0.0.1:8080/v1", api_key="k"))
    lan = make_provider(ModelSpec("openai", "m", base_url="http://192.168.1.20:11434/v1", api_key="k"))
    hosted = make_provider(ModelSpec("openai", "m", base_url="https://api.together.xyz/v1", api_key="k"))
    given = make_provider(ModelSpec("openai", "m", base_url="http://localhost:8080/v1", api_key="k", timeout_s=30))
    assert (local.timeout_s, lan.timeout_s, hosted.timeout_s, given.timeout_s) == (300, 300, 60, 30)


def test_concurrency_follows_the_servers_slots(bench, local_env):
    with FakeAPIServer(responder=cite_first_id, latency=0.05, local=LocalServer(slots=1, props=True)) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--concurrency", "4", "--timeout", "0.5")
        assert code == 0, out
        assert "works on 1 request(s) at a time" in out
        assert "/props" in srv.gets and srv.dropped == 0 and len(srv.requests) == 12
        assert run_info(bench / "run")["counts"]["openai:smollm2"]["in_flight_limit"] == 1


def test_a_single_slot_server_at_concurrency_4_finishes_without_a_timeout_storm(bench, local_env):
    # llama-cpp-python's server: one at a time, and no /props to say so. 0.3 s per answer, 0.5 s timeout:
    # with 4 in flight the queued ones time out; grace notices and goes on one at a time.
    with FakeAPIServer(responder=cite_first_id, latency=0.3, local=LocalServer(slots=1)) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--concurrency", "4", "--timeout", "0.5")
        assert code == 0, out
        rows = rows_of(bench / "run")
        assert len(rows) == 12 and not any(r["error"] for r in rows)
        counts = run_info(bench / "run")["counts"]["openai:smollm2"]
        assert counts["in_flight_limit"] == 1 and "one call at a time" in out
        assert counts["timeouts"] <= 6 and len(srv.requests) <= 18, counts  # not six attempts per queued call


def test_default_max_tokens_is_sent_and_recorded(bench, local_env):
    with FakeAPIServer(responder=cite_first_id) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv)
        assert code == 0, out
        assert {r.body["max_tokens"] for r in srv.requests} == {1024}
        assert {r["params"]["max_tokens"] for r in rows_of(bench / "run")} == {1024}


def test_answers_cut_off_by_max_tokens_keep_their_finish_reason(bench, local_env):
    long = "Well, " + "let me think about that at length " * 20 + "[ID: 1]"
    with FakeAPIServer(responder=lambda body: long, local=LocalServer(slots=4)) as srv:
        local_env(srv)
        code, out = grace_run(bench, srv, "--max-tokens", "40")
        assert code == 0, out
        rows = rows_of(bench / "run")
        assert {r["finish_reason"] for r in rows} == {"length"} and all("[ID:" not in r["response"] for r in rows)
        assert {r["output_tokens"] for r in rows} == {40}


def test_an_empty_answer_cut_off_by_the_limit_is_an_answer_not_an_error(bench, local_env):
    with FakeAPIServer() as srv:
        local_env(srv)
        srv.responder = lambda body: Reply(raw_body=json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1024, "total_tokens": 1034}}).encode())
        code, out = grace_run(bench, srv)
        assert code == 0, out
        rows = rows_of(bench / "run")
        assert len(srv.requests) == 12 and all(r["response"] == "" and r["finish_reason"] == "length" for r in rows)


# --- the whole loop against a llama.cpp-like server: JSON answers, then that server as judge ---------------------------
def judge_or_answer(body):
    text = prompt_text(body)
    if "<segment>" in text:
        return json.dumps({"explanation": "the article says so", "supported": True})
    return json_answer(body)


def test_json_answers_and_a_local_judge_complete_with_one_rejected_call_each(bench, local_env):
    with FakeAPIServer(responder=judge_or_answer, local=LocalServer(slots=1)) as srv:
        local_env(srv)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:smollm2",
                              "--out", bench / "run", "--output-mode", "json", "--concurrency", "4")
        assert code == 0, out
        assert srv.rejected == 1 and not any(r["error"] for r in rows_of(bench / "run"))
        report = json.loads((bench / "run" / "report.json").read_text())
        assert report["models"]["openai:smollm2"]["json_mode"]["used"] == "json_object_schema"
        assert "json_object_schema (server rejected json_schema)" in (bench / "run" / "leaderboard.md").read_text()
        calls = len(srv.requests)
        code, out = run_grace("spotcheck", "run", "--mode", "segments", bench / "run", "--kb", bench / "kb",
                              "--judge", "openai:smollm2", "--concurrency", "4")
        assert code == 0, out
        judged = srv.requests[calls:]
        # in one process the judge knows the endpoint already; a new process pays at most one rejected call
        assert judged and srv.rejected <= 2
        assert sum(r.body.get("response_format", {}).get("type") == "json_schema" for r in judged) <= 1
        assert all(r.body.get("response_format", {}).get("type") == "json_object" for r in judged[1:])
        checked = json.loads((bench / "run" / "spotcheck.json").read_text())["models"]["openai:smollm2"]
        assert checked["n_verdicts"] > 0 and checked["n_unreadable"] == 0 and checked["n_failed_calls"] == 0
