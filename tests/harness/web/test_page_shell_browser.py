"""The page shell the three work pages share (harness/web/static/common.js's Shell) in a real headless Chromium:
the help overlay (its button, ? and Esc, and keys swallowed while it is open), prev/next by button and by key, the
go-to box, the #N address, the remembered auto-advance box and the last edit sent as the tab goes, on the labelling,
review and KB curation pages."""

from __future__ import annotations

import csv
import json
import re
import threading
from dataclasses import dataclass

import pytest

from annotations.review_app import ReviewApp
from annotations.review_session import ReviewSession
from annotations.review_sources import RunSources
from annotations.server import AnnotationApp
from annotations.state import AnnotationSession
from harness.web import make_server, url_for
from harness.workflows.curate_app import open_curating
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_browser import ARTICLES, QUESTIONS
from tests.annotations.test_annotations_review import build_run
from tests.browser import launch, open_page, sync_api_or_skip
from tests.curate_kb import write_kb

sync_api = sync_api_or_skip()
expect = sync_api.expect


@dataclass
class Page:
    """What differs between the pages: where the position is shown, its word, the next/previous keys, the
    auto-advance box's remembered name (None: the page has no go-to box, #N address or auto-advance) and the
    text field whose last edit is sent as the tab goes."""

    pos: str
    word: str
    next_key: str
    prev_key: str
    advance: str | None
    note: str | None


PAGES = {
    "annotate": Page("#qpos", "Question", "j", "k", "grace-auto-advance", "#notes"),
    "review": Page("#apos", "Answer", "n", "p", "grace-review-auto-advance", "#segments input.note"),
    "curate": Page("#fpos", "Finding", "j", "k", None, None),
}
WITH_ADDRESS = ["annotate", "review"]


@pytest.fixture(scope="module")
def review_run(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("shell-review"))


@pytest.fixture(scope="module")
def browser(review_run):  # after the run is built: `grace run` needs asyncio, which Playwright's loop would block
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def annotate_app(tmp_path):
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "articles.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x, "heading_path": ["Handbook"]}) + "\n" for i, t, x in ARTICLES))
    q = tmp_path / "q.csv"
    with q.open("w", newline="") as fh:
        csv.writer(fh).writerows([("question_id", "question"), *QUESTIONS])
    kb = load_kb(kb_dir)
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=q, annotator="tester")
    return AnnotationApp(session, kb.retriever(), k=5), session.close


def review_app(run):
    sources = RunSources.find(run)
    session = ReviewSession.open(sources.review_csv, reviewer="tester")
    return ReviewApp(session, sources, load_kb(sources.kb_dir)), session.close


def curate_app(tmp_path):
    opened = open_curating(write_kb(tmp_path / "kb"), author="tester")
    return opened.app, opened.close


@pytest.fixture(params=list(PAGES))
def served(request, tmp_path, review_run, browser):
    import shutil

    if request.param == "annotate":
        app, close = annotate_app(tmp_path)
        saved_to = tmp_path / "gold.csv"
    elif request.param == "review":
        run = tmp_path / "run"
        shutil.copytree(review_run, run)
        app, close = review_app(run)
        saved_to = run / "spotcheck_review.csv"
    else:
        app, close = curate_app(tmp_path)
        saved_to = None
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield url_for("127.0.0.1", httpd.server_address[1], None), PAGES[request.param], saved_to
    httpd.shutdown()
    httpd.server_close()
    close()


def at(page, shape: Page, n: int) -> None:
    expect(page.locator(shape.pos)).to_have_text(re.compile(rf"^{shape.word} {n} / "))


def test_help_overlay_opens_closes_and_swallows_keys(browser, served):
    url, shape, _ = served
    page, errors = open_page(browser, url)
    at(page, shape, 1)
    page.click("#help-btn")
    expect(page.locator("#help")).to_be_visible()
    page.click("#help-close")
    expect(page.locator("#help")).to_be_hidden()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press(shape.next_key)  # swallowed while the help is open
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_hidden()
    at(page, shape, 1)
    page.keyboard.press("?")
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    at(page, shape, 1)
    assert errors == []


def test_prev_next_by_button_and_key_the_go_to_box_and_the_address(browser, served):
    url, shape, _ = served
    page, errors = open_page(browser, url)
    at(page, shape, 1)
    page.click("#next")
    at(page, shape, 2)
    page.keyboard.press(shape.next_key)
    at(page, shape, 3)
    page.click("#prev")
    at(page, shape, 2)
    page.keyboard.press(shape.prev_key)
    at(page, shape, 1)
    page.click("#prev")  # at the first already: stays
    at(page, shape, 1)
    assert errors == []


@pytest.mark.parametrize("served", WITH_ADDRESS, indirect=True)
def test_the_go_to_box_and_the_address(browser, served):
    url, shape, _ = served
    page, errors = open_page(browser, url)
    at(page, shape, 1)
    assert page.url.endswith("#1")
    page.fill("#jump", "3")
    page.press("#jump", "Enter")
    at(page, shape, 3)
    expect(page.locator("#jump")).to_have_value("")
    assert page.url.endswith("#3")
    page.goto(url + "#2")  # same document: the page follows its address
    at(page, shape, 2)
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    at(page, shape, 2)
    assert errors == []


@pytest.mark.parametrize("served", WITH_ADDRESS, indirect=True)
def test_the_auto_advance_box_is_remembered(browser, served):
    url, shape, _ = served
    page, errors = open_page(browser, url)
    expect(page.locator("#auto-advance")).to_be_checked()
    page.locator("#auto-advance").uncheck()
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#auto-advance")).not_to_be_checked()
    assert page.evaluate(f"localStorage.getItem({json.dumps(shape.advance)})") == "0"
    page.locator("#auto-advance").check()
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    expect(page.locator("#auto-advance")).to_be_checked()
    assert errors == []


@pytest.mark.parametrize("served", WITH_ADDRESS, indirect=True)
def test_an_edit_typed_just_before_the_tab_goes_is_saved(browser, served):
    import time

    url, shape, saved_to = served
    page, errors = open_page(browser, url)
    page.locator(shape.note).first.fill("typed, then the tab went")
    page.goto("about:blank")  # at once: before the page's own pause-then-save timer fires
    deadline = time.monotonic() + 10
    while "typed, then the tab went" not in saved_to.read_text(encoding="utf-8") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "typed, then the tab went" in saved_to.read_text(encoding="utf-8")
    assert errors == []
