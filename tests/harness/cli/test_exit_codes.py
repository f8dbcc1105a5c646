"""One exit-code rule for every command: 0 work done (partial failures counted last), 1 no usable answer at all,
2 bad input. Each case here exited 0 before (a CI job passed on a run with no answers)."""

from __future__ import annotations

import pytest

from harness.run_folder.run_dir import RunDir
from harness.testing.fake_api import BatchBehaviour, FakeAPIServer, Reply, cite_first_id
from tests.conftest import run_grace, small_bench, write


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 16, ["where is the gym", "is there a choir", "can I bring a dog",
                                                             "what is the wifi password"])


@pytest.fixture
def failing(monkeypatch):
    """The fake server answering every call with HTTP 500, as the OpenAI endpoint."""
    with FakeAPIServer(responder=lambda body: Reply.error(500, "upstream exploded")) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        yield srv


@pytest.fixture
def hung(monkeypatch):
    """The fake server accepting every call and answering none, as the OpenAI endpoint."""
    with FakeAPIServer(hang=True) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        yield srv


def last_line(out: str) -> str:
    return out.strip().splitlines()[-1]


def test_run_with_every_call_failing_exits_1_and_says_why(bench, tmp_path, failing):
    """Measured: 20 of 20 calls answered HTTP 500 after retries, exit 0."""
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "openai:m",
                          "-m", "baseline:top1", "--out", tmp_path / "run", "--max-attempts", "2", "--no-cache")
    assert code == 1, out
    assert len(failing.requests) == 40  # 20 questions, two attempts each
    assert "openai:m: no usable answer (server: " in out and "upstream exploded" in out
    assert "Traceback" not in out
    rows = [r for r in RunDir(tmp_path / "run").response_rows() if r["model"] == "openai:m"]
    assert len(rows) == 20 and all(r["error"] for r in rows)  # on file, asked again by the next run


def test_a_partial_failure_exits_0_with_the_count_printed_last(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        srv.enqueue(*[Reply.error(500)] * 3)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "openai:m",
                              "--out", tmp_path / "run", "--max-attempts", "1", "--concurrency", "1", "--no-cache")
    assert code == 0, out
    assert last_line(out).startswith("3 call(s) failed"), out


def test_a_batch_that_expired_unanswered_exits_1(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=cite_first_id, batch=BatchBehaviour(expire_after=0)) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        config = write(tmp_path / "board.toml", f'[[models]]\nspec = "openai:gpt-4o-mini"\nbase_url = '
                       f'"{srv.openai_base_url}"\nbatch = true\n')
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--out", tmp_path / "run", "--wait", "--poll-interval", "0.05", "--max-attempts", "1")
    assert code == 1, out
    assert "no usable answer (expired: " in out


def test_rerank_with_every_call_failing_exits_1_before_any_model_is_asked(bench, tmp_path, failing):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--rerank", "openai:r", "--out", tmp_path / "run", "--max-attempts", "1")
    assert code == 1, out
    assert "gave no usable ranking for any of 20 question(s) (20 call(s) failed" in out
    assert not RunDir(tmp_path / "run").responses.exists()


def test_labeler_with_every_call_failing_exits_1_and_keeps_the_file(bench, tmp_path, failing):
    code, out = run_grace("annotations", "suggest", bench / "gold.csv", "--kb", bench / "kb", "--labeler", "openai:l",
                          "-o", tmp_path / "s.csv", "--max-attempts", "1")
    assert code == 1, out
    assert "gave no usable answer for any of the 20 question(s)" in out
    assert (tmp_path / "s.csv").read_text().count("labeler_error") == 20


def test_generator_with_every_call_failing_exits_1(bench, tmp_path, failing):
    code, out = run_grace("gold", "generate", bench / "kb", "-m", "openai:g", "-o", tmp_path / "draft.csv",
                          "--max-attempts", "1")
    assert code == 1, out
    assert "the generator openai:g gave no usable question" in out


def test_judge_with_every_call_failing_exits_1(bench, tmp_path, failing):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--out", tmp_path / "run")
    assert code == 0, out
    code, out = run_grace("spotcheck", "run", tmp_path / "run", "--judge", "openai:j", "--max-attempts", "1")
    assert code == 1, out
    assert "gave no usable verdict" in out


def test_judge_against_a_server_that_never_answers_is_stopped_and_exits_1(bench, tmp_path, hung):
    """Before: each of the 20 verdicts was asked 6 times, 0.3 s each, one at a time, with back-off between."""
    import time

    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--out", tmp_path / "run")
    assert code == 0, out
    t0 = time.monotonic()
    code, out = run_grace("spotcheck", "run", tmp_path / "run", "--judge", "openai:j", "--timeout", "0.3")
    assert code == 1, out
    assert time.monotonic() - t0 < 15
    assert f"timeouts in a row from {hung.openai_base_url} (no answer within 0.3s" in out and "Stopping this model" in out
    assert "gave no usable verdict" in out and "Traceback" not in out
