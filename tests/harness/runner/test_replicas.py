"""A model on several endpoints (replicas): calls spread over them, one that dies or answers no answer is dropped and
named, none asked twice.

Real parts throughout: ``grace run`` with a leaderboard TOML, the openai SDK, three fake API servers, one of which
dies mid-run as a crashed server does (what is in flight cut off, new connections refused).
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from harness.providers.breakers import BREAKER_AFTER
from harness.testing import FakeAPIServer, Reply, cite_first_id
from tests.conftest import run_grace, small_bench, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

QUESTIONS = 60


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, QUESTIONS, [])


def toml(path, urls, extra=""):
    listed = ", ".join(f'"{u}"' for u in urls)
    return write(path, f'[[models]]\nspec = "openai:replicated"\napi_key_env = "FAKE_KEY"\nbase_url = [{listed}]\n{extra}')


def rows_of(run):
    return [json.loads(line) for line in (run / "responses.jsonl").read_text().splitlines()]


def test_three_replicas_one_dies_mid_run_every_question_answered_once_and_the_dead_one_named(bench, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    lock, seen = threading.Lock(), {"n": 0}
    with FakeAPIServer(latency=0.05, responder=cite_first_id) as a, FakeAPIServer(latency=0.05) as b, \
            FakeAPIServer(latency=0.05, responder=cite_first_id) as c:

        def dies_after_ten(body):
            with lock:
                seen["n"] += 1
                if seen["n"] == 10:
                    b.die()
            return cite_first_id(body)

        b.responder = dies_after_ten
        urls = [a.openai_base_url, b.openai_base_url, c.openai_base_url]
        config = toml(bench / "models.toml", urls)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--concurrency", "9", "--out", bench / "run", "--no-score")
        served = {u: len(s.requests) for u, s in zip(urls, (a, b, c), strict=True)}
    assert code == 0, out
    rows = rows_of(bench / "run")
    assert Counter(r["question_id"] for r in rows) == Counter({f"q{i}": 1 for i in range(QUESTIONS)})
    assert all(r["error"] is None and "[ID:" in r["response"] for r in rows)  # every question answered, once
    assert f"replica {urls[1]} dropped" in out and "going on with 2 of 3 replicas" in out
    assert served[urls[0]] > 10 and served[urls[2]] > 10  # the live two took the rest
    entry = json.loads((bench / "run" / "run.json").read_text())["models"][0]
    assert entry["endpoint"] == urls[0].rstrip("/")
    replicas = {r["url"]: r for r in entry["replicas"]}
    assert list(replicas) == urls
    assert "connection failures in a row" in replicas[urls[1]]["dropped"]
    assert replicas[urls[0]]["dropped"] is None and replicas[urls[2]]["dropped"] is None
    assert sum(r["answered"] for r in replicas.values()) == QUESTIONS


def test_calls_go_to_the_replica_with_the_fewest_in_flight_and_the_cache_key_ignores_which_answered(bench, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeAPIServer(latency=0.02, responder=cite_first_id) as fast, \
            FakeAPIServer(latency=0.3, responder=cite_first_id) as slow:
        config = toml(bench / "models.toml", [fast.openai_base_url, slow.openai_base_url])
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--concurrency", "4", "--out", bench / "run", "--no-score")
        assert code == 0, out
        assert len(fast.requests) + len(slow.requests) == QUESTIONS
        assert len(fast.requests) > 3 * len(slow.requests) > 0  # the slow one holds its calls longer, so gets fewer
        # the same model on one endpoint (the first replica) is answered from the cache: the key names the model's
        # first base_url, never the replica that answered
        single = write(bench / "one.toml", f'[[models]]\nspec = "openai:replicated"\napi_key_env = "FAKE_KEY"\n'
                                            f'base_url = "{fast.openai_base_url}"\n')
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", single,
                              "--out", bench / "again", "--no-score")
        assert code == 0, out
        assert len(fast.requests) + len(slow.requests) == QUESTIONS  # nothing asked again
    assert all(r["cached"] for r in rows_of(bench / "again"))


def test_when_every_replica_is_down_the_model_stops_as_one_endpoint_would(bench, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    dead = [FakeAPIServer().start() for _ in range(2)]
    urls = [s.openai_base_url for s in dead]
    for s in dead:
        s.stop()  # nothing listens there any more
    config = toml(bench / "models.toml", urls)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--concurrency", "4", "--out", bench / "run", "--no-score", "--max-attempts", "2")
    assert "connection failures in a row" in out and "Stopping this model" in out
    entry = json.loads((bench / "run" / "run.json").read_text())["models"][0]
    assert sorted(r["dropped"] is None for r in entry["replicas"]) == [False, True]  # the last is never dropped
    assert all(r["error"] for r in rows_of(bench / "run"))


@pytest.mark.parametrize(("value", "said"), [
    ("[]", "empty array"),
    ('["http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1"]', "twice"),
    ('["http://127.0.0.1:1/v1", 3]', "a URL or an array of URLs"),
])
def test_a_bad_base_url_list_is_refused_with_the_key_and_the_fix(bench, value, said):
    config = write(bench / "models.toml", f'[[models]]\nspec = "openai:m"\nbase_url = {value}\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--out", bench / "run", "--dry-run")
    assert code != 0 and "base_url" in out and said in out and "Traceback" not in out


def test_replicas_of_a_model_that_does_not_call_base_url_are_refused(bench):
    config = write(bench / "models.toml", '[[models]]\nspec = "baseline:top1"\n'
                                          'base_url = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--out", bench / "run", "--dry-run")
    assert code != 0 and "does not send its calls to base_url" in out


def test_batch_with_replicas_is_refused(bench):
    config = toml(bench / "models.toml", ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"], "batch = true\n")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                          "--out", bench / "run", "--dry-run")
    assert code != 0 and "replicas" in out and "batch" in out


def test_a_one_model_command_takes_replicas_comma_separated_in_base_url(monkeypatch):
    from harness.providers.replicas import Replicas
    from harness.runner.model_options import ModelOptions, ready_model

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    spec, provider = ready_model("openai:judge", role="judge",
                                 options=ModelOptions(base_url="http://127.0.0.1:1/v1, http://127.0.0.1:2/v1"))
    assert spec.base_url == "http://127.0.0.1:1/v1" and spec.replicas == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    assert isinstance(provider, Replicas) and [m.url for m in provider.members] == spec.replicas
    spec, provider = ready_model("openai:judge", role="judge", options=ModelOptions(base_url="http://127.0.0.1:1/v1"))
    assert spec.replicas == [] and not isinstance(provider, Replicas)


def test_a_replica_that_accepts_and_never_answers_is_dropped_while_the_other_answers(bench, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeAPIServer(latency=0.05, responder=cite_first_id) as ok, FakeAPIServer(hang=True) as stuck:
        urls = [ok.openai_base_url, stuck.openai_base_url]
        config = toml(bench / "models.toml", urls)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--concurrency", "4", "--timeout", "0.5", "--out", bench / "run", "--no-score")
    assert code == 0, out
    rows = rows_of(bench / "run")
    assert Counter(r["question_id"] for r in rows) == Counter({f"q{i}": 1 for i in range(QUESTIONS)})
    assert all(r["error"] is None for r in rows)
    assert f"replica {urls[1]} dropped after 3 timeouts in a row" in out
    assert "one call at a time" not in out  # the model's own timeout fallback never saw the replica's timeouts
    info = json.loads((bench / "run" / "run.json").read_text())
    assert info["counts"]["openai:replicated"]["in_flight_limit"] is None
    dropped = {r["url"]: r["dropped"] for r in info["models"][0]["replicas"]}
    assert dropped[urls[0]] is None and "timeouts in a row" in dropped[urls[1]]


BROKEN = {  # a replica whose every call gets no answer, the three ways a broken server or the proxy before it says so
    "HTTP 500": (lambda body: Reply.error(500, "upstream model crashed"), "server errors"),
    "garbage JSON": (lambda body: Reply.malformed(), "unreadable replies"),
    "an HTML page": (lambda body: Reply.not_json(), "unreadable replies"),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_replica_that_answers_no_answer_is_dropped_named_and_its_questions_answered_by_the_live_one(bench, monkeypatch,
                                                                                                     broken):
    responder, said = BROKEN[broken]
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeAPIServer(latency=0.05, responder=cite_first_id) as ok, FakeAPIServer(responder=responder) as bad:
        urls = [ok.openai_base_url, bad.openai_base_url]
        config = toml(bench / "models.toml", urls)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--concurrency", "4", "--out", bench / "run", "--no-score")
        to_ok, to_bad = len(ok.requests), len(bad.requests)
    assert code == 0, out
    rows = rows_of(bench / "run")
    assert Counter(r["question_id"] for r in rows) == Counter({f"q{i}": 1 for i in range(QUESTIONS)})
    assert all(r["error"] is None and "[ID:" in r["response"] for r in rows)
    assert to_ok == QUESTIONS  # each question asked of the live replica once: none lost, none asked twice there
    # dropped at the breaker: BREAKER_AFTER failures in a row, plus what was in flight, or sent before the live one
    # had answered anything (at most one call per worker)
    assert BREAKER_AFTER <= to_bad <= BREAKER_AFTER + 4
    assert f"replica {urls[1]} dropped after" in out and said in out and "going on with 1 of 2 replicas" in out
    info = json.loads((bench / "run" / "run.json").read_text())
    replicas = {r["url"]: r for r in info["models"][0]["replicas"]}
    assert replicas[urls[0]] == {"url": urls[0], "answered": QUESTIONS, "dropped": None}
    assert replicas[urls[1]]["answered"] == 0 and said in replicas[urls[1]]["dropped"]
    assert info["counts"]["openai:replicated"]["stopped"] is None
    code, out = run_grace("score", bench / "run" / "responses.jsonl", "--gold", bench / "gold.csv", "--kb",
                          bench / "kb", "--out", bench / "run")
    assert code == 0, out
    warnings = json.loads((bench / "run" / "report.json").read_text())["warnings"]
    assert [w for w in warnings if "was dropped" in w] == [
        f"openai:replicated: replica {urls[1]} was dropped ({replicas[urls[1]]['dropped']}); the other replicas "
        "answered its questions"]


def test_when_every_replica_answers_no_answer_none_is_dropped_and_the_model_fails_as_on_one_endpoint(bench, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeAPIServer(responder=lambda body: Reply.error(500)) as a, \
            FakeAPIServer(responder=lambda body: Reply.error(500)) as b:
        config = toml(bench / "models.toml", [a.openai_base_url, b.openai_base_url])
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", config,
                              "--concurrency", "10", "--out", bench / "run", "--no-score", "--max-attempts", "2")
        sent = len(a.requests) + len(b.requests)
    assert "dropped" not in out
    rows = rows_of(bench / "run")
    assert len(rows) == QUESTIONS and all(r["error"]["kind"] == "server" for r in rows)
    assert sent == 2 * QUESTIONS  # each call's two attempts, as on one endpoint: no extra call for being replicated
    entry = json.loads((bench / "run" / "run.json").read_text())["models"][0]
    assert all(r["dropped"] is None for r in entry["replicas"])
