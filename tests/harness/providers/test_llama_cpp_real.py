"""The sample benchmark against a REAL llama.cpp server (llama-cpp-python, SmolLM2-135M): optional.

Skipped unless ``GRACE_LLAMA_TEST=1`` and a python with ``llama_cpp[server]`` and a GGUF are found (see
benchmarks/local/llama_server.py for GRACE_LLAMA_PYTHON and GRACE_GGUF). It takes minutes on 2 cores, so it
is not part of CI; the fake server's local mode (tests/harness/providers/test_local_servers.py) covers the same behaviours there.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conftest import ROOT, SAMPLE, run_grace

pytestmark = pytest.mark.skipif(os.environ.get("GRACE_LLAMA_TEST") != "1",
                                reason="a real llama.cpp server test: set GRACE_LLAMA_TEST=1 to run it")
QUESTIONS = 24  # of the sample's 90: enough to see every behaviour, short enough to run by hand


@pytest.fixture(scope="module")
def server():
    sys.path.insert(0, str(ROOT / "benchmarks" / "local"))
    from llama_server import LlamaServer, LlamaServerUnavailable

    try:
        with LlamaServer() as srv:
            yield srv
    except LlamaServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def kb_and_gold(tmp_path_factory):
    root = tmp_path_factory.mktemp("llama")
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")
    assert code == 0, out
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "gold.csv").write_text("".join(lines[:QUESTIONS + 1]), encoding="utf-8")
    return root


@pytest.mark.parametrize("mode", ["inline", "json"])
def test_the_sample_benchmark_runs_on_a_real_llama_cpp_server(server, kb_and_gold, mode, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    out = kb_and_gold / f"run-{mode}"
    code, text = run_grace("run", "--kb", kb_and_gold / "kb", "--gold", kb_and_gold / "gold.csv",
                           "-m", f"openai:{server.model}", "--out", out, "--output-mode", mode, "--max-tokens", "256")
    assert code == 0, text
    rows = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == QUESTIONS and not [r["error"] for r in rows if r["error"]]
    info = json.loads((out / "run.json").read_text())
    if mode == "json":  # llama-cpp-python rejects json_schema: one rejected call, then json_object with the schema
        assert info["models"][0]["json_mode"] == "json_object_schema"
    report = json.loads((out / "report.json").read_text())
    assert report["models"][f"openai:{server.model}"]["n"] == QUESTIONS


@pytest.mark.parametrize("mode", ["segments", "claims"])
def test_the_judge_meta_eval_reads_a_real_tiny_models_verdicts(server, tmp_path, mode):
    # llama-cpp-python rejects json_schema; with a bare json_object SmolLM2 wrote {"explanation": ...} and no verdict
    # (43 of 46); with the schema beside json_object its grammar holds the reply to the verdict's keys
    from harness.spotcheck.meta_eval import CASES

    lines = CASES.read_text(encoding="utf-8").splitlines(keepends=True)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(lines[:3] + lines[-3:]), encoding="utf-8")  # unsupported and supported ones
    out = tmp_path / "meta.json"
    code, text = run_grace("spotcheck", "meta-eval", "--judge", f"llamacpp:{server.model}", "--base-url",
                           server.base_url, "--mode", mode, "--cases", cases, "--no-quality", "--concurrency", "1",
                           "--no-cache", "--out", out)
    assert code == 0, text
    result = json.loads(out.read_text())
    assert result["cases"] == 6 and result["unreadable"] == 0 and result["calls"]["errors"] == 0
    assert result["kappa_n"] == 6  # how well it judges is the meta-eval's figure, not this test's


@pytest.mark.skipif(os.environ.get("GRACE_LLAMA_TOOLS") != "1",
                    reason="needs a GGUF that calls tools, served with a tool-calling chat format "
                    "(llama-cpp-python: --chat_format chatml-function-calling): set GRACE_LLAMA_TOOLS=1 too")
def test_the_search_loop_runs_on_a_real_llama_cpp_server(server, kb_and_gold, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    out = kb_and_gold / "run-search"
    code, text = run_grace("run", "--kb", kb_and_gold / "kb", "--gold", kb_and_gold / "gold.csv",
                           "-m", f"openai:{server.model}", "--search", f"openai:{server.model}=3", "--out", out,
                           "--max-tokens", "256")
    assert code == 0, text
    rows = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == QUESTIONS and not [r["error"] for r in rows if r["error"]]
    assert all(r["tool_loop"]["tool_calls"] <= 3 for r in rows)
    assert any(r["tool_loop"]["tool_calls"] for r in rows), "the model never called a tool"
    report = json.loads((out / "report.json").read_text())
    assert report["funnel"][f"openai:{server.model}"]["answers"] == QUESTIONS
