"""grace annotate --team in real headless Chromium: three people label 60 questions with overlap 2 through one
server (alice and bob in two browsers at once, carol through the API meanwhile), the agreement the page shows is
``grace annotations agree`` on the files, the reviewer decides the disagreements on the queue page, and the gold
validates and scores."""

from __future__ import annotations

import json
import re
import threading
import urllib.request

from annotations.agreement import compare_files
from annotations.labels import read_labels
from annotations.team import TeamSession
from annotations.team_app import TeamApp
from harness.web import make_server, url_for
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_team import label_as, truth, write_questions
from tests.annotations.test_annotations_server import make_kb
from tests.browser import launch, open_page, sync_api_or_skip
from tests.conftest import run_grace

sync_api = sync_api_or_skip()
expect = sync_api.expect


def label_in_browser(url: str, who: str, errors: list[str], key: str) -> None:
    """One person's browser: every question given to them, in their walk's order, by keyboard."""
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page, js_errors = open_page(browser, f"{url}?who={who}&cred={key}")
            total = int(re.search(r"/ (\d+)", page.locator("#qpos").text_content()).group(1))
            for n in range(1, total + 1):
                expect(page.locator("#qpos")).to_have_text(re.compile(rf"^Question {n} /"))
                qid = page.locator("#qpos").text_content().rsplit("· ", 1)[1]
                want = label_as(who, qid)
                if want["must_refuse"]:
                    page.keyboard.press("r")
                else:  # typing an article's ID in the search box finds it first
                    page.keyboard.press("/")
                    page.keyboard.type(want["expected_citations"][0])
                    page.keyboard.press("Enter")
                    expect(page.locator("#cands li").first).to_have_attribute("data-id", want["expected_citations"][0])
                    page.keyboard.press("1")
                expect(page.locator("#saved")).to_contain_text(f"saved {qid}")
            expect(page.locator("#progress")).to_contain_text(f"{total} / {total} labelled")
            errors.extend(js_errors)
        except Exception as exc:  # noqa: BLE001 - the main thread asserts on it
            errors.append(f"{who}: {exc!r}")
        finally:
            browser.close()


def post(url: str, body: dict, key: str) -> dict:
    req = urllib.request.Request(f"{url}api/label?cred={key}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_a_team_labels_agrees_is_adjudicated_and_the_gold_scores(tmp_path):
    kb_dir = make_kb(tmp_path)
    kb = load_kb(kb_dir)
    q = write_questions(tmp_path / "q.csv", 60)
    team = TeamSession.open(kb, tmp_path / "team", questions=q, people="alice,bob,carol", reviewers="dana",
                            rule="overlap:2")
    httpd = make_server(TeamApp(team, kb.retriever(), k=10), "127.0.0.1", 0, None)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    url = url_for("127.0.0.1", httpd.server_address[1], None)
    keys = team.new_keys  # each person's own link: ?who=NAME&cred=KEY
    try:
        errors: list[str] = []
        people = [threading.Thread(target=label_in_browser, args=(url, who, errors, keys[who]))
                  for who in ("alice", "bob")]
        for t in people:
            t.start()
        for qid in team.assigned("carol"):  # the third person saves meanwhile, through the same server
            post(url, label_as("carol", qid), keys["carol"])
        for t in people:
            t.join(timeout=600)
        assert errors == []

        files = sorted((tmp_path / "team" / "labels").glob("*.csv"))
        for f in files:  # every label kept per person
            recs = {r.question_id: r for r in read_labels(f)[0] if r.status == "labelled"}
            assert sorted(recs) == sorted(team.assigned(f.stem)), f.stem
            assert {r.annotator for r in recs.values()} == {f.stem}
        cmd = compare_files(files)
        code, out = run_grace("annotations", "agree", *files)
        assert code == 0, out
        disagree = sorted(cmd.compared[i] for i in cmd.disagreements)
        assert disagree  # the slips make some

        with sync_api.sync_playwright() as p:
            browser = launch(p)
            page, js_errors = open_page(browser, f"{url}?who=alice&cred={keys['alice']}")  # the live agreement, as the page shows it
            expect(page.locator("#team-line")).to_contain_text(f"{cmd.kappa_name} {cmd.kappa:.3f}")
            assert f"{cmd.kappa_name}: {cmd.kappa:.3f}" in out
            expect(page.locator("#team-line")).to_contain_text(f"{len(disagree)} to decide")
            expect(page.locator("#team-people li[data-person='bob']")).to_have_text("bob 40 / 40")

            # live: another person's label reaches an open page without a reload (its clock run forward)
            live = browser.new_page()
            live.clock.install()
            live.goto(f"{url}?who=alice&cred={keys['alice']}")
            live.wait_for_selector("body[data-ready='1']")
            expect(live.locator("#team-line")).to_contain_text(f"{len(disagree)} to decide")
            agreed = next(q for q in team.assigned("carol") if q not in disagree)
            other = ["8"] if truth(agreed) != ["8"] else ["1"]
            post(url, label_as("carol", agreed) | {"expected_citations": other}, keys["carol"])
            live.clock.run_for(11_000)
            expect(live.locator("#team-line")).to_contain_text(f"{len(disagree) + 1} to decide")
            post(url, label_as("carol", agreed), keys["carol"])  # and back
            live.clock.run_for(11_000)
            expect(live.locator("#team-line")).to_contain_text(f"{len(disagree)} to decide")

            stranger, _ = open_page(browser, f"{url}?who=dave", ready="#error:not(:empty)")
            expect(stranger.locator("#error")).to_contain_text("'dave' is not on this session's team")
            picker, _ = open_page(browser, url)  # no name: the page asks for one
            expect(picker.locator("#pick-list button")).to_have_count(4)
            expect(picker.locator("#pick-keyed")).to_contain_text("alice, bob, carol, dana: open your own link")

            rev, rev_errors = open_page(browser, f"{url}static/adjudicate.html?who=dana&cred={keys['dana']}")
            expect(rev.locator("#progress")).to_have_text(f"{len(disagree)} to decide · 0 decided")
            for n in range(len(disagree)):
                qid = rev.locator("#qpos").text_content().rsplit("· ", 1)[1]
                assert qid in disagree
                assert rev.locator("#labels li.side").count() == 2  # side by side: each label and who gave it
                sides = rev.locator("#labels li.side")
                right = [f"#{c}" for c in truth(qid)]
                pick = next((i for i in range(2) if sides.nth(i).locator(".chip-id").all_text_contents() == right), 0)
                sides.nth(pick).locator("button.take-label").click()
                rev.locator("#reason").fill(f"the article answers it ({n})")
                rev.locator("#reason").press("Enter")
                expect(rev.locator("#saved")).to_contain_text(f"decided {qid}")
            expect(rev.locator("#progress")).to_have_text(f"0 to decide · {len(disagree)} decided")
            assert js_errors == [] and rev_errors == []
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
        team.close()

    gold = tmp_path / "team" / "gold.csv"
    assert len(read_gold(gold)) == 60
    rows = {r.question_id: r for r in read_labels(gold)[0]}
    assert all(rows[q].adjudicated_by == "dana" and rows[q].adjudication_reason.startswith("the article answers")
               for q in disagree)
    code, out = run_grace("annotations", "validate", gold, "--kb", kb_dir)
    assert code == 0, out
    code, out = run_grace("annotations", "stats", gold, "--kb", kb_dir)
    assert code == 0 and f"{len(disagree)} decided by a reviewer" in out and "dana" in out, out
    code, out = run_grace("run", "--kb", kb_dir, "--gold", gold, "-m", "baseline:top1", "--out", tmp_path / "run")
    assert code == 0, out
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    scored = report["models"]["baseline:top1"]  # every question of the team's gold scored
    assert scored["n_questions"] == 60 and 0 <= scored["accuracy"] <= 1
