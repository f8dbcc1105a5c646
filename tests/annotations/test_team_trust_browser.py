"""A team you can trust, in real headless Chromium: alice and bob label and dana decides, each on their own link
(their key), dana citing an article she found by searching the KB; bob cannot act as alice or decide, a script
without a key is refused; a label made while the server is
down shows unsaved and is saved, without anyone doing anything, once the server is back on the same port and folder;
a second tab of alice's shows the label she gave in the first."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request

from annotations.labels import read_labels
from annotations.team import TeamSession
from annotations.team_app import TeamApp
from harness.web import make_server, url_for
from harness.web.credentials import personal_link
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_team import label_as, truth, write_questions
from tests.annotations.test_annotations_server import make_kb
from tests.browser import launch, open_page, sync_api_or_skip

sync_api = sync_api_or_skip()
expect = sync_api.expect


def serve(team, kb, port=0):
    httpd = make_server(TeamApp(team, kb.retriever(), k=5), "127.0.0.1", port, None)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd, url_for("127.0.0.1", httpd.server_address[1], None)


def stop(httpd) -> None:
    httpd.shutdown()
    httpd.server_close()


def script(url: str, path: str, body: dict | None = None) -> int:
    req = urllib.request.Request(url + path, None if body is None else json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def labelled(folder, who) -> dict:
    path = folder / "labels" / f"{who}.csv"
    return {r.question_id: r for r in read_labels(path)[0] if r.status == "labelled"} if path.exists() else {}


def test_each_person_acts_only_as_themself_on_their_own_link(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 4)
    team = TeamSession.open(kb, tmp_path / "team", questions=q, people="alice,bob", reviewers="dana", rule="all")
    keys = team.new_keys
    httpd, url = serve(team, kb)
    try:
        with sync_api.sync_playwright() as p:
            browser = launch(p)
            alice, alice_errors = open_page(browser, personal_link(url, "alice", keys["alice"]))
            bob, bob_errors = open_page(browser, personal_link(url, "bob", keys["bob"]))
            alice.keyboard.press("r")  # q1: must_refuse
            expect(alice.locator("#saved")).to_contain_text("saved q1")
            bob.keyboard.press("/")
            bob.keyboard.type(truth("q1")[0])
            bob.keyboard.press("Enter")
            expect(bob.locator("#cands li").first).to_have_attribute("data-id", truth("q1")[0])
            bob.keyboard.press("1")
            expect(bob.locator("#saved")).to_contain_text("saved q1")

            # bob, from his own browser with his own key, writing as alice or deciding: refused
            forged = bob.request.post(f"{url}api/label?cred={keys['bob']}", data=label_as("alice", "q2"))
            assert forged.status == 403 and "bob's key" in forged.json()["error"]
            decide = {"question_id": "q1", "expected_citations": truth("q1"), "reason": "mine", "seen": {}}
            assert bob.request.post(f"{url}api/adjudicate?cred={keys['bob']}", data=decide).status == 403
            as_alice, _ = open_page(browser, f"{url}?who=alice&cred={keys['bob']}", ready="#error:not(:empty)")
            expect(as_alice.locator("#error")).to_contain_text("this is bob's key")
            queue, _ = open_page(browser, personal_link(url, "bob", keys["bob"], "static/adjudicate.html"),
                                 ready="#error:not(:empty)")
            expect(queue.locator("#error")).to_contain_text("'bob' is not a reviewer")

            # a script without a key, naming alice or dana: refused, nothing written
            assert script(url, "api/label", label_as("alice", "q2")) == 403
            assert script(url, "api/adjudicate", decide | {"who": "dana"}) == 403
            assert script(url, "api/queue?who=dana") == 403
            assert "q2" not in labelled(team.folder, "alice")

            # dana decides on her own link
            dana, dana_errors = open_page(browser, personal_link(url, "dana", keys["dana"], "static/adjudicate.html"))
            expect(dana.locator("#progress")).to_have_text("1 to decide · 0 decided")
            late, late_errors = open_page(browser, personal_link(url, "dana", keys["dana"], "static/adjudicate.html"))
            dana.locator("#labels li.side[data-person='bob'] button.take-label").click()
            # an article nobody cited, found by searching the whole KB from the queue
            assert "7" not in [a for side in ("alice", "bob") for a in labelled(team.folder, side)["q1"].expected_citations]
            dana.keyboard.press("/")
            dana.keyboard.type("Slack threads")
            expect(dana.locator("#kb-results li").first).to_have_attribute("data-id", "7")
            dana.keyboard.press("Enter")
            expect(dana.locator("#chosen")).to_contain_text("Slack etiquette")
            expect(dana.locator("#articles li[data-id='7'] input.take")).to_be_checked()
            dana.locator("#reason").fill("the article answers it")
            dana.locator("#reason").press("Enter")
            expect(dana.locator("#saved")).to_contain_text("decided q1")
            # a second tab opened before that decision: its decision is refused, and it shows the one that holds
            late.locator("#labels li.side[data-person='alice'] button.take-label").click()
            late.locator("#reason").fill("alice is right")
            late.locator("#reason").press("Enter")
            expect(late.locator("#error")).to_contain_text("changed since you opened it")
            expect(late.locator("#previous")).to_contain_text("decided by dana")
            expect(late.locator("#reason")).to_have_value("alice is right")
            assert alice_errors == bob_errors == dana_errors == late_errors == []
            browser.close()
    finally:
        stop(httpd)
        team.close()
    # every accepted write names the person whose key made it
    assert labelled(team.folder, "alice")["q1"].annotator == "alice"
    assert labelled(team.folder, "bob")["q1"].annotator == "bob"
    (decided,) = read_labels(team.folder / "adjudications.csv")[0]
    assert decided.adjudicated_by == "dana" and sorted(decided.expected_citations) == sorted([*truth("q1"), "7"])


def test_a_label_made_while_the_server_is_down_is_saved_when_it_is_back_and_a_second_tab_follows(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 4)
    folder = tmp_path / "team"
    team = TeamSession.open(kb, folder, questions=q, people="alice,bob", rule="all")
    key = team.new_keys["alice"]
    httpd, url = serve(team, kb)
    port = httpd.server_address[1]
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, errors = open_page(browser, personal_link(url, "alice", key))
            page.locator("#auto-advance").uncheck()
            stop(httpd)  # the server goes down while alice labels
            team.close()
            page.keyboard.press("r")
            badge = page.locator("#status-badge")
            expect(badge).to_have_text(re.compile(r"^NOT SAVED: must_refuse"))  # the label says so, not a note
            expect(badge).to_have_class(re.compile(r"\bunsaved\b"))
            assert "q1" not in labelled(folder, "alice")

            team = TeamSession.open(kb, folder)  # back, on the same port and folder
            httpd, _ = serve(team, kb, port)
            expect(page.locator("#saved")).to_contain_text("saved q1", timeout=15_000)  # nobody did anything
            expect(badge).to_have_text("must_refuse")
            assert labelled(folder, "alice")["q1"].must_refuse

            # a second tab of alice's on the same question: it learns of the label the first tab gives
            other = browser.new_page()
            other.clock.install()
            other.goto(personal_link(url, "alice", key) + "#1")
            other.wait_for_selector("body[data-ready='1']")
            expect(other.locator("#status-badge")).to_have_text("must_refuse")
            page.keyboard.press("r")  # alice takes must_refuse back in the first tab
            expect(page.locator("#saved")).to_contain_text("saved q1: unlabelled")
            other.clock.run_for(6_000)
            expect(other.locator("#status-badge")).to_have_text("unlabelled")
            expect(other.locator("#saved")).to_contain_text("q1 changed elsewhere")
            assert "q1" not in labelled(folder, "alice")
            assert errors == []
        finally:
            browser.close()
            stop(httpd)
            team.close()
