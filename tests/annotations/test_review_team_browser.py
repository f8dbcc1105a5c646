"""grace annotations review --team in real headless Chromium: alice and bob give verdicts on a spot-check's claims
in two browsers at once (by keyboard, each in their own file), the reviewer decides a disagreement on the queue page,
and the calibration page shows kappa per person, per pair and for the team equal to a direct computation
(annotations.agreement); each false positive / negative links to the viewer's question page for that answer, which
opens on that question."""

from __future__ import annotations

import re
import threading
from urllib.parse import parse_qs

import pytest

from annotations.review_sources import RunSources
from annotations.review_team import TeamReview
from annotations.review_team_app import TeamReviewApp
from harness.spotcheck.review import read_labels
from harness.web import make_server, url_for
from kb_builder.loader import load_kb
from tests.annotations.review_team_run import build, claims, judge_verdicts, kappa, verdict_of
from tests.browser import launch, open_page, sync_api_or_skip
from tests.view_runs import QUESTIONS, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect
KEY = {"supported": "s", "partial": "h", "unsupported": "u"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return build(tmp_path_factory.mktemp("review-team-browser"))


def walk(run) -> list[list[tuple[int, tuple]]]:
    """The claims answer by answer, as the review page walks them: (place in the file, key)."""
    answers: dict[tuple, list[tuple[int, tuple]]] = {}
    for n, key in enumerate(claims(run)):
        answers.setdefault(key[:3], []).append((n, key))
    return [sorted(v, key=lambda x: x[1][3]) for v in answers.values()]


def review_in_browser(url: str, who: str, answers: list, errors: list[str], key: str) -> None:
    """One person's browser: every claim, answer by answer, by keyboard."""
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, js_errors = open_page(browser, f"{url}?who={who}&cred={key}")
            page.locator("#auto-advance").uncheck()
            for i, segs in enumerate(answers):
                expect(page.locator("#apos")).to_have_text(re.compile(rf"^Answer {i + 1} / "))
                expect(page.locator("#meta-text")).to_contain_text(f"{segs[0][1][1]} · {segs[0][1][0]}")
                for pos, (n, key) in enumerate(segs):
                    card = page.locator(f"#segments > li[data-seg='{pos}']")
                    card.locator(".seg-text").click()
                    expect(card).to_have_class(re.compile(r"\bfocused\b"))
                    verdict = verdict_of(who, key, n)
                    page.keyboard.press(KEY[verdict])
                    expect(card).to_have_class(re.compile(rf"\b{verdict}\b"))
                if i + 1 < len(answers):
                    page.keyboard.press("n")
            expect(page.locator("#progress")).to_contain_text(f"{sum(map(len, answers))} / ")
            errors.extend(js_errors)
        except Exception as exc:  # noqa: BLE001 - the main thread asserts on it
            errors.append(f"{who}: {exc!r}")
        finally:
            browser.close()


def num(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def test_two_people_review_and_the_calibration_page_links_each_miss_to_its_question(run, tmp_path):
    with served_viewer([run], tmp_path / "cache") as viewer:
        sources = RunSources.find(run)
        team = TeamReview.open(sources, tmp_path / "team", people="alice,bob", reviewers="dana", viewer=viewer)
        app = TeamReviewApp(team, load_kb(sources.kb_dir, write_missing=False))
        httpd = make_server(app, "127.0.0.1", 0, None)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        url = url_for("127.0.0.1", httpd.server_address[1], None)
        try:
            answers, errors = walk(run), []
            people = [threading.Thread(target=review_in_browser, args=(url, who, answers, errors, team.new_keys[who]))
                      for who in ("alice", "bob")]
            for t in people:
                t.start()
            for t in people:
                t.join(timeout=600)
            assert errors == []
            keys = claims(run)
            said = {who: [verdict_of(who, k, n) for n, k in enumerate(keys)] for who in ("alice", "bob")}
            for who in ("alice", "bob"):  # each person's verdicts, in their own file
                assert [r.verdict for r in read_labels(team.folder / "labels" / f"{who}.csv")] == said[who]
            _pick_a_name(url, team.new_keys["bob"])
            _decide_one(url, keys, said, team.new_keys["dana"])
            _calibration_page(url, run, keys, said, team.new_keys["dana"])
        finally:
            httpd.shutdown()
            httpd.server_close()
            team.close()


def _pick_a_name(url, key):
    """Opened without a name, the review page asks for one; a name alone is nobody (bob signs in with his link),
    and his link opens his page."""
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, errors = open_page(browser, url)
            expect(page.locator("#pick-list a")).to_have_count(2)
            page.locator("#pick-list a[data-person='bob']").click()
            expect(page.locator("#error")).to_contain_text("bob signs in with their own link")
            page.goto(f"{url}?who=bob&cred={key}")
            page.wait_for_selector("body[data-ready='1']")
            expect(page.locator("#who")).to_contain_text("bob")
            assert errors == []
        finally:
            browser.close()


def _decide_one(url, keys, said, key):
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, errors = open_page(browser, f"{url}static/review_queue.html?who=dana&cred={key}")
            differ = sum(a != b for a, b in zip(said["alice"], said["bob"], strict=True))
            expect(page.locator("#progress")).to_contain_text(f"{differ} to decide · 0 decided")
            page.keyboard.press("2")  # take bob's verdict
            page.keyboard.press("w")
            page.keyboard.type("bob read the article right")
            page.keyboard.press("Enter")
            expect(page.locator("#progress")).to_contain_text(f"{differ - 1} to decide · 1 decided")
            assert errors == []
        finally:
            browser.close()


def _calibration_page(url, run, keys, said, key):
    judged = judge_verdicts(run)
    judge = [judged[k] for k in keys]
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, errors = open_page(browser, f"{url}static/calibration.html?who=dana&cred={key}")
            rows = page.locator("#kappa-rows tr[data-kind='judge-person']")
            expect(rows).to_have_count(2)
            for i, who in enumerate(("alice", "bob")):
                expect(rows.nth(i).locator("th")).to_have_text(re.compile(rf" vs {who}$"))
                expect(rows.nth(i).locator("td.kappa")).to_have_text(num(kappa(said[who], judge, True)))
                expect(rows.nth(i).locator("td.kappa-all")).to_have_text(num(kappa(said[who], judge, False)))
            pair = page.locator("#kappa-rows tr[data-kind='pair']")
            expect(pair.locator("td.kappa")).to_have_text(num(kappa(said["alice"], said["bob"], True)))
            expect(pair.locator("td.kappa-all")).to_have_text(num(kappa(said["alice"], said["bob"], False)))
            # the team: the agreed claims and the one dana decided (bob's verdict)
            decided = next(n for n in range(len(keys)) if said["alice"][n] != said["bob"][n])
            team = [n for n in range(len(keys)) if said["alice"][n] == said["bob"][n] or n == decided]
            human = [said["bob"][n] for n in team]
            expect(page.locator("#kappa-rows tr[data-kind='judge-team'] td.kappa")).to_have_text(
                num(kappa(human, [judge[n] for n in team], True)))
            fp = [n for n, h in zip(team, human, strict=True) if judge[n] == "unsupported" and h != "unsupported"]
            fn = [n for n, h in zip(team, human, strict=True) if h == "unsupported" and judge[n] != "unsupported"]
            expect(page.locator("#false-positives > li")).to_have_count(len(fp))
            expect(page.locator("#false-negatives > li")).to_have_count(len(fn))
            expect(page.locator("#confusion td[data-cell='supported/unsupported']")).to_have_text(
                str(sum(human[i] == "supported" and judge[n] == "unsupported" for i, n in enumerate(team))))
            for box, ns in (("#false-positives", fp), ("#false-negatives", fn)):
                first = page.locator(f"{box} > li").first
                qid = keys[ns[0]][1]
                expect(first).to_have_attribute("data-question", qid)
                with page.expect_popup() as popup:
                    first.locator("a.question-link").click()
                viewer = popup.value
                expect(viewer.locator("main")).to_have_attribute("data-rendered", re.compile(r"^#/question\?"))
                shown = viewer.locator("main").get_attribute("data-rendered").split("?", 1)[1]
                assert parse_qs(shown) == {"runs": ["b"], "id": [qid]}
                expect(viewer.locator("main")).to_contain_text(dict((q, t) for q, t, _ in QUESTIONS)[qid])
                viewer.close()
            assert errors == []
            assert page.evaluate("window.__pwned") is None  # the hostile answer stayed text
        finally:
            browser.close()
