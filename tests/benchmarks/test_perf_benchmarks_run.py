"""The performance benchmarks still run (CI runs them tiny; not timed: their figures come from the full runs).

Each script is run as a user would, in a subprocess, with sizes that take seconds,
and must print its figure lines, so a refactor that breaks a benchmark fails here
rather than the day someone needs the numbers.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # each runs a performance script: 6 to 95 s

PERF = ROOT / "benchmarks" / "perf"


def _run(script: str, *args: str, timeout: int = 240) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRACE_TOKENIZER": "approx"}
    proc = subprocess.run([sys.executable, str(PERF / script), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_every_benchmark_has_a_test_here():
    tested = {"bench_commands.py", "bench_runner.py", "bench_scoring.py", "bench_split.py", "bench_sidebyside.py",
              "bench_view.py", "bench_kb_scale.py", "bench_python_system.py",
              "bench_export_parquet.py", "bench_import_logs.py", "bench_citations.py",
              "bench_team_labels.py", "bench_concurrency.py",
              "bench_million.py", "bench_model_latency.py", "bench_redaction.py",
              "bench_tool_loop.py"}  # phases.py: via bench_commands --phases
    assert {p.name for p in PERF.glob("bench_*.py")} == tested


def test_bench_commands_runs():
    out = _run("bench_commands.py", "--calls", "12", "--concurrency", "4", "--latency", "0.01", "--repeats", "1", "--phases")
    for name in ("run", "cached", "no_score", "score", "report"):
        assert f"  {name} " in out
    assert "of ideal" in out and "ms CPU per call" in out and "slowest imports" in out
    assert "calls (engine)" in out and "scoring" in out and "other" in out


def test_bench_model_latency_runs():
    out = _run("bench_model_latency.py", "--calls", "16", "--concurrency", "4", "--latency", "0.2")
    assert "server's own median time in a slot" in out and "grace's p50 of the model's own time" in out
    assert "slots: 1 (measured)" in out


def test_bench_redaction_runs():
    out = _run("bench_redaction.py", "--paragraphs", "20", "--rounds", "1", "--long", "50")
    assert "| redactor | pass | paragraphs/s |" in out and "20 paragraphs" in out
    assert "cold" in out and "warm" in out and "one long paragraph" in out


def test_bench_tool_loop_runs():
    out = _run("bench_tool_loop.py", "--questions", "40", "--concurrency", "8", "--latency", "0.01")
    assert "plain (top 3 pushed)" in out and "search loop (search-twice)" in out
    assert "grace CPU per turn (target <= 0.5 ms)" in out


def test_bench_team_labels_runs():
    out = _run("bench_team_labels.py", "--questions", "60", "--saves", "3")
    assert "60 questions, 3 people, overlap:2: one save" in out and "ms median" in out


def test_bench_scoring_runs():
    out = _run("bench_scoring.py", "--responses", "3000", "--questions", "300", "--articles", "40", "--bootstrap", "20")
    assert "3,000 responses" in out and "responses/s" in out and "goal: 1,000,000 responses" in out
    assert "naive floor" in out or "naive floor could not run" in out


def test_bench_citations_runs():
    out = _run("bench_citations.py", "--responses", "3000", "--questions", "300", "--articles", "40",
               "--bootstrap", "20", "--workers", "1")
    for label in ("today's GRACE reading", "read as KB IDs, scored multi", "read as references, scored multi"):
        assert f"  {label}" in out
    assert "3,000 responses: " in out and "citation F1" in out and "unmapped" in out
    assert "reading and resolving references vs the same rows read as KB IDs" in out
    assert "goal: resolving citations adds <= 10% to grace score on 1,000,000 responses" in out


def test_bench_export_parquet_runs():
    out = _run("bench_export_parquet.py", "--responses", "3000", "--questions", "300", "--articles", "40",
               "--bootstrap", "20")
    assert "grace score: 3,000 responses" in out and "grace export --to parquet (second): 3,000 rows" in out
    assert "avg(correct) per model equals report.json accuracy: True" in out and "goal: export <= 2x score" in out


def test_bench_view_runs():
    out = _run("bench_view.py", "--questions", "200", "--articles", "30", "--bootstrap", "20")
    assert "2,000 scored responses each" in out and "grace compare A B --json" in out
    assert "cold start (no index yet): first page" in out and "question pages: median" in out
    assert "goals: first page <= 2 s" in out and "compare <= 15 s" in out


def test_bench_import_logs_runs():
    out = _run("bench_import_logs.py", "--mb", "0.3", "--distinct", "50")
    assert "import-logs (with gold): exit 0" in out and "peak RSS" in out and "MB/s of log" in out
    assert "imported" in out and "responses.jsonl:" in out


def test_bench_runner_runs():
    out = _run("bench_runner.py", "--calls", "20", "--concurrency", "4", "--latency", "0.01")
    assert "achieved/ideal" in out and "harness overhead per call" in out


def test_bench_python_system_runs():
    out = _run("bench_python_system.py", "--questions", "60", "--rounds", "1")
    assert "baseline:top1" in out and "python: (sync)" in out and "run + score + report" in out


def test_bench_kb_scale_runs():
    out = _run("bench_kb_scale.py", "--sizes", "0.3")
    for kind in ("unique", "repeated", "small"):
        assert f"\n{kind}  " in out
    assert "peak memory < 2048 MB at 50 MB" in out and "lint:" in out and "confusable pair(s)" in out


def test_bench_split_runs():
    out = _run("bench_split.py", "--sizes", "0.2")
    assert "0.2 MB" in out and "articles" in out


def test_bench_sidebyside_runs_grace_alone(tmp_path):
    # inspect_ai and promptfoo are installed from the registries on first use; CI checks grace's side only
    out = _run("bench_sidebyside.py", "--only", "grace", "--calls", "8", "--concurrency", "4", "--latency", "0.01",
               "--repeats", "1", "--tools-dir", str(tmp_path))
    assert "side by side" in out and "grace" in out


def test_bench_concurrency_runs():
    out = _run("bench_concurrency.py", "--calls", "60", "--concurrency", "20", "--latency", "0.01",
               "--replica-calls", "60", "--slots", "4", "--no-http")
    assert "of ideal" in out or "ideal" in out


def test_bench_million_runs():
    out = _run("bench_million.py", "--calls", "400", "--models", "2", "--repeats", "2", "--articles", "20")
    assert "CPU/call ms" in out and "goals: peak <= 1,000 MB" in out
