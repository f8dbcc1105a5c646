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
