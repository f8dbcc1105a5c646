"""Two runs for the ``grace view`` tests, made as a user makes them: ``grace kb build``, ``grace run`` against the
fake OpenAI server (a different behaviour in run B), the offline baselines beside it, and a spot-check of run B.

Hostile text is planted where a real run can carry it: an article title and an article text with markup (and
Markdown: the text's bold is drawn bold, its HTML as text), and a model answer with a script and an image that would
run if any page used innerHTML. One gold label is wrong on
purpose (q2 asks about sick leave, labelled with the parental-leave article), so the label audit flags it.
"""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import run_grace, write

MODEL = "openai:fake-m"
FILL = " This policy explains the rules in detail so that an employee can act on it without asking anyone."
TITLE_XSS = "Expense claims <img src=x onerror=\"window.__pwned='title'\">"
ANSWER_XSS = "<script>window.__pwned='answer'</script><img src=x onerror=\"window.__pwned='img'\"> Claim it"
ARTICLES = [
    ("1", "Sick leave", "Ten days of paid sick leave per year; a doctor's note after three days."),
    ("2", "Parental leave", "Sixteen weeks of parental leave, paid in full."),
    ("3", "Booking travel", "Book flights and hotels in the travel portal, economy class only."),
    ("4", TITLE_XSS, "**Submit receipts** for expense claims within 30 days. <script>window.__pwned='text'</script>"),
    ("5", "Per diem", "The meal per diem is 45 EUR a day on business trips."),
    ("6", "Remote work", "Working remotely from another country needs approval from security."),
]
QUESTIONS = [
    ("q1", "How many sick days do I get per year?", "1"),
    ("q2", "Do I need a doctor's note for sick leave?", "2"),  # wrong on purpose: article 1 answers it
    ("q3", "How long is parental leave?", "2"),
    ("q4", "Is parental leave paid?", "2"),
    ("q5", "Where do I book flights for a business trip?", "3"),
    ("q6", "Can I fly business class when I book travel?", "3"),
    ("q7", "How long do I have to submit expense claims receipts?", "4"),
    ("q8", "What do I need for an expense claim?", "4"),
    ("q9", "What is the meal per diem on business trips?", "5"),
    ("q10", "How much per diem do I get a day?", "5"),
    ("q11", "Can I work remotely from another country?", "6"),
    ("q12", "Who approves remote work abroad?", "6"),
]
REFUSALS = [("r1", "What is the capital of France?"), ("r2", "Who won the 1998 world cup?")]
CATEGORY = {"1": "leave", "2": "leave", "3": "travel", "4": "expenses", "5": "travel", "6": "remote work"}  # by gold


def shown_ids(body: dict) -> list[str]:
    return [i for i in re.findall(r"\[ID: ([^\]]+)\]", prompt_text(body)) if i != "<id>"]


def question_of(body: dict) -> str:
    text = prompt_text(body)
    for qid, question, _ in QUESTIONS:
        if question in text:
            return qid
    for qid, question in REFUSALS:
        if question in text:
            return qid
    return ""


def run_a_model(body: dict) -> str:
    """Run A: every question answered from the first article shown."""
    return f"According to the handbook, this is covered there. [ID: {shown_ids(body)[0]}]"


class RunBModel:
    """Run B: the second article shown for q3, q6 and q9, refusals for must-refuse questions, and a hostile answer
    (markup in the text) for q7."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        qid, ids = question_of(body), shown_ids(body)
        if qid.startswith("r"):
            return "I don't have enough information to answer this question."
        if qid in ("q3", "q6", "q9") and len(ids) > 1:
            return f"It is in this one. [ID: {ids[1]}]"
        if qid == "q7":
            return f"{ANSWER_XSS} within 30 days [ID: {ids[0]}]."
        return run_a_model(body)


def build_view_runs(root: Path) -> Path:
    """KB, gold, run ``a`` and run ``b`` (three models each; a lexical spot-check of ``b``) under ``root``.

    Module fixtures run before the per-test isolation of conftest: the response cache goes in ``root`` here."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "grace-cache"))
        return _build(root)


def _build(root: Path) -> Path:
    rows = [{"id": i, "title": t, "text": x + FILL} for i, t, x in ARTICLES]
    write(root / "articles.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")
    assert code == 0, out
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse,notes,category"]
    lines += [f'{q},"{text}",,{gold},false,,{CATEGORY[gold]}' for q, text, gold in QUESTIONS]
    lines += [f'{q},"{text}",,,true,,off-topic' for q, text in REFUSALS]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    common = ["run", "--kb", root / "kb", "--gold", root / "gold.csv", "-m", MODEL, "-m", "baseline:top1",
              "-m", "baseline:threshold", "--concurrency", "4"]
    with pytest.MonkeyPatch.context() as mp:
        for name, responder, extra in (("a", run_a_model, []), ("b", RunBModel(), ["--no-cache"])):
            with FakeAPIServer(responder=responder) as srv:
                mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
                mp.setenv("OPENAI_API_KEY", "x")
                code, out = run_grace(*common, "--out", root / name, *extra)
                assert code == 0, out
    code, out = run_grace("spotcheck", "run", "--mode", "segments", root / "b", "--kb", root / "kb", "--judge",
                          "baseline:lexical", "--all")
    assert code == 0, out
    return root


@contextmanager
def served_viewer(runs: list[Path], cache: Path) -> Iterator[str]:
    """The viewer on ``runs``, indexed and served on a free local port: its URL, for as long as the block runs."""
    from harness.viewer import open_viewer
    from harness.web import make_server, url_for

    app, indexer = open_viewer(runs, cache, child=False)
    assert indexer.wait(60)
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield url_for("127.0.0.1", httpd.server_address[1], None)
    finally:
        httpd.shutdown()
        httpd.server_close()
        indexer.stop()


def exported_viewer(runs: list[Path], out: Path) -> Path:
    """``grace view RUNS --export OUT`` (its own response cache): the export's index.html."""
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: conftest's per-test cache folder is not set yet
        mp.setenv("GRACE_CACHE_DIR", str(out.parent / "cache"))
        code, text = run_grace("view", *runs, "--export", out)
    assert code == 0, text
    return out / "index.html"
