"""The answer-language check and the exact refusal sentences are read by shortcuts (the first words of an answer, a
key word before each sentence, a block of rows at a time) that must give exactly what the plain rules give."""

from __future__ import annotations

import json
import random

import pytest

from harness.prompts.languages import REFUSALS
from harness.scoring import is_strict_refusal, score_responses
from harness.scoring.answer_language import (
    _MARKUP,
    _WORD,
    FIRST_WORDS,
    HEAD_CHARS,
    MIN_WORDS,
    OTHER,
    QUICK_HITS,
    RIVALS,
    SAME,
    SURE_HITS,
    UNKNOWN,
    AnswerLanguage,
)
from harness.scoring.refusal_languages import sentence_search
from kb_builder import language as lang
from tests.conftest import ROOT, run_grace, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

TRANSLATED = json.loads((ROOT / "tests" / "data" / "translated_answers.json").read_text(encoding="utf-8"))


def plain_rule(check: AnswerLanguage, text: str, expected: str) -> int:
    """The rule as documented, word for word: every word of the head, one set, each count in full."""
    head_text = text[:HEAD_CHARS].lower() if text else ""
    words = head_text.split()
    if len(words) < MIN_WORDS:
        return UNKNOWN
    head = set(words)
    hits = len(head & check._function_words(expected))
    if hits >= SURE_HITS:
        return SAME
    rivals = [len(head & check._function_words(r)) for r in RIVALS if r != expected]
    if hits >= QUICK_HITS and all(hits > r for r in rivals):
        return SAME
    if hits >= QUICK_HITS and len(head & check._own_words(expected)) >= 2 and not any(
            head & check._own_words(r) for r in RIVALS if r != expected):
        return SAME
    found = lang.detect(" ".join(w for w in _WORD.findall(head_text) if w not in _MARKUP))
    if found is None:
        return UNKNOWN
    return SAME if found == expected else OTHER


def _texts() -> list[str]:
    """Answers around the FIRST_WORDS boundary: function words of several languages before and after it, split
    by odd whitespace, the head's last word cut at 500 characters, a lone function word left as split's remainder."""
    rng = random.Random(7)
    check = AnswerLanguage()
    function = {code: sorted(check._function_words(code)) for code in (*RIVALS, "el")}
    content = "leave policy employee Urlaub congés días ferie verlof férias άδεια [ID: 12] {\"answer\": https://x.org".split()
    spaces = [" ", " ", " ", "  ", "\n", "\t", "\xa0", "\u3000", " \n"]
    texts = []
    for _ in range(3000):
        n = rng.choice([3, 4, 5, 6, 12, FIRST_WORDS - 1, FIRST_WORDS, FIRST_WORDS + 1, FIRST_WORDS + 2, 40, 90])
        langs = rng.sample(sorted(function), rng.choice([1, 1, 2]))
        share = rng.choice([0.1, 0.2, 0.3, 0.5])
        words = [rng.choice(function[rng.choice(langs)]) if rng.random() < share else rng.choice(content)
                 for _ in range(n)]
        texts.append("".join(w + rng.choice(spaces) for w in words).rstrip() + rng.choice(["", " ", ".", "  "]))
    texts += [t for v in TRANSLATED.values() if isinstance(v, dict) for t in v.values()]
    texts += list(REFUSALS.values()) + ["", "Yes [ID: 3]", "x " * 300, "the of and to in is " + "y" * 600]
    return texts


@pytest.mark.parametrize("expected", ["en", "fr", "de", "el"])
def test_the_check_gives_what_the_plain_rule_gives(expected):
    check = AnswerLanguage()
    texts = _texts()
    got = [check.check(t, expected) for t in texts]
    assert got == [plain_rule(check, t, expected) for t in texts]
    assert {SAME, OTHER, UNKNOWN} <= set(got)  # every branch taken


def test_each_template_languages_sentence_is_a_strict_refusal_in_any_surroundings():
    for code, sentence in REFUSALS.items():
        for variant in {sentence, sentence.replace("'", "\u2019")} if code != "en" else {sentence}:
            for text in (variant, f"Désolé. {variant}", f"Sorry. {variant} [ID: 3]", json.dumps({"answer": variant}, ensure_ascii=False)):
                assert is_strict_refusal(text), text
            assert not is_strict_refusal(variant[:-5]), variant  # a cut sentence is not the sentence
    # the key word alone, in an ASCII answer and in an accented one, is not a refusal
    assert not is_strict_refusal("The information is in article 3 [ID: 3].")
    assert not is_strict_refusal("Les informations sont à l'article 3, πληροφορίες [ID: 3].")


def test_a_sentence_without_the_key_word_is_still_found():
    holds = sentence_search(("Je ne sais pas.", "Keine Informationen, leider."))
    assert holds("Bon. Je ne sais pas. [ID: 2]") and holds("Keine Informationen, leider.")
    assert not holds("Je ne sais rien.") and not holds("Informationen")


def test_other_language_rate_over_several_blocks_of_rows_and_workers(tmp_path):
    """More rows than one block (the column is filled a block at a time): each counted, a failed call never."""
    articles = [("Congés annuels", "Chaque salarié bénéficie de vingt-cinq jours ouvrés de congés payés par an, posés "
                 "dans l'outil RH au moins deux semaines à l'avance et validés par le responsable."),
                ("Repas", "Les repas pris en déplacement professionnel sont remboursés jusqu'à vingt euros par repas, "
                 "sur présentation des justificatifs dans l'outil de notes de frais.")]
    write(tmp_path / "articles.jsonl", "".join(json.dumps({"id": str(i), "title": t, "text": x}, ensure_ascii=False)
                                               + "\n" for i, (t, x) in enumerate(articles, 1)))
    code, out = run_grace("kb", "build", "--articles", tmp_path / "articles.jsonl", "--out", tmp_path / "kb")
    assert code == 0 and "language: fr" in out, out
    write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n"
          "q1,Combien de jours de congés payés ai-je par an ?,1,false\n"
          "q2,Quel est le plafond de remboursement d'un repas ?,2,false\n")
    french = "Vous avez droit à vingt-cinq jours ouvrés de congés payés par an, à poser dans l'outil RH [ID: 1]."
    english = "You get twenty-five working days of paid leave per year, booked in the HR tool [ID: 1]."
    check = AnswerLanguage().check
    assert (check(french, "fr"), check(english, "fr")) == (SAME, OTHER)
    rows, other, told = [], 0, 0
    for r in range(12_500):  # 25,000 rows: more than a block
        for q in ("q1", "q2"):
            failed = r % 11 == 0  # a failed call with an answer in it: not counted either way
            text = english if r % 7 == 0 else french
            rows.append({"question_id": q, "model": "m", "repeat": r, "response": text,
                         "error": {"kind": "timeout", "message": "x"} if failed else None})
            if not failed:
                told += 1
                other += text is english
    responses = write(tmp_path / "responses.jsonl", "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    one = score_responses(responses, tmp_path / "gold.csv", tmp_path / "kb", tmp_path / "one", workers=1, bootstrap=0)
    assert one.models["m"].other_language_rate == round(other / told, 6)
    two = score_responses(responses, tmp_path / "gold.csv", tmp_path / "kb", tmp_path / "two", workers=2, bootstrap=0)
    assert two.models["m"].other_language_rate == one.models["m"].other_language_rate
