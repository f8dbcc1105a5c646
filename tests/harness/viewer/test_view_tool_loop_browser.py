"""The viewer's question page shows a search loop, in a real headless Chromium: each tool call with its arguments
and the articles it returned (the cited one marked), and a citation of an article no search returned.

The run is a real ``grace run`` of two scripted searching models (harness.testing.tool_agents) against the fake
OpenAI server: ``search-top1`` cites its top hit, ``cite-unseen`` cites an article it never retrieved.
"""

from __future__ import annotations

import json

import pytest

from harness.testing.fake_api import FakeAPIServer
from harness.testing.tool_agents import ToolAgents
from tests.browser import launch, open_page, sync_api_or_skip
from tests.conftest import run_grace, write
from tests.view_runs import ARTICLES, FILL, QUESTIONS, served_viewer

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("tool-loop-view")
    write(root / "articles.jsonl", "".join(json.dumps({"id": i, "title": t, "text": x + FILL}) + "\n"
                                           for i, t, x in ARTICLES))
    assert run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")[0] == 0
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse"]
    lines += [f'{q},"{text}",,{gold},false' for q, text, gold in QUESTIONS]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    mp = pytest.MonkeyPatch()
    with FakeAPIServer(responder=ToolAgents([i for i, _, _ in ARTICLES])) as srv:
        mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        mp.setenv("OPENAI_API_KEY", "sk-test")
        try:
            code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--out", root / "run",
                                  *(a for m in ("search-top1", "cite-unseen")
                                    for a in ("--model", f"openai:{m}", "--search", f"openai:{m}")))
        finally:
            mp.undo()
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


def rows_of(run, model):
    return {r["question_id"]: r for r in map(json.loads, (run / "responses.jsonl").read_text().splitlines())
            if r["model"] == model}


def test_the_question_page_shows_each_search_and_what_was_cited(browser, served, run):
    row = rows_of(run, "openai:search-top1")["q1"]
    call = row["tool_loop"]["turns"][0]["calls"][0]
    page, errors = open_page(browser, served + "#/question?runs=run&id=q1")
    loop = page.locator(".model[data-model='openai:search-top1'] .tool-loop")
    expect(loop.locator("summary")).to_contain_text("Search loop: 1 tool call(s) over 2 turn(s)")
    first = loop.locator("tr[data-call='0']")
    expect(first).to_contain_text("search_kb")
    expect(first).to_contain_text(json.loads(call["arguments"])["query"])
    links = first.locator("a.art-link")
    expect(links).to_have_count(len(call["returned"]))
    assert [links.nth(i).get_attribute("data-article") for i in range(links.count())] == call["returned"]
    expect(first.locator("a.cited")).to_have_count(1)  # the top hit, cited
    expect(first.locator("a.cited")).to_have_attribute("data-article", call["returned"][0])
    links.nth(1).click()
    expect(page.locator("#article-panel")).to_be_visible()
    unseen = page.locator(".model[data-model='openai:cite-unseen'] .tool-loop .unseen")
    cited = rows_of(run, "openai:cite-unseen")["q1"]["response"].split("[ID: ")[1].rstrip("]")
    expect(unseen).to_contain_text(f"Cited without any search returning it: [{cited}]")
    assert errors == []
