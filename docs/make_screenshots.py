"""Make the documentation's screenshots of ``grace view``: docs/view-grid.png and docs/view-question.png.

Offline: the sample benchmark's KB and gold set, two runs of the two baselines and a model answered by grace's
fake OpenAI server (run A quotes the first article shown; run B, "a new prompt", the second one for every fifth
question and refuses more readily), then headless Chromium (Debian's /usr/bin/chromium, Playwright).

    python docs/make_screenshots.py [--keep /tmp/shots]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cli.app import main as grace  # noqa: E402
from harness.testing import FakeAPIServer, prompt_text  # noqa: E402

MODEL = "openai:fake-llm"


def articles(body: dict) -> list[tuple[str, str]]:
    """(ID, first sentence) of each article in the prompt, in the order shown."""
    text = prompt_text(body).split("\n\n", 1)[-1]
    out = []
    for m in re.finditer(r"^\[ID: ([^\]<]+)\] [^\n]*\n(.+?)(?=\n\n\[ID: |\n\n\w+: |\Z)", text, re.S | re.M):
        first = re.split(r"(?<=[.!?])\s", m.group(2).strip(), maxsplit=1)[0]
        out.append((m.group(1), first[:220]))
    return out


def question(body: dict) -> str:
    found = re.findall(r"Question: (.+)", prompt_text(body))
    return found[-1] if found else ""


def run_a(body: dict) -> str:
    shown = articles(body)
    return f"{shown[0][1]} [ID: {shown[0][0]}]" if shown else "I don't have enough information to answer this question."


def run_b(body: dict) -> str:
    shown, q = articles(body), question(body)
    if not shown or len(q) % 7 == 0:
        return "I don't have enough information to answer this question."
    pick = shown[1] if len(q) % 5 == 0 and len(shown) > 1 else shown[0]
    return f"According to the handbook: {pick[1]} [ID: {pick[0]}]"


def cli(*args) -> None:
    try:
        grace([str(a) for a in args])
    except SystemExit as exc:
        if exc.code:
            raise


def build(root: Path) -> tuple[Path, Path]:
    import os

    os.environ["GRACE_CACHE_DIR"] = str(root / "grace-cache")  # not the user's response cache
    cli("kb", "build", ROOT / "benchmarks" / "sample" / "handbook", "--out", root / "kb")
    for name, responder in (("last-week", run_a), ("today", run_b)):
        if (root / name / "report.json").exists():
            continue
        with FakeAPIServer(responder=responder) as srv:
            os.environ.update(OPENAI_BASE_URL=srv.openai_base_url, OPENAI_API_KEY="x")
            cli("run", "--kb", root / "kb", "--gold", ROOT / "benchmarks" / "sample" / "gold.csv", "-m", MODEL,
                "-m", "baseline:top1", "-m", "baseline:threshold", "--out", root / name, "--no-cache")
    return root / "last-week", root / "today"


def shoot(runs: list[Path], cache: Path, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    from harness.viewer import open_viewer
    from harness.web import make_server, url_for
    from tests.browser import launch

    app, indexer = open_viewer(runs, cache, child=False)
    indexer.wait(120)
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = url_for("127.0.0.1", httpd.server_address[1], None)
    shots = {
        "view-grid.png": (f"#/questions?runs=last-week,today&model={MODEL}&flip=any", 1400, 820),
        "view-question.png": (None, 1400, 1100),
    }
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 820})
        page.goto(base + shots["view-grid.png"][0])
        page.wait_for_selector("#grid tbody tr")
        page.screenshot(path=str(out / "view-grid.png"))
        # a question today's model now gets wrong by citing another article: the page to look at
        qid = page.locator("#grid tbody tr", has=page.locator("td.cell.oc-wrong_citation")).first.get_attribute("data-id")
        page.set_viewport_size({"width": 1400, "height": 1100})
        page.goto(f"{base}#/question?runs=last-week,today&id={qid}")
        page.wait_for_selector(".answer-card")
        page.locator(f".model[data-run='today'][data-model='{MODEL}'] a.cite").first.click()
        page.wait_for_selector("#article-panel:not([hidden])")
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(out / "view-question.png"))
        browser.close()
    httpd.shutdown()
    indexer.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        runs = build(root)
        shoot(list(runs), root / "cache", ROOT / "docs")
    print("wrote docs/view-grid.png and docs/view-question.png")


if __name__ == "__main__":
    main()
