"""grace view in a real headless Chromium: filters drive the grid and the URL, a reload restores them, the question
page links citations to the article, compare lists the flipped questions, hostile text stays text, and the static
export (from file://) answers like the server."""

from __future__ import annotations

import re

import pytest

from tests.browser import export_answers_like_server, grid_ids, launch, open_page, sync_api_or_skip
from tests.view_runs import ANSWER_XSS, MODEL, TITLE_XSS, build_view_runs, exported_viewer, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_view_runs(tmp_path_factory.mktemp("view-browser"))


@pytest.fixture(scope="module")
def served(built, tmp_path_factory):
    with served_viewer([built / "a", built / "b"], tmp_path_factory.mktemp("cache")) as url:
        yield url


@pytest.fixture(scope="module")
def exported(built, tmp_path_factory):
    return exported_viewer([built / "b"], tmp_path_factory.mktemp("export") / "site")


@pytest.fixture(scope="module")
def browser(built, served, exported):  # after the runs are built: `grace run` needs asyncio, which Playwright's loop would block
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def hash_params(page) -> dict[str, str]:
    h = page.evaluate("location.hash")
    return dict(re.findall(r"([a-z]+)=([^&]*)", h.split("?", 1)[1] if "?" in h else ""))


def test_a_filter_changes_the_grid_and_the_url_and_a_reload_restores_it(browser, served):
    page, errors = open_page(browser, served + "#/questions?runs=a,b")
    expect(page.locator("#total")).to_have_text("14")
    page.select_option("#f-model", MODEL)
    expect(page.locator("main")).to_have_attribute("data-rendered", re.compile("model="))
    page.select_option("#f-flip", "regressed")
    expect(page.locator("#total")).to_have_text("3")
    assert sorted(grid_ids(page)) == ["q3", "q6", "q9"]
    assert hash_params(page)["flip"] == "regressed" and hash_params(page)["model"] in (MODEL, "openai%3Afake-m")
    url = page.url
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#total")).to_have_text("3")
    assert page.url == url and sorted(grid_ids(page)) == ["q3", "q6", "q9"]
    expect(page.locator("#f-flip")).to_have_value("regressed")
    expect(page.locator("#f-model")).to_have_value(MODEL)
    # a pasted link works in a fresh tab; the back button undoes a filter
    other, _ = open_page(browser, url)
    expect(other.locator("#total")).to_have_text("3")
    page.go_back()
    expect(page.locator("#total")).to_have_text("14")
    page.fill("#f-q", "claim it")
    page.press("#f-q", "Enter")
    expect(page.locator("#total")).to_have_text("1")
    assert grid_ids(page) == ["q7"] and hash_params(page)["q"] in ("claim+it", "claim%20it")
    page.check("#f-suspect")
    expect(page.locator("#total")).to_have_text("0")
    page.click("#clear")
    expect(page.locator("#total")).to_have_text("14")
    assert errors == []


def test_the_question_page_shows_the_cited_article(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=b&id=q9")
    expect(page.locator("#qtext")).to_have_text("What is the meal per diem on business trips?")
    fake = page.locator(f".model[data-model='{MODEL}']")
    expect(fake.locator(".reading").first).to_contain_text("not the gold article 5")
    cite = fake.locator("a.cite").first
    expect(cite).to_have_text(re.compile(r"\[ID: \d\]"))
    cited = cite.get_attribute("data-cites")
    cite.click()
    panel = page.locator("#article-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(f"[data-article='{cited}'] .atext")).to_contain_text("This policy explains the rules")
    # the gold article's text is on the page, marked gold, and retrieval marks it in rank order
    expect(page.locator(".article.gold .atext").first).to_contain_text("The meal per diem is 45 EUR a day")
    expect(page.locator("tr.gold")).to_have_count(1)
    assert errors == []


def test_compare_lists_the_flipped_questions(browser, served):
    page, errors = open_page(browser, served + "#/runs")
    page.check("input[data-run='a']")
    page.check("input[data-run='b']")
    page.click("#compare-picked")
    page.wait_for_selector(".idlist.regressed", state="attached")
    assert "#/compare?a=a&b=b" in page.url
    # what differs between the runs, named above the figures (issue 47); b was run with --no-cache
    expect(page.locator("#differences li[data-kind='calls']").first).to_have_text(
        "cache: read → not read (--no-cache) (calls)")
    section = page.locator("section", has_text=f"{MODEL}: 2 improved, 3 regressed")
    assert section.locator(".idlist.regressed a").all_inner_texts() == ["q3", "q6", "q9"]
    assert section.locator(".idlist.improved a").all_inner_texts() == ["r1", "r2"]
    section.locator(".idlist.regressed a", has_text="q6").click()
    expect(page.locator("#qtext")).to_have_text("Can I fly business class when I book travel?")
    assert "#/question?runs=a%2Cb&id=q6" in page.url or "#/question?runs=a,b&id=q6" in page.url
    assert errors == []


def test_hostile_answer_and_article_title_are_shown_as_text(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=a,b&id=q7")
    fake_b = page.locator(f".model[data-run='b'][data-model='{MODEL}'] .answer")
    expect(fake_b).to_contain_text(ANSWER_XSS)
    expect(page.locator(".article.gold h3").first).to_contain_text(TITLE_XSS)
    expect(page.locator(".article.gold .atext").first).to_contain_text("<script>window.__pwned='text'</script>")
    # the article's Markdown drawn (issue 47): its bold is bold, not "**...**"; its HTML is still text
    expect(page.locator(".article.gold .atext strong").first).to_have_text("Submit receipts")
    assert "**" not in page.locator(".article.gold .atext").first.inner_text()
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main img, main script").count() == 0
    # the grid and the Runs page too: the title as a cited label, never markup
    grid, _ = open_page(browser, served + "#/questions?runs=b&q=claim+it")
    expect(grid.locator("#total")).to_have_text("1")
    assert grid.evaluate("typeof window.__pwned") == "undefined" and grid.locator("main img").count() == 0
    assert errors == []


def test_the_leaderboard_shows_the_table_and_its_plots(browser, served):
    page, errors = open_page(browser, served + "#/leaderboard?run=b")
    expect(page.locator("table.leaderboard tbody tr")).to_have_count(3)
    expect(page.locator(".plots img")).to_have_count(4)
    page.wait_for_timeout(500)  # CSP forbids wait_for_function's eval; the four small SVGs load in far less
    widths = page.locator(".plots img").evaluate_all("imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == 4 and all(w > 100 for w in widths)
    expect(page.locator("table.leaderboard")).to_contain_text("openai:fake-m")
    # no section left out shows as text (issue 46: "null" between the legend and the plots)
    assert page.locator("main").evaluate("m => [...m.childNodes].filter(n => n.nodeType === 3).length") == 0
    assert errors == []


def test_the_export_answers_like_the_server_from_file_urls(browser, served, exported):
    queries = ["", f"model={MODEL}&outcome=wrong_citation", "disagree=1", "suspect=1", "missed=1", "q=claim+it",
               "q=per+diem", "article=4", "outcome=hit&sort=id", "sort=disagreement", f"model={MODEL}&outcome=miss",
               "truncated=1", "category=travel", "category=remote+work&sort=hardest", "category=travel&outcome=miss"]
    base = exported.as_uri()
    page, errors = open_page(browser, base + "#/questions?runs=b")
    export_answers_like_server(page, served, exported, "b", queries)
    page.goto(f"{base}#/question?runs=b&id=q7")
    expect(page.locator(f".model[data-model='{MODEL}'] .answer")).to_contain_text(ANSWER_XSS)
    expect(page.locator(".article.gold h3")).to_contain_text(TITLE_XSS)
    page.goto(f"{base}#/compare?a=b&b=b&ma=baseline:top1&mb={MODEL}")
    page.wait_for_selector(".idlist", state="attached")
    page.goto(f"{base}#/leaderboard?run=b")
    expect(page.locator("table.leaderboard tbody tr")).to_have_count(3)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert all(u.startswith("file://") for u in page.requested), [u for u in page.requested if not u.startswith("file")]
    assert errors == []


def test_the_page_takes_the_outcome_names_from_the_data(browser, served, exported):
    """view.js spells no outcome: the filter's options and the cells' texts come from /api/questions (served) or
    data/export.js (exported), and read the same in both."""
    from harness.scoring.outcomes import OUTCOMES

    seen = []
    for url in (served + "#/questions?runs=b", exported.as_uri() + "#/questions?runs=b"):
        page, errors = open_page(browser, url)
        expect(page.locator("#total")).to_have_text("14")
        options = page.locator("#f-outcome option").evaluate_all("os => os.map(o => [o.value, o.textContent])")
        assert options[3:] == [[o, o.replace("_", " ")] for o in OUTCOMES]
        cells = page.locator("#grid td.cell").all_inner_texts()
        assert any(t.startswith("✓") for t in cells) and any(t.startswith("✗ ") for t in cells), cells
        seen.append(cells)
        assert errors == []
    assert seen[0] == seen[1]
