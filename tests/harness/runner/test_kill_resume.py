"""A run killed with SIGKILL while its calls are under way resumes without asking again what was answered.

The real ``grace run`` in its own process, the real SDK against the local fake server, killed twice at a point
chosen by how many rows are on file (so while calls are in flight and rows are being written, several models
at once), then run to its end. The resumes read no cache (``--no-cache``): every call they do not find answered
on file goes to the server, so the server's requests say exactly what was asked again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.testing import FakeAPIServer, cite_first_id
from tests.conftest import ROOT, small_bench

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

QUESTIONS, MODELS, REPEATS = 40, ("m1", "m2"), 2


def _answered(run: Path) -> Counter:
    """(model, question_id) -> answered rows on file; a torn last line (the kill came mid-write) is no answer."""
    out: Counter = Counter()
    path = run / "responses.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not row.get("error"):
            out[(row["model"], row["question_id"])] += 1
    return out


def _asked(requests: list) -> Counter:
    """(model, question_id) -> requests the server received; the question is found by its text in the prompt."""
    out: Counter = Counter()
    for req in requests:
        if not isinstance(req.body, dict) or "messages" not in req.body:
            continue  # a request the kill cut off before its body was read: never answered
        text = json.dumps(req.body["messages"])
        qid = next(f"q{i}" for i in range(QUESTIONS) if f"(variant {i})" in text)
        out[(f"openai:{req.body['model']}", qid)] += 1
    return out


def _lines(run: Path) -> int:
    try:
        return (run / "responses.jsonl").read_bytes().count(b"\n")
    except OSError:
        return 0


@pytest.mark.slow  # three processes, two killed: 13 s
def test_a_run_killed_twice_mid_calls_resumes_without_asking_again_what_was_answered(tmp_path):
    bench = small_bench(tmp_path, QUESTIONS, [])
    run = tmp_path / "run"
    total = QUESTIONS * len(MODELS) * REPEATS
    with FakeAPIServer(latency=0.05, responder=cite_first_id) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x",
               "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold",
               str(bench / "gold.csv"), "--out", str(run), "--repeats", str(REPEATS), "--concurrency", "4",
               "--no-score", *(a for m in MODELS for a in ("--model", f"openai:{m}"))]
        for kill_at in (total // 4, total * 3 // 5):
            asked_before = len(srv.requests)
            on_file_before = _answered(run)
            proc = subprocess.Popen([*cmd, "--no-cache"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 120
            while _lines(run) < kill_at and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed mid-calls"
            # this process asked nothing that the folder already held answered
            asked = _asked(srv.requests[asked_before:])
            assert all(asked[k] <= REPEATS - on_file_before[k] for k in asked), (asked, on_file_before)
            assert 0 < sum(_answered(run).values()) < total
        on_file = _answered(run)
        asked_before = len(srv.requests)
        done = subprocess.run([*cmd, "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        asked = _asked(srv.requests[asked_before:])
        # the last run asked only what was not answered on file, each call once
        assert asked == Counter({k: REPEATS - on_file[k] for k in _answered(run) if REPEATS - on_file[k] > 0})
    rows = [json.loads(line) for line in (run / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == total and not any(r["error"] for r in rows)
    # the two killed commands never wrote their end: each is on record as unfinished, before the one that finished
    attempts = json.loads((run / "run.json").read_text())["attempts"]
    assert [a["status"] for a in attempts] == ["unfinished", "unfinished", "finished"]
    assert len({(r["model"], r["question_id"], r["repeat"]) for r in rows}) == total
