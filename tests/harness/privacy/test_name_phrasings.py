"""Person names in every phrasing (issue 45): what the rules read in capitalised words, what a ``python:`` and an
``http:`` system receive with ``--redact-pii``, and recall and false finds on a generated set of sentences.

The set, ``tests/data/pii_names_phrasings.jsonl``, is written by ``benchmarks/names_phrasings.py`` apart from the
detector (templates of many phrasings crossed with people of many origins and forms, every template also filled
with capitalised things that are no people); ``benchmarks/redaction.py --phrasings`` prints the same figures as a
table, and docs/measurements.md has them.
"""

from __future__ import annotations

import json
import re

import pytest

from harness.privacy.name_runs import Lexicon, candidates, in_a_title
from harness.testing.fake_api import FakeAPIServer
from tests.conftest import run_grace, write
from tests.harness.privacy.test_redaction import needs_names
from tests.harness.privacy.test_redaction_corpus import bench, load_script

generator = load_script("bench_names_phrasings", "names_phrasings.py")


# --- the rules alone, with a few English words instead of the model's lexicon ------------------------------------

ENGLISH = Lexicon(english=frozenset("contact can send ask payroll lead kind regards office treasurer please book "
                                    "human resources per travel booking tool victoria station austin campus will "
                                    "approve".split()))

@pytest.mark.parametrize(("text", "names"), [
    ("Contact Jean-Pierre Martin or Sofia Rossi about the per diem.", ["Jean-Pierre Martin", "Sofia Rossi"]),
    ("Can Jean-Pierre Martin claim the per diem?", ["Jean-Pierre Martin"]),
    ("Mary-Kate Olsen, Anne Marie Duval and Eun-ji Kim approved it.", ["Mary-Kate Olsen", "Anne Marie Duval",
                                                                      "Eun-ji Kim"]),
    ("Send it to Pieter van der Berg, Luca di Marco or Khalid al-Farsi.", ["Pieter van der Berg", "Luca di Marco",
                                                                          "Khalid al-Farsi"]),
    ("Ask Sean O'Neill's manager, or Łukasz Nowak.", ["Sean O'Neill", "Łukasz Nowak"]),
    ("Payroll Lead Maya R. Chen signs it; Dr Aisha Bello checks it.", ["Maya R. Chen", "Aisha Bello"]),
    ("Kind regards,\nOmar Benali\nOffice of the Treasurer", ["Omar Benali"]),
])
def test_names_in_many_forms_are_read_whole(text, names):
    assert [c.value for c in candidates(text, ENGLISH)] == names


@pytest.mark.parametrize("text", [
    "Please contact Human Resources about the Per Diem.",  # no given name; "Per" is a function word
    "Book rooms in the Sofia Rossi Foundation building.",  # an article, and a word that ends a thing's name
    "Send it to Victoria Station or the Austin Campus.",
    "## Jean-Pierre Martin\n\nOur payroll lead.",  # a heading names a topic
    "The Travel Booking Sofia Rossi tool.",  # a capitalised word before it, mid-sentence: a title
    "Will Harding approve it?",  # "Will" is a function word: one capitalised word is no name
])
def test_things_and_titles_are_no_candidates(text):
    found = [c.value for c in candidates(text, ENGLISH) if not in_a_title(text, c.start, c.end, ENGLISH)]
    assert "Sofia Rossi" not in found and "Jean-Pierre Martin" not in found
    assert not [c for c in found if c.startswith(("Human", "Per", "Victoria", "Austin", "Will"))], found


# --- the issue's sentences, end to end ----------------------------------------------------------------------------

ISSUE = ["Contact Jean-Pierre Martin or Sofia Rossi about the per diem.", "Can Jean-Pierre Martin claim the per diem?"]
PARTS = ["Jean", "Pierre", "Martin", "Sofia", "Rossi"]  # no part of a planted name may reach a system
ARTICLES = [
    {"id": "1", "title": "Travel > Per diem", "text": "The per diem is 45 EUR a day. " + ISSUE[0]},
    {"id": "2", "title": "Travel > Booking", "text": "Book flights in the travel portal two weeks ahead."},
]
GOLD = [("q1", ISSUE[1], "1"), ("q2", ISSUE[0], "1"), ("q3", "How early must I book flights?", "2")]


@pytest.fixture()
def kb(tmp_path, monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    write(tmp_path / "gold.csv", "question_id,question,expected_answer,expected_citations,must_refuse,notes\n"
          + "".join(f'{q},"{t}",,{c},false,\n' for q, t, c in GOLD))
    return tmp_path


def leaked(text: str) -> list[str]:
    return [p for p in PARTS if re.search(rf"\b{p}\b", text)]


@needs_names
@pytest.mark.slow  # a run of a python: system with the name model: 10 s
def test_a_python_system_receives_no_part_of_the_names(kb):
    log = kb / "received.jsonl"
    write(kb / "bot.py", f"""import json
from pathlib import Path


def answer(request):
    seen = {{"question": request.question, "messages": request.messages,
            "articles": [{{"title": a.title, "text": a.text}} for a in request.articles]}}
    with Path({str(log)!r}).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(seen, ensure_ascii=False) + "\\n")
    return "See the policy. [ID: 1]"
""")
    cmd = ["run", "--kb", kb / "kb", "--gold", kb / "gold.csv", "--model", f"python:{kb / 'bot.py'}:answer", "--k", "2"]
    code, out = run_grace(*cmd, "--out", kb / "plain")
    assert code == 0, out
    assert leaked(log.read_text(encoding="utf-8")) == PARTS  # without the flag the system sees every name
    log.unlink()
    code, out = run_grace(*cmd, "--out", kb / "redacted", "--redact-pii")
    assert code == 0, out
    received = log.read_text(encoding="utf-8")
    assert len(received.splitlines()) == len(GOLD) and leaked(received) == [], received
    questions = {json.loads(line)["question"] for line in received.splitlines()}  # in any order: calls run at once
    assert {"Can <PERSON_1> claim the per diem?", "Contact <PERSON_1> or <PERSON_2> about the per diem."} <= questions


@needs_names
def test_an_http_system_receives_no_part_of_the_names(kb):
    with FakeAPIServer() as srv:
        toml = ['[[models]]', 'spec = "http:support-bot"', '', '[models.http]', f'url = "{srv.bot_url}"',
                'body = { q = "{{question}}", docs = "{{articles}}", chat = "{{messages}}" }', 'answer = "answer"']
        write(kb / "bot.toml", "\n".join(toml) + "\n")
        cmd = ["run", "--kb", kb / "kb", "--gold", kb / "gold.csv", "--config", kb / "bot.toml", "--k", "2"]
        code, out = run_grace(*cmd, "--out", kb / "plain")
        assert code == 0, out
        assert leaked("\n".join(json.dumps(r.body, ensure_ascii=False) for r in srv.requests)) == PARTS
        srv.clear()
        code, out = run_grace(*cmd, "--out", kb / "redacted", "--redact-pii")
        assert code == 0, out
        bodies = [json.dumps(r.body, ensure_ascii=False) for r in srv.requests if r.path == "/bot/answer"]
    assert len(bodies) == len(GOLD) and leaked("\n".join(bodies)) == [], bodies
    assert "Can <PERSON_1> claim the per diem?" in "\n".join(bodies)


# --- the generated set ----------------------------------------------------------------------------------------------

ROWS = bench.load_corpus(bench.PHRASINGS)


def test_the_set_is_as_generated_and_wide():
    """The file is what the generator writes (so nobody tuned it by hand), with 200+ sentences naming people in
    every form and position and a twin for each template."""
    assert ROWS == generator.rows()
    named = [r for r in ROWS if r["people"]]
    twins = [r for r in ROWS if r["things"]]
    assert len(named) >= 150 and len(twins) >= 100 and len(ROWS) >= 300
    assert all(r["text"][p["start"]:p["end"]] == p["name"] for r in ROWS for p in r["people"] + r["things"])
    assert {r["template"] for r in named} == {r["template"] for r in twins} == {t for t, _, _ in generator.TEMPLATES}
    forms = {p["form"] for r in named for p in r["people"]}
    assert {"hyphenated given name", "two-word given name", "particle", "apostrophe or inner capital",
            "letters outside Latin-1", "rare given name"} <= forms
    assert not any(n in r["text"] for r in ROWS for n in ("Jean-Pierre Martin", "Sofia Rossi"))  # the issue's own
    assert {r["split"] for r in ROWS} == {"dev", "heldout"}


def test_the_table_of_the_set():
    """The benchmark's table, on a hand-made redaction: its alignment finds what was taken out."""
    text = "Contact Ana Lima or Human Resources."
    assert bench.redacted_ranges(text, "Contact <PERSON_1> or Human Resources.") == [(8, 16)]
    assert bench.redacted_ranges(text, "<PERSON_1> <PERSON_2> or <PERSON_3>.") == [(0, 7), (8, 16), (20, 35)]
    with pytest.raises(ValueError):
        bench.redacted_ranges(text, "Contact <PERSON_1> or HR.")


# measured on this set (docs/measurements.md); the bars sit just under the figures, so a loss shows
RECALL = {"dev": 0.92, "heldout": 0.84}  # people removed whole, no letter of them left
TWINS = {"dev": 0.09, "heldout": 0.14}  # twin sentences with any redaction


@needs_names
@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_recall_and_false_finds_on_the_set(split, monkeypatch):
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    scored = bench.score_phrasings([r for r in ROWS if r["split"] == split])
    people = [o for s in scored for o in s.people]
    twins = [s for s in scored if not s.row["people"]]
    assert people.count("whole") / len(people) >= RECALL[split], [
        (s.row["text"], s.sent) for s in scored if any(o != "whole" for o in s.people)]
    assert people.count("part") == 0  # a name is taken out whole or not at all: never "Jean-<PERSON_1>"
    assert sum(bool(s.beyond) for s in twins) / len(twins) <= TWINS[split], [
        (s.row["text"], s.beyond) for s in twins if s.beyond]
    assert not [s for s in scored if s.row["people"] and s.beyond]  # no word beside a name goes with it


@needs_names
def test_a_long_paragraph_is_read_around_its_names(monkeypatch):
    """Past 20,000 characters the model reads around the names it must confirm ("Grace Whitfield": a given name
    that is an English word, a surname the list lacks), not the whole paragraph (spaCy stops at 1,000,000)."""
    from harness.privacy import make_redactor

    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    filler = "Book flights in the travel portal at least two weeks ahead. " * 200
    text = filler + "Please ask Grace Whitfield about the per diem. " + filler + "Thanks to Grace Whitfield. " + filler
    assert len(text) > 30_000
    sent = make_redactor(True).redact([{"role": "user", "content": text}]).messages[0]["content"]
    assert "Whitfield" not in sent and sent.count("<PERSON_1>") == 2
    assert sent.replace("<PERSON_1>", "Grace Whitfield") == text
