"""The viewer shows every citation of a multi-citation answer with how it resolved, in a real headless Chromium.

The run (:func:`tests.citation_runs.build_citation_run`, ``grace run``) has a bot whose answers cite by numbered markers and a source
list, scored as several citations per answer, beside a GRACE prompt model. The question page must list each of the
bot's citations (the reference as written, the article it maps to, how, the note, the quote and whether it was found),
mark the unmapped one, link each marker to its citations, and put the hostile reference on the page as text.
"""

from __future__ import annotations

import pytest

from harness.viewer.question import citations_of, reference_pieces
from tests.browser import launch, open_page, sync_api_or_skip
from tests.citation_runs import BOT, GRACE_MODEL, HOSTILE_REF, build_citation_run, source
from tests.view_runs import served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect


A, B = "a/run", "b/run"  # the viewer's IDs of the two runs: this week's bot, and next week's (its answers moved on)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("citations")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        runs = [build_citation_run(root / "a"), build_citation_run(root / "b", shift=1)]
    with served_viewer(runs, root / "view-cache") as url:
        yield url


@pytest.fixture(scope="module")
def browser(served):
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _bot(page):
    return page.locator(f".model[data-model='{BOT}']")


def test_every_citation_is_listed_with_how_it_resolved(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=a/run&id=q00")  # the gold article and a wrong one
    bot = _bot(page)
    box = bot.locator("details.citations")
    expect(box.locator("summary")).to_contain_text("Citations: 2")
    expect(box.locator("summary")).to_contain_text("precision 50%")
    expect(box.locator("summary")).to_contain_text("recall 100%")
    rows = box.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td.reference")).to_have_text(source("1"))
    expect(rows.nth(0).locator("a.art-link")).to_have_text("[1] Sick leave")
    expect(rows.nth(0)).to_contain_text("source")
    expect(rows.nth(1).locator("a.art-link")).to_have_text("[2] Parental leave")
    # each marker names its own citation, and opens its article
    marks = bot.locator(".answer a.cite.ref")
    expect(marks).to_have_count(2)
    assert [marks.nth(i).get_attribute("data-refs") for i in range(2)] == ["0", "1"]
    marks.nth(1).click()
    expect(page.locator("#article-panel [data-article='2'] .atext")).to_contain_text("Parental leave: the rules")
    # the GRACE model's answer is shown as it always was: no citation table
    expect(page.locator(f".model[data-model='{GRACE_MODEL}'] details.citations")).to_have_count(0)
    assert errors == []


def test_an_unmapped_hostile_reference_is_marked_and_shown_as_text(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=a/run&id=q02")
    box = _bot(page).locator("details.citations")
    expect(box.locator("summary")).to_contain_text("1 unmapped")
    unmapped = box.locator("tr.unmapped")
    expect(unmapped).to_have_count(1)
    expect(unmapped.locator("td.reference")).to_contain_text('img src=x onerror="window.__pwned=1')
    expect(unmapped).to_contain_text("unmapped")
    expect(unmapped).to_contain_text("no article matches")  # the resolver's note, as scores.jsonl has it
    expect(_bot(page).locator(".answer a.cite.unmapped")).to_have_count(1)
    expect(_bot(page).locator(".answer")).to_contain_text(HOSTILE_REF)  # the answer as written, as text
    assert page.locator("main img").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    assert errors == []


def test_quotes_say_whether_they_were_found(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=a/run&id=q03")  # a wrong article, quote not found
    row = _bot(page).locator("details.citations tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("a sentence the article does not hold")
    expect(row.locator(".bad")).to_have_text("not found")
    page, errors2 = open_page(browser, served + "#/question?runs=a/run&id=q01")  # the gold article, quote found
    expect(_bot(page).locator("details.citations tbody tr .ok")).to_have_text("found")
    assert errors == errors2 == []


def test_the_leaderboard_page_has_the_citation_columns_and_plot(browser, served):
    page, errors = open_page(browser, served + "#/leaderboard?run=a/run")
    head = page.locator("table.leaderboard thead")
    expect(head).to_contain_text("Cit. F1")
    expect(head).to_contain_text("Unmapped")
    row = page.locator("table.leaderboard tbody tr", has_text=BOT)
    expect(row).to_contain_text("multi, references")
    expect(row).to_contain_text("4 of 24")
    expect(page.locator("img[data-plot='citations']")).to_have_count(1)
    # issue 46: a stray "null" between the legend and the plots (a section left out was printed as text)
    texts = page.locator("main").evaluate("m => [...m.childNodes].filter(n => n.nodeType === 3).map(n => n.data)")
    assert texts == [] and "null" not in page.locator("main").inner_text()
    assert errors == []


def test_the_compare_page_gives_the_change_in_citation_f1(browser, served):
    page, errors = open_page(browser, served + f"#/compare?a={A}&b={B}")
    rows = page.locator("table.citation-compare tbody tr")
    expect(rows).to_have_count(1)  # the bot: the GRACE model has no citation F1
    expect(rows.nth(0)).to_have_attribute("data-model", BOT)
    expect(rows.nth(0)).to_contain_text("pp [")
    assert errors == []


def test_citations_read_from_a_damaged_line_are_strings_and_bounded():
    got = citations_of({"citations": [{"reference": 7, "articles": "x", "how": 3, "quote_found": "yes"}, "junk",
                                      *({"reference": "r", "articles": ["1"]} for _ in range(500))]})
    assert got[0] == {"reference": "7", "articles": [], "how": "3", "note": "", "quote": None, "quote_found": None,
                      "unmapped": True}
    assert len(got) == 199  # the first 200 entries read, "junk" (not an object) left out
    assert citations_of({"outcome": "correct"}) is None  # a GRACE line


def test_markers_link_to_their_citation_and_the_source_list_stays_as_written():
    text = "Ten days [1], paid [2].\n\nSources:\n[1] a.html\n[2] b.html"
    cites = citations_of({"citations": [{"reference": "a.html", "articles": ["1"]},
                                        {"reference": "b.html", "articles": []}]})
    parts = reference_pieces(text, cites, None)
    assert "".join(p["text"] for p in parts) == text
    assert [(p["text"], p["refs"]) for p in parts if "refs" in p] == [("[1]", [0]), ("[2]", [1])]
