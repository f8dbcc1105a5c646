"""The viewer's question page shows what a system retrieved for itself, in a real headless Chromium.

The run is an imported production log (``grace import-logs``): each record says which articles the system retrieved
(``retrieved_ids``), so each response row has ``system_retrieved``. The question page must list them with the
answer, in rank order, each opening its article, as docs/how-to/evaluate-your-system.md says.
"""

from __future__ import annotations

import json

import pytest

from tests.browser import launch, open_page, sync_api_or_skip
from tests.conftest import run_grace, write
from tests.view_runs import ARTICLES, FILL, QUESTIONS, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect

OWN = {"q1": ["3", "1", "6"], "q9": ["2"]}  # what the system retrieved, best first


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("system-retrieval")
    write(root / "articles.jsonl", "".join(json.dumps({"id": i, "title": t, "text": x + FILL}) + "\n"
                                           for i, t, x in ARTICLES))
    assert run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")[0] == 0
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse"]
    lines += [f'{q},"{text}",,{gold},false' for q, text, gold in QUESTIONS]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    log = [{"question_id": q, "question": text, "model": "support-bot", "retrieved_ids": OWN.get(q, [gold]),
            "answer": f"See the handbook. [ID: {OWN.get(q, [gold])[0]}]"} for q, text, gold in QUESTIONS]
    write(root / "log.jsonl", "".join(json.dumps(r) + "\n" for r in log))
    code, out = run_grace("import-logs", root / "log.jsonl", "--kb", root / "kb", "--gold", root / "gold.csv",
                          "--out", root / "run")
    assert code == 0, out
    return root / "run"


@pytest.fixture(scope="module")
def served(run, tmp_path_factory):
    with served_viewer([run], tmp_path_factory.mktemp("cache")) as url:
        yield url


@pytest.fixture(scope="module")
def browser(served):
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def test_the_question_page_lists_the_systems_own_retrieval(browser, served):
    page, errors = open_page(browser, served + "#/question?runs=run&id=q1")
    expect(page.locator("#qtext")).to_have_text("How many sick days do I get per year?")
    own = page.locator(".model[data-model='support-bot'] .system-retrieved")
    expect(own).to_contain_text("Retrieved by the system (3)")
    links = own.locator("a.art-link")
    expect(links).to_have_count(3)
    assert [links.nth(i).get_attribute("data-article") for i in range(3)] == OWN["q1"]
    expect(links.nth(0)).to_have_text("1. [3] Booking travel")
    links.nth(2).click()  # each opens its article, as a citation does
    panel = page.locator("#article-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("[data-article='6'] .atext")).to_contain_text("Working remotely from another country")
    assert errors == []
