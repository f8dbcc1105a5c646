"""The README's first command: the offline demo runs end to end and leaves every artefact it promises."""

from __future__ import annotations

import json

import pytest

from annotations.suggestions import read_suggestions
from harness.scoring.label_audit import read_suspects
from tests.conftest import run_grace


@pytest.mark.slow  # the whole demo: 25 s
def test_demo_runs_offline_and_writes_its_artefacts(tmp_path):
    code, out = run_grace("demo", "--out", tmp_path / "demo")
    assert code == 0, out
    run = tmp_path / "demo" / "run"
    report = json.loads((run / "report.json").read_text())
    assert report["leaderboard"] == sorted(report["leaderboard"], key=lambda m: -report["models"][m]["accuracy"])
    assert set(report["leaderboard"]) == {"baseline:top1", "baseline:threshold"}
    assert (run / "report.html").stat().st_size > 10_000 and (run / "spotcheck.json").exists()
    suggestions = read_suggestions(tmp_path / "demo" / "suggestions.csv")
    assert len(suggestions) == 90 and any(s.usable for s in suggestions.values())
    suspects = read_suspects(tmp_path / "demo" / "suspects.csv")
    # two retrieval baselines are one opinion: the report claims no label to check (issue 47), while the audit the
    # demo asks for explicitly lists what they contradict, with its warning
    assert report["label_suspects"] is None and not any("contradicted" in w for w in report["warnings"])
    assert suspects and "two retrieval baselines are one opinion" in out
    assert "6/6 Leaderboard and report" in out and "Traceback" not in out
    code, again = run_grace("demo", "--out", tmp_path / "demo")  # the README's command, run a second time
    assert code == 0, again
    assert read_suspects(tmp_path / "demo" / "suspects.csv") == suspects
