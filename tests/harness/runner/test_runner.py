"""``grace run`` end to end: real SDK clients against the local fake API server, real cache, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.testing import FakeAPIServer, Reply, cite_first_id
from tests.conftest import ROOT, run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

FIELDS = {"question_id", "model", "repeat", "response", "retrieved_ids", "retrieval_scores", "prompt_hash", "input_tokens",
          "output_tokens", "cost_usd", "latency_ms", "cached", "error", "finish_reason"}


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 10, ["what is the capital of france", "can I bring my dog to work"])


def responses(run_dir):
    return [json.loads(x) for x in (run_dir / "responses.jsonl").read_text().splitlines()]


def test_baselines_offline_write_the_response_contract(bench):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                          "--model", "baseline:threshold", "--out", bench / "run", "--no-score")
    assert code == 0, out
    rows = responses(bench / "run")
    top1 = [r for r in rows if r["model"] == "baseline:top1"]
    assert len(top1) == 12 and all(FIELDS <= set(r) for r in rows)
    assert all(r["response"].endswith(f"[ID: {r['retrieved_ids'][0]}]") for r in top1)
    assert all(len(r["retrieved_ids"]) == 3 and r["error"] is None for r in rows)
    info = json.loads((bench / "run" / "run.json").read_text())
    assert info["status"] == "finished" and info["kb"]["kb_hash"] and info["gold"]["hash"]
    answered = {r["question_id"] for r in rows if r["model"] == "baseline:threshold"}
    assert answered == {r["question_id"] for r in top1}  # ranked on the same questions as every other model


def test_the_threshold_baseline_answers_every_question_with_a_cut_fitted_on_the_other_folds(bench):
    from harness.providers.baseline import fit_threshold
    from kb_builder.gold import read_gold

    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                          "--model", "baseline:threshold", "--out", bench / "run")
    assert code == 0, out
    assert "gold questions; its accuracy is over those only" not in out  # was: answered 8 of 12
    rows = {r["question_id"]: r for r in responses(bench / "run") if r["model"] == "baseline:threshold"}
    assert len(rows) == 12
    info = json.loads((bench / "run" / "run.json").read_text())
    thr = next(m for m in info["models"] if m["name"] == "baseline:threshold")
    fit = thr["calibration"]
    assert fit["method"] == "cross-fitting" and fit["seed"] == 0 and len(fit["folds"]) == 5
    folds = [f["questions"] for f in fit["folds"]]
    assert sorted(q for f in folds for q in f) == sorted(rows) and {len(f) for f in folds} == {2, 3}
    assert thr["options"]["threshold_folds"] == [f["threshold"] for f in fit["folds"]]
    gold = {g.question_id: g for g in read_gold(bench / "gold.csv")}

    def seen(q):  # (top retrieval score, must_refuse, top article is right), as the fit sees a question
        r = rows[q]
        return r["retrieval_scores"][0], gold[q].must_refuse, r["retrieved_ids"][0] in gold[q].expected_citations

    for fold in fit["folds"]:  # each cut is fitted on the other folds' questions only, and used on its own
        others = [q for f in folds if f != fold["questions"] for q in f]
        assert fold["threshold"] == round(fit_threshold([seen(q) for q in others]), 6)
        for q in fold["questions"]:
            assert rows[q]["response"].endswith("]") == (seen(q)[0] >= fold["threshold"]), q
    code, again = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model",
                            "baseline:threshold", "--out", bench / "run", "--no-score")
    assert code == 0 and "12 responses already done" in again  # the same folds on a resumed run
    code, fixed = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model",
                            "baseline:threshold", "--threshold", "0", "--out", bench / "fixed", "--no-score")
    assert code == 0 and len(responses(bench / "fixed")) == 12
    entry = json.loads((bench / "fixed" / "run.json").read_text())["models"][0]
    assert entry["options"] == {"threshold": 0.0} and "calibration" not in entry


def test_openai_compatible_server_by_base_url_with_cache_and_repeats(bench, monkeypatch):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        args = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:some-model",
                "--concurrency", "20", "--no-score"]
        code, out = run_grace(*args, "--out", bench / "run1", "--no-cache")
        assert code == 0, out
        assert len(srv.requests) == 12
        first = srv.requests[0].body
        assert first["model"] == "some-model" and first["messages"][0]["role"] == "system"
        assert "[ID: 1]" in first["messages"][1]["content"] or "[ID: " in first["messages"][1]["content"]
        rows = responses(bench / "run1")
        assert all(r["cached"] is False and r["input_tokens"] and r["latency_ms"] is not None for r in rows)
        # a new run directory re-uses the cache: no new calls, every row marked cached
        code, out = run_grace(*args, "--out", bench / "run2")
        assert code == 0 and len(srv.requests) == 12
        assert all(r["cached"] for r in responses(bench / "run2"))
        assert [r["response"] for r in responses(bench / "run2")] == [r["response"] for r in rows]
        # repeats are distinct cache entries: repeat 0 is cached, repeat 1 is called
        code, out = run_grace(*args, "--out", bench / "run3", "--repeats", "2")
        assert code == 0 and len(srv.requests) == 24
        rows3 = responses(bench / "run3")
        assert sorted({r["repeat"] for r in rows3}) == [0, 1] and len(rows3) == 24


def test_retry_after_then_success_and_500_then_success(bench, monkeypatch):
    write(bench / "one.csv", "question_id,question,expected_citations,must_refuse\nq1,how many sick days,1,false\n")
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        srv.enqueue(Reply.rate_limit(retry_after=1), Reply.error(500), Reply.ok("Ten days. [ID: 1]"))
        t0 = time.monotonic()
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "one.csv", "--model", "openai:m",
                              "--out", bench / "run-ok", "--no-score", "--no-cache")
        waited = time.monotonic() - t0
        assert code == 0, out
        (row,) = responses(bench / "run-ok")
        assert row["response"] == "Ten days. [ID: 1]" and row["attempts"] == 3 and row["error"] is None
        assert len(srv.requests) == 3 and waited >= 1.0  # Retry-After: 1 was honoured


def test_failed_calls_become_error_rows_and_are_retried_next_run(bench, monkeypatch):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        for _ in range(12):
            srv.enqueue(Reply.error(503, "busy"))
        args = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:m", "--out", bench / "run",
                "--no-score", "--concurrency", "1", "--max-attempts", "1"]
        code, out = run_grace(*args)
        assert code == 1, out  # no usable answer at all: a CI job must not pass on it
        rows = responses(bench / "run")
        assert len(rows) == 12 and all(r["error"]["kind"] == "server" and r["response"] is None for r in rows)
        assert "12 call(s) failed" in out
        code, out = run_grace(*args)
        assert code == 0 and "12 failed call(s) to retry" in out
        rows = responses(bench / "run")
        assert len(rows) == 12 and all(r["error"] is None and r["response"] for r in rows)  # compacted: one row per call


def test_auth_error_stops_the_model_early(bench, monkeypatch):
    with FakeAPIServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "wrong")
        srv.responder = lambda body: Reply.unauthorized()
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:m",
                              "--model", "baseline:top1", "--out", bench / "run", "--concurrency", "1")
        assert code == 1 and "the key was refused; stopping this model" in out  # exits non-zero (was 0)
        assert len(srv.requests) == 1
        rows = [r for r in responses(bench / "run") if r["model"] == "openai:m"]
        kinds = sorted(r["error"]["kind"] for r in rows)
        assert len(rows) == 12 and kinds == ["auth"] + ["not_tried"] * 11  # untried calls on file, retried next run
        report = json.loads((bench / "run" / "report.json").read_text())
        assert report["leaderboard"] == ["baseline:top1"]  # listed as failed, never ranked "0.0% [0, 0]"
        assert "openai:m" in report["failed_models"] and "openai:m" not in report["models"]
        assert "not ranked: openai:m" in out


def test_missing_key_fails_before_any_call(bench):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:gpt-4o-mini",
                          "--out", bench / "run")
    assert code == 2 and "OPENAI_API_KEY" in out and "Traceback" not in out
    assert not (bench / "run" / "responses.jsonl").exists()
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "nope:x", "--out", bench / "r")
    assert code == 2 and "unknown provider 'nope'" in out
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                          "--out", bench / "r", "--k", "0")
    assert code == 2 and "must be 1 or more" in out  # 0 is refused, not silently replaced by the default


def test_dry_run_estimates_without_calling(bench, monkeypatch):
    with FakeAPIServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:gpt-4o-mini",
                              "--model", "openai:unpriced", "--out", bench / "run", "--dry-run", "--repeats", "2")
        assert code == 0, out
        assert len(srv.requests) == 0
    line = next(ln for ln in out.splitlines() if "gpt-4o-mini" in ln)
    cells = [c.strip() for c in line.split("│") if c.strip()]
    assert cells[1] == "24" and cells[2] == "0" and int(cells[3].replace(",", "")) > 24 * 200
    assert float(cells[5]) > 0
    assert "unknown price" in out


def test_leaderboard_config_with_base_url_key_env_and_prices(bench, monkeypatch):
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("MY_LOCAL_KEY", "secret")
        cfg = write(bench / "board.toml", f"""
[run]
k = 2
[[models]]
spec = "openai:llama-local"
name = "llama"
base_url = "{srv.openai_base_url}"
api_key_env = "MY_LOCAL_KEY"
temperature = 0
max_tokens = 64
price_input = 1.0
price_output = 2.0
""")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", cfg,
                              "--out", bench / "run", "--no-score")
        assert code == 0, out
        assert srv.requests[0].headers["authorization"] == "Bearer secret"
        assert srv.requests[0].body["temperature"] == 0 and srv.requests[0].body["max_tokens"] == 64
    rows = responses(bench / "run")
    assert all(r["model"] == "llama" and len(r["retrieved_ids"]) == 2 for r in rows)
    r = rows[0]
    assert r["cost_usd"] == pytest.approx((r["input_tokens"] * 1.0 + r["output_tokens"] * 2.0) / 1e6)


@pytest.mark.slow  # a run interrupted and resumed in processes: 10 s
def test_ctrl_c_keeps_finished_responses_and_resume_calls_only_the_rest(bench):
    with FakeAPIServer(responder=cite_first_id, latency=1.0) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x", "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold", str(bench / "gold.csv"),
               "--model", "openai:m", "--out", str(bench / "run"), "--no-score", "--concurrency", "1"]
        # a shell's background job inherits SIGINT ignored (and Python then keeps it ignored): restore it
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        path = bench / "run" / "responses.jsonl"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not path.exists() or len(path.read_text().splitlines()) < 2):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 130, out.decode()
        kept = responses(bench / "run")
        assert 2 <= len(kept) < 12
        info = json.loads((bench / "run" / "run.json").read_text())
        assert info["status"] == "interrupted"
        calls_before = len(srv.requests)
        done = subprocess.run([*cmd[:-1], "12"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        rows = responses(bench / "run")
        assert len(rows) == 12 and len({(r["question_id"], r["repeat"]) for r in rows}) == 12
        # only calls that had not finished were made again (in-flight ones at Ctrl-C may be repeated)
        assert len(srv.requests) - calls_before <= 12 - len(kept) + 1  # at most the one in flight at Ctrl-C


def test_json_mode_and_a_user_template_are_recorded_and_scored(bench, monkeypatch):
    tmpl = write(bench / "my-template.txt", "=== system ===\nAnswer from the articles. Refusal: {{refusal}}\n"
                 "=== user ===\n{{articles}}\n\nQ: {{question}}\n")
    with FakeAPIServer(responder=lambda body: '{"answer": "Ten days.", "citation": "1"}') as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:m",
                              "--output-mode", "json", "--template", tmpl, "--out", bench / "run")
        assert code == 0, out
        body = srv.requests[0].body
        assert body["response_format"]["type"] == "json_schema"
        assert any(r.body["messages"][1]["content"].endswith("Q: how many sick days do I get (variant 0)") for r in srv.requests)
    info = json.loads((bench / "run" / "run.json").read_text())
    (name, sha), = info["templates"].items()
    assert name == "my-template" and info["config"]["output_mode"] == "json"
    assert all(r["template_hash"] == sha for r in responses(bench / "run"))
    scores = [json.loads(x) for x in (bench / "run" / "scores.jsonl").read_text().splitlines()]
    assert {s["extraction"] for s in scores} == {"json"} and all(s["cited_ids"] == ["1"] for s in scores)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:m",
                          "--template", write(bench / "bad.txt", "no sections here"), "--out", bench / "run2")
    assert code == 2 and "=== user ===" in out


def test_one_leaderboard_across_openai_anthropic_and_google(bench, monkeypatch):
    """Three vendors' real SDKs in one run, each against the local server in its own wire format."""
    with FakeAPIServer(responder=cite_first_id) as srv:
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(var, "k")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        cfg = write(bench / "board.toml", f"""
[[models]]
spec = "openai:gpt-4o-mini"
base_url = "{srv.openai_base_url}"
[[models]]
spec = "anthropic:claude-haiku-4-5"
[[models]]
spec = "google:gemini-2.0-flash"
base_url = "{srv.google_base_url}"
""")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", cfg,
                              "--out", bench / "run")
        assert code == 0, out
        apis = {r.api for r in srv.requests}
        assert apis == {"openai", "anthropic", "google"} and len(srv.requests) == 36
    report = json.loads((bench / "run" / "report.json").read_text())
    assert set(report["leaderboard"]) == {"openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "google:gemini-2.0-flash"}
    for name, m in report["models"].items():
        assert m["n"] == 12 and m["error_count"] == 0, name
        assert m["cost"]["total_usd"] is not None and m["cost"]["total_usd"] > 0  # list prices known for all three


def _many_questions(bench, n: int):
    lines = ["question_id,question,expected_citations,must_refuse"]
    lines += [f"q{i},how many sick days do I get ({i}),1,false" for i in range(n)]
    return write(bench / "many.csv", "\n".join(lines) + "\n")


def test_a_server_that_accepts_and_never_answers_stops_the_model_like_a_dead_one(bench, monkeypatch):
    """Measured before: --timeout 3 took 83 s and 30 requests for 5 questions (6 attempts each, one at a time);
    with the local default timeout, 0 of 5 calls answered after 700 s. Now it stops as a refused connection does."""
    with FakeAPIServer(hang=True) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        gold = _many_questions(bench, 40)
        t0 = time.monotonic()
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", gold, "--model", "openai:stuck", "--model",
                              "baseline:top1", "--out", bench / "run", "--concurrency", "4", "--timeout", "0.3")
        took = time.monotonic() - t0
        assert code == 1, out
        assert (f"openai:stuck: 3 timeouts in a row from {srv.openai_base_url} (no answer within 0.3s, none answered "
                "yet); is the server stuck, or slower than --timeout? Stopping this model") in out
        assert took < 10, took  # three timeouts, and that is all: seconds, not hours
        stuck = [r for r in responses(bench / "run") if r["model"] == "openai:stuck"]
        assert len(stuck) == 40 and all(r["error"] for r in stuck)
        # every attempt on file is one request: the SDK adds no retries of its own (max_retries=0); a server on this
        # machine that does not say its slots gets its first calls one at a time (server_queue measures them), so
        # three calls time out alone, one after the other, and the third stops the model: three requests
        assert len(srv.requests) == sum(r["attempts"] for r in stuck) == 3
        assert srv.hung == 4  # and the slot probe's GET /props, given up after the (short) timeout, not 3 s twice
        assert sum(r["error"]["kind"] == "not_tried" for r in stuck) == 37
    report = json.loads((bench / "run" / "report.json").read_text())
    assert report["leaderboard"] == ["baseline:top1"] and "openai:stuck" in report["failed_models"]
    info = json.loads((bench / "run" / "run.json").read_text())
    counts = info["counts"]["openai:stuck"]
    assert info["status"] == "failed" and counts["not_tried"] == 37 and counts["timeouts"] == 3
    assert counts["stopped"].startswith("openai:stuck: 3 timeouts in a row")


def test_a_run_stopped_by_timeouts_keeps_what_was_answered_and_the_next_run_asks_only_the_rest(bench, monkeypatch):
    answered = []

    def then_hang(body):  # answers five calls, then the server stops answering
        answered.append(1)
        if len(answered) >= 5:
            srv.hang = True
        return cite_first_id(body)

    with FakeAPIServer(responder=then_hang) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        args = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:m", "--out", bench / "run",
                "--no-score", "--concurrency", "4", "--timeout", "0.3"]
        code, out = run_grace(*args)
        assert code == 1 and "timeouts in a row" in out and "sent one at a time); is the server stuck" in out, out
        kept = [r for r in responses(bench / "run") if r["response"]]
        assert len(kept) == len(answered) >= 5  # every answer the server gave is on file
        srv.hang, srv.responder = False, cite_first_id
        srv.clear()
        code, out = run_grace(*args)
        assert code == 0, out
        assert f"{len(kept)} responses already done, {12 - len(kept)} failed call(s) to retry" in out
        assert len(srv.requests) == 12 - len(kept)  # nothing answered is asked again
        rows = responses(bench / "run")
        assert len(rows) == 12 and all(r["response"] and r["error"] is None for r in rows)
