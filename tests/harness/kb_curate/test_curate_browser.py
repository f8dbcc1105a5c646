"""grace kb curate in a real headless Chromium: edit, split, merge, mark distinct, undo and accept proposals (offline
and from the fake OpenAI server) by keyboard and mouse; the worklist shrinks as findings are fixed; hostile article
text stays inert; bad input is a clear error on the page."""

from __future__ import annotations

import json
import re
import threading

import pytest

from harness.testing.fake_api import Reply
from harness.web import make_server, url_for
from harness.workflows.curate_app import open_curating
from kb_builder.curation_records import read_edits
from kb_builder.loader import load_kb
from tests.browser import launch, open_page, sync_api_or_skip
from tests.curate_kb import EVIL_TITLE, write_kb

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def serve(tmp_path):
    """Start the app on a fresh KB: ``serve(propose_with=...)`` -> (url, KB folder)."""
    kb_dir = write_kb(tmp_path / "kb")
    started = []

    def start(**options):
        opened = open_curating(kb_dir, author="tester", **options)
        httpd = make_server(opened.app, "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        started.append((opened, httpd))
        return url_for("127.0.0.1", httpd.server_address[1], None), kb_dir

    yield start
    for opened, httpd in started:
        httpd.shutdown()
        httpd.server_close()
        opened.close()


def at_finding(page, key: str) -> None:
    expect(page.locator("#worklist li.current")).to_have_attribute("data-key", key)


def left(page, n: int) -> None:
    expect(page.locator("#progress")).to_contain_text(re.compile(rf"^{n} findings? left of 6"))


def test_edit_split_merge_distinct_undo_and_the_worklist_shrinks(browser, serve):
    url, kb_dir = serve()
    page, errors = open_page(browser, url)
    left(page, 6)
    at_finding(page, "confusable:3+4")
    expect(page.locator("#articles article")).to_have_count(2)  # side by side
    expect(page.locator("#articles article[data-id='3'] .para.passage mark").first).to_be_visible()

    # mark distinct (keyboard): the pair leaves the worklist, with who and why recorded
    page.locator("#worklist li[data-key='confusable:5+6']").click()
    at_finding(page, "confusable:5+6")
    page.keyboard.press("d")
    page.keyboard.type("conference and local travel have different rules")
    page.keyboard.press("Enter")
    left(page, 5)
    expect(page.locator("#saved")).to_contain_text("marked 5 and 6 distinct")
    mark = read_edits(kb_dir)[-1]
    assert (mark.action, mark.articles, mark.author, mark.reason) == (
        "distinct", ["5", "6"], "tester", "conference and local travel have different rules")

    # merge (keyboard) on the near-duplicate pair
    page.locator("#worklist li[data-key='confusable:3+4']").click()
    at_finding(page, "confusable:3+4")
    page.keyboard.press("m")
    left(page, 4)
    assert "4" not in load_kb(kb_dir).by_id and read_edits(kb_dir)[-1].merged_into == "3"

    # undo (keyboard): the merge is taken back, article 4 returns with its ID, the finding returns
    page.keyboard.press("z")
    left(page, 5)
    assert "4" in load_kb(kb_dir).by_id
    expect(page.locator("#history li").first).to_contain_text("undo")

    # edit a title (mouse and Enter) and a text (mouse)
    page.locator("#worklist li[data-key='not_self_contained:2']").click()
    at_finding(page, "not_self_contained:2")
    title = page.locator("#articles article[data-id='2'] .title-input")
    title.fill("Leave > Carry-over policy")
    title.press("Enter")
    left(page, 4)  # the title now says which policy: the finding is fixed
    assert load_kb(kb_dir).by_id["2"].title == "Leave > Carry-over policy"
    page.locator("#worklist li[data-key='not_self_contained:8']").click()
    at_finding(page, "not_self_contained:8")
    card = page.locator("#articles article[data-id='8']")
    card.locator("button.edit-text").click()
    card.locator("textarea").fill("Expense claims are paid back within thirty days of approval by your manager, "
                                  "through the finance portal, with the receipts you upload and your cost centre.")
    card.locator("button.save-text").click()
    left(page, 3)

    # split at a chosen paragraph (mouse): two new IDs, the finding moves to the part that still leans elsewhere
    page.locator("#worklist li[data-key='not_self_contained:7']").click()
    at_finding(page, "not_self_contained:7")
    page.locator("#articles article[data-id='7'] button.split[data-at='3']").click()
    expect(page.locator("#saved")).to_contain_text("split 7 at paragraph 3")
    split = read_edits(kb_dir)[-1]
    assert split.action == "split" and len(split.parts) == 2 and "7" not in load_kb(kb_dir).by_id
    expect(page.locator(f"#worklist li[data-key='not_self_contained:{split.parts[1]}']")).to_have_count(1)
    assert errors == []


def test_accept_a_baseline_proposal_edit_one_reject_one(browser, serve):
    url, kb_dir = serve()
    page, errors = open_page(browser, url)
    page.locator("#worklist li[data-key='not_self_contained:2']").click()
    at_finding(page, "not_self_contained:2")
    page.keyboard.press("p")
    expect(page.locator("#p-meta")).to_contain_text("baseline:heuristic")
    expect(page.locator("#p-blocks ins").first).to_contain_text("The carry-over policy lets you keep")
    page.keyboard.press("y")
    left(page, 5)
    expect(page.locator("#saved")).to_contain_text("accepted proposal 1")
    assert load_kb(kb_dir).by_id["2"].text.startswith("The carry-over policy lets you keep")

    # a merge proposal, edited before it is accepted
    page.locator("#worklist li[data-key='confusable:3+4']").click()
    at_finding(page, "confusable:3+4")
    page.keyboard.press("p")
    expect(page.locator("#p-kind")).to_have_text("merge")
    page.keyboard.press("e")
    page.locator("#p-title").fill("Equipment > Your laptop")
    page.locator("#p-accept").click()
    left(page, 4)
    assert load_kb(kb_dir).by_id["3"].title == "Equipment > Your laptop"

    # a rejected proposal changes nothing
    page.locator("#worklist li[data-key='not_self_contained:7']").click()
    at_finding(page, "not_self_contained:7")
    page.locator("#propose-kind").select_option("split")
    page.locator("#propose").click()
    expect(page.locator("#p-kind")).to_have_text("split")
    page.keyboard.press("x")
    expect(page.locator("#proposal-box")).to_be_hidden()
    assert "7" in load_kb(kb_dir).by_id
    assert errors == []


def test_accept_a_proposal_from_the_fake_openai_server(browser, serve, openai_server):
    openai_server.enqueue(Reply.ok(json.dumps({
        "reason": "the policy is the carry-over policy of the Leave section", "title": "Leave > Carry-over policy",
        "text": "The carry-over policy allows you to carry over up to 240 hours of annual leave into the next leave "
                "year. Hours above the limit are forfeited at the end of the year, unless your manager asked you to "
                "postpone leave for operational reasons, in which case HR restores them."}),
        input_tokens=800, output_tokens=120))
    url, kb_dir = serve(propose_with="openai:gpt-4o-mini")
    page, errors = open_page(browser, url)
    page.locator("#worklist li[data-key='not_self_contained:2']").click()
    at_finding(page, "not_self_contained:2")
    page.keyboard.press("p")
    expect(page.locator("#p-meta")).to_contain_text(re.compile(r"openai:gpt-4o-mini · \$0\.0\d+"))
    expect(page.locator("#p-reason")).to_have_text("the policy is the carry-over policy of the Leave section")
    page.keyboard.press("y")
    left(page, 5)
    assert load_kb(kb_dir).by_id["2"].title == "Leave > Carry-over policy"
    assert [e.action for e in read_edits(kb_dir)] == ["title", "text"]
    assert len(openai_server.requests) == 1 and errors == []


def test_a_bad_model_reply_is_shown_rejected(browser, serve, openai_server):
    openai_server.enqueue(Reply.ok('<img src=x onerror="window.__xss=4"> I cannot help with that'))
    url, _ = serve(propose_with="openai:gpt-4o-mini")
    page, errors = open_page(browser, url)
    page.locator("#worklist li[data-key='not_self_contained:2']").click()
    at_finding(page, "not_self_contained:2")
    page.keyboard.press("p")
    expect(page.locator("#p-error")).to_have_text("rejected: no JSON object in the model's reply")
    expect(page.locator("#p-accept")).to_be_disabled()
    assert page.evaluate("window.__xss") is None and errors == []


def test_hostile_article_text_stays_inert_and_bad_input_is_a_clear_error(browser, serve):
    url, _ = serve()
    page, errors = open_page(browser, url)
    page.locator("#worklist li[data-key='not_self_contained:8']").click()
    at_finding(page, "not_self_contained:8")
    card = page.locator("#articles article[data-id='8']")
    expect(card.locator(".title-input")).to_have_value(EVIL_TITLE)
    expect(card.locator(".para").first).to_contain_text("<script>window.__xss=2</script>")
    expect(card.locator(".para mark")).to_have_text("As mentioned above")
    assert card.locator("img, script, b").count() == 0
    expect(page.locator("#worklist li[data-key='not_self_contained:8'] .ftitle")).to_contain_text("<img src=x")
    page.keyboard.press("p")
    expect(page.locator("#p-blocks ins").first).to_be_visible()
    assert page.locator("#p-blocks img, #p-blocks script").count() == 0
    assert page.evaluate("window.__xss") is None
    # bad input: an empty title is refused with the server's message, nothing saved
    title = card.locator(".title-input")
    title.fill("   ")
    title.press("Enter")
    expect(page.locator("#error")).to_contain_text("empty")
    # a pair marked distinct needs a reason
    page.locator("#worklist li[data-key='confusable:3+4']").click()
    at_finding(page, "confusable:3+4")
    page.keyboard.press("d")
    page.keyboard.press("Enter")
    expect(page.locator("#error")).to_contain_text("say why")
    assert errors == []


def test_proposals_from_before_a_restart_are_back_and_one_made_stale_is_shown_stale(browser, serve, tmp_path):
    kb_dir = tmp_path / "kb"  # the serve fixture's KB: asked on in an earlier session, closed, then served again
    with open_curating(kb_dir, author="tester") as o:
        fresh = o.app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["2"], "finding": "not_self_contained:2"})
        o.app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["7"], "finding": "not_self_contained:7"})
        o.app.post("/api/curate/title", {"id": "7", "title": "Working here > Slack, announcements and security"})
    url, _ = serve()
    page, errors = open_page(browser, url)
    page.locator("#worklist li[data-key='not_self_contained:2']").click()
    at_finding(page, "not_self_contained:2")
    expect(page.locator("#p-meta")).to_contain_text(f"#{fresh['proposal']['id']} by baseline:heuristic")
    expect(page.locator("#p-accept")).to_be_enabled()
    page.locator("#worklist li[data-key='not_self_contained:7']").click()
    at_finding(page, "not_self_contained:7")
    expect(page.locator("#p-error")).to_contain_text("stale: article 7 was edited since the proposal was made")
    expect(page.locator("#p-accept")).to_be_disabled()
    page.keyboard.press("y")  # the key does nothing either
    expect(page.locator("#saved")).to_contain_text("no usable proposal to accept")
    assert load_kb(kb_dir).by_id["7"].title == "Working here > Slack, announcements and security"
    assert errors == []
