"""Category slices: a ``category`` column in the gold file gives each model its accuracy per category, with a 95%
Wilson score interval over the category's questions (valid on a few questions), in report.json, leaderboard.md, report.html (a table and a heatmap) and the
viewer (its leaderboard, and a category filter on the questions grid); without the column nothing changes."""

from __future__ import annotations

import json

import pytest

from harness.run_folder.report import read_report
from harness.stats.wilson import wilson_interval
from harness.viewer import open_viewer
from harness.web import Rejected
from tests.conftest import run_grace, write
from tests.permission_runs import CAREFUL, GOLD, LEAKY, build_permission_run

CATEGORIES = ["leave", "pay & bands", "facilities", "hr"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: conftest's per-test cache folder is not set yet
        root = tmp_path_factory.mktemp("categories")
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        run = build_permission_run(root)
        code, out = run_grace("report", run)
        assert code == 0, out
        return run


def rescore(run, tmp_path, gold_text: str):
    """The same responses scored against another gold file (the same questions, other categories)."""
    write(tmp_path / "gold.csv", gold_text)
    out = tmp_path / "out"
    code, text = run_grace("score", run / "responses.jsonl", "--gold", tmp_path / "gold.csv", "--kb",
                           run.parent / "kb", "--out", out)
    assert code == 0, text
    return out


def test_report_json_has_each_models_accuracy_and_ci_per_category(run):
    report = read_report(run / "report.json")
    assert report.categories == CATEGORIES  # the gold file's order
    leaky = report.models[LEAKY].categories
    assert list(leaky) == CATEGORIES
    assert {c: (s.n, s.n_questions, s.accuracy) for c, s in leaky.items()} == {
        "leave": (1, 1, 0.0), "pay & bands": (2, 2, 0.5), "facilities": (1, 1, 1.0), "hr": (1, 1, 1.0)}
    # a Wilson interval over the category's questions (q2 right, q3 a leak)
    assert leaky["pay & bands"].accuracy_ci95 == wilson_interval(0.5, 2) == [0.094531, 0.905469]
    assert report.models[CAREFUL].categories["pay & bands"].accuracy == 1.0
    assert report.models[CAREFUL].categories["hr"].accuracy == 0.0  # its q5 cited HR's article to staff


def test_one_category_for_every_question_has_the_overall_accuracy_and_its_wilson_interval(run, tmp_path):
    """The category's accuracy is the overall one exactly; its interval is Wilson's over the same questions, as the
    overall accuracy's is, which contains it."""
    lines = GOLD.splitlines()
    one = "\n".join([lines[0]] + [",".join(line.split(",")[:7] + ["all"]) for line in lines[1:]]) + "\n"
    report = read_report(rescore(run, tmp_path, one) / "report.json")
    for m in report.models.values():
        c = m.categories["all"]
        assert c.accuracy == m.accuracy and c.n == m.n and c.n_questions == m.n_questions
        assert c.accuracy_ci95 == wilson_interval(m.accuracy, m.n_questions) == m.accuracy_ci95
        assert c.accuracy_ci95[0] <= m.accuracy <= c.accuracy_ci95[1]


def test_a_small_category_never_gets_a_zero_width_interval(run):
    """Issue 37.14: one question, or four all right, is not certainty: the interval is Wilson's, not [x, x]."""
    report = read_report(run / "report.json")
    seen = 0
    for m in report.models.values():
        for name, c in m.categories.items():
            low, high = c.accuracy_ci95
            assert low <= c.accuracy <= high and high - low >= 0.2, (m.model, name, c)
            seen += 1
    assert seen == 8
    assert report.models[LEAKY].categories["leave"].accuracy_ci95 == [0.0, 0.793451]  # 0 of 1
    assert report.models[LEAKY].categories["hr"].accuracy_ci95 == [0.206549, 1.0]  # 1 of 1
    assert wilson_interval(1.0, 4) == [0.510109, 1.0]  # 4 of 4 (the case); Wilson (1927)


def test_leaderboard_md_has_a_per_category_table(run):
    md = (run / "leaderboard.md").read_text()
    section = md.split("## By category\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0] == f"| Category | Questions | {CAREFUL} | {LEAKY} |"
    assert rows[3] == "| pay & bands | 2 | 100.0% [34.2, 100.0] | 50.0% [9.5, 90.5] |"
    assert "Accuracy per category: as the leaderboard's accuracy" in section and "Wilson" in section


def test_report_html_has_the_table_and_a_heatmap(run):
    html = (run / "report.html").read_text()
    assert '<a href="#categories">Categories</a>' in html
    section = html.split('<section id="categories">')[1].split("</section>")[0]
    assert "<td><strong>pay &amp; bands</strong></td><td class=num>2</td>" in section
    assert "<td class=num>50.0% [9.5, 90.5]</td>" in section
    assert 'data-plot="categories"' in section
    assert f"<title>{LEAKY}, pay &amp; bands: accuracy 50.0%, 95% CI 9.5%–90.5%, 2 question(s)</title>" in section


def test_hostile_category_names_stay_text(run, tmp_path):
    hostile = "<img src=x onerror=alert(1)>|*x*"
    out = rescore(run, tmp_path, GOLD.replace(",hr\n", f",\"{hostile}\"\n"))
    code, text = run_grace("report", out)
    assert code == 0, text
    html = (out / "report.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;|*x*" in html
    md = (out / "leaderboard.md").read_text()
    assert "\\<img src=x onerror=alert(1)\\>\\|\\*x\\*" in md


def test_without_a_category_column_nothing_is_added(run, tmp_path):
    plain = "\n".join(line.rsplit(",", 1)[0] for line in GOLD.splitlines()) + "\n"
    out = rescore(run, tmp_path, plain)
    data = json.loads((out / "report.json").read_text())
    assert "categories" not in data and all("categories" not in m for m in data["models"].values())
    code, text = run_grace("report", out)
    assert code == 0, text
    assert "By category" not in (out / "leaderboard.md").read_text()
    assert 'id="categories"' not in (out / "report.html").read_text()


def test_an_empty_category_cell_is_its_own_slice(run, tmp_path):
    out = rescore(run, tmp_path, GOLD.replace(",facilities\n", ",\n"))
    report = read_report(out / "report.json")
    assert report.categories == ["leave", "pay & bands", "(no category)", "hr"]


def test_the_viewer_filters_the_grid_by_category_and_shows_the_table(run, tmp_path):
    app, indexer = open_viewer([run], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        page = app.questions({"runs": ["run"]})
        assert page["categories"] == CATEGORIES and page["total"] == 5
        assert {r["id"]: r["category"] for r in page["rows"]}["q3"] == "pay & bands"
        page = app.questions({"runs": ["run"], "category": ["pay & bands"]})
        assert [r["id"] for r in page["rows"]] == ["q2", "q3"]
        # the columns' accuracy is over the rows the filter keeps: the category's accuracy
        assert {c["model"]: c["accuracy"] for c in page["columns"]} == {CAREFUL: 1.0, LEAKY: 0.5}
        page = app.questions({"runs": ["run"], "category": ["pay & bands"], "outcome": ["forbidden_citation"]})
        assert [r["id"] for r in page["rows"]] == ["q3"]
        with pytest.raises(Rejected, match="no category 'payroll' in the runs picked; they have leave, pay & bands"):
            app.questions({"runs": ["run"], "category": ["payroll"]})
        board = app.leaderboard("run")
        assert board["categories"]["headers"] == ["Category", "Questions", CAREFUL, LEAKY]
        assert board["categories"]["rows"][1] == ["pay & bands", "2", "100.0% [34.2, 100.0]", "50.0% [9.5, 90.5]"]
        assert "Forbidden cit." in [c["header"] for c in board["columns"]]
    finally:
        indexer.stop()
