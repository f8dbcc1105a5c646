"""``python:`` systems: a RAG pipeline written as a Python function, run, scored, reported, viewed and compared.

The pipeline is a user's own: its own retriever (word overlap over the sample KB's
articles file) and a model called with the real ``openai`` SDK against the local
fake server. Nothing of grace's is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import grace
from harness.core.errors import GraceError
from tests.conftest import ROOT, run_grace, sample_bench

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

N_QUESTIONS = 12  # the first of the sample gold set (q005 must be refused)

PIPELINE = '''
"""A small RAG pipeline, as a team would write it: its own retriever, its own prompt, an OpenAI-compatible model."""
import json
import os
import re
import time
from pathlib import Path

import openai

from grace import SystemAnswer, SystemRequest

ARTICLES = [json.loads(line) for line in (Path(os.environ["MY_RAG_KB"]) / "articles.jsonl").open(encoding="utf-8")]
LLM = openai.OpenAI(base_url=os.environ["MY_RAG_LLM"], api_key="local", max_retries=0)


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def retrieve(question, k):
    asked = words(question)
    ranked = sorted(ARTICLES, key=lambda a: (-len(asked & words(a["title"] + " " + a["text"])), a["id"]))
    return ranked[:k]


def log_call(request):
    if os.environ.get("MY_RAG_LOG"):
        with open(os.environ["MY_RAG_LOG"], "a", encoding="utf-8") as fh:
            fh.write(request.question_id + "\\n")
    time.sleep(float(os.environ.get("MY_RAG_SLEEP") or 0))


def answer(request: SystemRequest) -> SystemAnswer:
    log_call(request)
    hits = retrieve(request.question, request.k)
    context = "\\n\\n".join(f"[ID: {a['id']}] {a['title']}\\n{a['text'][:300]}" for a in hits)
    reply = LLM.chat.completions.create(model="house-llm", messages=[
        {"role": "system", "content": "Answer from the articles; cite the one you used by its ID."},
        {"role": "user", "content": f"{context}\\n\\nQuestion: {request.question}"}])
    return SystemAnswer(answer=reply.choices[0].message.content, retrieved=[a["id"] for a in hits],
                        input_tokens=reply.usage.prompt_tokens, output_tokens=reply.usage.completion_tokens)


async def answer_async(request):
    return SystemAnswer(answer="See the article.", citations=[request.articles[0].id], cost_usd=0.002)


def raises(request):
    if request.question_id == "q003":
        raise KeyError("index shard 7 is missing")
    return f"From the handbook. [ID: {request.articles[0].id}]"


def needs_two(request, other):
    return ""


def no_args():
    return ""


def returns_number(request):
    return 42
'''


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The sample KB and the first questions of its gold set."""
    return sample_bench(tmp_path_factory.mktemp("pysys"), N_QUESTIONS)


@pytest.fixture
def rag(bench, tmp_path, openai_server, monkeypatch):
    """The pipeline file in a folder of its own, the fake OpenAI server its model; grace runs from that folder."""
    (tmp_path / "my_rag.py").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.setenv("MY_RAG_KB", str(bench / "kb"))
    monkeypatch.setenv("MY_RAG_LLM", openai_server.openai_base_url)
    monkeypatch.setenv("MY_RAG_LOG", str(tmp_path / "calls.log"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(bench, out, *models, **options):
    return grace.run(kb=bench / "kb", gold=bench / "gold.csv", models=list(models), out=out, **options)


def calls(rag: Path) -> list[str]:
    log = rag / "calls.log"
    out = log.read_text(encoding="utf-8").split() if log.exists() else []
    log.unlink(missing_ok=True)
    return out


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "responses.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_rag_pipeline_runs_end_to_end_with_its_own_retrieval(bench, rag, openai_server):
    model = "python:my_rag.py:answer"
    result = run(bench, rag / "run", model, "baseline:top1")
    assert result.counts[model]["done"] == N_QUESTIONS and result.errors == 0
    assert sorted(calls(rag)) == sorted(r["question_id"] for r in rows(rag / "run") if r["model"] == model)
    assert len(openai_server.requests) == N_QUESTIONS  # one call of the real SDK per question
    mine = [r for r in rows(rag / "run") if r["model"] == model]
    assert all(len(r["system_retrieved"]) == 3 and "citations" not in r for r in mine)
    assert all(r["input_tokens"] and r["latency_ms"] is not None for r in mine)
    baseline = [r for r in rows(rag / "run") if r["model"] == "baseline:top1"]
    assert all("system_retrieved" not in r and "citations" not in r for r in baseline)

    # scored against what the pipeline itself retrieved: an unshown citation means outside *its* retrieval
    scores = {s["question_id"]: s for s in result.run.scores() if s["model"] == model}
    for r in mine:
        assert scores[r["question_id"]]["retrieved_ids"] == r["system_retrieved"]
    report = result.run.report.models[model]
    assert report.retrieval_source == "system" and report.retrieval.k == 3
    own_hits = sum(1 for r in mine if not r["question_id"] == "q005"
                   and set(r["system_retrieved"]) & set(scores[r["question_id"]]["expected_citations"]))
    answerable = sum(1 for s in scores.values() if not s["must_refuse"])
    assert report.retrieval.recall_at_k == pytest.approx(own_hits / answerable, abs=1e-6)
    assert result.run.report.models["baseline:top1"].retrieval_source is None
    md = (rag / "run" / "leaderboard.md").read_text(encoding="utf-8")
    assert "Own retrieval" in md and f"{100 * report.retrieval.recall_at_k:.1f}% (k=3)" in md
    assert "Own retrieval" in (rag / "run" / "report.html").read_text(encoding="utf-8")
    info = json.loads((rag / "run" / "run.json").read_text(encoding="utf-8"))
    entry = next(m for m in info["models"] if m["name"] == model)
    assert entry["provider"] == "python" and entry["endpoint"].startswith("sha256:")


def test_the_viewer_shows_the_systems_answers_and_what_it_retrieved(bench, rag):
    from harness.viewer import open_viewer
    from harness.web import make_server
    from tests.harness.viewer.test_view import api

    model = "python:my_rag.py:answer"
    run(bench, rag / "run", model)
    app, indexer = open_viewer([rag / "run"], rag / "view-cache", child=True)
    assert indexer.wait(120)
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        served = {"port": httpd.server_address[1]}
        page = api(served, "/api/questions?runs=run")
        assert len(page["rows"]) == N_QUESTIONS
        q = api(served, "/api/question?runs=run&id=q001")
        answer = q["runs"][0]["models"][0]["answers"][0]
        on_file = next(r for r in rows(rag / "run") if r["question_id"] == "q001")
        assert answer["system_retrieved"] == on_file["system_retrieved"]
        assert "".join(p["text"] for p in answer["pieces"]) == on_file["response"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        indexer.stop()


def test_cache_hit_on_a_rerun_and_a_reask_once_the_pipeline_changes(bench, rag):
    model = "python:my_rag.py:answer"
    first = run(bench, rag / "run", model)
    assert len(calls(rag)) == N_QUESTIONS
    again = run(bench, rag / "again", model)  # a new folder: answered from the cache, nothing asked
    assert again.counts[model]["cached"] == N_QUESTIONS and calls(rag) == []
    assert again.run.report.models[model].accuracy == first.run.report.models[model].accuracy > 0.3

    shutil.copytree(rag / "run", rag / "before")
    source = (rag / "my_rag.py").read_text(encoding="utf-8")
    # the edit: the pipeline leaves its best hit out of the prompt (the model cites the first it is shown)
    (rag / "my_rag.py").write_text(source.replace("for a in hits)", "for a in hits[1:])"), encoding="utf-8")
    edited = run(bench, rag / "run", model)  # the same folder: every row is stale, asked again
    assert edited.resumed["stale"] == N_QUESTIONS and sorted(calls(rag)) == sorted(r["question_id"] for r in rows(rag / "run"))
    comparison = grace.compare_runs(rag / "before", rag / "run")
    (change,) = comparison.models
    assert change.model == model and change.regressed  # the compare sees the edit's effect question by question


def test_a_version_decides_instead_of_the_file(bench, rag):
    run(bench, rag / "v1", "python:my_rag.py:answer@v1")
    assert len(calls(rag)) == N_QUESTIONS
    (rag / "my_rag.py").write_text(PIPELINE + "\n# a comment\n", encoding="utf-8")
    same = run(bench, rag / "v1", "python:my_rag.py:answer@v1")  # edited, same version: nothing asked
    assert same.resumed["done"] == N_QUESTIONS and calls(rag) == []
    run(bench, rag / "v2", "python:my_rag.py:answer@v2")
    assert len(calls(rag)) == N_QUESTIONS
    info = json.loads((rag / "v1" / "run.json").read_text(encoding="utf-8"))
    assert info["models"][0]["endpoint"] is None  # the version is in the name; no source hash


def test_resume_after_a_kill_asks_only_the_missing_questions(bench, rag, monkeypatch):
    model = "python:my_rag.py:answer"
    out = rag / "run"
    env = {**os.environ, "MY_RAG_SLEEP": "0.3", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", "from harness.cli.app import main; main()", "run", "--kb", str(bench / "kb"),
           "--gold", str(bench / "gold.csv"), "--model", model, "--out", str(out), "--concurrency", "1"]
    proc = subprocess.Popen(cmd, cwd=rag, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (out / "responses.jsonl").exists() and len(rows(out)) >= 4:
                break
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.wait(30)
    done = {r["question_id"] for r in rows(out) if not r["error"]}
    assert 4 <= len(done) < N_QUESTIONS
    calls(rag)  # what the killed run asked
    resumed = run(bench, out, model)
    asked = calls(rag)
    gold = [line.split(",")[0] for line in (bench / "gold.csv").read_text(encoding="utf-8").splitlines()[1:]]
    assert set(asked) <= set(gold) - done and resumed.resumed["done"] == len(done)  # nothing on file asked again
    assert {r["question_id"] for r in rows(out)} == set(gold)


def test_async_functions_structured_citations_and_cost(bench, rag):
    model = "python:my_rag.py:answer_async"
    result = run(bench, rag / "run", model)
    mine = rows(rag / "run")
    assert all(r["citations"] == [r["retrieved_ids"][0]] and r["cost_usd"] == 0.002 for r in mine)
    scores = result.run.scores()
    assert all(s["cited_ids"] == s["retrieved_ids"][:1] and s["extraction"] == "json" for s in scores)
    report = result.run.report.models[model]
    assert report.cost.total_usd == pytest.approx(0.002 * N_QUESTIONS)
    assert report.retrieval_source is None  # it used grace's retrieval


def test_a_raising_function_is_an_error_row_not_a_crash(bench, rag):
    model = "python:my_rag.py:raises"
    result = run(bench, rag / "run", model)
    failed = [r for r in rows(rag / "run") if r["error"]]
    assert [r["question_id"] for r in failed] == ["q003"] and result.errors == 1
    assert failed[0]["error"]["kind"] == "other"
    assert failed[0]["error"]["message"] == "KeyError: 'index shard 7 is missing'"
    bad = run(bench, rag / "bad", "python:my_rag.py:returns_number", max_attempts=1)
    errors = [r["error"] for r in rows(rag / "bad")]
    assert errors[0]["kind"] == "bad_response" and "returned int" in errors[0]["message"]
    assert bad.stopped  # the first three calls all failed the same way: the model is stopped, the rest not tried


@pytest.mark.parametrize(("spec", "words"), [
    ("python:nowhere.py:answer", ["nowhere.py not found", "relative to where grace runs"]),
    ("python:my_rag.py:missing", ["has no function 'missing'", "it defines", "answer"]),
    ("python:my_rag.py:needs_two", ["needs 2 arguments (request, other)", "def FUNCTION(request: SystemRequest)"]),
    ("python:my_rag.py:no_args", ["takes no positional argument"]),
    ("python:no_such_package.rag:answer", ["no module 'no_such_package.rag' can be imported"]),
    ("python:my_rag.py", ["expected python:FILE.py:FUNCTION"]),
    ("python:my_rag.py:answer@", ["nothing after '@'"]),
])
def test_bad_targets_are_clear_errors_before_any_call(bench, rag, spec, words):
    with pytest.raises(GraceError) as info:
        run(bench, rag / "run", spec)
    for word in words:
        assert word in str(info.value)
    assert not (rag / "calls.log").exists() and not (rag / "run" / "responses.jsonl").exists()
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", spec, "--out", rag / "cli")
    assert code != 0 and "Traceback" not in out and words[0] in " ".join(out.split())


def test_an_importable_module_and_a_dry_run(bench, rag, monkeypatch):
    monkeypatch.syspath_prepend(str(rag))
    model = "python:my_rag:answer_async"
    estimate = run(bench, rag / "run", model, dry_run=True)
    assert estimate.estimates[0]["calls"] == N_QUESTIONS and not (rag / "run" / "responses.jsonl").exists()
    result = run(bench, rag / "run", model)
    assert result.counts[model]["done"] == N_QUESTIONS and result.errors == 0
