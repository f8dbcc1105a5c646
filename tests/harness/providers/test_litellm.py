"""``litellm:PROVIDER/MODEL``: the real LiteLLM package, pointed at the local fake server (OpenAI wire format)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

import pytest

pytest.importorskip("litellm")

from harness.core.errors import GraceError  # noqa: E402
from harness.providers import endpoint_of, make_provider, parse_model_spec  # noqa: E402
from harness.providers.base import ModelSpec, Request  # noqa: E402
from harness.run_folder.run_dir import RunDir  # noqa: E402
from harness.testing import FakeAPIServer, Reply, cite_first_id  # noqa: E402
from tests.conftest import ROOT, run_grace, small_bench, write  # noqa: E402
from tests.harness.providers.provider_calls import MESSAGES, call, call_error  # noqa: E402

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test


def spec_for(srv: FakeAPIServer, model: str = "openai/fake-1", **kw) -> ModelSpec:
    spec = parse_model_spec(f"litellm:{model}")
    spec.base_url, spec.api_key = srv.openai_base_url, "test-key"
    spec.timeout_s = kw.pop("timeout_s", 5.0)
    for name, value in kw.items():
        setattr(spec, name, value)
    return spec


def test_answers_through_the_fake_server_with_usage(srv, caplog):
    srv.enqueue(Reply.ok("It is in Oslo. [ID: 17]", input_tokens=123, output_tokens=9))
    done = call(spec_for(srv, params={"temperature": 0.0, "max_tokens": 50, "seed": 7}))
    assert (done.text, done.input_tokens, done.output_tokens, done.finish_reason) == (
        "It is in Oslo. [ID: 17]", 123, 9, "stop")
    (req,) = srv.requests
    assert req.path == "/v1/chat/completions" and req.headers["authorization"] == "Bearer test-key"
    assert req.body["model"] == "fake-1"  # LiteLLM's provider prefix is its own, not sent
    assert req.body["messages"] == MESSAGES
    assert (req.body["temperature"], req.body["max_tokens"], req.body["seed"]) == (0.0, 50, 7)
    # a second event loop (the next run in this process) finds nothing of the first one's left behind
    with caplog.at_level(logging.WARNING):
        assert call(spec_for(srv)).text == "OK"
    assert not [r for r in caplog.records if r.name.lower().startswith("litellm")], caplog.text


def test_json_mode_asks_for_the_schema(srv):
    schema = {"title": "grounded answer", "type": "object", "properties": {"answer": {"type": "string"}}}
    call(spec_for(srv), Request(messages=MESSAGES, output_mode="json", json_schema=schema))
    call(spec_for(srv, options={"json_mode": "prompt"}), Request(messages=MESSAGES, output_mode="json",
                                                                 json_schema=schema))
    first, second = srv.requests
    assert first.body["response_format"]["type"] == "json_schema"
    assert first.body["response_format"]["json_schema"]["name"] == "grounded_answer"
    assert first.body["response_format"]["json_schema"]["schema"]["properties"] == schema["properties"]
    assert "response_format" not in second.body


@pytest.mark.parametrize("reply, kind, retryable", [
    (Reply.error(500, "upstream exploded"), "server", True),
    (Reply.error(502), "server", True),
    (Reply.malformed(), "bad_response", True),  # LiteLLM calls it an HTTP 500; the JSON error under it says what
    (Reply(raw_body=b"<html>gateway says no</html>"), "bad_response", True),
    (Reply.unauthorized(), "auth", False),
    (Reply.error(404, "The model fake-1 does not exist"), "unknown_model", False),
    (Reply.error(400, "This model's maximum context length is 4096 tokens"), "context_length", False),
    (Reply.error(400, "temperature must be at most 2"), "bad_request", False),
])
def test_failures_map_to_grace_kinds(srv, reply, kind, retryable):
    srv.enqueue(reply)
    err = call_error(spec_for(srv))
    assert (err.kind, err.retryable) == (kind, retryable), err.message
    assert len(srv.requests) == 1  # LiteLLM's own retries are off: the runner retries


def test_rate_limit_and_server_errors_carry_retry_after(srv):
    srv.enqueue(Reply.rate_limit(retry_after=7), Reply.error(503, retry_after=2))
    err = call_error(spec_for(srv))
    assert (err.kind, err.retryable, err.retry_after, err.status) == ("rate_limit", True, 7.0, 429)
    err = call_error(spec_for(srv))
    assert (err.kind, err.retryable, err.retry_after, err.status) == ("server", True, 2.0, 503)


def test_timeout_and_refused_connection(srv):
    srv.enqueue(Reply.slow(3))
    err = call_error(spec_for(srv, timeout_s=0.5))
    assert (err.kind, err.retryable) == ("timeout", True)
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = parse_model_spec("litellm:openai/fake-1")
    spec.base_url, spec.api_key, spec.timeout_s = f"http://127.0.0.1:{port}/v1", "k", 3.0
    err = call_error(spec)
    assert (err.kind, err.retryable) == ("connection", True), err.message


def test_cost_from_litellm_prices_unless_grace_has_one(srv):
    import litellm

    srv.enqueue(Reply.ok("x", input_tokens=1000, output_tokens=100), Reply.ok("x", input_tokens=1000, output_tokens=100))
    prices = litellm.model_cost["gpt-4o-mini"]
    done = call(spec_for(srv, "openai/gpt-4o-mini"))
    assert done.cost_usd == pytest.approx(1000 * prices["input_cost_per_token"] + 100 * prices["output_cost_per_token"])
    assert call(spec_for(srv, "openai/gpt-4o-mini", price_input_per_mtok=1.0)).cost_usd is None
    assert call(spec_for(srv)).cost_usd is None  # a model LiteLLM has no price for


def test_bad_model_strings_and_missing_keys_fail_before_any_call(srv, monkeypatch):
    with pytest.raises(GraceError, match="expected litellm:PROVIDER/MODEL.*litellm:openai/gpt-4o-mini"):
        make_provider(parse_model_spec("litellm:gpt-4o-mini")).check_ready()
    monkeypatch.delenv("MY_LITELLM_KEY", raising=False)
    spec = spec_for(srv, api_key=None, api_key_env="MY_LITELLM_KEY")
    with pytest.raises(GraceError, match="MY_LITELLM_KEY"):
        make_provider(spec).check_ready()
    with pytest.raises(GraceError, match="json_mode"):
        make_provider(spec_for(srv, options={"json_mode": "xml"})).check_ready()
    assert srv.requests == []


def test_the_endpoint_is_in_the_cache_key(srv):
    assert endpoint_of(spec_for(srv)) == endpoint_of(ModelSpec("openai", "m", base_url=srv.openai_base_url))
    assert endpoint_of(parse_model_spec("litellm:cohere/command-r")) is None  # LiteLLM's default for the provider


def test_grace_run_with_litellm_retries_a_429_after_its_retry_after(tmp_path, monkeypatch):
    """A whole run from a leaderboard TOML: api_base and the key variable from the model table, the 429 retried
    once by grace's runner after the server's Retry-After, every question answered, then all from the cache."""
    bench = small_bench(tmp_path / "bench", 6, ["is there a choir"])
    monkeypatch.setenv("FAKE_LITELLM_KEY", "from-env")
    with FakeAPIServer(responder=cite_first_id) as srv:
        write(tmp_path / "board.toml", f'[[models]]\nspec = "litellm:openai/fake-1"\nbase_url = "{srv.openai_base_url}"\n'
                                       'api_key_env = "FAKE_LITELLM_KEY"\nconcurrency = 1\n')
        srv.enqueue(Reply.rate_limit(retry_after=1))
        args = ("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", tmp_path / "board.toml")
        t0 = time.perf_counter()
        code, out = run_grace(*args, "--out", tmp_path / "run")
        took = time.perf_counter() - t0
        assert code == 0, out
        rows = RunDir(tmp_path / "run").response_rows()
        assert len(rows) == 7 and not any(r["error"] for r in rows)
        assert sorted(r["attempts"] for r in rows) == [1] * 6 + [2] and took >= 1.0
        assert len(srv.requests) == 8 and srv.requests[0].headers["authorization"] == "Bearer from-env"
        code, out = run_grace(*args, "--out", tmp_path / "again")
        assert code == 0 and len(srv.requests) == 8, out
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert report["models"]["litellm:openai/fake-1"]["error_count"] == 0


_IMPORT_CHECK = """
import os, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(args[:1])
    raise OSError("network blocked")
socket.socket.connect = lambda self, address: refuse(address)
socket.getaddrinfo = refuse
from harness.cli.app import main
try:
    main(["--help"])
except SystemExit:
    pass
try:
    main(["providers"])
except SystemExit:
    pass
print("AFTER_CLI", "litellm" in sys.modules)
from harness.providers.litellm_provider import _litellm
_litellm()
print("AFTER_IMPORT", "litellm" in sys.modules, os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"), attempts)
"""


def test_importing_litellm_never_reaches_the_network_and_help_never_imports_it():
    """LiteLLM downloads a price list at import unless told not to; grace tells it, and imports it only for a call."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LITELLM")}
    done = subprocess.run([sys.executable, "-c", _IMPORT_CHECK], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "AFTER_CLI False" in done.stdout
    assert "AFTER_IMPORT True True []" in done.stdout, done.stdout + done.stderr
    assert "cost map" not in done.stderr
