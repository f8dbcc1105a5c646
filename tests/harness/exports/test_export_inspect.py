"""``grace export RUN --to inspect``: one eval log per model, read back with inspect_ai's own reader and served by
``inspect view`` in headless Chromium.

The run is made as a user makes it, offline: ``grace kb build``, then ``grace run --repeats 2`` with the offline
baseline, a model on the fake OpenAI server (it answers q1 with markup that would run in a careless page, and its
call for q2 is refused with HTTP 400: an error row), and a model whose key the server refuses (every call fails: a
failed model). The logs are checked against the run's own files: scores.jsonl (each sample's outcome), report.json
(the figures, to the digit) and responses.jsonl (tokens, latency, and the prompt hash, which proves a sample shows
the exact prompt the model was sent).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.run_folder.run_dir import RunDir
from harness.scoring.outcomes import HITS
from harness.testing import FakeAPIServer, prompt_text
from harness.testing.fake_api import Reply
from tests.conftest import run_grace, small_bench, write

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect_ai is not installed (pip install 'grace-eval[inspect]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'grace-eval[parquet]')")

# markup that would run in a careless page, and a markdown link that inspect view would make clickable in a log that
# trusts its content (ViewerConfig(trust_content=True)); grace's logs say they do not
HOSTILE = ("<script>alert('answer')</script><img src=x onerror=\"alert('img')\"> Sixteen weeks of leave, see "
           "[the policy](http://203.0.113.7/phish). [ID: 2]")
MODELS = {"baseline:top1": "baseline/top1", "openai:fake-m": "openai/fake-m", "openai:dead": "openai/dead"}
QUESTIONS, REPEATS = ["q0", "q1", "q2", "q3", "r1"], 2


def fake_model(body: dict) -> str | Reply:
    """Cite the first article shown; q1 (variant 1) gets the hostile answer, q2's call is refused (HTTP 400), and
    the model "dead" has a refused key."""
    if body.get("model") == "dead":
        return Reply.unauthorized()
    text = prompt_text(body)
    if "(variant 1)" in text:
        return HOSTILE
    if "(variant 2)" in text:
        return Reply.error(400, "the request was rejected")
    shown = [i for i in re.findall(r"\[ID: ([^\]]+)\]", text) if i != "<id>"]
    return f"The handbook covers it. [ID: {shown[0]}]"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = small_bench(tmp_path_factory.mktemp("inspect"), 4, ["what is the capital of France"])
    with FakeAPIServer(responder=fake_model, latency=0.01) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))  # a module fixture: conftest's per-test folder is not set
        mp.setenv("FAKE_KEY", "x")
        entry = f'base_url = "{srv.openai_base_url}"\napi_key_env = "FAKE_KEY"\n'
        write(root / "models.toml", f'[[models]]\nspec = "baseline:top1"\n\n[[models]]\nspec = "openai:fake-m"\n'
              f'{entry}\n[[models]]\nspec = "openai:dead"\n{entry}')
        code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "models.toml",
                              "--repeats", REPEATS, "--max-attempts", 1, "--out", root / "run")
    assert code == 1, out  # one model failed every call: the run says so, the others are scored
    assert "openai:dead" in json.loads((root / "run" / "report.json").read_text())["failed_models"]
    return root / "run"


@pytest.fixture(scope="module")
def logs(run) -> dict[str, object]:
    """The export, through the real command line, read back with inspect_ai's own reader: grace name -> EvalLog."""
    code, out = run_grace("export", run, "--to", "inspect")
    assert code == 0, out
    assert f"inspect view --log-dir {run / 'inspect'}" in out
    found = {}
    for info in inspect_log.list_eval_logs(str(run / "inspect")):  # inspect's own lister finds every log
        log = inspect_log.read_eval_log(info.name)
        found[log.eval.model_args["grace_model"]] = log
    return found


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_one_log_per_model_with_a_sample_per_question_and_repeat(run, logs):
    assert set(logs) == set(MODELS)
    for model, log in logs.items():
        assert log.eval.model == MODELS[model] and log.eval.task == f"grace/{run.parent.name}"
        assert len(log.samples) == len(QUESTIONS) * REPEATS
        assert {(s.id, s.epoch) for s in log.samples} == {(q, e) for q in QUESTIONS for e in (1, 2)}
        assert log.eval.config.epochs == REPEATS and log.eval.dataset.samples == len(QUESTIONS)
        assert log.eval.task_args == {"k": 3, "template": "grounded-inline.v1", "retriever": "bm25f",
                                      "output_mode": "inline", "repeats": REPEATS}
        assert log.eval.viewer.trust_content is False  # model output is shown as plain text
        steps = [s.solver for s in log.plan.steps]
        assert steps == ["grace/retrieve", "grace/generate"] and log.plan.steps[0].params["k"] == 3
    assert logs["openai:fake-m"].status == "success" and logs["openai:fake-m"].eval.model_generate_config.max_tokens


def test_each_sample_scores_as_scores_jsonl_and_carries_the_cited_and_gold_ids(run, logs):
    scores = {(s["model"], s["question_id"], s["repeat"]): s for s in lines(run / "scores.jsonl")}
    for model, log in logs.items():
        for sample in log.samples:
            row = scores[(model, sample.id, sample.epoch - 1)]
            score = sample.scores["citation"]
            assert score.value == ("C" if row["outcome"] in HITS else "I")
            assert score.metadata["outcome"] == row["outcome"] == sample.metadata["outcome"]
            assert score.metadata["strict_outcome"] == row["strict_outcome"]
            assert score.metadata["cited_ids"] == row["cited_ids"] and score.metadata["gold_ids"] == row["expected_citations"]
            assert score.explanation.startswith(row["outcome"] + ": ")
            assert sample.target == (["REFUSE"] if row["must_refuse"] else row["expected_citations"])
            assert [a["id"] for a in sample.metadata["retrieved"]] == row["retrieved_ids"]
    fake = {(s.id, s.epoch): s for s in logs["openai:fake-m"].samples}
    assert fake[("q0", 1)].scores["citation"].value == "C" and fake[("q0", 1)].scores["citation"].answer == "1"
    assert fake[("q0", 1)].metadata["gold_rank"] == 1
    assert fake[("r1", 1)].target == ["REFUSE"]


def test_results_are_report_json_figures_exactly(run, logs):
    report = json.loads((run / "report.json").read_text())
    for model in ("baseline:top1", "openai:fake-m"):
        m, log = report["models"][model], logs[model]
        metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
        assert metrics["accuracy"] == m["accuracy"] and metrics["strict_accuracy"] == m["strict_accuracy"]
        assert [metrics["ci95_low"], metrics["ci95_high"]] == m["accuracy_ci95"]
        assert metrics["refusal_calibration"] == m["refusal"]["calibration"]
        assert metrics["invalid_citation_rate"] == m["invalid_citation_rate"]
        assert metrics["error_count"] == m["error_count"]
        assert list(metrics)[0] == "accuracy" and log.eval.headline_metric.metric == "accuracy"
        assert log.results.total_samples == m["n"] and log.results.completed_samples == m["n"] - m["error_count"]
    assert logs["openai:fake-m"].results.scores[0].metrics["latency_p50_ms"].value == \
        report["models"]["openai:fake-m"]["latency"]["p50_ms"]
    usage = logs["openai:fake-m"].stats.model_usage["openai/fake-m"]
    cost = report["models"]["openai:fake-m"]["cost"]
    assert (usage.input_tokens, usage.output_tokens) == (cost["input_tokens"], cost["output_tokens"]) != (0, 0)


def test_tokens_latency_and_the_exact_prompt_come_from_the_responses(run, logs):
    from harness.runner.engine import prompt_hash

    rows = {(r["model"], r["question_id"], r["repeat"]): r for r in lines(run / "responses.jsonl")}
    checked = 0
    for model, log in logs.items():
        for sample in log.samples:
            row = rows[(model, sample.id, sample.epoch - 1)]
            asked = [{"role": m.role, "content": m.text} for m in sample.messages if m.role != "assistant"]
            assert prompt_hash(asked) == row["prompt_hash"]  # what the model was sent, articles and all
            if row["error"] is None:
                assert sample.messages[-1].role == "assistant" and sample.output.completion == row["response"]
                assert sample.error is None
            if row["input_tokens"] is not None:
                usage = sample.model_usage[MODELS[model]]
                assert (usage.input_tokens, usage.output_tokens) == (row["input_tokens"], row["output_tokens"])
                assert sample.output.usage == usage
            if row["latency_ms"] is not None:
                assert sample.total_time == pytest.approx(row["latency_ms"] / 1000) and sample.working_time > 0
                checked += 1
    assert checked == 8  # openai:fake-m's answered calls (q2's two were refused)
    q1 = next(s for s in logs["openai:fake-m"].samples if s.id == "q1")
    assert "Sixteen weeks of parental leave" in q1.messages[1].text  # the retrieved articles' texts, from the KB


def test_a_failed_call_is_the_samples_error_and_a_failed_model_an_error_log(logs):
    fake = {(s.id, s.epoch): s for s in logs["openai:fake-m"].samples}
    failed = fake[("q2", 1)]
    assert failed.error is not None and "bad_request" in failed.error.message
    assert failed.scores["citation"].value == "I" and failed.scores["citation"].metadata["outcome"] == "error"
    assert [m.role for m in failed.messages] == ["system", "user"] and failed.output.empty
    dead = logs["openai:dead"]
    assert dead.status == "error" and "all 10 calls failed" in dead.error.message and dead.results is None
    assert all(s.error is not None for s in dead.samples)


def test_exporting_again_replaces_the_logs_and_json_works_too(run, logs, tmp_path):
    before = sorted(p.name for p in (run / "inspect").iterdir())
    code, out = run_grace("export", run, "--to", "inspect")
    assert code == 0, out
    assert sorted(p.name for p in (run / "inspect").iterdir()) == before and len(before) == 3
    assert all(re.match(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-00-00_grace-\w+_[\w-]+_[0-9a-f]{22}\.eval$", n) for n in before)
    code, out = run_grace("export", run, "--to", "inspect", "--dest", tmp_path / "json", "--option", "format=json")
    assert code == 0, out
    listed = inspect_log.list_eval_logs(str(tmp_path / "json"))
    assert len(listed) == 3 and all(i.name.endswith(".json") for i in listed)
    again = inspect_log.read_eval_log(next(i.name for i in listed if "fake-m" in i.name))
    assert again.results.scores[0].metrics["accuracy"].value == logs["openai:fake-m"].results.scores[0].metrics[
        "accuracy"].value
    code, out = run_grace("export", run, "--to", "inspect", "--option", "format=xml")
    assert code == 2 and "format 'xml'" in out
    code, out = run_grace("export", run, "--to", "inspect", "--option", "nested=true")
    assert code == 2 and "unknown option(s) nested" in out


def test_a_kb_that_moved_leaves_the_article_ids_with_a_note(run, tmp_path):
    from harness.exports.inspect_log import export

    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("inspect"))
    for name in ("run.json", "report.json"):
        data = json.loads((copy / name).read_text())
        data["kb"]["path"] = str(tmp_path / "gone")
        (copy / name).write_text(json.dumps(data))
    os.utime(copy / "scores.jsonl")  # after responses.jsonl, as a scored folder has it
    done = export(RunDir(copy), None, {})
    assert any("KB not readable" in n and "IDs only" in n for n in done.notes)
    log = inspect_log.read_eval_log(done.ids["openai:fake-m"])
    sample = next(s for s in log.samples if s.id == "q0")
    assert "[ID: 1]" in sample.messages[-2].text and "sick leave" not in sample.messages[-2].text.lower()
    assert sample.scores["citation"].value == "C"


def test_without_inspect_ai_the_error_says_what_to_install(run, monkeypatch):
    from harness.exports.inspect_log import export

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if not installed
    with pytest.raises(GraceError, match=r"pip install 'grace-eval\[inspect\]'"):
        export(RunDir(run), None, {})


# -- inspect view, in headless Chromium -------------------------------------------------------------------------------
# inspect view runs as its own process; this module, made its sitecustomize, refuses (and writes down) any connection
# it tries beyond this machine, as conftest's guard does for the test process: the viewer must work offline
NO_NETWORK = '''
import ipaddress, os, socket
def _local(address):
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str) or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
def _guard(real):
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address):
            with open(os.environ["GRACE_TEST_NETWORK_LOG"], "a") as fh:
                fh.write(repr(address) + "\\n")
            raise ConnectionRefusedError("network blocked in tests")
        return real(self, address)
    return connect
socket.socket.connect = _guard(socket.socket.connect)
socket.socket.connect_ex = _guard(socket.socket.connect_ex)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def viewer(logs, run, tmp_path_factory):
    """``inspect view start`` on the exported logs, on a free local port: (its URL, the file of blocked connections)."""
    from tests.browser import CHROMIUM

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    inspect_cli = Path(sys.executable).parent / "inspect"
    if not inspect_cli.exists():
        pytest.skip(f"{inspect_cli} not found (inspect_ai's command line)")
    home = tmp_path_factory.mktemp("inspect-view")
    (home / "site").mkdir()
    (home / "site" / "sitecustomize.py").write_text(NO_NETWORK, encoding="utf-8")
    blocked = home / "blocked.txt"
    env = {**os.environ, "PYTHONPATH": str(home / "site"), "GRACE_TEST_NETWORK_LOG": str(blocked), "HOME": str(home),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}
    port = free_port()
    proc = subprocess.Popen([str(inspect_cli), "view", "start", "--log-dir", str(run / "inspect"), "--host",
                             "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    output = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                    pytest.fail(f"inspect view did not start on port {port}: {output}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/", blocked
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()


@pytest.fixture(scope="module")
def browser(viewer):
    from playwright.sync_api import sync_playwright

    from tests.browser import launch

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def open_viewer(browser, url: str):
    """A page on inspect view, recording what could show a problem: JavaScript errors, dialogs, requests."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    seen: dict[str, list[str]] = {"errors": [], "dialogs": [], "requests": []}
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.goto(url)
    return page, seen


def test_inspect_view_lists_the_logs_and_shows_a_samples_answer(browser, viewer):
    from playwright.sync_api import expect

    url, blocked = viewer
    page, seen = open_viewer(browser, url)
    for name in MODELS.values():
        expect(page.get_by_text(name, exact=True)).to_be_visible(timeout=30_000)
    page.get_by_text("openai/fake-m", exact=True).click()
    expect(page.get_by_text("accuracy", exact=True).first).to_be_visible(timeout=30_000)  # grace's figures
    page.get_by_text("how many sick days do I get (variant 0)").first.click()
    expect(page.get_by_text("The handbook covers it. [ID: 1]")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Ten days of paid sick leave per year.", exact=False).first).to_be_visible()
    assert seen["errors"] == [] and seen["dialogs"] == []
    assert all(r.startswith(url) or r.startswith("data:") or r.startswith("blob:") for r in seen["requests"]), \
        [r for r in seen["requests"] if not r.startswith(url)]
    assert not blocked.exists(), blocked.read_text()  # inspect view tried no connection beyond this machine
    page.close()


def test_a_hostile_answer_stays_text_in_inspect_view(browser, viewer):
    from playwright.sync_api import expect

    url, _ = viewer
    page, seen = open_viewer(browser, url)
    page.get_by_text("openai/fake-m", exact=True).click()
    page.get_by_text("how long is parental leave (variant 1)").first.click()
    expect(page.get_by_text(HOSTILE, exact=True).first).to_be_visible(timeout=30_000)  # the markup, shown as text
    page.wait_for_timeout(500)  # time for an onerror to fire, were the markup live
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("script", has_text="alert('answer')").count() == 0
    assert page.locator("a[href*='203.0.113.7']").count() == 0  # the link is text, not a link to click
    assert seen["dialogs"] == [] and seen["errors"] == []
    page.close()
