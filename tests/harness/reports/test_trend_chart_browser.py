"""The trend chart's text never drawn past its edges (issue 47): its title, the key to the marks, the legend and the
runs' slanted labels, each measured in a real headless Chromium against the SVG's own box, on charts of one to forty
runs with what a maintainer's runs carry: a long gold path with no space to break at, a long category, run IDs of
wide letters, model names of wide glyphs."""

from __future__ import annotations

import pytest

from harness.reports.trend import PALETTE, Trend, TrendPoint, TrendRun, TrendSeries, trend_chart
from tests.browser import launch, sync_api_or_skip

sync_api = sync_api_or_skip()

# every <text> whose box leaves the <svg>'s box (its viewBox, drawn at its own size): [text, left, right, top, bottom]
OUTSIDE = """svg => { const box = svg.getBoundingClientRect(); const out = [];
  for (const t of svg.querySelectorAll('text')) { const r = t.getBoundingClientRect();
    if (r.left < box.left || r.right > box.right || r.top < box.top || r.bottom > box.bottom)
      out.push([t.lastChild.textContent, r.left - box.left, r.right - box.left, r.top - box.top, r.bottom - box.top]); }
  return [out, svg.querySelectorAll('text').length]; }"""
GOLD = "/home/maintainer/benchmarks/leaderboards/WWW-sample-benchmark-handbook-MMM/gold-questions-version-3-final.csv"
MODELS = ("llama-cpp:SmolLM2-135M-Instruct-Q4_K_M-replica-A", "baseline:top1", "ＷＩＤＥ全角モデル名前テスト")


def trend(n_runs: int, run_id: str, category: str | None = None, gold: str | None = GOLD) -> Trend:
    runs = [TrendRun(id=run_id.format(i=i), path="/runs", when=f"2025-03-{1 + i % 28:02d}T0{i // 28}:00:00+00:00")
            for i in range(n_runs)]
    series = [TrendSeries(model=m, color=PALETTE[k], points=[
        TrendPoint(run=r.id, when=r.when, n=90, n_questions=90, value=v, ci95=[max(0.0, v - 0.04), min(1.0, v + 0.04)])
        for r in runs]) for k, (m, v) in enumerate(zip(MODELS, (0.0, 1.0, 0.5), strict=True))]
    return Trend(gold_hash="0123456789abcdef", gold_path=gold, metric="accuracy", category=category, runs=runs,
                 models=list(MODELS), categories=[], series=series, groups=[])


CASES = {
    "one run, long path": trend(1, "WWWWMMMM-smollm2-replicas-{i}"),
    "two runs": trend(2, "MMMMMMMMMMMMMMMMMMMMMMMMMM-{i}"),
    "three runs, a category": trend(3, "sample-run-{i}", category="Remote and Hybrid Work > Equipment loan " * 3),
    "twelve runs": trend(12, "WMWMWMWMWMWMWMWMWM{i}"),
    "forty runs, short IDs": trend(40, "r{i}", gold=None),
}


@pytest.fixture(scope="module")
def page():
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        yield browser.new_page(viewport={"width": 3000, "height": 1200})
        browser.close()


@pytest.mark.parametrize("case", list(CASES))
def test_no_text_leaves_the_chart(page, case):
    svg = trend_chart(CASES[case])
    page.set_content(f"<!doctype html><html><body style='margin:0'>{svg}</body></html>")
    outside, n = page.locator("svg").evaluate(OUTSIDE)
    assert n > 10 and outside == [], case
    # the title is broken over lines, not cut: all of it is there (three lines at most, then "…")
    lines = page.locator("svg").evaluate(
        "svg => [...svg.querySelectorAll('text[font-weight=\"600\"]')].map(t => t.lastChild.textContent)")
    title = "".join("".join(lines).split())
    whole = "".join(page.locator("svg > text > title").first.text_content().split())
    assert title == whole or (title.endswith("…") and whole.startswith(title[:-1]) and len(title) > 100), case
