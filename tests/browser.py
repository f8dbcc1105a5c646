"""Headless Chromium for the page tests: Debian's /usr/bin/chromium driven by Playwright.

Imported by the browser test modules; :func:`sync_api_or_skip` skips the whole
module with the reason when Chromium or Playwright is absent, so a machine
without a browser still runs every other test.
"""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
# no background networking: this machine's closed network refuses those connections, noisily
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def sync_api_or_skip():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt install chromium)", allow_module_level=True)
    return pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def open_page(browser, url: str, ready: str = "body[data-ready='1']"):
    """A new page at ``url`` once the app says it is ready; returns (page, JavaScript errors seen)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.requested = []
    page.on("request", lambda req: page.requested.append(req.url))
    page.goto(url)
    page.wait_for_selector(ready)
    return page, errors


def at_question(page, n: int) -> None:
    """Wait until the annotation page shows question ``n``.

    A locator wait, not wait_for_function: the page's CSP forbids the eval that one needs.
    """
    import re

    from playwright.sync_api import expect

    expect(page.locator("#qpos")).to_have_text(re.compile(rf"^Question {n} /"))


def grid_ids(page) -> list[str]:
    """The question IDs the viewer's grid shows, in order."""
    return page.locator("#grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")


def export_answers_like_server(page, served: str, exported_index, runs: str, queries: list[str]) -> None:
    """Each grid query of the static export (opened from its file URL) shows the rows the server's /api/questions
    gives, in the same order: the export's JavaScript filters must agree with harness/viewer/grid.py."""
    import json
    import urllib.request

    from playwright.sync_api import expect

    base = exported_index.as_uri()
    for q in queries:
        with urllib.request.urlopen(f"{served}api/questions?runs={runs}&{q}", timeout=20) as r:
            want = [row["id"] for row in json.loads(r.read())["rows"]]
        page.goto(f"{base}#/questions?runs={runs}&{q}")
        expect(page.locator("main")).to_have_attribute("data-rendered", f"#/questions?runs={runs}&{q}")
        expect(page.locator("#total")).to_have_text(str(len(want)))
        assert grid_ids(page) == want, q
