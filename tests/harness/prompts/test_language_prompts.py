"""Prompts and refusals in the KB's language: `grace run` on a French KB asks in French, `grace score` reads French
(and the other template languages') refusals, and answers in another language than the question's are counted."""

from __future__ import annotations

import json

import pytest

from harness.prompts import load_template
from harness.prompts.languages import REFUSALS, TEMPLATE_LANGUAGES
from harness.providers.base import RetrievedArticle
from harness.scoring import is_refusal, is_strict_refusal
from tests.conftest import ROOT, run_grace, write

FR_ARTICLES = [
    ("Congés > Congés annuels", "Chaque salarié bénéficie de vingt-cinq jours ouvrés de congés payés par an, posés dans "
                                "l'outil RH au moins deux semaines à l'avance et validés par le responsable."),
    ("Congés > Congé pour décès", "En cas de décès d'un parent proche, le salarié a droit à trois jours de congé "
                                  "rémunérés, sur simple demande à son responsable."),
    ("Frais > Repas", "Les repas pris en déplacement professionnel sont remboursés jusqu'à vingt euros par repas, sur "
                      "présentation des justificatifs dans l'outil de notes de frais."),
]


def _french_bench(tmp_path):
    write(tmp_path / "articles.jsonl", "".join(json.dumps({"id": str(i), "title": t, "text": x}, ensure_ascii=False)
                                               + "\n" for i, (t, x) in enumerate(FR_ARTICLES, 1)))
    code, out = run_grace("kb", "build", "--articles", tmp_path / "articles.jsonl", "--out", tmp_path / "kb")
    assert code == 0 and "language: fr" in out, out
    write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n"
          "q1,Combien de jours de congés payés ai-je par an ?,1,false\n"
          "q2,Mon père est décédé : combien de jours puis-je prendre ?,2,false\n"
          "q3,Quel est le plafond de remboursement d'un repas ?,3,false\n"
          "r1,Combien de jours de télétravail par semaine sont autorisés ?,,true\n"
          "r2,Quelle mutuelle santé est proposée ?,,true\n")


def test_every_template_language_has_both_templates_and_its_refusal_sentence():
    arts = [RetrievedArticle(id="7", title="T", text="x", score=1.0)]
    assert set(TEMPLATE_LANGUAGES) >= {"en", "fr", "de", "es", "pt", "it", "nl", "el"}
    for code in TEMPLATE_LANGUAGES:
        for mode in ("inline", "json"):
            t = load_template(None, mode, code)
            assert t.language == code and t.name == f"grounded-{mode}.v1" + ("" if code == "en" else f".{code}")
            text = "\n".join(m["content"] for m in t.render("Q?", arts))
            assert REFUSALS[code] in text and "[ID: 7]" in text and "{{" not in text


def test_grace_run_on_a_french_kb_asks_in_french_and_score_reads_french_refusals(tmp_path):
    _french_bench(tmp_path)
    board = write(tmp_path / "board.toml", f"""
[[models]]
spec = "scripted:fr-bot"
[models.options]
default = "{REFUSALS['fr']}"
[models.options.responses]
q1 = "Vous avez droit à vingt-cinq jours ouvrés de congés payés par an [ID: 1]."
q2 = "Je ne trouve aucune information sur ce cas dans les articles fournis."
q3 = "Les repas sont remboursés jusqu'à vingt euros [ID: 3]."

[[models]]
spec = "scripted:en-bot"
[models.options]
default = "You get twenty-five working days of paid leave per year, booked two weeks ahead [ID: 1]."

[[models]]
spec = "baseline:top1"
""")
    code, out = run_grace("run", "--kb", tmp_path / "kb", "--gold", tmp_path / "gold.csv", "--config", board,
                          "--out", tmp_path / "run")
    assert code == 0, out
    info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert list(info["templates"]) == ["grounded-inline.v1.fr"]
    scores = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").open(encoding="utf-8")]
    fr = {s["question_id"]: s["outcome"] for s in scores if s["model"] == "scripted:fr-bot"}
    # the exact French sentence (r1, r2) and a French paraphrase (q2) are refusals
    assert fr == {"q1": "correct", "q2": "false_refusal", "q3": "correct", "r1": "correct_refusal",
                  "r2": "correct_refusal"}, fr
    strict = {s["question_id"]: s["strict_outcome"] for s in scores if s["model"] == "scripted:fr-bot"}
    assert strict["r1"] == "correct_refusal" and strict["q2"] != "false_refusal"  # a paraphrase is lenient only
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert report["models"]["scripted:fr-bot"]["other_language_rate"] == 0.0
    assert report["models"]["scripted:en-bot"]["other_language_rate"] == 1.0  # English answers to French questions
    code, out = run_grace("report", tmp_path / "run")
    assert code == 0, out
    assert "| Other language |" in (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")


def test_the_baseline_refuses_in_the_prompts_language(tmp_path):
    _french_bench(tmp_path)
    code, out = run_grace("run", "--kb", tmp_path / "kb", "--gold", tmp_path / "gold.csv", "--model",
                          "baseline:threshold", "--threshold", "1000", "--out", tmp_path / "run")
    assert code == 0, out
    texts = [json.loads(line)["response"] for line in (tmp_path / "run" / "responses.jsonl").open(encoding="utf-8")]
    assert texts and all(REFUSALS["fr"] in t for t in texts)


def test_the_baseline_quotes_the_sentence_that_shares_the_questions_french_words():
    """Read with a-z words and English stop words, "élus" and "pièces" were no words at all and "les", "de" the
    only matches: the baseline quoted whichever sentence was longest."""
    from harness.providers.baseline import best_sentence

    text = ("Les demandes de congés sont posées dans l'outil RH et validées par le responsable hiérarchique direct "
            "dans un délai de cinq jours ouvrés. Les élus du personnel disposent de quinze heures de délégation par "
            "mois. Les pièces justificatives sont conservées dix ans.")
    question = "Quelle délégation pour un élu ?"
    assert best_sentence(question, text, "fr").startswith("Les élus du personnel")
    assert best_sentence(question, text, "en").startswith("Les demandes de congés")  # what it quoted before


# --- refusal detection in each template language -------------------------------------------------------------

PARAPHRASES = {
    "fr": ["Je ne peux pas répondre à cette question avec les articles fournis.",
           "Les articles fournis ne mentionnent pas le télétravail.",
           "Aucun des articles ne répond à votre question.",
           "Je ne trouve aucune information sur la mutuelle dans ces documents."],
    "de": ["Ich kann diese Frage anhand der Artikel nicht beantworten.",
           "Die bereitgestellten Artikel enthalten keine Angaben zum Homeoffice.",
           "Keiner der Artikel behandelt dieses Thema.",
           "Ich habe nicht genug Informationen, um das zu sagen."],
    "es": ["No puedo responder a esta pregunta con los artículos proporcionados.",
           "Los artículos proporcionados no mencionan el teletrabajo.",
           "Ninguno de los artículos responde a tu pregunta.",
           "No encuentro ninguna información sobre el seguro médico."],
    "pt": ["Não consigo responder a esta pergunta com os artigos fornecidos.",
           "Os artigos fornecidos não mencionam o teletrabalho.",
           "Nenhum dos artigos responde à sua pergunta.",
           "Não encontrei nenhuma informação sobre o seguro de saúde."],
    "it": ["Non posso rispondere a questa domanda con gli articoli forniti.",
           "Gli articoli forniti non menzionano il lavoro da remoto.",
           "Nessuno degli articoli risponde alla tua domanda.",
           "Non ho trovato alcuna informazione sull'assicurazione sanitaria."],
    "nl": ["Ik kan deze vraag niet beantwoorden met de gegeven artikelen.",
           "De verstrekte artikelen bevatten geen informatie over thuiswerken.",
           "Geen van de artikelen beantwoordt je vraag.",
           "Ik heb onvoldoende informatie om dat te zeggen."],
    "el": ["Δεν μπορώ να απαντήσω σε αυτή την ερώτηση με τα παρεχόμενα άρθρα.",
           "Τα παρεχόμενα άρθρα δεν αναφέρουν την τηλεργασία.",
           "Κανένα από τα άρθρα δεν απαντά στην ερώτησή σας.",
           "Δεν βρήκα καμία πληροφορία για την ασφάλιση υγείας."],
}
TRANSLATED = json.loads((ROOT / "tests" / "data" / "translated_answers.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("code", sorted(PARAPHRASES))
def test_the_exact_sentence_and_paraphrases_are_refusals_in_each_language(code):
    sentence = REFUSALS[code]
    assert is_strict_refusal(sentence) and is_refusal(sentence)
    assert is_strict_refusal(json.dumps({"answer": sentence, "citation": None}, ensure_ascii=False))
    assert is_refusal(sentence.replace("'", "\u2019"))
    assert len(PARAPHRASES[code]) >= 3
    for text in PARAPHRASES[code]:
        assert is_refusal(text), text
        assert not is_strict_refusal(text), text


@pytest.mark.parametrize("code", sorted(PARAPHRASES))
def test_no_translated_sample_answer_reads_as_a_refusal(code):
    answers = TRANSLATED[code]
    assert len(answers) == 30
    for qid, text in answers.items():
        for reply in (text, f"{text} [ID: 12]", json.dumps({"answer": text, "citation": "12"}, ensure_ascii=False)):
            assert not is_refusal(reply, cites=True) and not is_refusal(reply), (qid, reply)


@pytest.mark.parametrize("code", sorted(PARAPHRASES))
def test_translated_answers_are_read_in_their_own_language_and_not_in_english(code):
    from harness.scoring.answer_language import OTHER, SAME, AnswerLanguage

    check = AnswerLanguage().check
    for qid, text in TRANSLATED[code].items():
        assert check(f"{text} [ID: 12]", code) == SAME, (qid, text)
        assert check(text, "en") == OTHER, (qid, text)
