"""A reader that goes away (``grace run ... | head -1``) stops grace's output, never its work, and a report.json left
behind by answers added after it was scored is refused by ``grace gate`` and flagged by ``grace report`` and the
viewer (issue 37, point 11)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SAMPLE, run_grace


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("closed-stdout")
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")
    assert code == 0, out
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "g40.csv").write_text("".join(lines[:41]), encoding="utf-8")
    (root / "g90.csv").write_text("".join(lines), encoding="utf-8")
    return root


def _grace_into_closed_pipe(*args, env) -> subprocess.CompletedProcess:
    """The real command with its stdout a pipe whose reader has already gone (what ``| head -1`` leads to)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "harness.cli.app", *map(str, args)], cwd=ROOT, env=env,
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)


def _report(run) -> dict:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))


def test_a_run_whose_stdout_closes_still_scores_and_reports(bench, tmp_path):
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "g40.csv", "-m", "baseline:top1", "-o", run)
    assert code == 0, out
    assert _report(run)["gold"]["n_questions"] == 40
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRACE_CACHE_DIR": str(tmp_path / "cache")}
    done = _grace_into_closed_pipe("run", "--kb", bench / "kb", "--gold", bench / "g90.csv", "-m", "baseline:top1",
                                   "-o", run, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "error" not in done.stderr.lower(), done.stderr
    report = _report(run)
    assert report["gold"]["n_questions"] == 90 and report["responses"]["n"] == 90  # the new gold, every answer
    assert len((run / "responses.jsonl").read_text(encoding="utf-8").splitlines()) == 90
    assert "90 questions" in (run / "leaderboard.md").read_text(encoding="utf-8")
    code, out = run_grace("gate", run, "--min-accuracy", "0.1")
    assert code == 0 and "gate passed" in out, out
    # a command that only prints (grace report) exits cleanly too, its files written
    (run / "report.html").unlink()
    done = _grace_into_closed_pipe("report", run, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (run / "report.html").exists()


def test_a_report_older_than_the_answers_on_file_is_refused_by_the_gate_and_flagged(bench, tmp_path):
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "g40.csv", "-m", "baseline:top1", "-o", run)
    assert code == 0, out
    # answers appended and never scored: what a run stopped between its calls and its scoring leaves
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "g90.csv", "-m", "baseline:top1", "-o", run,
                          "--no-score")
    assert code == 0, out
    assert _report(run)["gold"]["n_questions"] == 40
    code, out = run_grace("gate", run, "--min-accuracy", "0.1")
    assert code == 2 and "gate passed" not in out, out
    assert "was scored from other answers than" in out and "grace score" in out
    code, out = run_grace("gate", run / "report.json", "--min-accuracy", "0.1")
    assert code == 2, out
    code, out = run_grace("report", run)
    assert code == 0 and "was scored from other answers than" in out, out
    for name in ("leaderboard.md", "report.html"):
        assert "was scored from other answers than" in (run / name).read_text(encoding="utf-8"), name
    from harness.viewer import open_viewer

    app, indexer = open_viewer([run], tmp_path / "view-cache", child=False)
    try:
        assert indexer.wait(60)
        assert any("was scored from other answers than" in n for n in app.leaderboard("run")["notes"])
    finally:
        indexer.stop()
    # scored again: the gate reads the new figures
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "g90.csv", "-m", "baseline:top1", "-o", run)
    assert code == 0, out
    code, out = run_grace("gate", run, "--min-accuracy", "0.1")
    assert code == 0, out


def test_a_report_of_another_gold_than_the_last_run_asked_is_refused(bench, tmp_path):
    """The same questions relabelled: a run with the new gold stopped before scoring (here --no-score) asks
    nothing new, and report.json still holds the old labels' figures; a re-scoring against any gold is the
    newer and is read."""
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "g40.csv", "-m", "baseline:top1", "-o", run)
    assert code == 0, out
    with (bench / "g40.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    rows[1][3] = "1" if rows[1][3] != "1" else "2"  # q001's expected article, relabelled
    with (tmp_path / "relabelled.csv").open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", tmp_path / "relabelled.csv", "-m", "baseline:top1",
                          "-o", run, "--no-score")
    assert code == 0, out
    code, out = run_grace("gate", run, "--min-accuracy", "0.1")
    assert code == 2 and "was scored against another gold set" in out and "relabelled.csv" in out, out
    code, out = run_grace("score", run / "responses.jsonl", "--gold", tmp_path / "relabelled.csv", "--kb",
                          bench / "kb", "--out", run)
    assert code == 0, out
    code, out = run_grace("gate", run, "--min-accuracy", "0.1")
    assert code == 0, out
