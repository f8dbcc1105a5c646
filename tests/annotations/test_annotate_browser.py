"""grace annotate in a real headless Chromium: label by keyboard and mouse, reload, search, escape."""

from __future__ import annotations

import csv
import json
import re
import threading

import pytest

from annotations.server import AnnotationApp
from annotations.state import AnnotationSession
from harness.web import make_server, url_for
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_suggestions import rows_by_id
from tests.browser import at_question, launch, open_page, sync_api_or_skip

sync_api = sync_api_or_skip()
expect = sync_api.expect

EVIL_TITLE = '<img src=x onerror="window.__xss=1">Expense <b>policy</b>'
EVIL_TEXT = "<script>window.__xss=2</script> Expense policy: reimbursements <img src=x onerror=window.__xss=3> in 30 days."
ARTICLES = [
    ("1", "Annual leave", "You earn annual leave every pay period. Carry over up to 240 hours into the next leave year."),
    ("2", "Sick leave", "Sick leave covers illness, medical appointments and caring for a family member."),
    ("3", "Laptops and equipment", "Your laptop is shipped to your home address before your first day."),
    ("4", "Travel approval", "Your supervisor approves conference travel in the travel system before you book."),
    ("5", "Slack etiquette", "Use threads in Slack channels and set your status when you are away."),
    ("6", EVIL_TITLE, EVIL_TEXT),
]
QUESTIONS = [
    ("q1", "How many hours of annual leave can I carry over?"),
    ("q2", "Who approves my conference travel?"),
    ("q3", "What is the capital of France?"),
    ("q4", "Can I use sick leave to care for my child?"),
    ("q5", "Is there a policy about lunch?"),
]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def served(tmp_path):
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "articles.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": t, "text": x, "heading_path": ["Handbook"]}) + "\n" for i, t, x in ARTICLES)
    )
    q = tmp_path / "q.csv"
    with q.open("w", newline="") as fh:
        csv.writer(fh).writerows([("question_id", "question"), *QUESTIONS])
    kb = load_kb(kb_dir)
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=q, annotator="tester")
    servers = []

    def start(host="127.0.0.1", token=None):
        httpd = make_server(AnnotationApp(session, kb.retriever(), k=5), host, 0, token)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return url_for(host, httpd.server_address[1], token)

    yield start, tmp_path / "gold.csv"
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
    session.close()


def test_label_by_keyboard_and_mouse_then_reload(browser, served):
    start, gold = served
    url = start()
    page, errors = open_page(browser, url)
    at_question(page, 1)

    page.keyboard.press("1")  # keyboard: the top candidate answers q1; the page moves on
    at_question(page, 2)
    page.locator("#cands li[data-id='4'] button.choose").click()  # mouse
    at_question(page, 3)
    expect(page.locator("#cands li.empty")).to_contain_text("no article sharing a word")
    page.keyboard.press("r")  # must_refuse
    at_question(page, 4)

    # q4: two articles answer; the second is found with the search box
    page.keyboard.press("Shift+Digit1")
    page.wait_for_selector("#chosen li")
    page.keyboard.press("/")
    page.keyboard.type("carry over hours")
    page.keyboard.press("Enter")
    expect(page.locator("#list-title")).to_have_text(re.compile("^Search results"))
    assert page.locator("#cands li").first.get_attribute("data-id") == "1"
    assert page.locator("#cands li").first.locator("mark").count() >= 2
    page.keyboard.press("Shift+Digit1")
    expect(page.locator("#chosen li")).to_have_count(2)
    page.keyboard.press("n")
    page.keyboard.type("two articles answer")
    page.keyboard.press("Escape")
    expect(page.locator("#saved")).to_contain_text("saved q4")

    # q5: edit the question, then skip with a note
    page.keyboard.press("j")
    at_question(page, 5)
    page.keyboard.press("e")
    page.keyboard.press("End")
    page.keyboard.type(" At the office?")
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    page.keyboard.type("ambiguous")
    page.keyboard.press("Enter")
    expect(page.locator("#progress")).to_have_text("4 / 5 labelled · must_refuse 1 (25.0%) · skipped 1")

    # what is on disk
    r = rows_by_id(gold)
    assert (r["q1"]["status"], r["q1"]["expected_citations"], r["q1"]["must_refuse"]) == ("labelled", "1", "false")
    assert r["q2"]["expected_citations"] == "4"
    assert (r["q3"]["must_refuse"], r["q3"]["expected_citations"]) == ("true", "")
    assert r["q4"]["expected_citations"] == "2;1" and r["q4"]["notes"] == "two articles answer"
    assert r["q5"]["status"] == "skipped" and r["q5"]["notes"] == "skipped: ambiguous"
    assert r["q5"]["question"] == "Is there a policy about lunch? At the office?"
    assert r["q5"]["original_question"] == "Is there a policy about lunch?"
    assert {x["annotator"] for x in r.values()} == {"tester"}

    # reload: everything is still there
    page.goto(url + "#1")  # same document: only the hash changes (the page follows it) ...
    at_question(page, 1)
    page.reload()  # ... then a real reload
    page.wait_for_selector("body[data-ready='1']")
    at_question(page, 1)
    assert page.locator("#chosen .chip-id").all_text_contents() == ["#1"]
    assert page.locator("#cands li[data-id='1']").get_attribute("class").split() == ["card", "chosen"]
    page.keyboard.press("j")
    at_question(page, 2)
    assert page.locator("#chosen .chip-id").all_text_contents() == ["#4"]
    page.keyboard.press("j")
    at_question(page, 3)
    assert page.locator("#status-badge").text_content() == "must_refuse"
    page.keyboard.press("j")
    at_question(page, 4)
    assert page.locator("#chosen .chip-id").all_text_contents() == ["#2", "#1"]
    assert page.locator("#notes").input_value() == "two articles answer"
    page.keyboard.press("u")  # none left unlabelled: stays put and says so
    expect(page.locator("#saved")).to_contain_text("no unlabelled")
    assert errors == []
    page.close()


def test_kb_text_is_shown_as_text_never_run(browser, served):
    start, _ = served
    page, errors = open_page(browser, start())
    page.keyboard.press("/")
    page.keyboard.type("expense reimbursements")
    expect(page.locator("#list-title")).to_have_text(re.compile("^Search results"))
    card = page.locator("#cands li[data-id='6']")
    assert card.locator(".title").text_content() == EVIL_TITLE
    card.locator("button.view").click()
    page.wait_for_selector("#viewer:not([hidden])")
    assert page.locator("#v-text").text_content() == EVIL_TEXT
    assert page.locator("#v-title").text_content() == f"#6 {EVIL_TITLE}"
    assert page.locator("#v-text mark").count() >= 2
    assert page.evaluate("window.__xss") is None
    assert page.locator("#cands img, #viewer img, script:not([src])").count() == 0
    page.keyboard.press("Escape")
    page.wait_for_selector("#viewer", state="hidden")
    origin = page.url.split("/#")[0].rstrip("/") + "/"
    assert any(u.endswith("app.css") for u in page.requested)
    assert all(u.startswith(origin) for u in page.requested)  # no CDN, no network
    assert errors == []
    page.close()


def test_remote_host_works_with_the_token_in_the_url(browser, served):
    start, gold = served
    url = start(host="127.0.0.2", token="tok-123")
    page, errors = open_page(browser, url)
    page.keyboard.press("1")  # through the token-carrying API
    at_question(page, 2)
    assert rows_by_id(gold)["q1"]["status"] == "labelled"
    denied = browser.new_page()
    resp = denied.goto(url.split("?")[0])
    assert resp.status == 403
    denied.close()
    assert errors == []
    page.close()


def test_shift_digits_pick_several_articles_in_a_row(browser, served):
    start, gold = served
    page, errors = open_page(browser, start())
    at_question(page, 1)
    page.keyboard.press("Shift+Digit1")  # no wait between: the second adds to the first
    page.keyboard.press("Shift+Digit2")
    expect(page.locator("#chosen li")).to_have_count(2)
    expect(page.locator("#saved")).to_contain_text(re.compile(r"saved q1: #\d+, #\d+"))
    assert len(rows_by_id(gold)["q1"]["expected_citations"].split(";")) == 2
    assert errors == []
    page.close()


def test_the_search_box_of_a_french_kb_finds_and_marks_french_words(browser, tmp_path):
    from kb_builder import language as lang
    from tests.annotations.test_annotate_languages import FR, build

    kb = load_kb(build(tmp_path, FR, "fr"))
    (tmp_path / "q.txt").write_text("Combien de jours de télétravail par semaine ?\n", encoding="utf-8")
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.txt", annotator="tester")
    httpd = make_server(AnnotationApp(session, kb.retriever(), k=5), "127.0.0.1", 0, None)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        page, errors = open_page(browser, url_for("127.0.0.1", httpd.server_address[1], None))
        at_question(page, 1)
        page.keyboard.press("/")
        page.keyboard.type("la rémunération des congés")
        page.keyboard.press("Enter")
        expect(page.locator("#list-title")).to_have_text(re.compile("^Search results"))
        expect(page.locator("#cands li")).to_have_count(1)  # no article found by "la" and "des" alone
        first = page.locator("#cands li").first
        assert first.get_attribute("data-id") == next(a.id for a in kb.articles if a.title == "Congé payé")
        marks = [m.lower() for m in first.locator("mark").all_inner_texts()]
        assert {"congé", "rémunéré"} <= set(marks) and not set(marks) & lang.stop_words("fr")
        assert errors == []
        page.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
        session.close()
