"""grace view in a real headless Chromium on a run with permissions and categories (tests/permission_runs.py):
forbidden citations in the leaderboard, the outcome filter, the grid's cells and the question page; the category
filter and the per-category table; and the static export (from file://) answering like the server."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from tests.browser import export_answers_like_server, grid_ids, launch, open_page, sync_api_or_skip
from tests.permission_runs import LEAKY, build_permission_run
from tests.view_runs import exported_viewer, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: conftest's per-test cache folder is not set yet
        root = tmp_path_factory.mktemp("view-permissions")
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        return build_permission_run(root)


@pytest.fixture(scope="module")
def served(run, tmp_path_factory):
    with served_viewer([run], tmp_path_factory.mktemp("cache")) as url:
        yield url


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    return exported_viewer([run], tmp_path_factory.mktemp("export") / "site")


@pytest.fixture(scope="module")
def browser(served, exported):
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def test_the_leaderboard_shows_the_forbidden_rate_and_the_categories(browser, served):
    page, errors = open_page(browser, served + "#/leaderboard?run=run")
    board = page.locator("table.leaderboard")
    expect(board.locator("th", has_text="Forbidden cit.")).to_have_count(1)
    headers = board.locator("th").all_inner_texts()
    row = board.locator("tr", has_text=LEAKY).locator("td").all_inner_texts()
    assert row[headers.index("Forbidden cit.")] == "40.0%"
    categories = page.locator("table.categories")
    expect(categories.locator("tbody tr")).to_have_count(4)
    # 1 of 2 right: the 95% Wilson interval over the category's two questions (issue 37.14)
    expect(categories.locator("tr[data-category='pay & bands']")).to_contain_text("50.0% [9.5, 90.5]")
    assert errors == []


def test_the_outcome_filter_finds_the_forbidden_citations(browser, served):
    page, errors = open_page(browser, served + "#/questions?runs=run")
    expect(page.locator("#total")).to_have_text("5")
    options = page.locator("#f-outcome option").evaluate_all("os => os.map(o => o.value)")
    assert "forbidden_citation" in options
    page.select_option("#f-outcome", "forbidden_citation")
    expect(page.locator("#total")).to_have_text("3")
    assert grid_ids(page) == ["q1", "q3", "q5"]
    leak = page.locator("#grid tr[data-id='q3'] td.cell.tone-leak")
    expect(leak).to_have_text("forbidden 2")
    assert leak.evaluate("td => getComputedStyle(td).backgroundColor") == "rgb(183, 28, 28)"
    page.locator("#grid tr[data-id='q3'] a.qid").click()
    reading = page.locator(f".model[data-model='{LEAKY}'] .reading").first
    expect(reading).to_contain_text("cited 2: the user who asked may not see it")
    assert errors == []


def test_the_category_filter_drives_the_grid_and_the_url(browser, served):
    page, errors = open_page(browser, served + "#/questions?runs=run")
    options = page.locator("#f-category option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["", "leave", "pay & bands", "facilities", "hr"]
    page.select_option("#f-category", "pay & bands")
    expect(page.locator("#total")).to_have_text("2")
    assert grid_ids(page) == ["q2", "q3"]
    assert re.search(r"category=pay(\+|%20)%26(\+|%20)bands", page.evaluate("location.hash"))
    expect(page.locator("#grid tr[data-id='q2'] .badge.category")).to_have_text("pay & bands")
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#total")).to_have_text("2")
    expect(page.locator("#f-category")).to_have_value("pay & bands")
    assert errors == []


def test_the_export_answers_like_the_server(browser, served, exported):
    queries = ["", "outcome=forbidden_citation", "category=pay+%26+bands", "category=hr&outcome=forbidden_citation",
               f"model={LEAKY}&outcome=miss&category=leave", "category=facilities&sort=hardest"]
    base = exported.as_uri()
    page, errors = open_page(browser, base + "#/questions?runs=run")
    export_answers_like_server(page, served, exported, "run", queries)
    # an unknown category is refused the same way by both
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{served}api/questions?runs=run&category=payroll", timeout=20)
    page.goto(f"{base}#/questions?runs=run&category=payroll")
    expect(page.locator("#error")).to_contain_text("no category 'payroll' in the runs picked")
    page.goto(f"{base}#/leaderboard?run=run")
    expect(page.locator("table.categories tbody tr")).to_have_count(4)
    assert all(u.startswith("file://") for u in page.requested)
    assert errors == []
