"""Suggestions in a real headless Chromium: one key accepts, any other label overrides; key presses counted."""

from __future__ import annotations

import csv
import re
import threading
from pathlib import Path

import pytest

from annotations.server import AnnotationApp
from annotations.state import AnnotationSession
from annotations.suggestions import Suggestion
from harness.web import make_server, url_for
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_suggestions import rows_by_id
from tests.annotations.test_annotations_server import make_kb
from tests.browser import at_question, launch, open_page, sync_api_or_skip

sync_api = sync_api_or_skip()
expect = sync_api.expect

# the server tests' eight articles, and twelve more so that twenty questions each have their own
EXTRA_ARTICLES = [
    ("9", "Parental leave", "Parents get 16 weeks of paid parental leave after a birth or adoption."),
    ("10", "Payroll dates", "Salaries are paid on the last working day of each month."),
    ("11", "Health insurance", "Enrol in the health insurance plan within 30 days of joining; dependants can be added."),
    ("12", "Pension", "The company matches pension contributions up to 5 percent of salary."),
    ("13", "Office access", "Badges open the office from 7am to 8pm; visitors sign in at reception."),
    ("14", "Parking", "Staff parking permits are requested from facilities and renewed every year."),
    ("15", "Password policy", "Passwords must be at least 14 characters and are changed after a breach."),
    ("16", "Performance reviews", "Performance reviews happen twice a year, in April and October, with your manager."),
    ("17", "Learning budget", "Each employee has a yearly learning budget of 1000 euros for courses and books."),
    ("18", "Code of conduct", "Report harassment or discrimination to HR or through the anonymous hotline."),
    ("19", "Resignation", "Give four weeks of notice in writing to your manager when you resign."),
    ("20", "Company phones", "Company mobile phones are issued to on-call engineers only."),
]
# question, true label: some share no word with their article (retrieval misses them), one has two articles
QUESTIONS = [
    ("q1", "How many hours of annual leave can I carry over?", "1"),
    ("q2", "Which leave covers my baby being ill?", "2;9"),
    ("q3", "When is my laptop shipped?", "3"),
    ("q4", "Who approves my conference travel?", "4"),
    ("q5", "How long do I have to submit receipts?", "5"),
    ("q6", "May I spend a month in Portugal doing my job?", "6"),
    ("q7", "Should I use threads in Slack?", "7"),
    ("q8", "When is the security training due?", "8"),
    ("q9", "How many weeks of parental leave do I get?", "9"),
    ("q10", "What day does the money land in my bank account?", "10"),
    ("q11", "Can dependants join my health insurance?", "11"),
    ("q12", "How much pension does the company match?", "12"),
    ("q13", "At what time do badges open the office?", "13"),
    ("q14", "How do I get a parking permit?", "14"),
    ("q15", "How long must my password be?", "15"),
    ("q16", "When are performance reviews?", "16"),
    ("q17", "Is there cash for a Coursera subscription?", "17"),
    ("q18", "Where can I report harassment?", "18"),
    ("q19", "How long before I quit must I tell my boss?", "19"),
    ("q20", "What is the capital of France?", "REFUSE"),
]
EVIL = '<img src=x onerror="window.__xss=1">3 of 3 models cite'


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def suggestion(qid: str, label: str, reason: str = "3 of 3 models agree") -> Suggestion:
    return Suggestion(qid, suggested=label, support=1.0, source="run:panel", votes=f"{label}:3", voters=3, reason=reason)


@pytest.fixture
def serve(tmp_path):
    """start(suggestions, from_gold=None, only=None) -> (url, gold path); servers and sessions closed after."""
    kb = load_kb(make_kb(tmp_path, EXTRA_ARTICLES))
    q = tmp_path / "q.csv"
    with q.open("w", newline="") as fh:
        csv.writer(fh).writerows([("question_id", "question"), *[(i, t) for i, t, _ in QUESTIONS]])
    opened = []

    def start(suggestions: dict[str, Suggestion] | None = None, from_gold: Path | None = None, only: Path | None = None):
        out = from_gold or tmp_path / "gold.csv"
        session = AnnotationSession.open(kb, out, questions=None if from_gold else q, from_gold=from_gold,
                                         annotator="tester")
        opened.append(session)
        if suggestions:
            session.use_suggestions(suggestions, "suggestions.csv")
        if only:
            session.only(only)
        httpd = make_server(AnnotationApp(session, kb.retriever(), k=10), "127.0.0.1", 0, None)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        opened.append(httpd)
        return url_for("127.0.0.1", httpd.server_address[1], None), out

    yield start
    for thing in reversed(opened):
        if isinstance(thing, AnnotationSession):
            thing.close()
        else:
            thing.shutdown()
            thing.server_close()


class Keys:
    """The keyboard, counting every key a person would press (a typed word: one per character)."""

    def __init__(self, page):
        self.page, self.count = page, 0

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.count += 1

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)
        self.count += len(text)


def test_twenty_correct_suggestions_take_one_key_each(browser, serve):
    url, gold = serve({qid: suggestion(qid, lab) for qid, _, lab in QUESTIONS})
    page, errors = open_page(browser, url)
    keys = Keys(page)
    for n, (qid, _, _) in enumerate(QUESTIONS, 1):
        at_question(page, n)
        expect(page.locator("#suggest-box")).to_be_visible()
        if qid == "q1":  # the suggested candidate is marked in the list too
            assert page.locator("#cands li[data-id='1'] .sug-tag").count() == 1
        if qid == "q2":  # both suggested articles are named, by title
            expect(page.locator("#s-label .chip")).to_have_count(2)
            assert "Parental leave" in page.locator("#s-label").text_content()
        keys.press("y")
    expect(page.locator("#progress")).to_contain_text("20 / 20 labelled")
    expect(page.locator("#provenance")).to_have_text("accepted suggestion")
    assert keys.count == 20 <= 25
    saved = rows_by_id(gold)
    assert {r["provenance"] for r in saved.values()} == {"accepted_suggestion"}
    assert {q: (r["expected_citations"] if r["must_refuse"] == "false" else "REFUSE") for q, r in saved.items()} == {
        q: ";".join(sorted(lab.split(";"))) if lab != "REFUSE" else lab for q, _, lab in QUESTIONS}
    assert {r["suggestion_source"] for r in saved.values()} == {"run:panel"}
    assert errors == []
    page.close()


def test_the_same_twenty_without_suggestions_need_more_keys(browser, serve):
    """What the suggestions save: every label by digits, r and the search box, keys counted."""
    url, gold = serve()
    page, errors = open_page(browser, url)
    keys = Keys(page)
    for n, (_, _, lab) in enumerate(QUESTIONS, 1):
        at_question(page, n)
        expect(page.locator("#suggest-box")).to_be_hidden()
        if lab == "REFUSE":
            keys.press("r")
            continue
        ids = lab.split(";")
        for j, aid in enumerate(ids):
            several = len(ids) > 1
            listed = page.locator("#cands > li.card").evaluate_all("(lis) => lis.map((li) => li.dataset.id)") \
                if page.locator("#cands > li.card").count() else []
            if aid in listed[:10]:
                digit = (listed.index(aid) + 1) % 10
            else:  # retrieval missed it: search for it (a person would type words; an ID is the shortest)
                keys.press("/")
                keys.type(aid)
                keys.press("Enter")
                expect(page.locator("#list-title")).to_have_text(re.compile("^Search results"))
                digit = 1
            keys.press(f"Shift+Digit{digit}" if several else f"Digit{digit}")
            if several:
                expect(page.locator("#chosen li")).to_have_count(j + 1)
        if len(ids) > 1:
            keys.press("j")  # adding articles does not advance
    expect(page.locator("#progress")).to_contain_text("20 / 20 labelled")
    saved = rows_by_id(gold)
    assert {r["provenance"] for r in saved.values()} == {"human"}
    assert all(r["suggested"] == "" for r in saved.values())
    print(f"\n20 questions without suggestions: {keys.count} key presses (with suggestions: 20)")
    assert keys.count > 25
    assert errors == []
    page.close()


def test_an_overridden_suggestion_records_changed_and_reasons_stay_text(browser, serve):
    sugg = {qid: suggestion(qid, lab, EVIL) for qid, _, lab in QUESTIONS[:4]}
    sugg["q4"] = suggestion("q4", "5", EVIL)  # wrong: article 4 answers
    url, gold = serve(sugg)
    page, errors = open_page(browser, url + "#4")
    at_question(page, 4)
    assert page.locator("#s-reason").text_content() == EVIL
    assert page.locator("#suggest-box img").count() == 0 and page.evaluate("window.__xss") is None
    assert page.locator("#s-label").text_content().startswith("#5 Expense claims")  # not a candidate: named anyway
    listed = page.locator("#cands > li.card").evaluate_all("(lis) => lis.map((li) => li.dataset.id)")
    page.keyboard.press(f"Digit{listed.index('4') + 1}")  # any other label overrides the suggestion
    at_question(page, 5)
    expect(page.locator("#suggest-box")).to_be_hidden()  # q5 has no suggestion: y does nothing
    page.keyboard.press("y")
    expect(page.locator("#saved")).to_contain_text("no suggestion to accept")
    page.keyboard.press("k")
    at_question(page, 4)
    expect(page.locator("#provenance")).to_have_text("changed the suggestion")
    r = rows_by_id(gold)
    assert (r["q4"]["expected_citations"], r["q4"]["provenance"], r["q4"]["suggested"]) == ("4", "changed_suggestion", "5")
    assert r["q5"]["status"] == "unlabelled"
    page.keyboard.press("y")  # accepting after all: the server re-decides
    at_question(page, 5)
    assert rows_by_id(gold)["q4"]["provenance"] == "accepted_suggestion"
    assert errors == []
    page.close()


def test_review_of_suspects_shows_gold_beside_the_suggestion_and_drafts_accept_with_y(browser, serve, tmp_path):
    gold = tmp_path / "draft.csv"
    with gold.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse", "status", "suggestion_source"])
        w.writerow(["q1", QUESTIONS[0][1], "1", "false", "labelled", ""])
        w.writerow(["q4", QUESTIONS[3][1], "5", "false", "labelled", ""])
        w.writerow(["q9", QUESTIONS[8][1], "9", "false", "draft", "generated:fake:m"])
    suspects = tmp_path / "suspects.csv"
    with suspects.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "gold", "suggested", "agree", "gold_votes", "voters", "kind", "check", "reason"])
        w.writerow(["q4", QUESTIONS[3][1], "5", "4", "3", "0", "3", "other_article", "article 4 (Travel approval)", EVIL])
        w.writerow(["q9", QUESTIONS[8][1], "9", "", "0", "0", "0", "other_article", "", "listed by hand"])
    url, out = serve(from_gold=gold, only=suspects)
    page, errors = open_page(browser, url)
    at_question(page, 1)
    expect(page.locator("#qpos")).to_have_text(re.compile(r"^Question 1 / 2 · q4"))
    assert page.locator("#chosen .chip-id").all_text_contents() == ["#5"]  # the gold label ...
    assert page.locator("#s-label .chip-id").all_text_contents() == ["#4"]  # ... beside the suggestion
    expect(page.locator("#audit-box")).to_be_visible()
    assert EVIL in page.locator("#audit-list").text_content() and page.locator("#audit-box img").count() == 0
    page.keyboard.press("y")
    at_question(page, 2)
    expect(page.locator("#status-badge")).to_have_text("draft: not gold until accepted")
    assert page.locator("#s-meta").text_content().endswith("generated:fake:m")
    page.keyboard.press("y")
    expect(page.locator("#progress")).to_contain_text("reviewed 2 / 2")
    r = rows_by_id(out)
    assert list(r) == ["q1", "q4", "q9"] and r["q1"]["expected_citations"] == "1"
    assert (r["q4"]["expected_citations"], r["q4"]["provenance"]) == ("4", "accepted_suggestion")
    assert (r["q9"]["status"], r["q9"]["provenance"], r["q9"]["suggestion_source"]) == (
        "labelled", "accepted_suggestion", "generated:fake:m")
    assert page.evaluate("window.__xss") is None and errors == []
    page.close()
