"""A run folder you can trust: one writer, truthful resumes, self-repair, errors instead of tracebacks.

Each test reproduces a problem measured on the first version (the comment says
what it did then) through the real ``grace`` command, real files, the real
SDK against the local fake API server, and real processes where the problem
needs two of them or a kill.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.testing import FakeAPIServer, Reply, cite_first_id
from tests.conftest import ROOT, killed_at_replace, run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

VOLATILE = {"created_at", "responses", "gold", "kb", "run_json_hash"}  # timestamps, paths and run.json's identity: every figure must match


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 10, ["what is the capital of france", "can I bring my dog to work"])


@pytest.fixture()
def server(openai_server):
    return openai_server


def rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]


def grace_run(bench: Path, out: Path, *extra: str, gold: Path | None = None) -> tuple[int, str]:
    return run_grace("run", "--kb", bench / "kb", "--gold", gold or bench / "gold.csv", "--out", out, *extra)


def same_results(a: Path, b: Path) -> None:
    """``scores.jsonl`` identical byte for byte; ``report.json`` identical but for timestamps and paths."""
    assert (a / "scores.jsonl").read_bytes() == (b / "scores.jsonl").read_bytes()
    ra, rb = (json.loads((p / "report.json").read_text()) for p in (a, b))
    for r in (ra, rb):  # the time the commands' calls took of the endpoint: a fresh run answered from the cache took none
        for m in r["models"].values():
            m.pop("serving", None)
    assert {k: v for k, v in ra.items() if k not in VOLATILE} == {k: v for k, v in rb.items() if k not in VOLATILE}


def subprocess_env(srv: FakeAPIServer) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x", "PYTHONUNBUFFERED": "1"}


def grace_cmd(bench: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold",
            str(bench / "gold.csv"), "--out", str(out), *extra]


# -- one writer -----------------------------------------------------------------------------------
def test_a_second_process_on_a_busy_folder_is_refused_and_the_first_loses_nothing(bench):
    """Before: B appended to a file A had replaced; B exited 0 with 24 of its 100 answers on file."""
    release = threading.Event()

    def held_while_b_tries(body):
        """A's answers wait until B and the report have been turned away: A is busy however slow the machine is
        (a fixed latency let a loaded machine start B after A had finished)."""
        if body.get("model") == "a":
            release.wait(60)
        return cite_first_id(body)

    with FakeAPIServer(responder=held_while_b_tries) as srv:
        env = subprocess_env(srv)
        a = subprocess.Popen(grace_cmd(bench, bench / "run", "--model", "openai:a", "--concurrency", "2"),
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lock = bench / "run" / ".grace.lock"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (lock.exists() and lock.read_text().strip()):
            time.sleep(0.05)
        b = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:b"), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        score = subprocess.run([sys.executable, "-m", "harness.cli.app", "report", str(bench / "run")], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=60)
        release.set()
        out_a, _ = a.communicate(timeout=60)
        assert a.returncode == 0, out_a
        # released when A ended: B now runs on the same folder
        done = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:b"), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
    assert b.returncode == 2 and "Traceback" not in b.stderr
    assert f"{bench / 'run'} is being written by another grace process (pid {a.pid}" in b.stderr
    assert score.returncode == 2 and "being written by another grace process" in score.stderr
    got = rows(bench / "run")
    assert [r["model"] for r in got] == ["openai:a"] * 12 + ["openai:b"] * 12  # A lost nothing, B came after
    assert len(srv.requests) == 24 and {r.body["model"] for r in srv.requests[:12]} == {"a"}


# -- truthful resume -------------------------------------------------------------------------------------
def test_a_changed_parameter_is_asked_again_and_run_json_describes_the_rows(bench, server):
    """Before: re-running with --temperature 0.9 after 0 made 0 calls while run.json said 0.9."""
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--temperature", "0")
    assert code == 0, out
    assert len(server.requests) == 12
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--temperature", "0.9")
    assert code == 0, out
    assert len(server.requests) == 24 and {r.body["temperature"] for r in server.requests[12:]} == {0.9}
    assert "12 answer(s) asked with different inputs" in out
    assert {r["params"]["temperature"] for r in rows(bench / "run")} == {0.9}
    info = json.loads((bench / "run" / "run.json").read_text())
    assert info["models"][0]["params"] == {"temperature": 0.9, "max_tokens": 1024}  # the default limit is recorded too
    assert info["rows"]["openai:m"] == {"rows": 12, "answered": 12, "errors": 0, "stale": 0, "params_variants": 1}
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--temperature", "0.9")
    assert code == 0 and len(server.requests) == 24  # now truly done: nothing asked


def test_the_same_request_spelled_two_ways_is_one_cache_entry(bench, server, tmp_path):
    """Before: TOML ``temperature = 0`` and ``--temperature 0``, or a base URL ending in ``/``, were paid twice."""
    cfg = write(tmp_path / "lb.toml", f'[[models]]\nspec = "openai:m"\ntemperature = 0\n'
                                      f'base_url = "{server.openai_base_url}/"\n')
    code, out = grace_run(bench, bench / "one", "--config", cfg, "--no-score")
    assert code == 0, out
    assert len(server.requests) == 12
    code, out = grace_run(bench, bench / "two", "--model", "openai:m", "--temperature", "0", "--no-score")
    assert code == 0, out
    assert len(server.requests) == 12 and all(r["cached"] for r in rows(bench / "two"))


def test_an_edited_question_is_asked_again_and_matches_a_fresh_run(bench, server):
    """Before: an edited question (same question_id) kept its old answer and its old retrieval."""
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--model", "baseline:top1")
    assert code == 0, out
    gold = bench / "gold.csv"
    gold.write_text(gold.read_text().replace("how many sick days do I get (variant 0)", "where do I book flights"))
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--model", "baseline:top1")
    assert code == 0, out
    assert len(server.requests) == 13 and "where do I book flights" in json.dumps(server.requests[-1].body)
    q0 = [r for r in rows(bench / "run") if r["question_id"] == "q0"]
    assert {r["retrieved_ids"][0] for r in q0} == {"3"}  # the new question's retrieval, for both models
    code, out = grace_run(bench, bench / "fresh", "--model", "openai:m", "--model", "baseline:top1")
    assert code == 0 and len(server.requests) == 13  # the fresh run is answered from the cache
    same_results(bench / "run", bench / "fresh")


def test_rows_of_a_model_not_rerun_are_flagged_when_their_question_changed(bench, server):
    code, out = grace_run(bench, bench / "run", "--model", "openai:m", "--model", "baseline:top1", "--no-score")
    assert code == 0, out
    gold = bench / "gold.csv"
    gold.write_text(gold.read_text().replace("(variant 1)", "(variant one)"))
    code, out = grace_run(bench, bench / "run", "--model", "baseline:top1", "--no-score")
    assert code == 0, out
    assert "openai:m: 1 answer(s) on file" in out and "since changed" in out
    info = json.loads((bench / "run" / "run.json").read_text())
    assert {m["name"] for m in info["models"]} == {"baseline:top1", "openai:m"}  # the rows on file, not the command
    assert info["rows"]["openai:m"]["stale"] == 1 and info["rows"]["baseline:top1"]["stale"] == 0


# -- self-repair ---------------------------------------------------------------------------------------
def test_a_torn_last_line_is_moved_aside_and_the_run_matches_a_fresh_one(bench, server):
    """Before: the next run appended onto the torn line, paid for its calls, then exited 2 for good."""
    code, out = grace_run(bench, bench / "run", "--model", "openai:m")
    assert code == 0, out
    path = bench / "run" / "responses.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    torn = lines[-1][: len(lines[-1]) // 2]
    path.write_text("".join(lines[:-1]) + torn)  # a crash mid-write
    code, out = grace_run(bench, bench / "run", "--model", "openai:m")
    assert code == 0, out
    assert "cut off mid-write" in out and "responses.torn.jsonl" in out
    assert (bench / "run" / "responses.torn.jsonl").read_text() == torn + "\n"
    assert len(rows(bench / "run")) == 12 and len(server.requests) == 12  # the torn call came from the cache
    code, out = run_grace("score", path, "--gold", bench / "gold.csv", "--kb", bench / "kb")
    assert code == 0, out
    code, out = grace_run(bench, bench / "fresh", "--model", "openai:m")
    assert code == 0, out
    same_results(bench / "run", bench / "fresh")


def test_a_kill_during_the_final_rewrite_loses_nothing_and_leaves_no_debris(bench):
    with FakeAPIServer(responder=cite_first_id) as srv:
        env = subprocess_env(srv)
        srv.responder = lambda body: Reply.error(500) if len(srv.requests) % 3 == 0 else cite_first_id(body)
        args = grace_cmd(bench, bench / "run", "--model", "openai:m", "--max-attempts", "1", "--concurrency", "1")[3:]
        first = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:m", "--max-attempts", "1",
                                         "--concurrency", "1", "--no-score"), cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
        assert first.returncode == 0, first.stdout + first.stderr
        errors = sum(1 for r in rows(bench / "run") if r["error"])
        assert errors >= 3
        srv.responder = cite_first_id
        killed = killed_at_replace("responses.jsonl", *args, env=env)  # retries appended, then compaction: killed
        assert killed.returncode == -signal.SIGKILL
        on_file = rows(bench / "run")  # the old file is whole: every line parses
        assert len(on_file) == 12 + errors
        debris = [p.name for p in (bench / "run").iterdir() if p.name.startswith(".responses.jsonl.")]
        assert debris, "the kill should have left the temp file of the rewrite"
        calls = len(srv.requests)
        killed = killed_at_replace("scores.jsonl", *args, env=env)  # now a kill while scoring
        assert killed.returncode == -signal.SIGKILL and len(srv.requests) == calls  # nothing asked twice
        assert any(p.name.startswith(".scores.jsonl.") for p in (bench / "run").iterdir())
        done = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:m"), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(srv.requests) == calls
        assert not [p.name for p in (bench / "run").iterdir() if p.name.startswith((".responses", ".scores"))]
        assert len(rows(bench / "run")) == 12 and not any(r["error"] for r in rows(bench / "run"))
        fresh = subprocess.run(grace_cmd(bench, bench / "fresh", "--model", "openai:m"), cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert fresh.returncode == 0 and len(srv.requests) == calls
    same_results(bench / "run", bench / "fresh")


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs POSIX file-size limits")
def test_a_full_disk_is_an_error_not_a_traceback_and_loses_nothing_paid_for(bench):
    """Before: an OSError traceback. A file-size limit stands in for a full disk (both end in the same OSError)."""
    code, out = run_grace("kb", "index", bench / "kb")  # everything the run reads exists before the limit
    assert code == 0, out

    def limit() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))

    with FakeAPIServer(responder=cite_first_id) as srv:
        env = subprocess_env(srv)
        full = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:m", "--concurrency", "1"), cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120, preexec_fn=limit)
        assert full.returncode == 2, full.stdout + full.stderr
        assert "disk full" in full.stderr and "Traceback" not in full.stderr + full.stdout
        calls = len(srv.requests)
        assert 0 < calls < 12
        again = subprocess.run(grace_cmd(bench, bench / "run", "--model", "openai:m"), cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(rows(bench / "run")) == 12
        # everything written before the disk filled was kept; only the answer in flight at that moment, which
        # had nowhere to go (its cache write failed too), is asked again
        assert len(srv.requests) <= 13


# -- errors, not tracebacks -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, message", [
    ('{"question_id": "q1", "model": "baseline:top1", "repeat": "x", "response": "a"}', "'repeat' must be a whole number"),
    (b'{"question_id": "q1", "model": "baseline:top1", "response": "caf\xe9"}', "not UTF-8 text"),
])
def test_a_bad_line_on_resume_names_the_file_and_line(bench, bad, message):
    code, out = grace_run(bench, bench / "run", "--model", "baseline:top1", "--no-score")
    assert code == 0, out
    path = bench / "run" / "responses.jsonl"
    data = path.read_bytes()
    path.write_bytes(data + (bad if isinstance(bad, bytes) else bad.encode()) + b"\n")
    code, out = grace_run(bench, bench / "run", "--model", "baseline:top1", "--no-score")
    assert code == 2 and "Traceback" not in out
    line = data.count(b"\n") + 1
    assert f"{path}:{line}" in out and message in out


# -- endpoint health ---------------------------------------------------------------------------------------------
def test_a_dead_endpoint_stops_the_model_early_and_records_the_untried_calls(bench, monkeypatch):
    """Before: every call retried to the limit (6 attempts with back-off): minutes for a dead server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here: every connection is refused
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    gold = bench / "many.csv"
    lines = ["question_id,question,expected_citations,must_refuse"]
    lines += [f"q{i},how many sick days do I get ({i}),1,false" for i in range(60)]
    write(gold, "\n".join(lines) + "\n")
    code, out = grace_run(bench, bench / "run", "--model", "openai:dead", "--model", "baseline:top1",
                          "--concurrency", "2", gold=gold)
    assert code == 1, out
    assert "connection failures in a row" in out and f"127.0.0.1:{port}" in out
    dead = [r for r in rows(bench / "run") if r["model"] == "openai:dead"]
    assert len(dead) == 60 and all(r["error"] for r in dead)
    attempts = sum(r["attempts"] for r in dead)
    assert attempts <= 8 + 2 * 6  # the breaker's count, plus at most what the other worker had in flight
    assert sum(r["error"]["kind"] == "not_tried" for r in dead) >= 50
    report = json.loads((bench / "run" / "report.json").read_text())
    assert report["leaderboard"] == ["baseline:top1"] and "openai:dead" in report["failed_models"]
    info = json.loads((bench / "run" / "run.json").read_text())
    assert info["status"] == "failed" and info["counts"]["openai:dead"]["not_tried"] >= 50
