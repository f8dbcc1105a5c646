"""report.html in a real headless Chromium: renders offline, plots visible, untrusted text inert."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.reports import write_reports
from tests.browser import CHROMIUM, launch
from tests.harness.reports.test_reports import build_run

PLOTS = ["accuracy", "pareto", "outcomes", "retrieval", "confusion"]

try:
    from playwright.sync_api import sync_playwright
except ImportError as exc:  # pragma: no cover - depends on the environment
    sync_playwright = None
    _IMPORT_ERROR = str(exc)


@pytest.fixture(scope="module")
def page_report(tmp_path_factory):
    if sync_playwright is None:
        pytest.skip(f"playwright is not importable ({_IMPORT_ERROR})")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; install Debian's chromium to run the browser test")
    root = tmp_path_factory.mktemp("browser")
    out, kb = build_run(root)
    html = write_reports(out, kb=kb)["html"]
    console, page_errors, requests = [], [], []
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: console.append((m.type, m.text)))
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(html.as_uri(), wait_until="load")
            result = {
                "pwned": page.evaluate("typeof window.__pwned"),
                "images": page.locator("img").count(),
                "scripts": page.locator("script").count(),
                "boxes": {name: page.locator(f'svg[data-plot="{name}"]').first.bounding_box() for name in PLOTS},
                "title": page.title(),
            }
            shot = root / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            result["screenshot"] = shot
            # open every collapsed block (as a reader clicking them would) and read what is shown
            page.locator("details:not([open]) > summary").evaluate_all("els => els.forEach(e => e.click())")
            result["failures_text"] = page.locator("#failures").inner_text()
            result["pwned_after_open"] = page.evaluate("typeof window.__pwned")
            result["images_after_open"] = page.locator("img").count()
        finally:
            browser.close()
    result.update(console=console, page_errors=page_errors, requests=requests, html=html)
    return result


def test_page_renders_without_errors_or_network(page_report):
    assert page_report["title"] == "grace report"
    assert page_report["page_errors"] == []
    assert [m for m in page_report["console"] if m[0] in ("error", "warning")] == []
    assert page_report["requests"] == [page_report["html"].as_uri()]  # nothing but the page itself


def test_every_plot_is_visible(page_report):
    for name, box in page_report["boxes"].items():
        assert box is not None, f"{name} plot not rendered"
        assert box["width"] > 200 and box["height"] > 80, f"{name} plot too small: {box}"


def test_untrusted_text_is_shown_not_run(page_report):
    assert page_report["pwned"] == "undefined"
    assert page_report["images"] == 0 and page_report["scripts"] == 0
    assert page_report["pwned_after_open"] == "undefined" and page_report["images_after_open"] == 0
    text = page_report["failures_text"]
    assert "<script>window.__pwned = 1</script>" in text
    assert '<img src=x onerror="window.__pwned = 1">' in text


def test_screenshot_is_not_blank(page_report):
    shot = page_report["screenshot"]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 50_000  # a blank page compresses to a few kB
    from PIL import Image

    with Image.open(shot) as img:
        assert img.width >= 1280 and img.height > 3000  # full page, all sections laid out
        colours = img.convert("RGB").resize((320, 800)).getcolors(maxcolors=1_000_000)
    assert len(colours) > 200  # text, bars and heatmap cells, not a flat page
