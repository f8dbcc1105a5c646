"""Batch mode (``grace run --batch``) end to end: the real SDKs against the fake server's batch endpoints.

What must hold: every call not cached or on file goes out once, in batches
within the provider's limits; the folder records each batch before and after
submitting, so a later process collects instead of submitting again; answers
are ordinary rows (same fingerprint, cost at the batch price) and cache entries;
failures inside a batch are error rows that the next run asks again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grace as api
from harness.core.errors import GraceError
from harness.providers import make_provider, parse_model_spec
from harness.providers.base import Completion
from harness.providers.batch import BatchItem, batch_api_of, expired
from harness.run_folder.batches import BatchLedger
from harness.run_folder.run_dir import RunDir
from harness.runner.batch_mode import split_batches
from harness.testing.fake_api import BatchBehaviour, FakeAPIServer, Reply, cite_first_id
from tests.conftest import ROOT, run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

PROVIDERS = {
    "openai": ("openai:gpt-4o-mini", "openai_base_url", "OPENAI_API_KEY"),
    "anthropic": ("anthropic:claude-haiku-4-5", "anthropic_base_url", "ANTHROPIC_API_KEY"),
    "google": ("google:gemini-2.5-flash", "google_base_url", "GOOGLE_API_KEY"),
}


@pytest.fixture
def batch_server():
    with FakeAPIServer(responder=cite_first_id) as srv:
        yield srv


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 12, ["can I bring my dog", "is there a choir"])


def board(path: Path, srv: FakeAPIServer, providers=("openai", "anthropic", "google"), batch: bool | None = None) -> Path:
    """A leaderboard TOML with the given providers pointed at the fake server (``batch`` set when given)."""
    text = ""
    for name in providers:
        spec, url, key = PROVIDERS[name]
        text += f'[[models]]\nspec = "{spec}"\nbase_url = "{getattr(srv, url)}"\napi_key_env = "{key}"\n'
        text += "" if batch is None else f"batch = {str(batch).lower()}\n"
    return write(path, text)


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    for _, _, key in PROVIDERS.values():
        monkeypatch.setenv(key, "test-key")


def rows_of(out: Path) -> list[dict]:
    return RunDir(out).response_rows()


def run_batch(bench: Path, out: Path, config: Path, **kw):
    kw.setdefault("poll_interval", 0.05)
    kw.setdefault("max_attempts", 2)
    return api.run(bench / "kb", bench / "gold.csv", out=out, config=config, batch=kw.pop("batch", True), **kw)


# -- the pieces -----------------------------------------------------------------------------------
def test_split_batches_keeps_within_request_and_byte_limits():
    sizes = {str(i): 10 for i in range(25)}
    chunks = split_batches(list(sizes), sizes.__getitem__, max_requests=10, max_bytes=1_000)
    assert [len(c) for c in chunks] == [10, 10, 5]
    chunks = split_batches(list(sizes), sizes.__getitem__, max_requests=100, max_bytes=35)
    assert [len(c) for c in chunks] == [3] * 8 + [1]
    assert [k for c in chunks for k in c] == list(sizes)  # order kept, nothing lost
    assert split_batches([], sizes.__getitem__, 10, 10) == []


def test_ledger_folds_events_and_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "batches.jsonl"
    ledger = BatchLedger.read(path)
    ledger.submitting("b1", "m", "openai", ["k1", "k2"])
    ledger.submitted("b1", "batch_1")
    ledger.submitting("b2", "m", "openai", ["k3"])
    with path.open("a") as fh:
        fh.write('{"event": "submitted", "label": "b2", "batch_')  # killed mid-write
    again = BatchLedger.read(path)
    assert again.entries["b1"].batch_id == "batch_1" and again.entries["b2"].batch_id is None
    assert [e.label for e in again.open_entries("m")] == ["b1", "b2"]
    again.collected("b1", state="completed", answered=2, failed=0)  # appends after repairing the torn line
    third = BatchLedger.read(path)
    assert not third.entries["b1"].open and third.entries["b2"].open
    assert (tmp_path / "batches.torn.jsonl").exists()


def test_ledger_names_the_line_of_a_damaged_record(tmp_path):
    path = write(tmp_path / "batches.jsonl", '{"event": "submitting", "label": "b1", "model": "m", "provider": "openai", '
                 '"custom_ids": ["k"], "at": 1}\nnot json\n{"event": "submitted", "label": "b1", "batch_id": "x", "at": 2}\n')
    with pytest.raises(GraceError, match=r"batches.jsonl:2: not valid JSON"):
        BatchLedger.read(path)


def test_results_lost_by_the_provider_say_how_and_a_stray_result_is_filed_nowhere():
    api_ = batch_api_of(make_provider(parse_model_spec("openai:gpt-4o-mini")))
    assert api_ is not None
    found = {"a": BatchItem("a", completion=Completion("ok")), "stray": BatchItem("stray", completion=Completion("?"))}
    torn = [("line 2 of file-o", "b"), ("line 5 of file-o", None)]  # b's ID legible on its torn line; one not
    a, b, c = api_.collate("batch_1", ["a", "b", "c"], found, torn, unanswered=expired())
    assert a.completion is not None and a.completion.text == "ok"
    assert b.error is not None and b.error.kind == "batch_output" and b.error.retryable
    assert b.error.message == "the provider's output file had this request's result on an unreadable line (line 2 of file-o)"
    assert c.error is not None and c.error.message == ("the provider's output file had an unreadable line (line 5 of "
                                                       "file-o) and no other result for this request")
    _, lost = api_.collate("batch_1", ["a", "c"], found, [])
    assert lost.error is not None and lost.error.kind == "batch_output"
    assert lost.error.message == "the provider's output file had no result for this request"
    _, gone = api_.collate("batch_1", ["a", "c"], found, [], unanswered=expired())  # the batch's end explains it
    assert gone.error is not None and gone.error.kind == "expired"


# -- each provider's batch API ------------------------------------------------------------------------
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_batch_run_answers_like_real_time_at_half_the_price(provider, bench, batch_server, tmp_path):
    srv = batch_server
    config = board(tmp_path / "board.toml", srv, [provider], batch=True)
    result = run_batch(bench, tmp_path / "batch", config, batch=False, wait=True)
    assert result.ok and not result.pending and result.errors == 0
    rows = rows_of(tmp_path / "batch")
    assert len(rows) == 14 and all(r["batch"] and r["latency_ms"] is None and not r["error"] for r in rows)
    assert not [r for r in srv.requests if r.api in ("openai", "anthropic", "google")]  # no real-time call
    assert len(srv.batch_submitted) == 14 and set(srv.batch_submitted.values()) == {1}

    # the same calls in real time, with the cache off: the same scores, at twice the cost
    real_time = board(tmp_path / "real.toml", srv, [provider])
    real = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "real", config=real_time, no_cache=True)
    assert real.ok
    batch_scores = {(s["model"], s["question_id"]): s for s in api.load_run(tmp_path / "batch").scores()}
    real_scores = {(s["model"], s["question_id"]): s for s in api.load_run(tmp_path / "real").scores()}
    assert batch_scores.keys() == real_scores.keys()
    for key, b in batch_scores.items():
        r = real_scores[key]
        assert {k: v for k, v in b.items() if k not in ("cost_usd", "latency_ms")} == \
               {k: v for k, v in r.items() if k not in ("cost_usd", "latency_ms")}
        assert b["cost_usd"] == pytest.approx(r["cost_usd"] / 2, rel=1e-3)
    ledger = RunDir(tmp_path / "batch").batch_ledger()
    assert [e.collected["answered"] for e in ledger.entries.values()] == [14]


def test_without_wait_the_run_submits_and_a_later_run_collects_without_resubmitting(bench, tmp_path):
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(polls_to_finish=3)) as srv:
        config = board(tmp_path / "board.toml", srv, batch=True)
        first = run_batch(bench, tmp_path / "run", config)
        assert first.pending == {"openai:gpt-4o-mini": 14, "anthropic:claude-haiku-4-5": 14,
                                 "google:gemini-2.5-flash": 14}
        assert first.run is None and not RunDir(tmp_path / "run").scores.exists()  # nothing to score yet
        assert api.load_run(tmp_path / "run").info.status == "waiting for batches"
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--out", tmp_path / "run", "--batch", "--poll-interval", "0.05")
        assert code == 0 and "run the same command again to collect them" in out, out
        third = run_batch(bench, tmp_path / "run", config, wait=True)
        assert not third.pending and third.run is not None and len(third.leaderboard) == 3
        assert len(srv.batch_submitted) == 42 and set(srv.batch_submitted.values()) == {1}
        assert len(srv.batches) == 3
        rows = RunDir(tmp_path / "run").latest_responses()
        assert len(rows) == 42 and all(r["batch"] for r in rows.values())


def test_a_run_without_batch_on_a_folder_with_open_batches_collects_them_instead_of_paying_twice(bench, tmp_path):
    with FakeAPIServer(responder=cite_first_id) as srv:
        run_batch(bench, tmp_path / "run", board(tmp_path / "b.toml", srv, ["openai"], batch=True))  # submits only
        real_time = board(tmp_path / "r.toml", srv, ["openai"])
        est = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "run", config=real_time, dry_run=True)
        assert est.estimates[0]["in_batches"] == 14 and est.estimates[0]["calls"] == 0
        result = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "run", config=real_time, poll_interval=0.05)
        assert not result.pending and not srv.requests and set(srv.batch_submitted.values()) == {1}
        assert result.run is not None and all(r["batch"] for r in rows_of(tmp_path / "run"))


def test_a_failed_request_in_a_batch_is_an_error_row_and_only_it_is_sent_again(bench, tmp_path):
    def responder(body):
        from harness.testing.fake_api import prompt_text

        if "(variant 5)" in prompt_text(body):
            return Reply.error(400, "invalid_request: this one request is malformed")
        return cite_first_id(body)

    with FakeAPIServer(responder=responder) as srv:
        config = board(tmp_path / "board.toml", srv, ["openai", "anthropic"], batch=True)
        result = run_batch(bench, tmp_path / "run", config, wait=True)
        assert result.errors == 2
        errors = [r for r in rows_of(tmp_path / "run") if r["error"]]
        assert {r["question_id"] for r in errors} == {"q5"} and all(r["error"]["retryable"] is False for r in errors)
        srv.responder = cite_first_id
        again = run_batch(bench, tmp_path / "run", config, wait=True)
        assert again.errors == 0 and again.resumed["failed"] == 2
        assert max(srv.batch_submitted.values()) == 2 and sum(n == 2 for n in srv.batch_submitted.values()) == 2


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_an_expired_batch_keeps_what_was_answered_and_the_rest_is_sent_again(provider, bench, tmp_path):
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(expire_after=5)) as srv:
        config = board(tmp_path / "board.toml", srv, [provider], batch=True)
        first = run_batch(bench, tmp_path / "run", config, wait=True)
        rows = rows_of(tmp_path / "run")
        assert sum(not r["error"] for r in rows) == 5 and first.errors == 9
        assert {r["error"]["kind"] for r in rows if r["error"]} == {"expired"}
        srv.batch.expire_after = None
        second = run_batch(bench, tmp_path / "run", config, wait=True)
        assert second.errors == 0 and second.run is not None
        assert sum(srv.batch_submitted.values()) == 14 + 9  # the answered five were never sent again


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_damaged_output_file_keeps_every_readable_answer_and_says_what_was_lost(provider, bench, tmp_path):
    """A completed batch whose results have a torn line, a missing line and a stray line: the readable answers
    are rows, the two lost requests are retryable errors saying why (not "expired"), the stray is only a warning."""
    torn = (1,) if provider != "google" else ()  # Gemini's results are inline: nothing to tear
    damage = BatchBehaviour(tear_results=torn, drop_results=(3,), stray_results=1)
    with FakeAPIServer(responder=cite_first_id, batch=damage) as srv:
        config = board(tmp_path / "board.toml", srv, [provider], batch=True)
        args = ("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config, "--out",
                tmp_path / "run", "--batch", "--poll-interval", "0.05", "--max-attempts", "2")
        assert run_grace(*args)[0] == 0  # submits
        code, out = run_grace(*args)  # collects
        assert code == 0, out
        rows = rows_of(tmp_path / "run")
        errors = [r["error"] for r in rows if r["error"]]
        assert len(rows) == 14 and len(errors) == 1 + len(torn)
        assert {e["kind"] for e in errors} == {"batch_output"} and all(e["retryable"] for e in errors)
        assert not [e for e in errors if "expired" in e["message"]]
        messages = {e["message"] for e in errors}
        output = {"openai": "output file", "anthropic": "results file", "google": "inline results"}[provider]
        assert f"the provider's {output} had no result for this request" in messages, messages
        if torn:  # the torn line's custom_id is still legible: the loss is pinned on its request
            (on_line,) = messages - {m for m in messages if "no result" in m}
            assert "on an unreadable line (line 2" in on_line, messages
        assert "stray-0" in out and "not in this batch" in out, out
        assert "Traceback" not in out
        srv.batch = BatchBehaviour()
        again = run_batch(bench, tmp_path / "run", config, wait=True)
        assert again.errors == 0 and again.run is not None
        assert sum(srv.batch_submitted.values()) == 14 + len(errors)  # only the lost requests were asked again


def test_large_runs_are_split_within_the_providers_limits(bench, tmp_path, monkeypatch):
    from harness.providers.anthropic_batch import AnthropicBatch
    from harness.providers.openai_batch import OpenAIBatch

    monkeypatch.setattr(OpenAIBatch, "max_requests", 5)
    monkeypatch.setattr(AnthropicBatch, "max_bytes", 9_000)
    monkeypatch.setattr(OpenAIBatch, "max_bytes", 9_000)
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(max_requests=5, max_bytes=9_000)) as srv:
        config = board(tmp_path / "board.toml", srv, ["openai", "anthropic"], batch=True)
        result = run_batch(bench, tmp_path / "run", config, wait=True)
        assert result.errors == 0 and not result.pending
        for api_name in ("openai", "anthropic"):
            sizes = [len(b.custom_ids) for b in srv.batches.values() if b.api == api_name]
            assert sum(sizes) == 14 and len(sizes) >= 3 and max(sizes) <= 5, (api_name, sizes)
        assert set(srv.batch_submitted.values()) == {1}


def test_batch_answers_are_cache_hits_for_real_time_runs_and_the_other_way_round(bench, batch_server, tmp_path):
    srv = batch_server
    run_batch(bench, tmp_path / "batch", board(tmp_path / "b.toml", srv, ["openai"], batch=True), wait=True)
    real = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "real", config=board(tmp_path / "r.toml", srv, ["openai"]))
    assert real.counts["openai:gpt-4o-mini"]["cached"] == 14 and not srv.requests
    srv.clear()
    anthropic = board(tmp_path / "a.toml", srv, ["anthropic"])
    api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "a-real", config=anthropic)  # real time first
    calls = len(srv.requests)
    again = run_batch(bench, tmp_path / "a-batch", board(tmp_path / "ab.toml", srv, ["anthropic"], batch=True), wait=True)
    assert calls == 14 and again.counts["anthropic:claude-haiku-4-5"]["cached"] == 14 and not srv.batches


def test_cancelling_open_batches_collects_what_they_answered_and_the_next_run_sends_the_rest(bench, tmp_path):
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(polls_to_finish=100)) as srv:
        config = board(tmp_path / "board.toml", srv, ["openai", "anthropic", "google"], batch=True)
        run_batch(bench, tmp_path / "run", config)
        cancelled = run_batch(bench, tmp_path / "run", config, cancel_batches=True, wait=True)
        assert not cancelled.pending and cancelled.errors == 42
        assert {b.status for b in srv.batches.values()} <= {"cancelled", "ended", "BATCH_STATE_CANCELLED",
                                                            "JOB_STATE_CANCELLED"}
        assert {r["error"]["kind"] for r in rows_of(tmp_path / "run")} == {"cancelled"}
        srv.batch.polls_to_finish = 1
        again = run_batch(bench, tmp_path / "run", config, wait=True)
        assert again.errors == 0 and again.run is not None
        assert set(srv.batch_submitted.values()) == {2}  # once in the cancelled batch, once more


def test_a_batch_submitted_by_a_process_that_died_before_recording_its_id_is_found_not_sent_again(bench, tmp_path):
    """The process died inside the submit call: the folder has the intent, the provider has the batch."""
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(polls_to_finish=100)) as srv:
        config = board(tmp_path / "board.toml", srv, ["openai"], batch=True)
        run_batch(bench, tmp_path / "run", config)  # submitted, pending
        path = RunDir(tmp_path / "run").batches
        lines = path.read_text().splitlines()
        assert [json.loads(line)["event"] for line in lines] == ["submitting", "submitted"]
        path.write_text(lines[0] + "\n")  # as if killed before the ID was written
        srv.batch.polls_to_finish = 1
        result = run_batch(bench, tmp_path / "run", config, wait=True)
        assert not result.pending and result.errors == 0 and len(srv.batches) == 1
        assert set(srv.batch_submitted.values()) == {1}


def test_an_intent_the_provider_never_received_is_submitted(bench, batch_server, tmp_path):
    srv = batch_server
    config = board(tmp_path / "board.toml", srv, ["openai"], batch=True)
    ledger = RunDir(tmp_path / "run").batch_ledger()
    ledger.submitting("grace-lost-1", "openai:gpt-4o-mini", "openai", ["never-sent"])
    result = run_batch(bench, tmp_path / "run", config, wait=True)
    assert not result.pending and result.errors == 0 and len(srv.batch_submitted) == 14
    assert RunDir(tmp_path / "run").batch_ledger().entries["grace-lost-1"].unsubmitted


def test_a_server_without_a_batch_api_stops_the_model_with_the_fix(bench, tmp_path):
    with FakeAPIServer(responder=cite_first_id) as srv:
        config = write(tmp_path / "board.toml", f'[[models]]\nspec = "openai:local"\nbase_url = "{srv.base_url}/nobatch/v1"\n'
                       'api_key_env = "OPENAI_API_KEY"\nbatch = true\n')
        result = run_batch(bench, tmp_path / "run", config)
        assert not result.ok and "batch = false" in result.stopped["openai:local"]
        assert all(r["error"] for r in rows_of(tmp_path / "run"))


def test_batch_true_on_a_provider_without_a_batch_api_is_refused(bench, tmp_path):
    config = write(tmp_path / "board.toml", '[[models]]\nspec = "ollama:llama3.1"\nbatch = true\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--out", tmp_path / "run")
    assert code != 0 and "has no batch API" in out and "Traceback" not in out


def test_batch_leaves_local_servers_in_real_time_unless_a_model_asks(bench, batch_server, tmp_path):
    result = run_batch(bench, tmp_path / "run", board(tmp_path / "board.toml", batch_server, ["openai"]), wait=True)
    assert result.run is not None and not batch_server.batches and len(batch_server.requests) == 14
    assert not any(r["batch"] for r in rows_of(tmp_path / "run"))


def test_dry_run_shows_the_saving_per_batch_model(bench, batch_server, tmp_path):
    config = board(tmp_path / "board.toml", batch_server, ["openai", "anthropic"], batch=True)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--model", "baseline:top1", "--out", tmp_path / "run", "--batch", "--dry-run")
    assert code == 0, out
    assert "real-time USD" in out and "saved" in out and "(50%)" in out and "(batch)" in out
    est = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "run", config=config, batch=True, dry_run=True)
    for row in est.estimates:
        assert row["batch"] and row["cost_usd_est"] == pytest.approx(row["real_time_cost_usd_est"] / 2, abs=1e-8)  # both rounded to 1e-8 USD
    assert not batch_server.batches


def test_mixed_leaderboard_of_enterprise_endpoints_a_preset_and_a_batch_model(bench, batch_server, tmp_path, monkeypatch):
    """Acceptance: azure:, vertex:, bedrock:, a preset and a batch model in one TOML, end to end."""
    srv = batch_server
    pytest.importorskip("boto3", reason="boto3 is the bedrock provider's optional SDK (pip install -e '.[test]')")
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                 "AWS_BEARER_TOKEN_BEDROCK", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AZURE_OPENAI_API_KEY": "k", "OPENAI_API_VERSION": "2024-10-21",
                        "GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_VERTEX_BASE_URL": srv.google_base_url,
                        "GOOGLE_OAUTH_ACCESS_TOKEN": "vertex-token", "AWS_ACCESS_KEY_ID": "test",
                        "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                        "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-adc.json"),
                        "CLOUDSDK_CONFIG": str(tmp_path / "no-gcloud"), "OPENROUTER_API_KEY": "k"}.items():
        monkeypatch.setenv(name, value)
    config = write(tmp_path / "board.toml", f"""
[[models]]
spec = "azure:gpt4o-deployment"
base_url = "{srv.base_url}"

[[models]]
spec = "vertex:gemini-2.5-flash"

[[models]]
spec = "bedrock:anthropic.claude-3-haiku-20240307-v1:0"
base_url = "{srv.bedrock_base_url}"

[[models]]
spec = "openrouter:meta-llama/llama-3.1-8b-instruct"
base_url = "{srv.openai_base_url}"

[[models]]
spec = "anthropic:claude-haiku-4-5"
base_url = "{srv.anthropic_base_url}"
api_key_env = "ANTHROPIC_API_KEY"
batch = true
""")
    result = run_batch(bench, tmp_path / "run", config, batch=False, wait=True)
    assert result.ok and result.errors == 0, result.stopped
    assert len(result.leaderboard) == 5
    info = api.load_run(tmp_path / "run").info
    assert [m.batch for m in info.models] == [False, False, False, False, True]
    assert {r["model"] for r in rows_of(tmp_path / "run") if r["batch"]} == {"anthropic:claude-haiku-4-5"}
    assert len(srv.batch_submitted) == 14


# -- acceptance: a big leaderboard, killed between submit and collect -------------------------------------
@pytest.mark.slow  # 6,000 batch calls, killed and collected: 54 s
def test_two_thousand_questions_three_models_killed_between_submit_and_collect(tmp_path):
    """2,000 questions x 3 models in batch mode: submit, SIGKILL while waiting, run again, collect. Every
    answer is on file once, every request was submitted once, cost is at batch prices, and scores.jsonl
    equals a real-time run of the same inputs (but for cost and latency, which differ by design)."""
    bench = small_bench(tmp_path / "bench", 1_900, [f"unrelated question number {i}" for i in range(100)])
    env = {**os.environ, "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GOOGLE_API_KEY": "k",
           "PYTHONPATH": str(ROOT)}
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(polls_to_finish=1_000_000)) as srv:
        config = board(tmp_path / "board.toml", srv, batch=True)  # the fake server is local: --batch alone skips it
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold",
               str(bench / "gold.csv"), "--config", str(config), "--out", str(out), "--batch", "--wait",
               "--poll-interval", "0.1"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                ledger = BatchLedger.read(out / "batches.jsonl")
                if sum(e.batch_id is not None for e in ledger.entries.values()) == 3:
                    break
                assert proc.poll() is None, "grace exited before submitting"
                time.sleep(0.2)
            else:
                pytest.fail("the three batches were not submitted in time")
            time.sleep(0.3)  # a few polls: it is waiting
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        assert not RunDir(out).responses.exists() or not rows_of(out)
        srv.batch.polls_to_finish = 1
        result = api.run(bench / "kb", bench / "gold.csv", out=out, config=config, batch=True, wait=True,
                         poll_interval=0.05)
        assert result.ok and not result.pending and result.errors == 0
        rows = rows_of(out)
        assert len(rows) == 6_000 and len({(r["model"], r["question_id"]) for r in rows}) == 6_000
        assert len(srv.batch_submitted) == 6_000 and set(srv.batch_submitted.values()) == {1}
        assert len(srv.batches) == 3
        assert not [r for r in srv.requests if r.api in ("openai", "anthropic", "google")]

        real = api.run(bench / "kb", bench / "gold.csv", out=tmp_path / "real", no_cache=True, concurrency=16,
                       config=board(tmp_path / "real.toml", srv))  # the same models in real time
        assert real.ok and real.errors == 0
    drop = ("cost_usd", "latency_ms")
    batch_lines = (out / "scores.jsonl").read_text().splitlines()
    real_lines = (tmp_path / "real" / "scores.jsonl").read_text().splitlines()
    assert len(batch_lines) == len(real_lines) == 6_000
    for b, r in zip(batch_lines, real_lines, strict=True):
        b, r = json.loads(b), json.loads(r)
        assert {k: v for k, v in b.items() if k not in drop} == {k: v for k, v in r.items() if k not in drop}
        assert b["cost_usd"] == pytest.approx(r["cost_usd"] / 2, rel=1e-3)
    report = json.loads((out / "report.json").read_text())
    real_report = json.loads((tmp_path / "real" / "report.json").read_text())
    for model in report["models"]:
        assert report["models"][model]["accuracy"] == real_report["models"][model]["accuracy"]
        assert report["models"][model]["cost"]["total_usd"] == pytest.approx(
            real_report["models"][model]["cost"]["total_usd"] / 2, rel=1e-3)
