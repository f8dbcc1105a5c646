"""With no ``--template``, the spot-check judge (claims and quality), the labeler of ``grace annotations suggest`` and
the generator and labeler of ``grace gold generate`` ask in the KB's language, and their outputs name the template
they used; ``--template`` wins; an English KB is asked in English. The real commands, the real SDK and the fake API
server, which records every request: the assertions read the prompts that were actually sent."""

from __future__ import annotations

import csv
import json
import re

import pytest

from annotations.generator_prompt import load_generator_template
from annotations.labeler import load_labeler_template
from annotations.suggestions import read_suggestions
from harness.spotcheck.claims import load_claims_template
from harness.spotcheck.judge_prompt import load_judge_template
from harness.spotcheck.quality import load_quality_template
from harness.testing import FakeAPIServer, prompt_text
from tests.annotations.test_labeler import ARTICLES as EN_ARTICLES
from tests.conftest import run_grace, write
from tests.harness.prompts.test_language_prompts import FR_ARTICLES
from tests.harness.spotcheck.test_spotcheck_claims import score_row

MODEL = "openai:gpt-4o-mini"
ARTICLES = {"fr": [{"id": str(i), "title": t, "text": x} for i, (t, x) in enumerate(FR_ARTICLES, 1)],
            "en": EN_ARTICLES}
ANSWERS = {  # question_id -> (question, answer citing article 1 or 3)
    "fr": {"q1": ("Combien de jours de congés payés ai-je par an ?",
                  "Vous avez vingt-cinq jours ouvrés de congés payés par an [ID: 1]."),
           "q3": ("Quel est le plafond d'un repas ?", "Les repas sont remboursés jusqu'à vingt euros [ID: 3].")},
    "en": {"q1": ("How many sick days do I get?", "You get ten days of paid sick leave per year [ID: 1]."),
           "q3": ("How early do I book flights?", "Book flights fourteen days before departure [ID: 3].")},
}


def responder(body):
    """Each prompt answered by its shape (the tags and JSON keys every translation keeps), whatever its language."""
    text = prompt_text(body)
    if "<gold>" in text:  # answer quality
        return json.dumps({"answer_refuses": False, "relevancy_justification": "", "relevancy": 5,
                           "completeness_justification": "", "completeness": 5, "faithfulness_justification": "",
                           "faithfulness": 5, "usefulness_justification": "", "usefulness": None})
    if "<answer>" in text:  # claims: one claim per segment
        segs = re.findall(r"^\[(\d+)\] (.*?)  \(", text, re.M)  # "(cites 1)", "(cite 1)": the prompt's language
        return json.dumps({"claims": [{"segment": int(n), "claim": s} for n, s in segs]})
    if "<claims>" in text:  # claims: every claim supported
        n = len(re.findall(r"^\[\d+\] ", text.split("<claims>")[1], re.M))
        return json.dumps({"verdicts": [{"claim": i, "explanation": "ok", "evidence": "", "verdict": "supported"}
                                        for i in range(1, n + 1)]})
    if "<segment>" in text:  # --mode segments
        return json.dumps({"explanation": "ok", "supported": True})
    if "<titles>" in text:  # generator: questions no article answers
        return json.dumps({"questions": [{"question": "Quelle mutuelle santé est proposée ?", "topic": "mutuelle"}]})
    if "<article>" in text:  # generator: questions an article answers, in no words of its own (no copy)
        aid = re.search(r"\[ID: (\w+)\]", text).group(1)
        return json.dumps({"questions": [{"question": f"Question {i} du personnel, fiche {aid} ?", "answer": "x"}
                                         for i in (1, 2)]})
    # the labeler: every article shown answers (so a generated question's own article is always among them)
    return json.dumps({"reason": "r", "article_ids": re.findall(r"\[ID: (\w+)\]", text), "none": False})


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        yield server


def build_kb(root, language):
    """A KB built by ``grace kb build`` with ``--language``, as a user would; plus a scored run and its questions."""
    arts = write(root / "articles.jsonl", "".join(json.dumps(a, ensure_ascii=False) + "\n"
                                                  for a in ARTICLES[language]))
    code, out = run_grace("kb", "build", "--articles", arts, "--out", root / "kb", "--language", language)
    assert code == 0 and f"language: {language}" in out, out
    answers = ANSWERS[language]
    write(root / "run" / "responses.jsonl", "".join(json.dumps(
        {"question_id": q, "model": "m", "repeat": 0, "response": a, "error": None}, ensure_ascii=False) + "\n"
        for q, (_, a) in answers.items()))
    write(root / "run" / "scores.jsonl", "".join(json.dumps(score_row(q, "correct", [q[1:]], [q[1:]], [q[1:]])) + "\n"
                                                 for q in answers))
    write(root / "questions.csv", "question_id,question,expected_citations,must_refuse\n" + "".join(
        f'{q},"{t}",{q[1:]},false\n' for q, (t, _) in answers.items()))
    return root / "kb"


def sent(srv, marker):
    """The prompts sent that hold ``marker``."""
    return [prompt_text(r.body) for r in srv.requests if marker in prompt_text(r.body)]


@pytest.mark.parametrize("language, extra, claims, quality", [
    ("fr", [], "claims.v1.fr", "quality.v1.fr"),
    ("fr", ["--template", "claims.v1"], "claims.v1", "quality.v1.fr"),  # --template wins; quality follows the KB
    ("en", [], "claims.v1", "quality.v1"),
])
def test_spotcheck_asks_and_records_the_kb_languages_claims_and_quality_templates(tmp_path, srv, language, extra,
                                                                                  claims, quality):
    kb = build_kb(tmp_path, language)
    code, out = run_grace("spotcheck", "run", tmp_path / "run", "--kb", kb, "--judge", "openai:judge-mini", "--quality",
                          "--gold", tmp_path / "questions.csv", "--max-attempts", "1", "--bootstrap", "100", *extra)
    assert code == 0, out
    ct, qt = load_claims_template(claims), load_quality_template(quality)
    extract, verify, graded = sent(srv, "<answer>\n[1]"), sent(srv, "<claims>"), sent(srv, "<gold>")
    assert (len(extract), len(verify), len(graded), len(srv.requests)) == (2, 2, 2, 6)
    assert all(p.startswith(ct.sections["extract_system"].strip()) for p in extract)
    assert all(p.startswith(ct.sections["verify_system"].strip()) for p in verify)
    assert all(p.startswith(qt.sections["system"].strip()) for p in graded)
    spot = json.loads((tmp_path / "run" / "spotcheck.json").read_text(encoding="utf-8"))
    assert (spot["judge"]["template"], spot["judge"]["template_hash"]) == (claims, ct.sha256)
    assert (spot["quality"]["template"], spot["quality"]["template_hash"]) == (quality, qt.sha256)
    rows = [json.loads(x) for x in (tmp_path / "run" / "spotcheck" / "claims.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["template"] for r in rows} == {claims} and {r["verdict"] for r in rows} == {"supported"}
    graded_rows = [json.loads(x) for x in (tmp_path / "run" / "spotcheck" / "quality.jsonl").read_text().splitlines()]
    assert {r["template"] for r in graded_rows} == {quality}
    assert f"template {claims};" in out


def test_spotcheck_in_segments_mode_asks_with_the_kb_languages_judge_template(tmp_path, srv):
    kb = build_kb(tmp_path, "fr")
    code, out = run_grace("spotcheck", "run", tmp_path / "run", "--kb", kb, "--judge", "openai:judge-mini",
                          "--mode", "segments", "--max-attempts", "1", "--bootstrap", "100")
    assert code == 0, out
    t = load_judge_template("judge.v1.fr")
    prompts = [prompt_text(r.body) for r in srv.requests]
    assert len(prompts) == 2 and all(p.startswith(t.sections["system"].strip()) and "Segment à vérifier" in p
                                     for p in prompts)
    spot = json.loads((tmp_path / "run" / "spotcheck.json").read_text(encoding="utf-8"))
    rows = [json.loads(x) for x in (tmp_path / "run" / "spotcheck" / "judgements.jsonl").read_text().splitlines()]
    assert spot["judge"]["template"] == "judge.v1.fr" and {r["template"] for r in rows} == {"judge.v1.fr"}


@pytest.mark.parametrize("language, extra, template", [
    ("fr", [], "labeler.v1.fr"),
    ("fr", ["--template", "labeler.v1"], "labeler.v1"),
    ("en", [], "labeler.v1"),
])
def test_suggest_asks_the_labeler_in_the_kb_language_and_records_its_template(tmp_path, srv, language, extra, template):
    kb = build_kb(tmp_path, language)
    code, out = run_grace("annotations", "suggest", tmp_path / "questions.csv", "--kb", kb, "--labeler", MODEL,
                          "--out", tmp_path / "s.csv", "-k", "2", *extra)
    assert code == 0, out
    t = load_labeler_template(template)
    prompts = [prompt_text(r.body) for r in srv.requests]
    assert len(prompts) == 2 and all(p.startswith(t.system.strip()) for p in prompts)
    rows = read_suggestions(tmp_path / "s.csv")
    assert {s.template for s in rows.values()} == {template} and all(s.usable for s in rows.values())


def test_suggest_refuses_a_template_without_a_labeler(tmp_path):
    write(tmp_path / "q.csv", "question_id,question\nq1,x\n")
    code, out = run_grace("annotations", "suggest", tmp_path / "q.csv", "--kb", tmp_path / "kb", "--run", tmp_path,
                          "--template", "labeler.v1", "--out", tmp_path / "s.csv")
    assert code == 2 and "--template is the labeler's prompt" in out


@pytest.mark.parametrize("language, extra, generator", [
    ("fr", [], "generator.v1.fr"),
    ("fr", ["--template", "generator.v1"], "generator.v1"),  # the generator's template; the labeler's follows the KB
    ("en", [], "generator.v1"),
])
def test_gold_generate_writes_and_checks_in_the_kb_language(tmp_path, srv, language, extra, generator):
    kb = build_kb(tmp_path, language)
    draft = tmp_path / "draft.csv"
    code, out = run_grace("gold", "generate", kb, "--model", MODEL, "--per-article", "2", "--refusals", "1",
                          "--out", draft, "-k", "2", *extra)
    assert code == 0, out
    labeler = "labeler.v1" + ("" if language == "en" else f".{language}")
    gt, lt = load_generator_template(generator), load_labeler_template(labeler)
    n = len(ARTICLES[language])
    written = sent(srv, "<article>") + sent(srv, "<titles>")
    checked = [p for p in (prompt_text(r.body) for r in srv.requests) if p.startswith(lt.system.strip())]
    assert len(written) == n + 1 and all(p.startswith(gt.sections["system"].strip()) for p in written)
    assert len(checked) == 2 * n + 1 and len(srv.requests) == len(written) + len(checked), out
    assert f"prompts {generator} and {labeler}" in out
    rows = list(csv.DictReader(draft.open(encoding="utf-8")))
    assert len(rows) == 2 * n and {r["status"] for r in rows} == {"draft"}  # the refusal question is answerable here
