"""The review page on claims (--mode claims) in headless Chromium: a third label, partial, saved and calibrated."""

from __future__ import annotations

import csv
import json
import re
import threading
import time

import pytest

from annotations.review_app import ReviewApp
from annotations.review_session import ReviewSession
from annotations.review_sources import RunSources
from harness.web import make_server, url_for
from kb_builder.loader import load_kb
from tests.browser import launch, open_page, sync_api_or_skip
from tests.conftest import run_grace, write

sync_api = sync_api_or_skip()
expect = sync_api.expect


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tests.harness.spotcheck.test_spotcheck_claims import ANSWERS, ARTICLES, score_row

    root = tmp_path_factory.mktemp("claims-review")
    write(root / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    rows, scores = [], []
    for qid, (text, outcome, expected, retrieved) in ANSWERS.items():
        cited = re.findall(r"\[ID: (\w+)\]", text)
        rows.append({"question_id": qid, "model": "m", "repeat": 0, "response": text, "error": None})
        scores.append(score_row(qid, outcome, cited, expected, retrieved))
    write(root / "run" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write(root / "run" / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in scores))
    code, out = run_grace("spotcheck", "run", root / "run", "--kb", root / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    return root


@pytest.fixture(scope="module")
def browser(run):
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def labels(path) -> dict[tuple[str, str], str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return {(r["question_id"], r["segment_index"]): r["supported"] for r in csv.DictReader(fh)}


def test_claims_get_a_partial_label_and_calibrate_per_class(run, browser):
    sources = RunSources.find(run / "run", kb_dir=run / "kb")
    assert sources.review_csv.name == "spotcheck_claims_review.csv"  # the CSV spotcheck.json names
    session = ReviewSession.open(sources.review_csv, reviewer="tester")
    app = ReviewApp(session, sources, load_kb(sources.kb_dir))
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        i = next(n for n, rows in enumerate(app.session.answers) if rows[0].key[1] == "q2")
        page, errors = open_page(browser, f"{url_for('127.0.0.1', httpd.server_address[1], None)}#{i + 1}")
        expect(page.locator("#segments > li")).to_have_count(1)
        expect(page.locator("button.mark.partial")).to_have_count(1)
        segment = page.locator("#segments > li[data-seg='0']")
        # a key pressed while the page still moves to the answer is dropped, as a person's is: press once it rests.
        # Auto-advance off: with it, the page moves on to the next answer once the mark is saved, and on a loaded
        # machine it did so before the mark was looked for (the next answer's segment 0 was checked instead)
        page.locator("#auto-advance").uncheck()
        page.wait_for_load_state("networkidle")
        page.keyboard.press("h")
        expect(segment).to_have_class(re.compile(r"\bpartial\b"))
        expect(page.locator("#counts")).to_contain_text("1 partial")
        deadline = time.monotonic() + 10
        while labels(sources.review_csv)[("q2", "0")] != "partial" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert labels(sources.review_csv)[("q2", "0")] == "partial"
        assert errors == []
    finally:
        httpd.shutdown()
        httpd.server_close()
        session.close()
    code, out = run_grace("spotcheck", "calibrate", sources.review_csv, run / "run" / "spotcheck.json")
    assert code == 0, out
    calib = json.loads((run / "run" / "calibration.json").read_text())
    assert calib["mode"] == "claims" and calib["n"] == 1
    assert calib["confusion_classes"]["partial"]["supported"] == 1  # the lexical judge said supported
