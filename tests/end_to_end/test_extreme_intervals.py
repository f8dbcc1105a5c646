"""Issue 47's acceptance: a model with 0 of 90 right, and one with 90 of 90, each show an interval that is not a point
([0, 4.1%] and [95.9%, 100%], Wilson's) in the terminal, report.json, report.html, the viewer, MLflow and the trend
chart, as a user gets them: ``grace kb build``, a responses file per run, ``grace score``, ``grace report --trend``,
the viewer's leaderboard and ``grace export``'s MLflow run read back through MLflow's client."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.run_folder.run_dir import RunDir
from harness.scoring import REFUSAL_SENTENCE
from tests.conftest import SAMPLE, run_grace, write

NEVER, ALWAYS = "acme/never", "acme/always"
# the 95% Wilson score interval of 0 of 90 and 90 of 90 (scipy.stats.binomtest(...).proportion_ci("wilson"), to the
# report's six digits rounded outward)
LOW_CI, HIGH_CI = [0.0, 0.040936], [0.959064, 1.0]
LOW_CELL, HIGH_CELL = "0.0% [0.0, 4.1]", "100.0% [95.9, 100.0]"
SVG = "{http://www.w3.org/2000/svg}"


def _answers(gold: Path, kb_ids: list[str]) -> list[dict]:
    rows = []
    with gold.open(encoding="utf-8", newline="") as fh:
        for g in csv.DictReader(fh):
            expected = [x for x in g["expected_citations"].split(";") if x]
            right = REFUSAL_SENTENCE if g["must_refuse"] == "true" else f"It is in the handbook. [ID: {expected[0]}]"
            wrong = next(i for i in kb_ids if i not in expected)  # a real article, never the gold one
            rows += [{"question_id": g["question_id"], "model": ALWAYS, "response": right, "error": None},
                     {"question_id": g["question_id"], "model": NEVER, "response": f"See [ID: {wrong}].", "error": None}]
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two weekly runs of the two models over the sample benchmark's 90 questions, scored; the terminal's text."""
    root = tmp_path_factory.mktemp("extremes")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        mp.setenv("COLUMNS", "200")
        code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")
        assert code == 0, out
        kb_ids = [json.loads(line)["id"] for line in (root / "kb" / "articles.jsonl").read_text().splitlines()]
        printed = {}
        for week in ("week-1", "week-2"):
            run = root / "runs" / week
            responses = write(run / "responses.jsonl", "".join(json.dumps(r) + "\n"
                                                               for r in _answers(SAMPLE / "gold.csv", kb_ids)))
            code, printed[week] = run_grace("score", responses, "--gold", SAMPLE / "gold.csv", "--kb", root / "kb")
            assert code == 0, printed[week]
    return root, printed


def test_report_json_and_the_terminal(runs):
    root, printed = runs
    report = json.loads((root / "runs" / "week-1" / "report.json").read_text())
    never, always = report["models"][NEVER], report["models"][ALWAYS]
    assert (never["accuracy"], never["n_questions"], never["accuracy_ci95"]) == (0.0, 90, LOW_CI)
    assert (always["accuracy"], always["n_questions"], always["accuracy_ci95"]) == (1.0, 90, HIGH_CI)
    assert never["accuracy_ci95"][1] > 0 and always["accuracy_ci95"][0] < 1
    assert LOW_CELL in printed["week-1"] and HIGH_CELL in printed["week-1"]
    assert "[0.0, 0.0]" not in printed["week-1"] and "[100.0, 100.0]" not in printed["week-1"]


def test_report_html_and_leaderboard_md(runs):
    root, _ = runs
    for name in ("report.html", "leaderboard.md"):
        page = (root / "runs" / "week-1" / name).read_text()
        assert LOW_CELL in page and HIGH_CELL in page and "[0.0, 0.0]" not in page, name


def test_the_viewer_leaderboard(runs):
    from harness.viewer import open_viewer

    root, _ = runs
    app, indexer = open_viewer([root / "runs"], root / "view-cache", child=False)
    try:
        assert indexer.wait(60)
        board = app.leaderboard("week-1")
        cells = {r["model"]: r["cells"]["accuracy"] for r in board["rows"]}
        assert cells == {NEVER: LOW_CELL, ALWAYS: HIGH_CELL}
        listed = {m["model"]: m["ci"] for r in app.runs_page()["runs"] for m in r["models"]}
        assert listed == {NEVER: LOW_CI, ALWAYS: HIGH_CI}
    finally:
        indexer.stop()


def test_the_trend_chart_draws_a_bar_for_each_extreme(runs):
    root, _ = runs
    code, out = run_grace("report", "--trend", root / "runs", "--out", root / "trend.svg")
    assert code == 0, out
    svg = ET.fromstring((root / "trend.svg").read_text())
    bars = {(line.get("x1"), line.get("y1"), line.get("y2")) for line in svg.iter(f"{SVG}line")
            if line.get("x1") == line.get("x2") and line.get("y1") != line.get("y2")}
    for model, ci in ((NEVER, "0.0%–4.1%"), (ALWAYS, "95.9%–100.0%")):
        points = [c for c in svg.iter(f"{SVG}circle") if c.get("data-model") == model]
        assert len(points) == 2
        for c in points:
            assert f"95% CI {ci}" in c.find(f"{SVG}title").text
            # a vertical line through the point, of some length: the bar is drawn
            through = [b for b in bars if b[0] == c.get("cx")
                       and min(float(b[1]), float(b[2])) <= float(c.get("cy")) <= max(float(b[1]), float(b[2]))]
            assert through and all(abs(float(b[1]) - float(b[2])) > 3 for b in through), (model, c.attrib)


@pytest.mark.slow  # MLflow's store written and read back: 50 s
def test_mlflow_reads_back_the_interval(runs, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    pytest.importorskip("sqlalchemy", reason="MLflow's local sqlite store needs SQLAlchemy (the mlflow extra)")
    from harness.exports.mlflow_run import export

    root, _ = runs
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    export(RunDir(root / "runs" / "week-1"), uri, {})
    client = mlflow.MlflowClient(tracking_uri=uri)
    [experiment] = [e for e in client.search_experiments() if e.name != "Default"]
    got = {r.data.tags.get("grace.model"): r.data.metrics for r in client.search_runs([experiment.experiment_id])}
    assert [got[NEVER]["accuracy_ci_low"], got[NEVER]["accuracy_ci_high"]] == LOW_CI
    assert [got[ALWAYS]["accuracy_ci_low"], got[ALWAYS]["accuracy_ci_high"]] == HIGH_CI
