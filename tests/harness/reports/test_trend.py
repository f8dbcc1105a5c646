"""Trends across runs: twelve weekly runs of one gold set (tests/trend_runs.py) put in the order they started, each
model's accuracy with its CI per run, on every question and per category, and the one planted regression marked by
grace compare's own rule, and nothing else; the same from the viewer's API, and ``grace report --trend`` as SVG, PNG
and JSON."""

from __future__ import annotations

import json
import struct
import sys
import xml.etree.ElementTree as ET

import pytest

import grace
from harness.reports.trend import Trend, trend_chart
from harness.run_folder.run_dir import RunDir
from harness.viewer import open_viewer
from tests.conftest import run_grace
from tests.trend_runs import (
    HOSTILE,
    MODELS,
    REGRESSION_WEEK,
    SLIPPING,
    TRAVEL,
    WEEKS,
    build_trend_runs,
    run_name,
    started,
)

SVG = "{http://www.w3.org/2000/svg}"
TIME_ORDER = [run_name(w) for w in range(1, WEEKS + 1)]
DROP_RUN, BEFORE_DROP = run_name(REGRESSION_WEEK), run_name(REGRESSION_WEEK - 1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("trend")
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: conftest's per-test cache folder is not set yet
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        return build_trend_runs(root)


def marks(trend: Trend) -> list[tuple[str, str, str]]:
    return [(model, p.run, p.change.direction) for model, p in trend.changes()]


def test_runs_in_start_order_with_each_models_figures_and_only_the_planted_regression_marked(runs):
    t = grace.trend([runs])
    assert [r.id for r in t.runs] == TIME_ORDER != sorted(TIME_ORDER)  # the folders' names are not in time order
    assert [r.when for r in t.runs] == [started(w) for w in range(1, WEEKS + 1)]
    ranked = [m.model for m in RunDir(runs / TIME_ORDER[-1]).read_report().ranked()]  # the newest run's ranking
    assert t.models == ranked == [s.model for s in t.series] and set(ranked) == set(MODELS)
    assert t.categories == ["leave", "travel", "expenses"] and t.metric == "accuracy" and t.category is None
    for s in t.series:  # each point is the run's report.json figure
        assert [p.run for p in s.points] == TIME_ORDER
        for p in s.points:
            m = RunDir(runs / p.run).read_report().models[s.model]
            assert (p.value, p.ci95, p.n) == (m.accuracy, m.accuracy_ci95, m.n)
    assert marks(t) == [(SLIPPING, DROP_RUN, "regressed")]
    # every pair was tested (noise: one or two questions flip each week), only the regression is significant
    tested = [p.change for s in t.series for p in s.points[1:]]
    assert len(tested) == 3 * (WEEKS - 1) and all(c is not None for c in tested)
    assert any(c.improved + c.regressed > 0 and not c.significant for c in tested)
    # the mark is grace compare's own verdict on that pair
    drop = next(p for s in t.series if s.model == SLIPPING for p in s.points if p.run == DROP_RUN).change
    cmp = grace.compare_runs(runs / BEFORE_DROP, runs / DROP_RUN, [SLIPPING])[SLIPPING]
    assert drop.since == BEFORE_DROP and drop.significant and cmp.significant
    assert (drop.delta, drop.mcnemar_p, drop.regressed, drop.improved) == (cmp.delta, cmp.mcnemar_p,
                                                                          len(cmp.regressed), len(cmp.improved))
    assert drop.regressed >= len(TRAVEL)
    # the run over another gold set is left out, named, never mixed in
    assert [(x.run, "another gold set" in x.reason and "gold-other.csv" in x.reason) for x in t.left_out] == [
        ("other-gold", True)]
    assert sorted(len(g.runs) for g in t.groups) == [1, WEEKS]


def test_per_category_the_regression_shows_where_it_happened_and_strict_accuracy_follows_it(runs):
    travel = grace.trend([runs], category="travel")
    assert marks(travel) == [(SLIPPING, DROP_RUN, "regressed")]
    slipping = next(s for s in travel.series if s.model == SLIPPING)
    report = RunDir(runs / DROP_RUN).read_report()
    point = next(p for p in slipping.points if p.run == DROP_RUN)
    cat = report.models[SLIPPING].categories["travel"]
    assert (point.value, point.ci95, point.n) == (cat.accuracy, cat.accuracy_ci95, cat.n) and point.value == 0.0
    assert point.change.regressed == len(TRAVEL) and point.change.n_questions == len(TRAVEL)
    assert marks(grace.trend([runs], category="leave")) == []
    assert marks(grace.trend([runs], category="expenses")) == []
    strict = grace.trend([runs], category="travel", metric="strict_accuracy")
    assert marks(strict) == [(SLIPPING, DROP_RUN, "regressed")]
    assert [p.value for p in strict.series[0].points] == [p.value for p in travel.series[0].points]
    whole = grace.trend([runs], metric="strict_accuracy", models=[SLIPPING])
    assert [s.model for s in whole.series] == [SLIPPING] and marks(whole) == [(SLIPPING, DROP_RUN, "regressed")]
    assert [p.value for p in whole.series[0].points] == [
        RunDir(runs / r).read_report().models[SLIPPING].strict_accuracy for r in TIME_ORDER]


def test_the_other_gold_set_is_its_own_trend(runs):
    other = grace.trend([runs]).left_out[0].reason.split("hash ")[1].rstrip(")")
    t = grace.trend([runs], gold=other[:8])
    assert [r.id for r in t.runs] == ["other-gold"] and {x.run for x in t.left_out} == set(TIME_ORDER)
    assert all(len(s.points) == 1 and s.points[0].change is None for s in t.series)
    for bad, why in ((dict(gold="ffff"), "no gold set"), (dict(category="sports"), "leave, travel, expenses"),
                     (dict(models=["acme/nobody"]), "in none of these runs"), (dict(metric="f1"), "accuracy or")):
        with pytest.raises(grace.GraceError, match=why):
            grace.trend([runs], **bad)


def test_the_chart_has_a_line_per_model_and_marks_the_regression_and_escapes_names(runs):
    t = grace.trend([runs])
    svg = trend_chart(t)
    root = ET.fromstring(svg)  # well-formed: every name escaped
    lines = root.findall(f".//{SVG}path[@class='trend-line']")
    assert [p.get("data-model") for p in lines] == t.models and set(t.models) == set(MODELS)
    assert all(p.get("d").count("L") == WEEKS - 1 for p in lines)
    changes = root.findall(f".//{SVG}path[@class='trend-change']")
    assert [(c.get("data-model"), c.get("data-run"), c.get("data-change")) for c in changes] == [
        (SLIPPING, DROP_RUN, "regressed")]
    assert "McNemar p" in changes[0].find(f"{SVG}title").text
    assert len(root.findall(f".//{SVG}circle[@class='trend-point']")) == 3 * WEEKS
    assert "<img" not in svg and "&lt;img src=x onerror=&quot;" in svg
    one = ET.fromstring(trend_chart(grace.trend([runs], category="leave", models=[HOSTILE])))
    assert [p.get("data-model") for p in one.findall(f".//{SVG}path[@class='trend-line']")] == [HOSTILE]
    assert one.findall(f".//{SVG}path[@class='trend-change']") == []


def test_the_viewer_api_gives_the_same_trend_from_its_index(runs, tmp_path):
    app, indexer = open_viewer([runs], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        for query, kwargs in (({}, {}), ({"category": ["travel"]}, {"category": "travel"}),
                              ({"metric": ["strict_accuracy"], "category": ["leave"]},
                               {"metric": "strict_accuracy", "category": "leave"})):
            page = app.get("/api/trend", query)
            want = grace.trend([runs], **kwargs).model_dump(mode="json")
            assert page["trend"]["series"] == want["series"] and page["trend"]["runs"] == want["runs"]
        page = app.get("/api/trend", {"model": [SLIPPING], "category": ["travel"]})
        assert [s["model"] for s in page["trend"]["series"]] == [SLIPPING] and set(page["trend"]["models"]) == set(MODELS)
        svg = app.get("/api/trend-plot", {"model": [SLIPPING], "category": ["travel"]})
        assert svg.content_type == "image/svg+xml" and svg.body.count(b'class="trend-line"') == 1
        assert svg.body.count(b'data-change="regressed"') == 1
    finally:
        indexer.stop()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_trend_writes_svg_png_and_json(runs, tmp_path):
    code, out = run_grace("report", "--trend", runs, "--out", tmp_path / "t.svg")
    assert code == 0, out
    assert f"significant: {SLIPPING}: {BEFORE_DROP} -> {DROP_RUN}" in out and "left out: other-gold" in out
    root = ET.fromstring((tmp_path / "t.svg").read_text())
    assert len(root.findall(f".//{SVG}path[@class='trend-line']")) == 3
    code, out = run_grace("report", "--trend", runs, "--format", "json", "--out", tmp_path / "t.json",
                          "--category", "travel")
    assert code == 0, out
    assert marks(Trend.model_validate_json((tmp_path / "t.json").read_text())) == [(SLIPPING, DROP_RUN, "regressed")]
    code, out = run_grace("report", "--trend", runs, "--metric", "strict", "--model", SLIPPING)
    assert code == 0 and (runs / "trend.svg").is_file(), out  # default: beside the runs
    (runs / "trend.svg").unlink()
    pytest.importorskip("vl_convert", reason="the png extra is not installed (pip install 'grace-eval[png]')")
    code, out = run_grace("report", "--trend", runs, "--out", tmp_path / "t.png")
    assert code == 0, out
    width, height = png_size((tmp_path / "t.png").read_bytes())
    assert width > 1000 and height > 500  # drawn at twice the SVG's size


def test_report_trend_refuses_what_it_cannot_do_with_the_fix(runs, tmp_path, monkeypatch):
    for args, why in ((["--out", tmp_path / "t.svg", "--format", "png"], "ends in .svg but --format is png"),
                      (["--category", "sports"], "has the categories leave, travel, expenses"),
                      (["--model", "acme/nobody"], "in none of these runs"),
                      (["--gold", "ffff"], "no gold set"),
                      (["--out", tmp_path], "is a directory")):
        code, out = run_grace("report", "--trend", runs, *args)
        assert code == 2 and why in out and "Traceback" not in out, (args, out)
    code, out = run_grace("report", runs / TIME_ORDER[0], "--trend", runs)
    assert code == 2 and "not both" in out
    code, out = run_grace("report", runs / TIME_ORDER[0], "--model", SLIPPING)
    assert code == 2 and "goes with --trend" in out
    code, out = run_grace("report")
    assert code == 2 and "grace report --trend RUNS" in out
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # the png extra absent: PNG refused, SVG still works
    code, out = run_grace("report", "--trend", runs, "--out", tmp_path / "t.png")
    assert code == 2 and "pip install 'grace-eval[png]'" in out and not (tmp_path / "t.png").exists()
    assert run_grace("report", "--trend", runs, "--out", tmp_path / "t.svg")[0] == 0


def test_a_trend_is_json_the_api_reads_back(runs, tmp_path):
    path, t = grace.write_trend([runs], tmp_path / "t.json")
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and Trend.model_validate(data) == t
    assert {"trend", "write_trend", "Trend"} <= set(grace.__all__)


def test_damaged_reports_are_each_left_out_by_name_and_never_plotted(runs, tmp_path):
    """Issue 37.12: impossible figures (an accuracy of 7.5, n = -5, a reversed CI) and a truncated report.json are
    refused where the report is read; the trend (grace report --trend and the viewer's Trends page) leaves out
    every damaged run, each named with its problem, instead of plotting 750% or stopping at the first."""
    import shutil

    copy = tmp_path / "runs"
    names = TIME_ORDER[:6]
    for name in names:
        shutil.copytree(runs / name, copy / name)

    def edit(name: str, change) -> None:
        path = copy / name / "report.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        change(data["models"][SLIPPING])
        path.write_text(json.dumps(data), encoding="utf-8")

    edit(names[1], lambda m: m.update(accuracy=7.5))
    edit(names[2], lambda m: m.update(n=-5))
    edit(names[3], lambda m: m.update(accuracy_ci95=[0.9, 0.1]))
    whole = (copy / names[4] / "report.json").read_text(encoding="utf-8")
    (copy / names[4] / "report.json").write_text(whole[: len(whole) // 2], encoding="utf-8")
    damaged = {names[1]: "accuracy is 7.5, not a fraction between 0 and 1", names[2]: "n is -5, not a count",
               names[3]: "accuracy_ci95 is [0.9, 0.1], not [low, high] with 0 <= low <= high <= 1",
               names[4]: "not valid JSON"}

    def check(trend: dict) -> None:
        assert [r["id"] for r in trend["runs"]] == [names[0], names[5]]
        left = {x["run"]: x["reason"] for x in trend["left_out"]}
        for name, problem in damaged.items():
            assert left[name].startswith("damaged report.json") and problem in left[name], (name, left[name])
            assert "not scored yet" not in left[name]
        for s in trend["series"]:
            assert all(0 <= p["value"] <= 1 for p in s["points"])

    check(grace.trend([copy]).model_dump(mode="json"))
    code, out = run_grace("report", "--trend", copy, "--out", tmp_path / "trend.json")
    assert code == 0, out
    assert sum(f"left out: {name}" in out for name in damaged) == 4, out
    app, indexer = open_viewer([copy], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        check(app.get("/api/trend", {})["trend"])
        assert "750" not in app.get("/api/trend-plot", {}).body.decode()
        runs_page = {r["id"]: r for r in app.get("/api/runs", {})["runs"]}
        for name, problem in damaged.items():  # the Runs page names the damage too, never "not scored yet"
            assert problem in (runs_page[name]["problem"] or ""), runs_page[name]
            assert runs_page[name]["state"] != "unscored"
    finally:
        indexer.stop()
