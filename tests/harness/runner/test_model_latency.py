"""Latency that is the model's, a self-hosted model's time and price, and run records that say what happened.

Real ``grace run`` with the real OpenAI SDK against the fake server in its llama.cpp mode: one request worked on at
a time for 0.5 s, the others queued in the server (``LocalServer``). The truth each figure is checked against is
the server's own record of each request's time in its queue and in its slot (``FakeAPIServer.served``), kept
apart from anything grace measures.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.providers.openai_chat import _server_time
from harness.run_folder.responses import read_responses
from harness.run_folder.run_records import RunInfo
from harness.testing import FakeAPIServer, cite_first_id
from harness.testing.fake_api import LocalServer
from tests.conftest import run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

MODEL = "openai:smollm2"
SERVICE_S = 0.5


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 24, [])


def grace_run(bench: Path, out: str, *extra: str) -> tuple[int, str]:
    return run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", bench / out, *extra)


def rows_of(run: Path, model: str = MODEL) -> list[dict]:
    rows = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return [r for r in rows if r["model"] == model]


def read(run: Path, name: str) -> dict:
    return json.loads((run / name).read_text())


@pytest.mark.slow  # a one-slot server queueing 8: 13 s
def test_a_one_slot_server_at_concurrency_8_shows_the_models_own_time_its_queue_apart_and_a_warning(bench, local_env):
    """Issue 47: p50 latency 12.8 s at concurrency 2 over two one-slot servers, 76.6 s at concurrency 8 against one."""
    with FakeAPIServer(responder=cite_first_id, latency=SERVICE_S, local=LocalServer(slots=1)) as srv:
        local_env(srv)
        started = time.monotonic()
        code, out = grace_run(bench, "run", "--model", MODEL, "--model", "baseline:top1", "--concurrency", "8",
                              "--price-server-hour", "3.0")
        wall = time.monotonic() - started
        served = [slot for _, slot in srv.served]
        queued = [wait for wait, _ in srv.served]
    assert code == 0, out
    truth = statistics.median(served)
    assert truth == pytest.approx(SERVICE_S, rel=0.05) and statistics.median(queued) > 2  # the server did queue
    report = read(bench / "run", "report.json")
    m = report["models"][MODEL]
    # the model's own time: within 10% of what the server spent on each call, as the server itself timed it
    assert m["latency"]["p50_ms"] / 1000 == pytest.approx(truth, rel=0.10)
    assert m["latency"]["p95_ms"] / 1000 < 2 * SERVICE_S
    # and the queueing apart: 8 calls in flight on one slot wait about 3.5 answers each
    assert m["latency"]["queued_p50_ms"] > 2000
    rows = rows_of(bench / "run")
    assert {r["service_from"] for r in rows} == {"measured"} and all("queue_ms" in r for r in rows)
    assert statistics.median(r["latency_ms"] for r in rows) > 2000  # what the column showed before: the queue
    # the warning: in the terminal as the calls go, and in the report
    assert "the server works on about 1 request(s) at a time" in out and "--concurrency 1" in out
    warned = [w for w in report["warnings"] if w.startswith(f"{MODEL}: its server works on 1 request(s)")]
    assert len(warned) == 1 and "8 were sent at once" in warned[0]
    assert warned[0] in " ".join(out.split())  # the report's warnings are printed with the leaderboard too
    assert "works on" not in " ".join(w for w in report["warnings"] if w.startswith("baseline"))

    # a self-hosted model's time: the seconds its calls kept the server busy, at least the server's own busy time
    # and at most the run's wall clock, per 1,000 questions; priced by the hour as given
    info = read(bench / "run", "run.json")
    counts = info["counts"][MODEL]
    assert (counts["concurrency"], counts["server_slots"], counts["slots_from"]) == (8, 1, "measured")
    assert counts["answered"] == 24 and sum(served) <= counts["busy_s"] <= wall
    assert [e["price_server_hour"] for e in info["models"] if e["name"] == MODEL] == [3.0]
    serving = m["serving"]
    assert serving["self_hosted"] and serving["calls"] == 24 and serving["servers"] == 1
    assert serving["time_per_1k_questions_s"] == pytest.approx(counts["busy_s"] / 24 * 1000, rel=1e-3)
    assert serving["cost_usd"] == pytest.approx(counts["busy_s"] / 3600 * 3.0, rel=1e-3)
    assert serving["output_tokens_per_s"] == pytest.approx(counts["output_tokens"] / counts["busy_s"], rel=1e-3)
    assert "serving" not in report["models"]["baseline:top1"]  # an offline baseline keeps no server busy
    shown = f"{serving['time_per_1k_questions_s'] / 60:.1f} min"
    assert "Time / 1k Q" in out and shown in out  # terminal
    for page in ("leaderboard.md", "report.html"):
        text = (bench / "run" / page).read_text()
        assert "Time / 1k Q" in text and shown in text and "Queued p50" in text
    from harness.viewer import open_viewer

    app, indexer = open_viewer([bench], bench / "view-cache", child=False)
    try:
        board = app.leaderboard("run")
        assert "time_1k" in [c["key"] for c in board["columns"]]
        assert [r["cells"]["time_1k"] for r in board["rows"] if r["model"] == MODEL] == [shown]
    finally:
        indexer.stop()

    # a fresh folder answered from the cache keeps each answer's own time
    code, out = grace_run(bench, "again", "--model", MODEL, "--concurrency", "8")
    assert code == 0, out
    again = read(bench / "again", "report.json")["models"][MODEL]
    assert again["latency"]["p50_ms"] == m["latency"]["p50_ms"] and "serving" not in again  # nothing was asked


@pytest.mark.slow  # a timed server: 13 s
def test_the_servers_own_timings_are_the_models_time(bench, local_env):
    with FakeAPIServer(responder=cite_first_id, latency=SERVICE_S, local=LocalServer(slots=1, timings=True)) as srv:
        local_env(srv)
        code, out = grace_run(bench, "run", "--model", MODEL, "--concurrency", "4")
        truth = statistics.median(slot for _, slot in srv.served)
    assert code == 0, out
    rows = rows_of(bench / "run")
    assert {r["service_from"] for r in rows} == {"server"}
    report = read(bench / "run", "report.json")
    assert report["models"][MODEL]["latency"]["p50_ms"] / 1000 == pytest.approx(truth, rel=0.05)
    assert any("from its own timings" in w for w in report["warnings"])


def test_a_server_that_says_its_slots_is_sent_no_more_and_the_report_says_so(bench, local_env):
    with FakeAPIServer(responder=cite_first_id, latency=0.2, local=LocalServer(slots=1, props=True)) as srv:
        local_env(srv)
        code, out = grace_run(bench, "run", "--model", MODEL, "--concurrency", "4")
    assert code == 0, out
    assert {r["service_from"] for r in rows_of(bench / "run")} == {"slots"}
    counts = read(bench / "run", "run.json")["counts"][MODEL]
    assert (counts["concurrency"], counts["in_flight_limit"], counts["server_slots"]) == (4, 1, 1)
    warned = [w for w in read(bench / "run", "report.json")["warnings"] if "as its /props says" in w]
    assert len(warned) == 1 and "sent 1 at a time instead of 4" in warned[0]


def test_a_model_runs_at_its_own_concurrency_and_price_from_the_config(bench, local_env, tmp_path):
    """run.json said config.concurrency 8 while the model ran at 2; the TOML's price per server-hour is recorded."""
    with FakeAPIServer(responder=cite_first_id) as srv:
        local_env(srv)
        config = write(tmp_path / "board.toml", f'[[models]]\nspec = "{MODEL}"\nbase_url = "{srv.openai_base_url}"\n'
                                                'concurrency = 2\nprice_server_hour = 1.5\n')
        code, out = grace_run(bench, "run", "--config", str(config), "--concurrency", "8", "--no-score")
    assert code == 0, out
    info = read(bench / "run", "run.json")
    assert info["config"]["concurrency"] == 8 and info["counts"][MODEL]["concurrency"] == 2
    assert info["models"][0]["price_server_hour"] == 1.5
    code, out = grace_run(bench, "other", "--model", MODEL, "--price-server-hour", "no-such=2", "--dry-run")
    assert code != 0 and "no model named 'no-such'" in out
    code, out = grace_run(bench, "other", "--model", MODEL, "--price-server-hour", "cheap", "--dry-run")
    assert code != 0 and "give USD per server-hour" in out and "Traceback" not in out


def test_a_resume_names_the_models_with_nothing_left_instead_of_an_empty_bar(bench, local_env):
    with FakeAPIServer(responder=cite_first_id) as srv:
        local_env(srv)
        code, out = grace_run(bench, "run", "--model", "baseline:top1", "--no-score")
        assert code == 0, out
        code, out = grace_run(bench, "run", "--model", "baseline:top1", "--model", MODEL, "--no-score")
    assert code == 0, out
    assert "baseline:top1: every call on file, nothing left to ask" in out
    assert "0/1" not in out and "24/24" in out  # the model with calls to make has its bar


def test_a_replica_dropped_in_one_command_is_still_on_record_after_the_next(bench, monkeypatch, tmp_path):
    """run.json kept only the last command's replicas: a replica that died in an earlier command was on record nowhere."""
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeAPIServer(responder=cite_first_id, latency=0.02) as ok, FakeAPIServer(responder=cite_first_id) as dead:
        dead.die()
        urls = [ok.openai_base_url, dead.openai_base_url]
        config = write(tmp_path / "board.toml", f'[[models]]\nspec = "openai:replicated"\napi_key_env = "FAKE_KEY"\n'
                                                f'base_url = {json.dumps(urls)}\n')
        for _ in range(2):
            code, out = grace_run(bench, "run", "--config", str(config), "--no-score")
            assert code == 0, out
    info = read(bench / "run", "run.json")
    first, second = info["attempts"]
    assert (first["status"], second["status"]) == ("finished", "finished")
    dropped = {r["url"]: r["dropped"] for r in first["counts"]["openai:replicated"]["replicas"]}
    assert dropped[urls[0]] is None and "connection failures" in dropped[urls[1]]
    assert "replicas" not in second["counts"]["openai:replicated"]  # the second command had nothing to ask
    assert info["counts"] == second["counts"]


def test_a_run_json_from_before_attempts_keeps_its_command_in_the_history():
    base = {"grace_version": "0.9", "started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:10:00+00:00",
            "status": "finished", "kb": {"path": "kb", "kb_hash": "h", "articles": 4},
            "gold": {"path": "g.csv", "hash": "h", "questions": 4, "must_refuse": 0}, "templates": {"t": "h"},
            "config": {"k": 3, "repeats": 1, "concurrency": 8, "cache": True, "read_cache": True, "max_attempts": 6,
                       "seed": 0, "output_mode": "inline"},
            "models": [], "schema_version": 2,
            "counts": {"m": {"planned": 4, "done": 4, "cached": 0, "errors": 0, "not_tried": 0, "retries": 0,
                             "timeouts": 0}}}
    old = RunInfo.model_validate(base)
    [kept] = old.past_attempts()
    assert (kept.started_at, kept.status, kept.counts["m"].done) == (base["started_at"], "finished", 4)
    killed = RunInfo.model_validate({**base, "status": "running", "finished_at": None})
    assert [a.status for a in killed.past_attempts()] == ["unfinished"]


@pytest.mark.parametrize("timings", [
    {"prompt_ms": "12", "predicted_ms": 3}, {"prompt_ms": float("nan"), "predicted_ms": 3}, {"prompt_ms": -1.0,
    "predicted_ms": 3}, {"predicted_ms": 3}, [1, 2], {"prompt_ms": True, "predicted_ms": 3}, {"prompt_ms": 1e300,
    "predicted_ms": 1}])
def test_server_timings_that_are_not_times_are_not_read(timings):
    assert _server_time(timings) is None


def test_llama_cpp_timings_are_its_prompt_and_answer_time():
    assert _server_time({"prompt_n": 12, "prompt_ms": 41.5, "predicted_n": 30, "predicted_ms": 900}) == 941.5


def test_a_response_row_whose_times_are_not_milliseconds_is_named_with_its_line(tmp_path):
    path = write(tmp_path / "responses.jsonl", json.dumps({"question_id": "q0", "model": "m", "response": "x",
                                                           "latency_ms": 10, "service_ms": -4}) + "\n")
    with pytest.raises(GraceError, match=r"responses.jsonl:1: 'service_ms' must be milliseconds"):
        list(read_responses(path, {"q0": None}))


def test_a_killed_run_records_its_end_as_an_interrupted_attempt(bench):
    """``kill`` (SIGTERM) stops grace run as Ctrl-C does: run.json says how far it got, not "running" for ever."""
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    with FakeAPIServer(responder=cite_first_id, latency=0.2) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x", "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold",
                                 str(bench / "gold.csv"), "--out", str(bench / "run"), "--model", MODEL,
                                 "--concurrency", "2", "--no-score"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(srv.requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    info = read(bench / "run", "run.json")
    assert info["status"] == "interrupted" and info["finished_at"]
    [attempt] = info["attempts"]
    assert attempt["status"] == "interrupted" and 0 < attempt["counts"][MODEL]["done"] < 24
