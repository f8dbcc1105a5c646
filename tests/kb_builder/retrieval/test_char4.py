"""Character 4-gram retrieval (``char4``), fusions written ``A+B``, and the per-language default retriever.

The measured problem: on French and German handbooks the default ``bm25f`` found fewer held-out questions than
plain ``bm25`` (docs/how-to/languages.md), largely where stems do not meet: German compounds ("Urlaubsantrag" for
"Urlaub beantragen") and inflections Snowball leaves apart. A French or German KB now defaults to ``bm25f+char4``.
"""

from __future__ import annotations

import json

import pytest

import grace as api
from harness.core.errors import GraceError
from kb_builder import language as lang
from kb_builder.retrieval import canonical_embedder, default_embedder
from tests.conftest import run_grace

GERMAN = {
    "urlaub.md": "# Abwesenheit\n\n## Urlaubsantrag\n\nDen Urlaubsantrag stellen Beschäftigte im Personalportal. Die "
                 "Führungskraft genehmigt ihn innerhalb von drei Arbeitstagen, bei Ablehnung mit Begründung.\n",
    "reisen.md": "# Dienstreisen\n\n## Reisekosten\n\nReisekosten werden nach der Rückkehr über das Formular "
                 "abgerechnet. Belege sind innerhalb von sechs Monaten einzureichen, sonst verfällt der Anspruch. Für "
                 "Übernachtungen gilt der Höchstsatz des Reiseziels, Frühstück wird abgezogen.\n",
    "krank.md": "# Krankheit\n\n## Krankmeldung\n\nWer erkrankt, meldet sich vor Dienstbeginn telefonisch bei der "
                "Führungskraft. Ab dem dritten Tag ist eine ärztliche Bescheinigung vorzulegen. "
                "Die Bescheinigung geht direkt an das Personalreferat, nicht an die Führungskraft.\n",
    "arbeitszeit.md": "# Arbeitszeit\n\n## Gleitzeit\n\nDie Kernarbeitszeit liegt zwischen neun und fünfzehn Uhr. "
                      "Überstunden werden auf dem Zeitkonto gutgeschrieben und können abgebummelt werden. Mehr "
                      "als vierzig Stunden Guthaben verfallen am Ende des Quartals.\n",
}
ENGLISH = {
    "leave.md": "# Leave\n\n## Annual leave\n\nRequest annual leave in the HR portal at least two weeks ahead. Your "
                "manager approves it within three working days and says why when a request is declined. Unused days carry "
                "over to the first quarter of the next year, up to five days.\n",
    "travel.md": "# Travel\n\n## Expenses\n\nClaim travel expenses after you return, with receipts, within six "
                 "months of the trip; later claims are not paid. Meals are refunded at the daily rate of the country you "
                 "travel to, less breakfast when the hotel includes it.\n",
}


def _kb(tmp_path, pages: dict[str, str], *extra: str):
    src = tmp_path / "pages"
    src.mkdir()
    for name, text in pages.items():
        (src / name).write_text(text, encoding="utf-8")
    code, out = run_grace("kb", "build", src, "--out", tmp_path / "kb", *extra)
    assert code == 0, out
    return tmp_path / "kb", out


def test_character_grams_meet_where_stems_do_not():
    compound = set(lang.char_ngrams("Urlaubsantrag", "de"))
    phrase = set(lang.char_ngrams("Urlaub beantragen", "de"))
    assert {"urla", "rlau", "laub", "antr", "ntra", "trag"} <= compound & phrase
    assert not set(lang.terms("Urlaubsantrag", "de")) & set(lang.terms("Urlaub beantragen", "de"))
    # accents folded, stop words out, a short word kept whole with its padding
    assert lang.char_ngrams("Ärztliche", "de")[:2] == ["_arz", "arzt"]
    assert lang.char_ngrams("der Tag", "de") == ["_tag", "tag_"]
    assert lang.query_ngrams("Tag Tag Tag", ["de"]) == ["_tag", "tag_"]  # a repeated word counts once


def test_a_german_kb_defaults_to_bm25f_with_character_grams_and_finds_the_compound(tmp_path):
    kb_dir, out = _kb(tmp_path, GERMAN)
    manifest = json.loads((kb_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["language"] == "de" and manifest["embedder"] == "bm25f+char4", manifest
    assert "retriever: bm25f+char4" in out, out
    kb = api.load_kb(kb_dir)
    titles = {a.id: a.title for a in kb.articles}
    assert len(titles) == 4, titles
    question = "Wie kann ich Urlaub beantragen?"
    # the old default finds nothing: no stem of the question is in any article
    old = api.search(kb, question, k=1, embedder="bm25f")
    assert old[0].score == 0.0
    new = api.search(kb, question, k=1)
    assert titles[new[0].id] == "Abwesenheit > Urlaubsantrag", new
    # both lexical indexes were written at build, named by their retriever, and are read back
    index = sorted(p.name.split("-")[0] for p in (kb_dir / "index").glob("*.npz"))
    assert index == ["bm25f", "char4"], index


def test_an_english_kb_keeps_bm25f_and_a_rebuild_keeps_what_the_manifest_names(tmp_path):
    kb_dir, _ = _kb(tmp_path, ENGLISH)
    assert json.loads((kb_dir / "manifest.json").read_text(encoding="utf-8"))["embedder"] == "bm25f"
    assert default_embedder("en") == "bm25f" and default_embedder(None) == "bm25f" and default_embedder("el") == "bm25f"
    assert default_embedder("fr") == default_embedder("de") == "bm25f+char4"
    # a German KB built with bm25f keeps it on a rebuild: its rankings do not move under it
    de = tmp_path / "de"
    de.mkdir()
    kb_de, _ = _kb(de, GERMAN, "--embedder", "bm25f")
    code, out = run_grace("kb", "build", de / "pages", "--out", kb_de)
    assert code == 0, out
    assert json.loads((kb_de / "manifest.json").read_text(encoding="utf-8"))["embedder"] == "bm25f"


def test_fusion_specs_are_canonical_and_bad_ones_are_refused():
    assert canonical_embedder(" bm25f + char4 ") == "bm25f+char4"
    assert canonical_embedder("bm25f+char4+use") == "bm25f+char4+use"
    assert canonical_embedder("lexical+char4") == "bm25+char4"
    for bad in ("bm25f+bm25f", "hybrid:use+char4", "bm25f+nope"):
        with pytest.raises(GraceError):
            canonical_embedder(bad)
    code, out = run_grace("kb", "eval", "missing-kb", "--gold", "missing.csv", "--embedder", "bm25f+bm25f")
    assert code == 2 and "Traceback" not in out


def test_kb_eval_compares_the_fusion_with_its_parts(tmp_path):
    kb_dir, _ = _kb(tmp_path, GERMAN)
    ids = {a.title: a.id for a in api.load_kb(kb_dir).articles}
    gold = tmp_path / "gold.csv"
    gold.write_text("question_id,question,expected_citations,must_refuse\n"
                    f"q1,Wie kann ich Urlaub beantragen?,{ids['Abwesenheit > Urlaubsantrag']},false\n"
                    f"q2,Wann muss ich meine Reisekosten abrechnen?,{ids['Dienstreisen > Reisekosten']},false\n",
                    encoding="utf-8")
    code, out = run_grace("kb", "eval", kb_dir, "--gold", gold, "--embedder", "bm25f", "--embedder", "char4",
                          "--embedder", "bm25f+char4", "--json", tmp_path / "r.json", "-k", "1")
    assert code == 0, out
    rows = {r["retriever"]: r for r in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["retrievers"]}
    assert set(rows) == {"bm25f", "char4", "bm25f+char4"}, rows
    assert rows["bm25f+char4"]["recall"]["1"] == 1.0 and rows["bm25f"]["recall"]["1"] == 0.5, rows
