"""``http:`` systems: a deployed bot behind an HTTP endpoint (the fake server's ``/bot/answer``), end to end.

The bot is a small RAG service of its own (word-overlap retrieval over the sample
KB's articles file) answering in its own JSON shape; grace reads it through the
``[models.http]`` table's JMESPath paths with a real httpx client. Nothing of
grace's is mocked.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import grace
from harness.core.errors import GraceError
from harness.testing.fake_api import FakeAPIServer, Reply, bot_answer
from tests.conftest import ROOT, run_grace, sample_bench

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

N_QUESTIONS = 12
SECRET = "tok-9f8e7d6c5b4a-very-secret"


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("httpsys"), N_QUESTIONS)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@pytest.fixture
def bot(bench, monkeypatch):
    """The deployed bot: it retrieves for itself and answers {"data": {"text", "sources"}, "debug": {...}}."""
    articles = [json.loads(line) for line in (bench / "kb" / "articles.jsonl").open(encoding="utf-8")]

    def answer(body):
        if "q" not in (body or {}):
            return bot_answer(body)
        asked = words(body["q"])
        hits = sorted(articles, key=lambda a: (-len(asked & words(a["title"] + " " + a["text"])), a["id"]))[:4]
        return Reply.json({"data": {"text": f"It is covered in {hits[0]['title']}.", "sources": [{"id": hits[0]["id"]}]},
                           "debug": {"retrieved": [{"id": h["id"], "score": 1.0} for h in hits]},
                           "usage": {"prompt": 120, "completion": 9}})

    monkeypatch.setenv("BOT_TOKEN", SECRET)
    with FakeAPIServer(responder=answer) as srv:
        yield srv


def board(tmp: Path, srv: FakeAPIServer, **http: str) -> Path:
    """A leaderboard TOML with the bot as one model."""
    table = {"url": srv.bot_url, "answer": "data.text", "citations": "data.sources[].id",
             "retrieved": "debug.retrieved[].id", "input_tokens": "usage.prompt", "output_tokens": "usage.completion",
             **http}
    lines = ["[[models]]", 'spec = "http:support-bot"', "timeout = 5", "", "[models.http]",
             'headers = { Authorization = "Bearer ${BOT_TOKEN}", X-Team = "support" }',
             'not_secret = ["X-Team"]  # a team name, recorded as written',
             'body = { q = "{{question}}", id = "{{question_id}}", meta = { lang = "en", source = "grace" } }']
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items() if value is not None]  # None: no key
    path = tmp / "board.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(bench, out, config=None, models=(), **options):
    return grace.run(kb=bench / "kb", gold=bench / "gold.csv", models=list(models), config=config, out=out, **options)


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "responses.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_deployed_bot_runs_end_to_end(bench, bot, tmp_path):
    model = "http:support-bot"
    result = run(bench, tmp_path / "run", board(tmp_path, bot), ["baseline:top1"])
    assert result.counts[model]["done"] == N_QUESTIONS and result.errors == 0
    sent = bot.requests[0]
    assert sent.path == "/bot/answer" and sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["x-team"] == "support"
    assert set(sent.body) == {"q", "id", "meta"} and sent.body["meta"] == {"lang": "en", "source": "grace"}
    mine = [r for r in rows(tmp_path / "run") if r["model"] == model]
    for r in mine:
        # the bot was sent no articles: nothing of grace's retrieval is recorded as shown to it
        assert r["retrieved_ids"] == [] and len(r["system_retrieved"]) == 4
        assert r["citations"] == r["system_retrieved"][:1] and r["input_tokens"] == 120 and r["output_tokens"] == 9
    report = result.run.report.models[model]
    assert report.retrieval_source == "system" and report.retrieval.k == 4
    scores = [s for s in result.run.scores() if s["model"] == model]
    assert all(s["retrieved_ids"] == next(r["system_retrieved"] for r in mine if r["question_id"] == s["question_id"])
               for s in scores)
    assert {s["outcome"] for s in scores} <= {"correct", "wrong_citation", "answered_unanswerable"}
    md = (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")
    assert "Own retrieval" in md and "(k=4)" in md

    # a re-run in a new folder is answered from the cache: the bot is not asked again
    before = len(bot.requests)
    again = run(bench, tmp_path / "again", board(tmp_path, bot))
    assert again.counts[model]["cached"] == N_QUESTIONS and len(bot.requests) == before
    comparison = grace.compare_runs(tmp_path / "run", tmp_path / "again")
    assert [m.model for m in comparison.models] == [model] and comparison.models[0].delta == 0

    # the secret is in no file of either run folder, nor in the cache
    import os

    for folder in (tmp_path / "run", tmp_path / "again", Path(os.environ["GRACE_CACHE_DIR"])):
        for path in folder.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
    info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    entry = next(m for m in info["models"] if m["name"] == model)
    assert entry["endpoint"] == bot.bot_url and "${BOT_TOKEN}" in json.dumps(entry["options"])


def test_a_bot_sent_grace_articles_is_judged_against_them(bench, bot, tmp_path):
    toml = board(tmp_path, bot, answer="answer", citations="citations")
    text = toml.read_text(encoding="utf-8").replace('body = { q = "{{question}}"', 'body = { articles = "{{articles}}"')
    toml.write_text(text.replace('retrieved = "debug.retrieved[].id"\n', ""), encoding="utf-8")
    result = run(bench, tmp_path / "run", toml)
    shown = {r["question_id"]: r["retrieved_ids"] for r in rows(tmp_path / "run")}
    # calls run concurrently: match each request to its row by the question ID the body carries
    assert len(bot.requests) == len(shown)
    for request in bot.requests:
        sent = request.body["articles"]
        assert [a["id"] for a in sent] == shown[request.body["id"]] and set(sent[0]) == {"id", "title", "text", "score"}
    assert all("system_retrieved" not in r and len(r["retrieved_ids"]) == 3 for r in rows(tmp_path / "run"))
    assert result.run.report.models["http:support-bot"].retrieval_source is None


def test_failures_are_error_rows_retries_and_stops(bench, bot, tmp_path):
    toml = board(tmp_path, bot)
    bot.enqueue(Reply.not_json(), Reply.json({"reply": "hello", "trace": 1}), Reply.rate_limit(retry_after=0.4),
                Reply.error(500))
    t0 = time.monotonic()
    result = run(bench, tmp_path / "run", toml, concurrency=1, max_attempts=3, no_cache=True)
    assert time.monotonic() - t0 >= 0.4  # Retry-After was honoured
    errors = {r["question_id"]: r["error"] for r in rows(tmp_path / "run") if r["error"]}
    assert list(errors.values()) == [
        {"kind": "bad_response", "message": "the reply is not JSON (text/html, HTTP 200): "
         "'<html><body>502 Bad Gateway</body></html>'", "attempts": 1, "status": 200, "retryable": False},
        {"kind": "bad_response", "message": "reply path answer = 'data.text' matched nothing; its top-level keys: "
         "reply, trace", "attempts": 1, "status": None, "retryable": False}]
    third = next(r for r in rows(tmp_path / "run") if r["question_id"] == "q003")
    assert third["attempts"] == 3 and third["error"] is None  # 429, then 500, then the answer
    assert result.errors == 2

    # the next run asks only the two failed questions again
    asked = len(bot.requests)
    again = run(bench, tmp_path / "run", toml)
    assert again.resumed["failed"] == 2 and len(bot.requests) == asked + 2 and again.errors == 0


def test_a_refused_key_stops_the_model_and_a_slow_bot_times_out(bench, bot, tmp_path):
    toml = board(tmp_path, bot)
    bot.enqueue(Reply.unauthorized())
    stopped = run(bench, tmp_path / "run", toml, concurrency=1)
    assert "key was refused" in stopped.stopped["http:support-bot"]
    assert len(bot.requests) == 1  # nothing more was sent

    bot.clear()
    bot.enqueue(Reply.slow(3))
    toml.write_text(toml.read_text(encoding="utf-8").replace("timeout = 5", "timeout = 0.5"), encoding="utf-8")
    slow = run(bench, tmp_path / "slow", toml, concurrency=1, max_attempts=1, no_cache=True)
    first = rows(tmp_path / "slow")[0]
    assert first["error"]["kind"] == "timeout" and slow.errors >= 1


def test_the_command_line_takes_a_bare_url(bench, tmp_path):
    with FakeAPIServer(responder=bot_answer) as srv:
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", f"http:{srv.bot_url}",
                              "--out", tmp_path / "run")
        assert code == 0, out
        assert all(set(r.body) == {"question", "question_id"} for r in srv.requests) and len(srv.requests) == N_QUESTIONS
    assert all(r["response"].startswith("I don't have enough information") for r in rows(tmp_path / "run"))


@pytest.mark.parametrize(("http", "words"), [
    ('url = "ftp://bot"', ["http.url", "must start with http:// or https://"]),
    ('answer = "data.[oops"', ["key 'http.answer'", "is not a JMESPath expression"]),
    ('body = { q = "{{questoin}}" }', ["unknown placeholder {{questoin}}", "{{question}}"]),
    ('headers = { Authorization = "Bearer abc123" }', ["header 'Authorization' has its value written out", '"Bearer ${AUTHORIZATION}"']),
    ('method = "DELETE"', ["http.method"]),
    ('anwser = "x"', ["unknown key 'http.anwser'"]),
])
def test_bad_tables_are_clear_errors_before_any_call(bench, tmp_path, http, words):
    url = 'url = "http://127.0.0.1:9/bot/answer"'
    lines = ["[[models]]", 'spec = "http:bot"', "", "[models.http]", http if http.startswith("url") else url]
    if not http.startswith("url"):
        lines.append(http)
    toml = tmp_path / "board.toml"
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(GraceError) as info:
        run(bench, tmp_path / "run", toml)
    for word in words:
        assert word in str(info.value)
    assert re.search(rf"{re.escape(str(toml))}(:\d+)?: \[\[models\]\] #1", str(info.value))  # its line, if known
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                          "--out", tmp_path / "cli")
    assert code != 0 and "Traceback" not in out


def test_a_missing_variable_and_a_misplaced_table_are_refused(bench, tmp_path, monkeypatch):
    monkeypatch.delenv("BOT_TOKEN", raising=False)
    toml = tmp_path / "board.toml"
    toml.write_text('[[models]]\nspec = "http:bot"\n[models.http]\nurl = "http://127.0.0.1:9/bot/answer"\n'
                    'headers = { Authorization = "Bearer ${BOT_TOKEN}" }\n', encoding="utf-8")
    with pytest.raises(GraceError, match=r"set the environment variable BOT_TOKEN"):
        run(bench, tmp_path / "run", toml)
    toml.write_text('[[models]]\nspec = "baseline:top1"\n[models.http]\nurl = "http://127.0.0.1:9/x"\n', encoding="utf-8")
    with pytest.raises(GraceError, match=r"key 'http' is for an http: system"):
        run(bench, tmp_path / "run", toml)
    toml.write_text('[[models]]\nspec = "http:bot"\n', encoding="utf-8")
    with pytest.raises(GraceError, match=r"needs its endpoint"):
        run(bench, tmp_path / "run", toml)


def test_resume_after_a_kill_asks_the_bot_only_the_missing_questions(bench, bot, tmp_path):
    """A `grace run` killed mid-way keeps every answer it was paid for; the next run asks the bot only the rest."""
    import os
    import subprocess
    import sys
    import time

    out, toml = tmp_path / "run", board(tmp_path, bot)
    bot.latency = 0.2
    cmd = [sys.executable, "-c", "from harness.cli.app import main; main()", "run", "--kb", str(bench / "kb"),
           "--gold", str(bench / "gold.csv"), "--config", str(toml), "--out", str(out), "--concurrency", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ((out / "responses.jsonl").exists() and len(rows(out)) >= 3):
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.wait(30)
    done = {r["question_id"] for r in rows(out) if not r["error"]}
    assert 3 <= len(done) < N_QUESTIONS
    bot.latency, before = 0.0, len(bot.requests)
    resumed = run(bench, out, toml)
    asked = [r.body["id"] for r in bot.requests[before:]]
    assert not set(asked) & done and resumed.resumed["done"] == len(done)
    assert len({r["question_id"] for r in rows(out) if not r["error"]}) == N_QUESTIONS


def test_a_reply_over_the_size_cap_is_an_error_row_and_never_recorded(bench, bot, tmp_path):
    """Issue 37: a 200 MB reply took 1.3 GB for one call and went whole into responses.jsonl and the cache. A reply
    is read streaming up to max_reply_mb (4 MB by default): a longer one, said by its Content-Length or found while
    reading a chunked one, is an error row naming the cap and how to raise it; a raised cap reads it."""
    import os

    big = 50 << 20  # generated by the fake bot while it is sent
    bot.enqueue(Reply.large(big, status=500), Reply.large(big), Reply.large(big, chunked=True), Reply.large(5 << 20))
    run(bench, tmp_path / "run", board(tmp_path, bot, answer="answer", citations=None, retrieved=None),
        concurrency=1, max_attempts=1)
    got = {r["question_id"]: r for r in rows(tmp_path / "run")}
    over = [got["q002"]["error"], got["q003"]["error"], got["q004"]["error"]]
    assert over[0]["message"].startswith(f"the reply is {big:,} bytes, over the limit of 4 MB (HTTP 200)")
    assert over[1]["message"].startswith(f"the reply is more than {4 << 20:,} bytes, over the limit of 4 MB")
    assert all(e["kind"] == "bad_response" and "max_reply_mb" in e["message"] and not e["retryable"] for e in over)
    # a huge error page is cut, not refused: its status still says what failed and whether to retry
    server = got["q001"]["error"]
    assert server["kind"] == "server" and server["status"] == 500 and len(server["message"]) < 1_000
    assert (tmp_path / "run" / "responses.jsonl").stat().st_size < 100_000  # nothing of the replies is recorded
    cache = Path(os.environ["GRACE_CACHE_DIR"])
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) < 1_000_000

    # the cap is per model: raised, the 5 MB reply is read whole
    bot.enqueue(Reply.large(5 << 20))
    toml = board(tmp_path, bot, answer="answer", citations=None, retrieved=None, max_reply_mb=6)
    run(bench, tmp_path / "raised", toml, concurrency=1, max_attempts=1, no_cache=True)
    first = next(r for r in rows(tmp_path / "raised") if r["question_id"] == "q001")
    assert first["error"] is None and len(first["response"]) == (5 << 20) - 14


def test_a_bots_citation_settings_default_to_its_own_references_and_never_re_ask_it(bench, bot, tmp_path):
    """Issue 39: a deployed bot cites its own documents, several per answer; its settings are recorded in run.json and,
    being scoring-only, a run with other settings asks the bot nothing again."""
    model = "http:support-bot"
    run(bench, tmp_path / "run", board(tmp_path, bot))

    def entry() -> dict:
        info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
        return next(m for m in info["models"] if m["name"] == model)["citations"]

    assert (entry()["scoring"], entry()["reads"]) == ("multi", "references")
    asked = len(bot.requests)
    toml = board(tmp_path, bot)
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[models.citations]\nscoring = "single"\nreads = "ids"\n',
                    encoding="utf-8")
    result = run(bench, tmp_path / "run", toml)
    assert result.resumed["done"] == N_QUESTIONS and len(bot.requests) == asked
    assert (entry()["scoring"], entry()["reads"]) == ("single", "ids")
