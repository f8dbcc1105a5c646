"""grace annotate on a French, German or mixed KB: its search box and its highlights read words as retrieval does.

The page's search box (``/api/search``) and the words marked in candidates, search
results and the article view go through the KB's lexical retriever and
:func:`kb_builder.language.term_spans`: Snowball stems and stop words of the KB's
language, each article of a mixed KB in its own.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from annotations.server import AnnotationApp
from annotations.state import AnnotationSession
from kb_builder import language as lang
from kb_builder.loader import load_kb
from tests.conftest import ROOT, run_grace, write

# one article per file; the last sentence keeps each above the splitter's minimum size
MORE = {"fr": "\nPour toute question sur ce point, le service du personnel répond par courriel ou par téléphone, "
              "en précisant le nom du demandeur.\n",
        "de": "\nBei Fragen zu diesem Punkt antwortet die Personalabteilung innerhalb von zwei Arbeitstagen per E-Mail "
              "oder Telefon.\n"}
FR = {
    "conges.md": "# Congé payé\n\nChaque salarié a droit à un congé payé de vingt-cinq jours ouvrés par an. Le congé est "
                 "rémunéré au salaire habituel et se pose dans l'outil RH au moins deux semaines à l'avance.\n",
    "deces.md": "# Absence pour décès\n\nEn cas de décès d'un parent proche, le salarié a droit à trois jours "
                "d'absence, sur simple demande à son responsable.\n",
    "frais.md": "# Repas en déplacement\n\nLes repas pris en déplacement professionnel sont remboursés jusqu'à vingt "
                "euros par repas, sur présentation des justificatifs dans l'outil de notes de frais.\n",
    # an article made of function words: read as English, "les", "de", "la", "des" would find it for every question
    "locaux.md": "# Vie dans les locaux\n\nLes horaires de la société et les consignes de la vie de tous les jours dans "
                 "les locaux de la société sont affichés à l'entrée de chacun des bâtiments. Les badges des salariés "
                 "et des visiteurs sont remis à l'accueil, et les clés des bureaux et des salles de réunion sont à "
                 "demander à la direction des services généraux, qui tient le registre des clés et des badges de la "
                 "société.\n",
    "teletravail.md": "# Télétravail\n\nLe télétravail est possible deux jours par semaine, avec l'accord du "
                      "responsable, depuis le domicile déclaré du salarié.\n",
}
DE = {
    "urlaub.md": "# Jahresurlaub\n\nAlle Beschäftigten haben Anspruch auf dreißig Urlaubstage im Jahr. Der Urlaub wird "
                 "im Personalportal beantragt und von der Führungskraft genehmigt.\n",
    "krank.md": "# Krankmeldung\n\nWer krank ist, meldet sich am ersten Tag bei der Führungskraft und reicht ab dem "
                "dritten Tag eine ärztliche Bescheinigung ein.\n",
    "reise.md": "# Dienstreisen\n\nDienstreisen werden vorab von der Führungskraft freigegeben; die Kosten für Bahn und "
                "Hotel werden nach der Reise über das Spesenportal erstattet.\n",
}


def build(root: Path, files: dict[str, str], code: str) -> Path:
    for name, text in files.items():
        write(root / "src" / name, text + MORE[code])
    status, out = run_grace("kb", "build", root / "src", "--out", root / "kb", "--language", code)
    assert status == 0, out
    return root / "kb"


def marked(card: dict) -> list[str]:
    """The words a card marks, in its title and its passage."""
    pieces = card["title_segments"] + card["snippet"]["segments"]
    return [text.lower() for text, is_match, *_ in pieces if is_match]


def by_title(kb, title: str) -> str:
    return next(a.id for a in kb.articles if a.title == title)


@pytest.fixture
def french(tmp_path):
    kb = load_kb(build(tmp_path, FR, "fr"))
    write(tmp_path / "q.txt", "Comment est rémunéré mon congé ?\n")
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.txt", annotator="ann")
    yield kb, AnnotationApp(session, kb.retriever())
    session.close()


def test_the_cli_search_box_finds_inflected_french_and_ignores_french_stop_words(tmp_path):
    """The real ``grace annotate`` (its search box had an English BM25 of its own beside the KB's bm25f)."""
    kb_dir = build(tmp_path, FR, "fr")
    kb = load_kb(kb_dir)
    write(tmp_path / "q.txt", "Comment est rémunéré mon congé ?\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from harness.cli.app import main; main()", "annotate", str(kb_dir), "-q",
         str(tmp_path / "q.txt"), "-o", str(tmp_path / "gold.csv"), "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        url = next((m.group(1) for line in proc.stdout if (m := re.search(r"open (http://\S+)", line))), None)
        assert url, f"server did not start (exit {proc.poll()})"

        def search(q: str) -> list[dict]:
            with urllib.request.urlopen(url + "api/search?" + urllib.parse.urlencode({"q": q}), timeout=10) as r:
                return json.loads(r.read())["results"]

        # "rémunération" finds the article that says "rémunéré" (English stems them "rémunérat" and "rémunéré")
        assert [c["id"] for c in search("rémunération")] == [by_title(kb, "Congé payé")]
        # the question's stop words find nothing: before, "les", "de", "la" put "Vie dans les locaux" first
        assert search("Quels sont les jours de la semaine de télétravail")[0]["id"] == by_title(kb, "Télétravail")
        # and no article comes back for its function words alone
        assert [c["id"] for c in search("rémunération des congés payés")] == [by_title(kb, "Congé payé")]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_french_highlights_are_stems_and_never_stop_words(french):
    kb, app = french
    (card,) = app.search("rémunération des congés payés")["results"]
    assert set(marked(card)) == {"congé", "payé", "rémunéré"}
    stop = lang.stop_words("fr")
    for q in ("Quels sont les jours de la semaine de télétravail", "Comment est rémunéré mon congé ?"):
        cards = app.search(q)["results"]
        assert cards and not [w for c in cards for w in marked(c) if w in stop], q
    # the question's candidates and the full article, too
    cand = app.question(0)["candidates"][0]
    assert cand["id"] == by_title(kb, "Congé payé") and {"congé", "rémunéré"} <= set(marked(cand))
    art = app.article(by_title(kb, "Congé payé"), "congés payés")
    assert {t.lower() for t, m, _ in art["segments"] if m} == {"congé", "payé"}


def test_german_inflections_are_found_and_marked(tmp_path):
    kb = load_kb(build(tmp_path, DE, "de"))
    write(tmp_path / "q.txt", "Wann brauche ich ärztliche Bescheinigungen?\n")
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.txt", annotator="ann")
    try:
        app = AnnotationApp(session, kb.retriever())
        (card,) = app.search("ärztlichen Bescheinigungen")["results"]  # plural and dative: one stem each
        assert card["id"] == by_title(kb, "Krankmeldung")
        assert set(marked(card)) == {"ärztliche", "bescheinigung"}
        assert not [w for w in marked(app.question(0)["candidates"][0]) if w in lang.stop_words("de")]
    finally:
        session.close()


MIXED = [  # English the majority: a French article must still be read in French, not in the KB's language
    ("Frais > Repas", "Les repas pris en déplacement professionnel sont remboursés jusqu'à vingt euros par repas, sur "
                      "présentation des justificatifs dans l'outil de notes de frais."),
    ("Congés > Congé payé", "Chaque salarié a droit à un congé payé de vingt-cinq jours ouvrés par an, posé dans "
                            "l'outil RH deux semaines à l'avance."),
    ("Congés > Décès", "En cas de décès d'un parent proche, le salarié a droit à trois jours d'absence rémunérés, sur "
                       "simple demande à son responsable."),
    ("Travel > Flights", "Employees book every business flight through the travel portal at least two weeks ahead, "
                         "and economy class is the rule for short trips."),
    ("Travel > Hotels", "Hotels are booked in the same portal; the nightly limit is 150 euros in most cities and 220 "
                        "euros in capitals."),
    ("Travel > Taxis", "Taxis are reimbursed when no public transport runs, with the receipt attached to the expense "
                       "claim."),
    ("Equipment > Laptops", "Every employee receives a laptop on the first day; it is returned to the IT desk when "
                            "leaving the company."),
]


def test_a_mixed_kb_marks_each_article_in_its_own_language(tmp_path):
    rows = "".join(json.dumps({"id": str(i), "title": t, "text": x}, ensure_ascii=False) + "\n"
                   for i, (t, x) in enumerate(MIXED, 1))
    status, out = run_grace("kb", "build", "--articles", write(tmp_path / "a.jsonl", rows), "--out", tmp_path / "kb")
    assert status == 0, out
    kb = load_kb(tmp_path / "kb")
    assert kb.manifest.language == "en" and kb.by_id["1"].language == "fr"
    write(tmp_path / "q.txt", "Is a hotel booking reimbursed?\n")
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.txt", annotator="ann")
    try:
        app = AnnotationApp(session, kb.retriever())
        # French stems "remboursement" and "remboursés" alike; read as English, "remboursés" stays "remboursé"
        (card,) = app.search("remboursement des repas")["results"]
        assert card["id"] == "1" and set(marked(card)) == {"repas", "remboursés"}
        hotels = next(c for c in app.question(0)["candidates"] if c["id"] == "5")
        assert {"hotels", "booked"} <= set(marked(hotels))
    finally:
        session.close()


def test_a_chinese_search_marks_whole_runs_of_matching_bigrams(tmp_path):
    rows = [("休假 > 年假", "员工每年享有二十天带薪年假，需要提前两周在人事系统中申请，并由直属经理批准。"),
            ("休假 > 病假", "员工生病时应在当天通知经理，连续病假超过三天需要提供医生证明。"),
            ("报销 > 餐费", "出差期间的餐费可以报销，每天最多一百元，需要上传发票。")]
    lines = "".join(json.dumps({"id": str(i), "title": t, "text": x}, ensure_ascii=False) + "\n"
                    for i, (t, x) in enumerate(rows, 1))
    status, out = run_grace("kb", "build", "--articles", write(tmp_path / "a.jsonl", lines), "--out", tmp_path / "kb")
    assert status == 0, out
    kb = load_kb(tmp_path / "kb")
    write(tmp_path / "q.txt", "病假需要医生证明吗？\n")
    session = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.txt", annotator="ann")
    try:
        card = AnnotationApp(session, kb.retriever()).search("我需要医生证明吗")["results"][0]
        assert card["id"] == "2" and "医生证明" in marked(card)  # four characters, three bigrams: one mark
    finally:
        session.close()


@pytest.mark.parametrize("code", ["en", "fr", "de", "el", "zh", "tr", "xx"])
def test_term_spans_are_the_retrievers_terms_where_they_stand(code):
    texts = [*FR.values(), *DE.values(), "İstanbul ofisi ΟΔΟΣ Straße", "员工每年享有二十天带薪年假，需要提前 two weeks 申请。",
             "How can I take time off to look after my mother?", "年", ""]
    for text in texts:
        spans = lang.term_spans(text, code)
        assert [t for *_, t in spans] == lang.terms(text, code)
        for a, b, t in spans:  # each term read back from where it stands
            assert lang.terms(text[a:b], code, stop=frozenset()) == [t]


def test_the_review_page_marks_a_french_claim_in_french(tmp_path):
    """``grace annotations review``: the cited article's passage is found by the claim's French stems."""
    from annotations.review_app import ReviewApp
    from annotations.review_session import ReviewSession
    from annotations.review_sources import RunSources

    kb_dir = build(tmp_path, FR, "fr")
    kb = load_kb(kb_dir)
    cited = by_title(kb, "Congé payé")
    write(tmp_path / "gold.csv", "question_id,question,expected_answer,expected_citations,must_refuse,notes\n"
          f"q1,Comment est rémunéré mon congé ?,,{cited},false,\n")
    answer = f"Les congés payés sont rémunérés au salaire habituel [ID: {cited}]."
    write(tmp_path / "models.toml", '[[models]]\nspec = "scripted:writer"\n'
          f"[models.options.responses]\nq1 = {json.dumps(answer, ensure_ascii=False)}\n")
    status, out = run_grace("run", "--kb", kb_dir, "--gold", tmp_path / "gold.csv", "--config",
                            tmp_path / "models.toml", "--out", tmp_path / "run")
    assert status == 0, out
    status, out = run_grace("spotcheck", "run", "--mode", "segments", tmp_path / "run", "--kb", kb_dir, "--judge",
                            "baseline:lexical", "--all")
    assert status == 0, out
    sources = RunSources.find(tmp_path / "run", kb_dir=kb_dir)
    session = ReviewSession.open(sources.review_csv, reviewer="rita")
    try:
        art = ReviewApp(session, sources, kb).article(0, 0, cited)
        marks = {t.lower() for t, m, inside in art["segments"] if m}
        assert marks == {"congé", "payé", "rémunéré", "salaire", "habituel"}  # not "id", nor "les", "au"
    finally:
        session.close()
