"""Issue 39's figures wherever grace shows figures: a multi-citation bot and a GRACE prompt model on one leaderboard
(terminal, leaderboard.md, report.html), ``grace compare``, ``grace report --trend``, the exports and ``grace gate``;
and a run of GRACE prompts alone shows none of it.

The runs come from :func:`tests.citation_runs.build_citation_run`: ``grace run`` of a ``python:`` bot read with
``[models.citations] scoring = "multi"`` beside ``baseline:top1``, scored by the real scorer.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from harness.run_folder.run_dir import RunDir
from tests.citation_runs import BOT, GRACE_MODEL, OTHER_BOT, build_citation_run
from tests.conftest import run_grace

CITATION_WORDS = ("Cit. precision", "Cit. F1", "Unmapped", "## Citations", "citation precision", "Hit rate")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """``mixed`` (the bot and the GRACE model), ``later`` (the same, the bot's answers moved on), ``grace`` (the
    GRACE model alone) and ``pair`` (two multi-citation bots and the GRACE model), all on one gold set."""
    out = {}
    for name, kwargs in (("mixed", {}), ("later", {"shift": 1}), ("grace", {"bot": False}),
                         ("pair", {"other_bot": True})):
        root = tmp_path_factory.mktemp(name)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
            out[name] = build_citation_run(root, **kwargs)
    return out


def _row(markdown: str, model: str) -> list[str]:
    line = next(x for x in markdown.splitlines() if x.startswith("| ") and f" {model.replace('/', '/')} " in x)
    return [c.strip() for c in line.strip("|").split(" | ")]


def _columns(markdown: str) -> list[str]:
    line = next(x for x in markdown.splitlines() if x.startswith("| Rank"))
    return [c.strip() for c in line.strip("|").split(" | ")]


# -- the leaderboard --------------------------------------------------------------------------------------------------

def test_one_leaderboard_gives_each_model_its_own_figures(runs):
    md = (runs["mixed"] / "leaderboard.md").read_text(encoding="utf-8")
    report = RunDir(runs["mixed"]).read_report()
    c = report.models[BOT].citations
    heads = _columns(md)
    bot = dict(zip(heads, _row(md, BOT), strict=True))
    grace = dict(zip(heads, _row(md, GRACE_MODEL), strict=True))
    assert bot["Citations"] == "multi, references" and grace["Citations"] == "single, IDs"
    lo, hi = c.precision_ci95
    assert bot["Cit. precision ± 95% CI"] == f"{100 * c.precision:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
    assert bot["Cit. recall ± 95% CI"].startswith(f"{100 * c.recall:.1f}% [")
    assert bot["Cit. F1 ± 95% CI"].startswith(f"{100 * c.f1:.1f}% [")
    assert bot["Hit rate ± 95% CI"].startswith(f"{100 * c.hit_rate:.1f}% [")
    assert bot["Unmapped"] == f"{c.n_unmapped} of {c.n_citations}" == "4 of 24"
    assert bot["Cit. correct"] == f"{100 * c.cit_correct:.1f}%" and bot["Coverage"] == f"{100 * c.coverage:.1f}%"
    # the GRACE model: its accuracy as today, a dash for every citation figure
    acc = report.models[GRACE_MODEL]
    assert grace["Accuracy ± 95% CI"].startswith(f"{100 * acc.accuracy:.1f}% [")
    assert {grace[k] for k in heads if k.startswith(("Cit.", "Hit rate", "Unmapped", "Coverage"))} == {"–"}
    # the per-model details: how the bot's references resolved
    section = md.split("## Citations", 1)[1]
    assert "source 20, unmapped 4" in section and "4 of 8 not found" in section
    assert GRACE_MODEL not in section


def test_the_page_plots_precision_against_recall_with_its_intervals(runs):
    html = (runs["mixed"] / "report.html").read_text(encoding="utf-8")
    assert '<section id="citations">' in html and '<a href="#citations">' in html
    svg = re.search(r'<svg class="plot" data-plot="citations".*?</svg>', html, re.S).group(0)
    c = RunDir(runs["mixed"]).read_report().models[BOT].citations
    assert svg.count("<circle") == 1  # the bot: the GRACE model has no citation figures to plot
    assert f"citation precision {c.precision:.1%}" in svg and f"recall {c.recall:.1%}" in svg
    assert svg.count("<line") >= 4 + 2  # the grid, and the two interval bars
    assert "onerror" not in html.split('<section id="failures">')[0]  # nothing of an answer reaches the tables


def test_the_terminal_keeps_the_scoring_mode_and_f1_when_narrow(runs, monkeypatch):
    from rich.console import Console

    # a terminal of a known width: under TERM=dumb (an editor's shell) rich knows no width and grace fits nothing
    monkeypatch.setenv("TERM", "xterm-256color")

    from harness.reports.inputs import load_inputs
    from harness.reports.terminal import print_leaderboard

    inputs = load_inputs(runs["mixed"], None, None)
    wide, narrow = io.StringIO(), io.StringIO()
    print_leaderboard(inputs, Console(file=wide, width=400, force_terminal=True, color_system=None))
    print_leaderboard(inputs, Console(file=narrow, width=120, force_terminal=True, color_system=None))
    assert "Cit. precision" in wide.getvalue() and "4 of 24" in wide.getvalue()
    text = narrow.getvalue()
    assert "multi," in text and "F1" in text and "left out for the terminal's width" in text


def test_a_run_of_grace_prompts_alone_shows_no_citation_figure(runs):
    folder = RunDir(runs["grace"])
    md = folder.leaderboard_md.read_text(encoding="utf-8")
    html = folder.report_html.read_text(encoding="utf-8")
    assert not any(w in md for w in CITATION_WORDS)
    assert not any(w in html for w in CITATION_WORDS) and 'data-plot="citations"' not in html
    assert _columns(md) == ["Rank", "Model", "Accuracy ± 95% CI", "Strict acc.", "Refusal calib.", "Invalid cit.",
                            "Unshown cit.", "Cost / 1k Q", "p50 latency", "Sig."]
    record = folder.read_report().models[GRACE_MODEL].record()
    assert not [k for k in record if k.startswith("citation") or k == "cit_correct"]
    lines = [json.loads(x) for x in folder.scores.read_text().splitlines()]
    assert all("cit_f1" not in x for x in lines)


# -- compare ----------------------------------------------------------------------------------------------------------

def test_compare_gives_the_change_in_citation_f1_for_the_bot_alone(runs, tmp_path):
    code, out = run_grace("compare", runs["mixed"], runs["later"], "--json", tmp_path / "c.json",
                          "--markdown", tmp_path / "c.md")
    assert code == 0, out
    data = json.loads((tmp_path / "c.json").read_text())
    by = {m["model"]: m for m in data["models"]}
    assert "citations" not in by[GRACE_MODEL]  # a GRACE model's comparison is as it was
    c = by[BOT]["citations"]
    scores = {name: [json.loads(x) for x in RunDir(runs[name]).scores.read_text().splitlines()]
              for name in ("mixed", "later")}
    f1 = {name: [x["cit_f1"] for x in rows if x["model"] == BOT and x["cit_f1"] is not None]
          for name, rows in scores.items()}
    assert c["n_questions"] == 16
    assert c["f1_a"] == pytest.approx(sum(f1["mixed"]) / 16) and c["f1_b"] == pytest.approx(sum(f1["later"]) / 16)
    assert c["delta"] == pytest.approx(c["f1_b"] - c["f1_a"])
    assert c["delta_ci"][0] <= c["delta"] <= c["delta_ci"][1] and 0 < c["p_value"] <= 1
    md = (tmp_path / "c.md").read_text()
    assert "Citation F1 A" in md and "Permutation p" in md
    assert "Citation F1" in out


def test_compare_of_grace_runs_has_no_citation_part(runs, tmp_path):
    code, out = run_grace("compare", runs["grace"], runs["grace"], "--json", tmp_path / "c.json",
                          "--markdown", tmp_path / "c.md")
    assert code == 0, out
    assert "citations" not in (tmp_path / "c.json").read_text()
    assert "Citation" not in (tmp_path / "c.md").read_text() and "Citation" not in out


def test_the_permutation_test_finds_a_real_change_and_not_a_null_one():
    import numpy as np

    from harness.scoring.run_comparison import permutation_p

    assert permutation_p(np.full(30, 0.5), 0) < 0.001
    assert permutation_p(np.array([0.5, -0.5] * 15), 0) == 1.0
    assert permutation_p(np.zeros(10), 0) == 1.0


# -- trends -----------------------------------------------------------------------------------------------------------

def test_the_trend_follows_citation_f1_of_the_models_that_have_it(runs, tmp_path):
    from harness.workflows.trend import trend

    t = trend([runs["mixed"], runs["later"]], metric="citation_f1")
    assert [s.model for s in t.series if s.points] == [BOT]
    points = next(s for s in t.series if s.model == BOT).points
    figures = [RunDir(runs[n]).read_report().models[BOT].citations for n in ("mixed", "later")]
    # the two runs (in time order: both scored in the same minute, so either may come first), each at its own figures
    assert sorted((p.value, p.ci95) for p in points) == sorted((c.f1, c.f1_ci95) for c in figures)
    assert all(p.change is None for p in points)
    assert any("grace compare" in n for n in t.notes)
    code, out = run_grace("report", "--trend", runs["mixed"], "--trend", runs["later"], "--metric", "citation-recall",
                          "--format", "json", "--out", tmp_path / "t.json")
    assert code == 0, out
    assert json.loads((tmp_path / "t.json").read_text())["metric"] == "citation_recall"


def test_the_trend_offers_citation_metrics_only_where_a_model_has_them(runs):
    from harness.reports.trend import metrics_for

    grace = RunDir(runs["grace"]).read_report()
    mixed = RunDir(runs["mixed"]).read_report()
    assert list(metrics_for([grace])) == ["accuracy", "strict_accuracy"]
    assert "citation_f1" in metrics_for([grace, mixed])


# -- exports ----------------------------------------------------------------------------------------------------------

def test_trackers_get_the_citation_figures_as_metrics(runs):
    from harness.exports.tracking import model_metrics

    report = RunDir(runs["mixed"]).read_report()
    c = report.models[BOT].citations
    metrics = model_metrics(report.models[BOT])
    assert metrics["citation_precision"] == c.precision and metrics["citation_f1"] == c.f1
    assert [metrics["citation_recall_ci_low"], metrics["citation_recall_ci_high"]] == c.recall_ci95
    assert metrics["citation_n_unmapped"] == 4 and metrics["cit_correct"] == c.cit_correct
    assert not [k for k in model_metrics(report.models[GRACE_MODEL]) if k.startswith("citation")]


def test_the_inspect_log_of_the_bot_carries_its_citation_figures(runs):
    inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect_ai is not installed (pip install "
                                      "'grace-eval[inspect]')")
    code, out = run_grace("export", runs["mixed"], "--to", "inspect")
    assert code == 0, out
    logs = {}
    for info in inspect_log.list_eval_logs(str(runs["mixed"] / "inspect")):
        log = inspect_log.read_eval_log(info.name)
        logs[log.eval.model_args["grace_model"]] = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    c = RunDir(runs["mixed"]).read_report().models[BOT].citations
    assert logs[BOT]["citation_precision"] == c.precision and logs[BOT]["citation_hit_rate"] == c.hit_rate
    assert not [k for k in logs[GRACE_MODEL] if k.startswith("citation")]


# -- the gate ---------------------------------------------------------------------------------------------------------

def test_the_gate_checks_citation_thresholds_on_the_bot(runs):
    c = RunDir(runs["mixed"]).read_report().models[BOT].citations
    code, out = run_grace("gate", runs["mixed"], "--model", BOT, "--min-citation-precision", "0.4",
                          "--min-citation-recall", "0.9", "--min-citation-f1", "0.5")
    assert code == 1, out
    assert f"PASS  {BOT}: citation precision {100 * c.precision:.1f}%" in out
    assert f"FAIL  {BOT}: citation recall {100 * c.recall:.1f}%" in out and "< minimum 90.0%" in out
    assert "95% CI" in out and "gate failed: 1 of 3" in out
    code, out = run_grace("gate", runs["mixed"], "--model", BOT, "--min-citation-precision", "40%")
    assert code == 0, out


def test_the_gate_refuses_a_citation_threshold_for_a_model_without_such_figures(runs):
    code, out = run_grace("gate", runs["mixed"], "--min-citation-precision", "0.4")  # every model: the GRACE one too
    assert code == 2, out
    assert f"{GRACE_MODEL!r} has no citation figures" in out and "--min-citation-precision" in out
    assert "Traceback" not in out
    code, out = run_grace("gate", runs["grace"], "--min-citation-f1", "0.4")
    assert code == 2 and "has no citation figures" in out, out


def test_the_scorers_citation_f1_tests_are_shown_where_the_report_has_them(runs):
    from harness.reports.inputs import load_inputs
    from harness.reports.markdown import render_markdown
    from harness.reports.page import render_html

    assert "Differences in citation F1" not in render_html(load_inputs(runs["mixed"], None, None))  # one multi model
    inputs = load_inputs(runs["pair"], None, None)
    [pair] = inputs.report.citation_pairwise  # the two bots, scored for real: their per-question F1 compared
    assert {pair.a, pair.b} == {BOT, OTHER_BOT} and pair.n == 16 and 0 < pair.p_value <= 1
    md, html = render_markdown(inputs), render_html(inputs)
    names = {BOT: "acme/bot", OTHER_BOT: "acme/\\<b\\>other\\</b\\>"}
    sig = "yes" if pair.significant else "no"
    assert (f"| {names[pair.a]} | {names[pair.b]} | 16 | {100 * pair.f1_a:.1f}% | {100 * pair.f1_b:.1f}% | "
            f"{pair.p_value:.3g} | {pair.p_adjusted:.3g} | {sig} |") in md
    assert "Differences in citation F1" in html and "acme/&lt;b&gt;other&lt;/b&gt;" in html
    assert "<b>other" not in html


def test_the_parquet_table_has_each_answers_citation_figures_only_when_a_model_has_them(runs):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'grace-eval[parquet]')")
    from harness.exports.table import CITATION_COLUMNS, columns, question_table

    table = question_table(runs["mixed"]).to_pylist()
    scores = {(x["model"], x["question_id"]): x for x in map(json.loads, RunDir(runs["mixed"]).scores.read_text()
                                                                          .splitlines())}
    for row in table:
        line = scores[(row["model"], row["question_id"])]
        assert [row[c] for c in CITATION_COLUMNS] == [line.get(c) for c in CITATION_COLUMNS]
    assert any(row["cit_precision"] == 0.5 and row["cit_recall"] == 1.0 for row in table if row["model"] == BOT)
    assert question_table(runs["grace"]).column_names == columns()


def test_the_viewers_static_export_has_the_citation_plot_and_trends(runs, tmp_path):
    from tests.view_runs import exported_viewer

    index = exported_viewer([runs["mixed"]], tmp_path / "site")
    site = index.parent
    assert "citation precision" in (site / "assets" / "plot-citations.svg").read_text(encoding="utf-8")
    data = (site / "data" / "export.js").read_text(encoding="utf-8")
    assert "|citation_f1|" in data and '"citation_pairwise"' not in data
    plain = exported_viewer([runs["grace"]], tmp_path / "plain").parent
    assert not (plain / "assets" / "plot-citations.svg").exists()
    assert "citation_f1" not in (plain / "data" / "export.js").read_text(encoding="utf-8")
