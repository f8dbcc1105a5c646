"""grace kb curate --reviewers in real headless Chromium: two curators propose at once, the reviewer approves one
change and rejects the other with a reason; only the approved reaches KB/curation.jsonl. The worklist's filters and a
finding's link work from the address."""

from __future__ import annotations

import json
import re
import threading
import urllib.request

import pytest

from harness.web import make_server, url_for
from harness.workflows.curate_app import open_curating
from kb_builder.curation_records import read_edits
from tests.browser import launch, open_page, sync_api_or_skip
from tests.curate_kb import write_kb

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture
def served(tmp_path):
    kb = write_kb(tmp_path / "kb")
    opened = open_curating(kb, reviewers="dana", curators="ann,ben")
    httpd = make_server(opened.app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield url_for("127.0.0.1", httpd.server_address[1], None), kb, opened.new_keys
    httpd.shutdown()
    httpd.server_close()
    opened.close()


def test_two_curators_propose_and_a_reviewer_decides(served):
    url, kb, keys = served
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        ann, ann_errors = open_page(browser, f"{url}?who=ann&cred={keys['ann']}")
        ben, ben_errors = open_page(browser, f"{url}?who=ben&cred={keys['ben']}#f=confusable%3A3%2B4")  # a finding's link opens it
        expect(ben.locator("#worklist li.current")).to_have_attribute("data-key", "confusable:3+4")

        ann.locator("#worklist li[data-key='confusable:5+6']").click()
        expect(ann.locator("#worklist li.current")).to_have_attribute("data-key", "confusable:5+6")
        ann.keyboard.press("d")
        ben.keyboard.press("m")  # both at once
        ann.keyboard.type("conference and local travel have different rules")
        ann.keyboard.press("Enter")
        expect(ann.locator("#saved")).to_contain_text("proposed change")
        expect(ben.locator("#saved")).to_contain_text("proposed change")
        assert read_edits(kb) == []  # nothing live before review
        expect(ann.locator("#changes li.pending")).to_have_count(2)
        expect(ann.locator("#changes button.approve")).to_have_count(0)  # a curator does not review
        # nor can she from her browser with her key, in her name or dana's; nor can a script without a key
        for body in ({"change": 1}, {"change": 1, "who": "dana"}):
            refused = ann.request.post(f"{url}api/curate/approve?cred={keys['ann']}", data=body)
            assert refused.status == 403, refused.text()
        assert ann.request.post(f"{url}api/curate/approve", data={"change": 1, "who": "dana"}).status == 403

        dana, dana_errors = open_page(browser, f"{url}?who=dana&cred={keys['dana']}")
        expect(dana.locator("#changes li.pending")).to_have_count(2)
        expect(dana.locator("#who")).to_contain_text("dana")  # the person, not the server's --author
        merge = dana.locator("#changes li", has_text="merge 4 into 3")
        expect(merge.locator(".diff-block")).to_have_count(2)  # what approving it does: title and text, word by word
        expect(merge.locator(".diff-block ins").first).to_be_visible()
        distinct = dana.locator("#changes li", has_text="distinct")
        distinct.locator("button.approve").click()
        expect(dana.locator("#saved")).to_contain_text("approved change")
        merge.locator("button.decline").click()  # no reason: refused, and said so
        expect(dana.locator("#error")).to_contain_text("say why")
        merge.locator("input.decline-reason").fill("they are two steps: shipping and returning")
        merge.locator("button.decline").click()
        expect(dana.locator("#changes li.rejected")).to_contain_text("two steps")

        edits = read_edits(kb)
        assert [(e.action, e.author) for e in edits] == [("distinct", "ann")]

        # dana proposes too; her own change is not hers to approve (403), on her page no button offers it
        own = dana.request.post(f"{url}api/curate/title?cred={keys['dana']}", data={"id": "2", "title": "Carry-over"})
        assert own.status == 200 and "proposed change 3" in own.json()["done"]
        assert dana.request.post(f"{url}api/curate/approve?cred={keys['dana']}", data={"change": 3}).status == 403
        dana.reload()
        dana.wait_for_selector("body[data-ready='1']")
        expect(dana.locator("#changes li[data-change='3']")).to_contain_text("· dana · pending")
        expect(dana.locator("#changes li[data-change='3'] button.approve")).to_have_count(0)

        # the filters, from the address and the selects; the link carries them
        dana.goto(f"{url}?who=dana&cred={keys['dana']}#kind=not_self_contained")
        dana.wait_for_selector("body[data-ready='1']")
        expect(dana.locator("#worklist li.finding")).to_have_count(3)
        dana.locator("#filter-section").select_option("Equipment")
        expect(dana.locator("#worklist li.finding")).to_have_count(0)
        dana.locator("#filter-kind").select_option("")
        expect(dana.locator("#worklist li.finding")).to_have_count(1)
        expect(dana.locator("#f-link")).to_have_attribute("href", re.compile(r"section=Equipment&f=confusable%3A3%2B4"))

        stranger, _ = open_page(browser, url)  # no name: the page asks for one
        expect(stranger.locator("#pick-list a")).to_have_count(3)

        for n in range(25):  # many changes: all of them, a page at a time
            req = urllib.request.Request(f"{url}api/curate/title?cred={keys['ben']}", json.dumps(
                {"id": str(n % 8 + 1), "title": f"Title {n}"}).encode(), {"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=20).close()
        dana.reload()
        dana.wait_for_selector("body[data-ready='1']")
        expect(dana.locator("#changes > li")).to_have_count(20)
        expect(dana.locator("#changes-nav")).to_contain_text("page 1 / 2 · 28 changes")
        dana.locator("#changes-nav button.changes-next").click()
        expect(dana.locator("#changes > li")).to_have_count(8)
        assert ann_errors == [] and ben_errors == [] and dana_errors == []
        browser.close()
