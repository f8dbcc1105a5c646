"""``grace export --to inspect`` of systems: a sample shows what the system received, never grace's prompt in its place.

A ``python:`` system writes down the request it was called with; an ``http:`` bot on the fake server is recorded by
the server (``srv.requests``); an imported production log had nothing sent by grace. Each log is read back with
inspect_ai's own reader and checked against those records. A failed call's sample carries its message, and a model
name of 300 characters (with ``/``, ``:`` and accents) exports under a short file name, its full name in the log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grace
from harness.testing.fake_api import FakeAPIServer, Reply
from tests.conftest import run_grace, sample_bench, write

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect_ai is not installed (pip install 'grace-eval[inspect]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'grace-eval[parquet]')")

N_QUESTIONS = 6
OWN = ["5", "4"]  # what the systems say they retrieved: never what grace showed them
SYSTEM = '''
import json
import os

from grace import SystemAnswer


def answer(request):
    with open(os.environ["SYSTEM_LOG"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"question_id": request.question_id, "question": request.question,
                             "articles": [a.id for a in request.articles], "k": request.k,
                             "language": request.language, "repeat": request.repeat,
                             "messages": request.messages}) + "\\n")
    if request.question_id == "q003":
        raise KeyError("index shard 7 is missing")
    return SystemAnswer(answer="It is in the handbook. [ID: 5]", retrieved=["5", "4"])
'''


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("inspect-systems"), N_QUESTIONS)


def _logs(run: Path, dest: Path) -> dict[str, object]:
    code, out = run_grace("export", run, "--to", "inspect", "--dest", dest)
    assert code == 0 and "Traceback" not in out, out
    return {(log := inspect_log.read_eval_log(i.name)).eval.model_args["grace_model"]: log
            for i in inspect_log.list_eval_logs(str(dest))}


def _rows(run: Path) -> dict[str, dict]:
    return {r["question_id"]: r for r in map(json.loads, (run / "responses.jsonl").read_text().splitlines())}


def test_a_python_systems_sample_is_the_request_it_was_called_with(bench, tmp_path, monkeypatch):
    write(tmp_path / "my_system.py", SYSTEM)
    monkeypatch.setenv("SYSTEM_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.chdir(tmp_path)
    model = "python:my_system.py:answer"
    grace.run(kb=bench / "kb", gold=bench / "gold.csv", models=[model], out=tmp_path / "run", max_attempts=1)
    called = {c["question_id"]: c for c in map(json.loads, (tmp_path / "calls.jsonl").read_text().splitlines())}
    log = _logs(tmp_path / "run", tmp_path / "logs")[model]
    rows = _rows(tmp_path / "run")
    assert len(log.samples) == N_QUESTIONS
    for sample in log.samples:
        given = json.loads(sample.input)
        asked = called[sample.id]
        assert {k: given[k] for k in ("question_id", "question", "k", "language", "repeat", "messages")} == {
            k: asked[k] for k in ("question_id", "question", "k", "language", "repeat", "messages")}
        assert [a["id"] for a in given["articles"]] == asked["articles"]  # grace's articles, not the system's own
        assert sample.messages[0].role == "user" and sample.messages[0].text == sample.input
        assert [r["id"] for r in sample.metadata["retrieved"]] == asked["articles"]
        if sample.id == "q003":  # the function raised: the sample's error says what, not only the kind
            assert "index shard 7 is missing" in sample.error.message
            assert rows["q003"]["error"]["kind"] in sample.error.message
            assert "system_retrieved" not in sample.metadata
        else:
            assert sample.error is None
            assert [r["id"] for r in sample.metadata["system_retrieved"]] == OWN
            assert sample.messages[-1].text == rows[sample.id]["response"]


def test_an_http_bots_sample_is_the_request_it_was_sent(bench, tmp_path, monkeypatch):
    def bot(body):
        if body.get("id") == "q002":
            return Reply.error(500, "the index is rebuilding")
        return Reply.json({"text": f"See the handbook. [ID: {OWN[0]}]", "retrieved": OWN})

    monkeypatch.setenv("BOT_TOKEN", "tok-never-in-a-log")
    with FakeAPIServer(responder=bot) as srv:
        write(tmp_path / "board.toml", "\n".join([
            "[[models]]", 'spec = "http:bot"', "", "[models.http]", f'url = "{srv.bot_url}"',
            'headers = { Authorization = "Bearer ${BOT_TOKEN}" }',
            'body = { q = "{{question}}", id = "{{question_id}}", context = "{{articles}}", note = "asked: {{question}}" }',
            'answer = "text"', 'retrieved = "retrieved"']) + "\n")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config",
                              tmp_path / "board.toml", "--max-attempts", 1, "--out", tmp_path / "run")
        assert code == 0, out
        received = {r.body["id"]: r.body for r in srv.requests}
        for body in received.values():  # responses.jsonl keeps each article's score to 6 decimals
            body["context"] = [{**a, "score": round(a["score"], 6)} for a in body["context"]]
        url = srv.bot_url
    log = _logs(tmp_path / "run", tmp_path / "logs")["http:bot"]
    assert len(log.samples) == N_QUESTIONS == len(received)
    for sample in log.samples:
        method, _, body = sample.input.partition("\n\n")
        assert method == f"POST {url}" and json.loads(body) == received[sample.id]
        assert [m.role for m in sample.messages[:1]] == ["user"] and "tok-never-in-a-log" not in sample.input
        if sample.id == "q002":
            assert "the index is rebuilding" in sample.error.message and "500" in sample.error.message
        else:
            assert [r["id"] for r in sample.metadata["system_retrieved"]] == OWN


def test_an_imported_log_with_a_300_character_model_name_exports(bench, tmp_path):
    """The name has '/', ':' and accents; the file name is short and stable, the full name is in the log, and the
    sample's input is the question the log recorded (grace sent nothing)."""
    import csv

    gold = list(csv.DictReader((bench / "gold.csv").open(encoding="utf-8")))[:3]
    long = "team/é:ü:" + "x" * 291
    assert len(long) == 300
    records = [{"question_id": g["question_id"], "question": g["question"], "answer": "So. [ID: 1]", "model": long,
                "retrieved_ids": ["1", "2"]} for g in gold]
    records.append({"question_id": gold[0]["question_id"], "question": gold[0]["question"], "model": "bot-b",
                    "error": "upstream timed out after 30 s (shard 7)", "retrieved_ids": ["3"]})
    write(tmp_path / "log.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    code, out = run_grace("import-logs", tmp_path / "log.jsonl", "--kb", bench / "kb", "--gold", bench / "gold.csv",
                          "--out", tmp_path / "run")
    assert code == 0, out
    logs = _logs(tmp_path / "run", tmp_path / "logs")
    assert set(logs) == {long, "bot-b"} and logs[long].eval.model == long
    names = [p.name for p in (tmp_path / "logs").iterdir()]
    assert len(names) == 2 and all(len(n.encode()) < 200 for n in names)
    again = _logs(tmp_path / "run", tmp_path / "logs")  # the same names: replaced, not added
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == sorted(names) and set(again) == set(logs)
    for sample in logs[long].samples:
        question = next(g["question"] for g in gold if g["question_id"] == sample.id)
        assert sample.input == question and [m.text for m in sample.messages[:1]] == [question]
        assert [r["id"] for r in sample.metadata["system_retrieved"]] == ["1", "2"]
    (failed,) = logs["bot-b"].samples
    assert "upstream timed out after 30 s (shard 7)" in failed.error.message


def test_a_failed_export_leaves_no_partial_log(bench, tmp_path):
    """One log cannot be put in place (a folder holds its name): the export fails with a message, and no temp file
    or half-written log is left in the destination."""
    records = [{"question": "How many days of annual leave do I get?", "answer": "25. [ID: 1]", "model": m,
                "retrieved_ids": ["1"]} for m in ("bot-a", "bot-b")]
    write(tmp_path / "log.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    code, out = run_grace("import-logs", tmp_path / "log.jsonl", "--kb", bench / "kb", "--out", tmp_path / "run")
    assert code == 0, out
    first = _logs(tmp_path / "run", tmp_path / "first")
    assert set(first) == {"bot-a", "bot-b"}
    blocked = tmp_path / "logs" / Path(first["bot-b"].location).name
    (blocked / "something").mkdir(parents=True)
    code, out = run_grace("export", tmp_path / "run", "--to", "inspect", "--dest", tmp_path / "logs")
    assert code == 2 and "cannot write the Inspect logs" in out and "Traceback" not in out, out
    assert [p.name for p in (tmp_path / "logs").iterdir()] == [blocked.name]  # no other log, no temp file
