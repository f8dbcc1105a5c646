"""grace annotations review in a real headless Chromium: mark by keyboard and mouse, note, reload, calibrate."""

from __future__ import annotations

import csv
import json
import re
import shutil
import threading

import pytest

from annotations.review_app import ReviewApp
from annotations.review_session import ReviewSession
from annotations.review_sources import RunSources
from harness.web import make_server, url_for
from kb_builder.loader import load_kb
from tests.annotations.test_annotations_review import WRITER, build_run
from tests.browser import launch, open_page, sync_api_or_skip
from tests.conftest import run_grace

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("review-browser"))


@pytest.fixture(scope="module")
def browser(built):  # after the run is built: `grace run` needs asyncio, which Playwright's loop would block
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def served(built, browser, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(built, run)  # a private copy: each test writes its own review CSV
    sources = RunSources.find(run)
    session = ReviewSession.open(sources.review_csv, reviewer="tester")
    app = ReviewApp(session, sources, load_kb(sources.kb_dir))
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield url_for("127.0.0.1", httpd.server_address[1], None), app, run
    httpd.shutdown()
    httpd.server_close()
    session.close()


def index_of(app: ReviewApp, model: str, qid: str) -> int:
    return next(i for i, rows in enumerate(app.session.answers) if rows[0].key[:2] == (model, qid))


def seg(page, n: int):
    return page.locator(f"#segments > li[data-seg='{n}']")


def rows(run) -> dict[tuple[str, str, str], dict[str, str]]:
    with (run / "spotcheck_review.csv").open(newline="", encoding="utf-8") as fh:
        return {(r["model"], r["question_id"], r["segment_index"]): r for r in csv.DictReader(fh)}


def row_when(run, key, fields: tuple[str, ...], want: tuple[str, ...], timeout: float = 10.0) -> dict[str, str]:
    """The CSV row once the page's save has reached the disk (the UI marks a segment before the save returns)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        row = rows(run)[key]
        if tuple(row[f] for f in fields) == want or time.monotonic() > deadline:
            return row
        time.sleep(0.05)


def test_mark_by_keyboard_and_mouse_reload_and_calibrate(browser, served):
    url, app, run = served
    i = index_of(app, WRITER, "q1")
    page, errors = open_page(browser, f"{url}#{i + 1}")
    expect(page.locator("#apos")).to_have_text(re.compile(rf"^Answer {i + 1} / "))
    expect(page.locator("#question")).to_have_text("How many sick days do I get?")
    # the answer, segments highlighted; its HTML-looking text stays text
    expect(page.locator("#answer .aseg")).to_have_count(3)
    expect(page.locator("#answer")).to_contain_text("paid out in cash <img src=x onerror=window.__xss=1>")
    expect(page.locator("#answer .aseg.focused")).to_have_attribute("data-seg", "0")
    # the cited article beside it, the passage closest to segment 1 flagged
    expect(page.locator("#a-title")).to_have_text("Leave > Sick leave")
    expect(page.locator("#a-text .passage")).to_contain_text("Ten days of paid sick leave per year")
    expect(page.locator("#a-text")).to_contain_text("<script>window.__xss=2</script>")

    # keyboard, as fast as a reviewer types: segment 1 supported, focus moves on at once, segment 2 unsupported
    page.keyboard.press("s")
    page.keyboard.press("u")
    expect(seg(page, 0)).to_have_class(re.compile(r"\bsupported\b"))
    expect(seg(page, 1)).to_have_class(re.compile(r"\bunsupported\b"))
    expect(seg(page, 2)).to_have_class(re.compile(r"\bfocused\b"))
    expect(page.locator("#a-hint")).to_contain_text("cites nothing")
    expect(page.locator("#a-text .passage")).to_have_count(0)  # "I hope this helps!" matches no passage

    seg(page, 2).locator("input.note").click()  # mouse: a note, then the button
    page.keyboard.type("a pleasantry, nothing to check")
    seg(page, 2).locator("button.mark.yes").click()
    # the answer is done: the page moves on to the next one
    expect(page.locator("#apos")).to_have_text(re.compile(rf"^Answer {i + 2} / "))
    expect(page.locator("#progress")).to_have_text(re.compile(r"^3 / \d+ segments reviewed"))

    on_disk = rows(run)
    assert [on_disk[(WRITER, "q1", str(n))]["supported"] for n in range(3)] == ["true", "false", "true"]
    assert on_disk[(WRITER, "q1", "2")]["note"] == "a pleasantry, nothing to check"
    assert {on_disk[(WRITER, "q1", str(n))]["reviewer"] for n in range(3)} == {"tester"}
    assert sum(r["supported"] != "" for r in on_disk.values()) == 3

    page.reload()  # everything persisted: the page shows the saved marks and note
    page.wait_for_selector("body[data-ready='1']")
    page.keyboard.press("p")
    expect(page.locator("#apos")).to_have_text(re.compile(rf"^Answer {i + 1} / "))
    expect(page.locator("#astatus")).to_have_text("reviewed")
    expect(seg(page, 0).locator(".verdict")).to_have_text("supported · tester")
    expect(seg(page, 1).locator(".verdict")).to_have_text("unsupported · tester")
    expect(seg(page, 2).locator("input.note")).to_have_value("a pleasantry, nothing to check")
    expect(page.locator("#answer .aseg.unsupported")).to_have_count(1)

    # no judge verdict anywhere on the page, no script ran from KB or answer text, no request left the server
    assert "lexical" not in page.content() and "judge" not in page.locator("body").inner_text().lower()
    assert page.evaluate("window.__xss") is None
    origin = url.rstrip("/")
    assert all(u.startswith(origin) for u in page.requested)
    assert errors == []

    code, out = run_grace("spotcheck", "calibrate", run / "spotcheck_review.csv", run / "spotcheck.json")
    assert code == 0, out
    calib = json.loads((run / "calibration.json").read_text())
    assert calib["n"] == 3 and calib["human_csv"]["reviewers"] == ["tester"]


def test_note_by_keyboard_clear_and_navigation(browser, served):
    url, app, run = served
    i = index_of(app, WRITER, "q3")
    page, errors = open_page(browser, f"{url}#{i + 1}")
    expect(page.locator("#answer .aseg")).to_have_count(2)
    page.keyboard.press("j")  # second segment: "Business class is allowed on every flight"
    expect(page.locator("#answer .aseg.focused")).to_have_attribute("data-seg", "1")
    expect(page.locator("#a-text .passage")).to_contain_text("Economy class only")
    page.keyboard.press("Enter")  # note field of the focused segment
    page.keyboard.type("the article says economy only")
    page.keyboard.press("Enter")  # leaves the field and saves the note (no mark yet)
    expect(page.locator("#saved")).to_contain_text("+ note")
    page.keyboard.press("u")
    expect(seg(page, 1)).to_have_class(re.compile(r"\bunsupported\b"))
    row = row_when(run, (WRITER, "q3", "1"), ("supported", "note"), ("false", "the article says economy only"))
    assert (row["supported"], row["note"]) == ("false", "the article says economy only")
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.keyboard.press("ArrowDown")
    expect(seg(page, 1)).to_have_class(re.compile(r"\bfocused\b"))
    page.keyboard.press("c")  # clear the mark; the note stays
    expect(seg(page, 1).locator(".verdict")).to_have_text("not reviewed")
    expect(page.locator("#saved")).to_contain_text("no mark")
    row = row_when(run, (WRITER, "q3", "1"), ("supported",), ("",))
    assert (row["supported"], row["note"], row["reviewer"]) == ("", "the article says economy only", "tester")
    page.keyboard.press("f")  # first answer not fully reviewed
    expect(page.locator("#apos")).to_have_text(re.compile(r"^Answer 1 / "))
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert errors == []


def test_a_mark_made_while_the_server_is_down_shows_unsaved_and_is_saved_when_it_is_back(browser, built, tmp_path):
    """The review page as the labelling page: a mark the server never got says so on the mark itself and is sent
    again, without the reviewer doing anything, once the server is back on the same port and file."""
    run = tmp_path / "run"
    shutil.copytree(built, run)
    sources = RunSources.find(run)
    session = ReviewSession.open(sources.review_csv, reviewer="tester")
    app = ReviewApp(session, sources, load_kb(sources.kb_dir))
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    port = httpd.server_address[1]
    i = index_of(app, WRITER, "q1")
    page, errors = open_page(browser, f"{url_for('127.0.0.1', port, None)}#{i + 1}")
    httpd.shutdown()
    httpd.server_close()
    session.close()
    try:
        page.keyboard.press("s")
        badge = seg(page, 0).locator(".verdict")
        expect(badge).to_have_text(re.compile(r"^NOT SAVED: supported"))
        expect(seg(page, 0)).to_have_class(re.compile(r"\bunsaved\b"))
        key = (WRITER, "q1", "0")
        assert rows(run)[key]["supported"] == ""

        session = ReviewSession.open(sources.review_csv, reviewer="tester")  # back, same port, same file
        httpd = make_server(ReviewApp(session, sources, load_kb(sources.kb_dir)), "127.0.0.1", port)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        expect(page.locator("#saved")).to_contain_text("(the server is back)", timeout=15_000)
        expect(badge).to_have_text(re.compile(r"^supported"))
        assert row_when(run, key, ("supported",), ("true",))["supported"] == "true"
        assert errors == []
    finally:
        page.close()
        httpd.shutdown()
        httpd.server_close()
        session.close()
