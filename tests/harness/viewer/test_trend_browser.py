"""The Trends page in a real headless Chromium, served and as a static export (file://): a line per model in the
chart, the planted regression marked and nothing else, the filters in the URL (a reload keeps them, the back button
undoes one), a category that changes the chart, and a model name that is markup shown as text."""

from __future__ import annotations

import re
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from tests.browser import launch, open_page, sync_api_or_skip
from tests.trend_runs import HOSTILE, MODELS, REGRESSION_WEEK, SLIPPING, build_trend_runs, run_name
from tests.view_runs import exported_viewer, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect
SVG = "{http://www.w3.org/2000/svg}"
DROP_RUN = run_name(REGRESSION_WEEK)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("trend-browser")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        return build_trend_runs(root)


@pytest.fixture(scope="module")
def served(runs, tmp_path_factory):
    with served_viewer([runs], tmp_path_factory.mktemp("cache")) as url:
        yield url


@pytest.fixture(scope="module")
def exported(runs, tmp_path_factory):
    return exported_viewer([runs], tmp_path_factory.mktemp("export") / "site")


@pytest.fixture(scope="module")
def browser(served, exported):
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def chart(page, base: str) -> ET.Element:
    """The chart the page shows: the SVG behind its image (served: from the API; exported: the file)."""
    img = page.locator("#trend-plot")
    expect(img).to_have_js_property("complete", True)
    assert img.evaluate("i => i.naturalWidth") > 400
    src = urllib.parse.urljoin(base, img.get_attribute("src"))
    if src.startswith("file:"):
        return ET.fromstring(open(urllib.request.url2pathname(urllib.parse.urlparse(src).path), "rb").read())
    with urllib.request.urlopen(src, timeout=20) as r:
        return ET.fromstring(r.read())


def lines(svg: ET.Element) -> list[str]:
    return [p.get("data-model") for p in svg.findall(f".//{SVG}path[@class='trend-line']")]


def svg_marks(svg: ET.Element) -> list[tuple[str, str, str]]:
    return [(p.get("data-model"), p.get("data-run"), p.get("data-change"))
            for p in svg.findall(f".//{SVG}path[@class='trend-change']")]


def table_marks(page) -> list[list[str]]:
    return page.locator("table.trend td[data-change]").evaluate_all(
        "tds => tds.map(td => [td.closest('tr').dataset.model, td.dataset.run, td.dataset.change])")


def rendered(page, fragment: str) -> None:
    expect(page.locator("main")).to_have_attribute("data-rendered", re.compile(re.escape(fragment)))


def test_each_models_line_and_only_the_planted_regression_marked(browser, served):
    page, errors = open_page(browser, served + "#/runs")
    page.click("#trend-link")
    rendered(page, "#/trend")
    expect(page.locator("table.trend tbody tr")).to_have_count(3)
    svg = chart(page, served)
    assert sorted(lines(svg)) == sorted(MODELS)
    assert svg_marks(svg) == [(SLIPPING, DROP_RUN, "regressed")]
    assert table_marks(page) == [[SLIPPING, DROP_RUN, "regressed"]]
    expect(page.locator("#trend-changes li")).to_have_count(1)
    expect(page.locator("#trend-changes li")).to_contain_text(f"{SLIPPING}: regressed from {run_name(REGRESSION_WEEK - 1)}")
    expect(page.locator(".left-out")).to_contain_text("other-gold")
    # the model whose name is markup: text in the table and the filter, never a live element
    expect(page.locator(f"table.trend tr[data-model='{HOSTILE}'] td").first).to_have_text(HOSTILE)
    assert page.locator("main img").count() == 1
    assert page.evaluate("typeof window.__pwned") == "undefined"
    # the mark links to grace compare's page for that pair
    page.locator("#trend-changes li a").click()
    page.wait_for_selector(".idlist.regressed", state="attached")
    assert errors == []


def test_the_charts_text_stays_inside_it(browser, served):
    """Issue 47: the title, the key and the runs' labels of the chart the page shows are never clipped, on every
    question and on a category, measured in the browser against the SVG's own box."""
    from tests.harness.reports.test_trend_chart_browser import OUTSIDE

    page, errors = open_page(browser, served + "#/trend?category=travel")
    for fragment in ("category=travel", ""):
        page.goto(served + "#/trend" + (f"?{fragment}" if fragment else ""))
        rendered(page, fragment or "#/trend")
        src = urllib.parse.urljoin(served, page.locator("#trend-plot").get_attribute("src"))
        shown = browser.new_page(viewport={"width": 2000, "height": 1000})
        shown.goto(src)
        outside, n = shown.locator("svg").evaluate(OUTSIDE)
        assert n > 10 and outside == [], fragment
        shown.close()
    assert errors == []


def test_filters_live_in_the_url_a_reload_keeps_them_and_a_category_changes_the_chart(browser, served):
    page, errors = open_page(browser, served + "#/trend")
    rendered(page, "#/trend")
    everything = chart(page, served)
    page.select_option("#t-category", "leave")
    rendered(page, "category=leave")
    expect(page.locator("#trend-changes")).to_contain_text("None")
    leave = chart(page, served)
    assert svg_marks(leave) == [] and sorted(lines(leave)) == sorted(MODELS)
    assert ET.tostring(leave) != ET.tostring(everything)
    page.select_option("#t-model", SLIPPING)
    rendered(page, "model=")
    expect(page.locator("table.trend tbody tr")).to_have_count(1)
    assert lines(chart(page, served)) == [SLIPPING]
    url = page.url
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    rendered(page, "category=leave")
    assert page.url == url
    expect(page.locator("#t-category")).to_have_value("leave")
    expect(page.locator("#t-model")).to_have_value(SLIPPING)
    expect(page.locator("table.trend tbody tr")).to_have_count(1)
    page.go_back()  # undoes the model filter
    expect(page.locator("table.trend tbody tr")).to_have_count(3)
    expect(page.locator("#t-category")).to_have_value("leave")
    page.select_option("#t-category", "travel")
    rendered(page, "category=travel")
    assert table_marks(page) == [[SLIPPING, DROP_RUN, "regressed"]]
    assert svg_marks(chart(page, served)) == [(SLIPPING, DROP_RUN, "regressed")]
    page.select_option("#t-metric", "strict_accuracy")
    rendered(page, "metric=strict_accuracy")
    expect(page.locator("main h2").first).to_contain_text("strict accuracy on travel")
    assert table_marks(page) == [[SLIPPING, DROP_RUN, "regressed"]]
    # the other gold set: its own trend, with the twelve runs left out
    other = page.locator("#t-gold option").nth(1).get_attribute("value")
    page.select_option("#t-gold", other)
    rendered(page, f"gold={other}")
    expect(page.locator("table.trend thead th")).to_have_count(2)
    expect(page.locator(".left-out")).to_have_count(12)
    assert errors == []


def test_the_export_shows_the_same_trends_from_file_urls(browser, served, exported):
    base = exported.as_uri()
    queries = ["", "category=travel", "category=leave", f"model={urllib.parse.quote(SLIPPING)}",
               "metric=strict_accuracy&category=travel", f"category=expenses&model={urllib.parse.quote(HOSTILE)}"]
    page, errors = open_page(browser, base + "#/trend")
    live, _ = open_page(browser, served + "#/trend")
    for q in queries:
        texts = []
        for p, url in ((live, served), (page, base)):
            p.goto(f"{url}#/trend?{q}" if q else f"{url}#/trend")
            expect(p.locator("main")).to_have_attribute("data-rendered", p.evaluate("location.hash"))
            texts.append((p.locator("table.trend").inner_text(), p.locator("#trend-changes").inner_text(),
                          lines(chart(p, url)), svg_marks(chart(p, url))))
        assert texts[0] == texts[1], q
    page.goto(base + "#/trend?category=travel")
    rendered(page, "category=travel")
    assert table_marks(page) == [[SLIPPING, DROP_RUN, "regressed"]]
    page.select_option("#t-category", "leave")  # the filters work in the export too
    rendered(page, "category=leave")
    assert table_marks(page) == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert all(u.startswith("file://") for u in page.requested), [u for u in page.requested if not u.startswith("file")]
    assert errors == []
