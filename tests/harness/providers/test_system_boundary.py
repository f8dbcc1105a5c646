"""The boundary around user code: a ``python:`` system that misbehaves fails its own rows, never grace's run.

Each function below does what a buggy or hostile pipeline does (ends the process, hangs, forks, returns text
no file can hold, mutates what it is shown, reports a NaN cost). Each is run through the real ``grace run``
command line in a fresh process, beside another model, and the run must finish on time, exit as a run with
error rows does, write one row per question and leave no process behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, sample_bench

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

N_QUESTIONS = 6

HOSTILE = '''
import os
import sys
import time

from grace import SystemAnswer


def fine(request):
    return f"From the handbook. [ID: {request.articles[0].id}]"


def exits(request):
    if request.question_id == "q003":
        sys.exit(3)
    return fine(request)


def interrupts(request):
    if request.question_id == "q003":
        raise KeyboardInterrupt
    return fine(request)


def dies(request):
    if request.question_id == "q003":
        os._exit(7)
    return fine(request)


def segfaults(request):
    if request.question_id == "q003":
        import ctypes

        ctypes.string_at(0)  # reads address 0: the interpreter crashes
    return fine(request)


def hangs(request):
    if request.question_id == "q003":
        time.sleep(3600)
    return fine(request)


async def hangs_async(request):
    import asyncio

    if request.question_id == "q003":
        await asyncio.sleep(3600)
    return fine(request)


def forks(request):
    """Forks and lets both processes go on: the child's copy of the pipeline sleeps with every inherited file open."""
    if request.question_id == "q003":
        pid = os.fork()
        if pid == 0:
            time.sleep(3600)
        # written by the parent before it answers, so the file is there when the run ends, however loaded the machine
        with open(f"/proc/{pid}/stat") as stat, open(os.environ["BOUNDARY_PIDS"], "a") as fh:
            started = stat.read().rsplit(")", 1)[1].split()[19]  # its start time: a reused pid is another process
            fh.write(f"{pid} {started}\\n")
    return fine(request)


def forks_and_returns(request):
    """Forks and returns in both processes, as a naive multiprocessing helper would."""
    if request.question_id == "q003":
        os.fork()
    return fine(request)


def surrogate(request):
    return f"Half an emoji \\ud83d here. [ID: {request.articles[0].id}]"


def surrogate_ids(request):
    return SystemAnswer(answer="See the article.", citations=[request.articles[0].id + "\\udc80"])


def mutates(request):
    answer = fine(request)
    for a in request.articles:
        a.id, a.title, a.text, a.score = "HACKED", "HACKED", "HACKED", -1.0
    request.articles.append(request.articles[0])
    request.messages.clear()
    return answer


def nan_cost(request):
    return SystemAnswer(answer=fine(request), cost_usd=float("nan"))


def inf_cost(request):
    return SystemAnswer(answer=fine(request), cost_usd=float("inf"))


def prints(request):
    # one string: print() writes each argument apart, and calls on the worker's threads interleave those writes
    print(f"a note from the pipeline {request.question_id}")
    return fine(request)


def huge_tokens(request):
    return SystemAnswer(answer=fine(request), input_tokens=10 ** 30)
'''


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = sample_bench(tmp_path_factory.mktemp("boundary"), N_QUESTIONS)
    (root / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    (root / "exits_at_import.py").write_text("import sys\nsys.exit(4)\n\n\ndef answer(request):\n    return ''\n",
                                             encoding="utf-8")
    return root


def grace_run(bench: Path, out: Path, *models: str, timeout: float = 120, extra: tuple[str, ...] = ()):
    """``grace run`` in a fresh process, its output captured: a process left holding stdout or stderr open
    would keep this waiting, as it keeps a shell pipe or a CI step waiting."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BOUNDARY_PIDS": str(bench / "pids.txt")}
    cmd = [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold", str(bench / "gold.csv"),
           "--out", str(out), "--max-attempts", "1", *extra]
    for m in models:
        cmd += ["--model", m]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=bench, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - t0


def rows(out: Path) -> list[dict]:
    def refuse(name):
        raise ValueError(f"{name} in responses.jsonl")

    return [json.loads(line, parse_constant=refuse) for line in (out / "responses.jsonl").read_text(encoding="utf-8").splitlines()]


def by_question(out: Path, model: str) -> dict[str, dict]:
    mine = [r for r in rows(out) if r["model"] == model]
    assert len(mine) == len({r["question_id"] for r in mine}), "one row per question"
    return {r["question_id"]: r for r in mine}


def gone(pid: int, started: str) -> bool:
    """The process has ended (or is a zombie, or its pid now names a newer process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] == "Z" or fields[19] != started


def assert_contained(bench, out, done, model, *, kind, words):
    """The run finished as a run with one error row does: every other question answered, the report written."""
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-3000:])
    mine = by_question(out, model)
    assert sorted(mine) == [f"q{i:03d}" for i in range(1, N_QUESTIONS + 1)]
    failed = {q: r["error"] for q, r in mine.items() if r["error"]}
    assert list(failed) == ["q003"], failed
    assert failed["q003"]["kind"] == kind, failed
    for word in words:
        assert word in failed["q003"]["message"], failed
    assert all(r["response"].startswith("From the handbook.") for q, r in mine.items() if q != "q003")
    other = by_question(out, "baseline:top1")
    assert len(other) == N_QUESTIONS and not any(r["error"] for r in other.values())
    assert (out / "report.json").exists()


@pytest.mark.parametrize(("function", "words"), [
    ("exits", ["sys.exit(3)"]),
    ("interrupts", ["KeyboardInterrupt"]),
])
def test_exit_and_interrupt_from_the_function_are_error_rows(bench, tmp_path, function, words):
    model = f"python:hostile.py:{function}"
    done, _ = grace_run(bench, tmp_path / "run", model, "baseline:top1")
    assert_contained(bench, tmp_path / "run", done, model, kind="other", words=words)


@pytest.mark.parametrize(("function", "words"), [
    ("dies", ["exit code 7"]),
    ("segfaults", ["SIGSEGV"]),
])
def test_a_worker_that_dies_is_an_error_row_and_is_started_again(bench, tmp_path, function, words):
    model = f"python:hostile.py:{function}"
    done, _ = grace_run(bench, tmp_path / "run", model, "baseline:top1", extra=("--concurrency", "1"))
    assert_contained(bench, tmp_path / "run", done, model, kind="other", words=words)


@pytest.mark.parametrize("function", ["hangs", "hangs_async"])
def test_a_function_that_never_returns_times_out_and_grace_exits(bench, tmp_path, function):
    model = f"python:hostile.py:{function}"
    done, took = grace_run(bench, tmp_path / "run", model, "baseline:top1", extra=("--timeout", "2"), timeout=90)
    assert_contained(bench, tmp_path / "run", done, model, kind="timeout", words=["2s"])
    assert took < 60


def test_a_fork_neither_hangs_the_run_nor_outlives_it(bench, tmp_path):
    (bench / "pids.txt").unlink(missing_ok=True)
    model = "python:hostile.py:forks"
    done, took = grace_run(bench, tmp_path / "run", model, "baseline:top1", timeout=90)
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr[-3000:]
    mine = by_question(tmp_path / "run", model)
    assert len(mine) == N_QUESTIONS and not any(r["error"] for r in mine.values() if r["question_id"] != "q003")
    pids = [(int(p), started) for p, started in (line.split() for line in (bench / "pids.txt").read_text().splitlines())]
    deadline = time.monotonic() + 10
    while not all(gone(*p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids and all(gone(*p) for p in pids), "the forked child outlived the run"


def test_a_fork_that_returns_twice_gives_one_answer(bench, tmp_path):
    model = "python:hostile.py:forks_and_returns"
    done, _ = grace_run(bench, tmp_path / "run", model, "baseline:top1", timeout=90)
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr[-3000:]
    mine = by_question(tmp_path / "run", model)
    assert len(mine) == N_QUESTIONS and not any(r["error"] for r in mine.values())


def test_a_lone_surrogate_is_replaced_and_the_answer_cached(bench, tmp_path):
    model = "python:hostile.py:surrogate"
    done, _ = grace_run(bench, tmp_path / "run", model, "baseline:top1")
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr[-3000:]
    mine = by_question(tmp_path / "run", model)
    assert all(r["response"].startswith("Half an emoji \ufffd here.") and not r["error"] for r in mine.values())
    again, _ = grace_run(bench, tmp_path / "again", model)  # the same answers, now from the cache
    assert again.returncode == 0, again.stderr[-3000:]
    assert all(r["cached"] and "\ufffd" in r["response"] for r in by_question(tmp_path / "again", model).values())
    model = "python:hostile.py:surrogate_ids"
    done, _ = grace_run(bench, tmp_path / "ids", model)
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(r["citations"][0].endswith("\ufffd") for r in by_question(tmp_path / "ids", model).values())


def test_mutating_the_request_changes_nothing_grace_shows_or_records(bench, tmp_path):
    model = "python:hostile.py:mutates"
    done, _ = grace_run(bench, tmp_path / "run", model, "baseline:top1", "python:hostile.py:fine",
                        extra=("--concurrency", "1"))
    assert done.returncode == 0, done.stderr[-3000:]
    clean, _ = grace_run(bench, tmp_path / "clean", "baseline:top1", "python:hostile.py:fine")
    assert clean.returncode == 0, clean.stderr[-3000:]
    text = (tmp_path / "run" / "responses.jsonl").read_text(encoding="utf-8")
    assert "HACKED" not in text
    for name in ("baseline:top1", "python:hostile.py:fine"):
        mixed, alone = by_question(tmp_path / "run", name), by_question(tmp_path / "clean", name)
        for q, r in mixed.items():
            assert (r["response"], r["retrieved_ids"], r["retrieval_scores"], r["prompt_hash"]) == (
                alone[q]["response"], alone[q]["retrieved_ids"], alone[q]["retrieval_scores"], alone[q]["prompt_hash"])
    assert all(r["retrieved_ids"] == by_question(tmp_path / "clean", "baseline:top1")[q]["retrieved_ids"]
               for q, r in by_question(tmp_path / "run", model).items())


@pytest.mark.parametrize(("function", "words"), [
    ("nan_cost", ["cost_usd", "nan"]),
    ("inf_cost", ["cost_usd", "inf"]),
    ("huge_tokens", ["input_tokens"]),
])
def test_non_finite_cost_or_impossible_counts_are_error_rows_naming_the_field(bench, tmp_path, function, words):
    model = f"python:hostile.py:{function}"
    done, _ = grace_run(bench, tmp_path / "run", model)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    mine = by_question(tmp_path / "run", model)  # parse_constant refuses a bare NaN / Infinity
    errors = [r["error"] for r in mine.values()]
    assert all(e and e["kind"] == "bad_response" for e in errors), errors
    assert all(word in errors[0]["message"] for word in words), errors[0]


def test_an_import_that_exits_refuses_the_model_before_any_call(bench, tmp_path):
    done, _ = grace_run(bench, tmp_path / "run", "python:exits_at_import.py:answer", "baseline:top1")
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2 and "Traceback" not in out, out
    assert "importing exits_at_import.py called sys.exit(4)" in out
    assert not (tmp_path / "run" / "responses.jsonl").exists()


def test_what_the_function_prints_reaches_stderr_and_never_the_answers(bench, tmp_path):
    model = "python:hostile.py:prints"
    done, _ = grace_run(bench, tmp_path / "run", model)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "a note from the pipeline q001" in done.stderr
    assert all(not r["error"] for r in by_question(tmp_path / "run", model).values())
