"""Claim-level citation support for answers citing several sources (issue 39): each cited sentence is supported by
its own citation, only by another article the answer cites, or by none; per citation, whether it supports its
sentence; the figures carry the judge's kappa from the multi-citation meta-eval cases.

The run folder is written directly (as the other spot-check tests do): a ``python:``-style system over the sample
KB that cites by footnote markers and a "Sources:" list (run.json: scoring multi, reads references), beside a GRACE
prompt model. The judge is an OpenAI-compatible model on the fake API server that reads the claims template's
prompts as a careful reader of these hand-made answers would: a sentence is supported by a source that holds it
word for word.
"""

from __future__ import annotations

import json
import re

import pytest

from harness.core.errors import GraceError
from harness.run_folder.report import SpotcheckBlock
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import CitationSettings, ModelEntry, RunConfig, RunGold, RunInfo, RunKb
from harness.run_folder.spotcheck import read_spotcheck
from harness.runner.calls import CallSettings
from harness.spotcheck.citation_support import CASES, SentenceReader, load_citation_cases, run_citation_meta_eval
from harness.spotcheck.claims import load_claims_template
from harness.spotcheck.judge_calls import Judge
from harness.spotcheck.judge_prompt import make_judge
from harness.testing import FakeAPIServer, prompt_text
from kb_builder.loader import load_kb
from tests.conftest import ROOT, run_grace, write

BONUS = ("payroll/pay-and-compensation.html", "Annual performance bonus")


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    """The sample KB (benchmarks/sample), built as a user builds it."""
    out = tmp_path_factory.mktemp("citations") / "kb"
    code, text = run_grace("kb", "build", ROOT / "benchmarks/sample/handbook", "--out", out, "--no-lint")
    assert code == 0, text
    return out


def article(kb, source: str, heading: str):
    [a] = [a for a in kb.articles if a.source == source and a.heading_path and a.heading_path[-1] == heading]
    return a


def plain_sentences(a) -> list[str]:
    """Sentences of an article an answer could copy: no markdown, one line, six words or more."""
    out = []
    for para in a.text.replace("**", "").split("\n"):
        out += [s for s in re.split(r"(?<=[.!?])\s+", para.strip())
                if len(s.split()) >= 6 and s[-1:] == "." and not s.startswith(("-", "*"))]
    return out


def norm(text: str) -> str:
    return " ".join(text.replace("*", "").lower().split()).rstrip(".")


def judge(body):
    """Extraction: each segment one claim. Verification: supported when the source holds the claim word for word."""
    text = prompt_text(body)
    if "<answer>" in text:
        segs = re.findall(r"^\[(\d+)\] (.*?)  \(cites", text, re.M)
        return json.dumps({"claims": [{"segment": int(n), "claim": seg} for n, seg in segs]})
    source = norm(re.search(r"<source>\n(.*?)\n</source>", text, re.S).group(1))
    claims = re.findall(r"^\[(\d+)\] (.*)$", text.split("<claims>")[1], re.M)
    return json.dumps({"verdicts": [
        {"claim": int(n), "explanation": "checked", "evidence": "",
         "verdict": "supported" if norm(c) in source else "unsupported"} for n, c in claims]})


def yes_judge(body):
    """A judge that finds every claim supported: it must get no agreement beyond chance on the cases."""
    text = prompt_text(body)
    if "<answer>" in text:
        return judge(body)
    claims = re.findall(r"^\[(\d+)\] (.*)$", text.split("<claims>")[1], re.M)
    return json.dumps({"verdicts": [{"claim": int(n), "explanation": "", "evidence": "", "verdict": "supported"}
                                    for n, _ in claims]})


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=judge) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def score_row(model, qid, cited, expected):
    return {"schema_version": 2, "question_id": qid, "model": model, "repeat": 0, "cited_ids": cited, "refused": False,
            "outcome": "correct", "extraction": "inline", "strict_cited_ids": cited, "strict_refused": False,
            "strict_outcome": "correct", "must_refuse": False, "expected_citations": expected,
            "retrieved_ids": expected, "expected_retrieved": True, "cost_usd": None, "latency_ms": None,
            "input_tokens": None, "output_tokens": None}


def write_run(root, kb_dir, answers, settings=None):
    """A run folder of the bot's answers (model "bot", run.json: multi/references) and a GRACE model ("gpt")."""
    kb = load_kb(kb_dir)
    bonus = article(kb, *BONUS)
    responses, scores = [], []
    for qid, (text, citations) in answers.items():
        responses.append({"question_id": qid, "model": "bot", "repeat": 0, "response": text, "error": None,
                          **({"citations": citations} if citations is not None else {})})
        scores.append(score_row("bot", qid, [bonus.id], [bonus.id]))
    grace_text = f"{plain_sentences(bonus)[0]} [ID: {bonus.id}]"
    responses.append({"question_id": "q1", "model": "gpt", "repeat": 0, "response": grace_text, "error": None})
    scores.append(score_row("gpt", "q1", [bonus.id], [bonus.id]))
    run = root / "run"
    write(run / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in responses))
    write(run / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in scores))
    info = RunInfo(grace_version="test", started_at="2026-11-28T00:00:00+00:00", status="finished",
                   kb=RunKb(path=str(kb_dir), kb_hash=kb.kb_hash, articles=len(kb.articles)),
                   gold=RunGold(path="gold.csv", hash="0" * 16, questions=len(answers), must_refuse=0),
                   templates={}, config=RunConfig(k=2, repeats=1, concurrency=1, cache=False, read_cache=False,
                                                  max_attempts=1, seed=0, output_mode="inline"),
                   models=[ModelEntry(name="bot", provider="python", model="bot.py:answer",
                                      citations=settings or CitationSettings(scoring="multi", reads="references")),
                           ModelEntry(name="gpt", provider="openai", model="gpt")])
    RunDir(run).write_run_info(info)
    return run


NOWHERE = "https://nowhere.example/other.html"


def answers_over(kb_dir):
    """Three answers by footnotes and a source list (q1, q3) or structured citations (q2), sentences copied from
    the bonus article A and an annual-leave article B, with known labels."""
    kb = load_kb(kb_dir)
    bonus = article(kb, *BONUS)
    leave = article(kb, "time-off/annual-leave.md", "Carrying over unused annual leave")
    a1, a2 = plain_sentences(bonus)[:2]
    b1, b2 = plain_sentences(leave)[:2]
    path_a = "payroll/pay-and-compensation.html#Annual performance bonus"
    path_b = f"{leave.source}#{leave.heading_path[-1]}"
    answers = {
        # own, own, other (B's sentence cited to A), none (an invented figure)
        "q1": (f"{a1}[1] {b1[:-1]} [2].\n\n{b2[:-1]} [1]. The bonus is paid 99 times a year [1].\n\nSources:\n"
               f"[1] {path_a}\n[2] https://handbook.example.com/{path_b.replace(' ', '%20')}", None),
        # structured citations: the second resolves to nothing (unresolved), its sentence backed by no cited article
        "q2": (f"{a2[:-1]} [1]. {b1[:-1]} [2].", [path_a, "https://nowhere.example/page.html"]),
        # a list entry that resolves to nothing: unresolved, its sentence backed by the other cited article (other)
        "q3": (f"{a1[:-1]} [1]. {a2[:-1]} [2].\n\nSources:\n1. {path_a}\n2. {NOWHERE}", None),
    }
    return answers, bonus, leave


def spot(run, kb_dir, *extra):
    code, out = run_grace("spotcheck", "run", run, "--kb", kb_dir, "--judge", "openai:judge-mini", "--all",
                          "--max-attempts", "1", "--bootstrap", "200", *extra)
    assert code == 0, out
    return json.loads((run / "spotcheck.json").read_text()), out


def sentence_rows(run):
    rows = [json.loads(x) for x in (run / "spotcheck" / "citation_support.jsonl").read_text().splitlines()]
    return {(r["question_id"], r["sentence_index"]): r for r in rows}


def test_each_cited_sentence_is_labelled_own_other_or_none_with_figures_and_kappa(tmp_path, kb_dir, srv):
    answers, bonus, leave = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    spotfile, out = spot(run, kb_dir)
    rows = sentence_rows(run)
    labels = {k: r["label"] for k, r in rows.items()}
    assert labels == {("q1", 0): "own", ("q1", 1): "own", ("q1", 2): "other", ("q1", 3): "none",
                      ("q2", 0): "own", ("q2", 1): "none", ("q3", 0): "own", ("q3", 1): "other"}
    # how each citation resolved and whether it supports its sentence
    assert rows[("q1", 1)]["citations"] == [{"reference": f"https://handbook.example.com/{leave.source}#"
                                             f"{leave.heading_path[-1].replace(' ', '%20')}",
                                             "articles": [leave.id], "how": "source+heading", "note": "",
                                             "status": "supports"}]
    assert rows[("q1", 2)]["citations"][0]["status"] == "does_not_support"
    assert rows[("q1", 2)]["supported_by"] == [leave.id]  # backed by the answer's other article: misattributed
    assert rows[("q2", 1)]["citations"][0]["status"] == "unresolved"
    assert rows[("q2", 1)]["citations"][0]["articles"] == [] and rows[("q2", 1)]["verdicts"] == {
        bonus.id: {"verdict": "unsupported", "explanation": "checked", "evidence": ""}}
    assert rows[("q3", 1)]["citations"][0]["reference"] == NOWHERE
    assert rows[("q3", 1)]["citations"][0]["status"] == "unresolved"

    cs = spotfile["models"]["bot"]["citation_support"]
    # 8 sentences: own 4, other 2, none 2; 8 citations, 4 supporting, 2 unresolved
    assert (cs["n"], cs["n_incomplete"], cs["n_sentences"], cs["n_citations"]) == (3, 0, 8, 8)
    assert (cs["n_own"], cs["n_other"], cs["n_none"]) == (4, 2, 2)
    assert (cs["n_supporting_citations"], cs["n_unresolved_citations"]) == (4, 2)
    assert cs["support_recall"] == 0.5 and cs["citation_precision"] == 0.5
    assert cs["misattributed_rate"] == 0.25 and cs["unsupported_rate"] == 0.25
    assert cs["support_recall_ci95"] is None and "too few for an interval" in cs["display"]["support_recall"]
    # the judge's kappa on the built-in multi-citation cases: this judge reads them all right
    cases = load_citation_cases()
    assert cs["judge_kappa"] == 1.0 and cs["judge_kappa_n"] == sum(len(c.sentences) for c in cases)
    check = spotfile["citation_support"]
    assert check["models"] == ["bot"] and check["path"] == "spotcheck/citation_support.jsonl" and check["n_rows"] == 8
    assert check["meta_eval"]["agreement"] == 1.0 and check["template"] == "claims.v1"
    # the claims pass reads the bot's markers the same way: [1] is its source list's first entry, never article 1
    claims = [json.loads(x) for x in (run / "spotcheck" / "claims.jsonl").read_text().splitlines()]
    bot_claims = [r for r in claims if r.get("kind") == "claim" and r["model"] == "bot"]
    assert {tuple(r["citations"]) for r in bot_claims} == {(bonus.id,), (leave.id,), ()}
    assert spotfile["models"]["bot"]["faithfulness"] == pytest.approx(5 / 8)  # 0.0 when [1] was read as article 1
    # a GRACE prompt model in the same run: no citation support, its figures as before
    assert "citation_support" not in spotfile["models"]["gpt"]
    # the report's spot-check block carries the figures; the terminal prints them
    block = SpotcheckBlock.from_spotcheck(read_spotcheck(run / "spotcheck.json")).model_dump(mode="json")
    assert block["models"]["bot"]["citation_support"] == cs and "citation_support" not in block["models"]["gpt"]
    assert "Citation support" in out and "50.0% (n=3, too few for an interval)" in out, out
    # asking again costs nothing: every call is cached
    srv.clear()
    again, _ = spot(run, kb_dir)
    assert srv.requests == [] and again["models"]["bot"]["citation_support"] == cs


def test_a_judge_calling_everything_supported_has_no_kappa_and_finds_nothing_misattributed(tmp_path, kb_dir, srv):
    srv.responder = yes_judge
    answers, _, _ = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    spotfile, _ = spot(run, kb_dir)
    cs = spotfile["models"]["bot"]["citation_support"]
    # every sentence with a resolved citation is "own" now; the two citing nothing resolvable are "other"
    assert (cs["n_own"], cs["n_other"], cs["n_none"]) == (6, 2, 0)
    assert cs["judge_kappa"] == 0.0  # always "own": agreement no better than chance on the known cases
    meta = spotfile["citation_support"]["meta_eval"]
    assert meta["per_label"]["none"]["passed"] == 0 and meta["agreement"] < 1


def test_a_run_of_grace_prompts_only_has_no_citation_support_anywhere(tmp_path, kb_dir, srv):
    answers, _, _ = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    info = RunDir(run).read_run_info()
    info.models[0].citations = None  # the bot read as a GRACE prompt: no settings
    RunDir(run).write_run_info(info)
    spotfile, out = spot(run, kb_dir)
    assert "citation_support" not in spotfile and all("citation_support" not in v for v in spotfile["models"].values())
    assert not (run / "spotcheck" / "citation_support.jsonl").exists() and "Citation support" not in out
    assert not any("claims:verify:citations" in json.dumps(r.body) or "citations: meta" in json.dumps(r.body)
                   for r in srv.requests)
    assert "citation support" not in spotfile["notes"].lower()


def test_a_bad_mapping_in_run_json_is_a_clear_error(tmp_path, kb_dir, srv):
    answers, _, _ = answers_over(kb_dir)
    mapping = write(tmp_path / "map.csv", "their_id,article_id\nchunk-1,99999\n")
    run = write_run(tmp_path, kb_dir, answers, CitationSettings(scoring="multi", reads="references", map=str(mapping)))
    code, out = run_grace("spotcheck", "run", run, "--kb", kb_dir, "--judge", "openai:judge-mini", "--all")
    assert code != 0 and "map.csv:2" in out and "not in the KB" in out and "Traceback" not in out


def test_the_reading_by_kb_id_and_by_structured_citations(kb_dir):
    kb = load_kb(kb_dir)
    bonus = article(kb, *BONUS)
    by_id = SentenceReader(kb.articles, reads="ids")
    got = by_id.sentences(f"Bonus is 10% [ID: {bonus.id}]. Leave is 25 days [ID: 99999].")
    assert [(s.text, [(c.reference, c.articles) for c in s.citations]) for s in got] == [
        ("Bonus is 10%.", [(bonus.id, (bonus.id,))]), ("Leave is 25 days.", [("99999", ())])]
    refs = SentenceReader(kb.articles)
    # a structured citation that is a KB ID is that article; a marker number never is
    [s] = refs.sentences("The bonus is 10% [1].", [bonus.id])
    assert s.citations[0].articles == (bonus.id,) and s.citations[0].how == "id"
    # a marker with nothing behind it cites nothing (the score counts it as a marker problem), never article 33
    assert refs.sentences(f"The bonus is 10% [{bonus.id}].") == []
    # GRACE's canonical [ID: x] in an answer read as references is that article, as the scorer reads it
    s, _ = refs.sentences(f"The bonus is 10% of base [ID: {bonus.id}]. See the payroll page [1].\n\nSources:\n[1] nowhere")
    assert (s.text, s.articles, s.citations[0].how) == ("The bonus is 10% of base.", (bonus.id,), "id")
    assert [c.reference for s in refs.sentences(f"Bonus 10% [ID: {bonus.id}]. Pay [1].\n\nSources:\n[1] nowhere")
            for c in s.citations] == [bonus.id, "nowhere"]
    # no marker: the citations cover the whole answer
    [s] = refs.sentences("The bonus is 10%. It is paid in March.", [bonus.source + "#" + bonus.heading_path[-1]])
    assert s.text == "The bonus is 10%. It is paid in March." and s.articles == (bonus.id,)
    assert refs.sentences("No citation at all.") == []


def test_citations_after_a_sentence_belong_to_it_and_a_bare_citation_is_no_claim(kb_dir):
    """Issue 46: "… notice. (see [About PPL](url))" was read as citing the next sentence ("(see ) Next ..."), the
    closing "[ID: 6]." of a GRACE answer was a claim of its own, and a one-sentence answer kept its marker in the
    claim ("… salary [1]." judged with the word "1")."""
    kb = load_kb(kb_dir)
    bonus, leave = article(kb, *BONUS), article(kb, "time-off/annual-leave.md", "Carrying over unused annual leave")
    a, b = plain_sentences(bonus)[0], plain_sentences(leave)[0]
    url_a = "https://handbook.example.com/payroll/pay-and-compensation.html#Annual%20performance%20bonus"
    url_b = f"https://handbook.example.com/{leave.source}#{leave.heading_path[-1].replace(' ', '%20')}"
    refs = SentenceReader(kb.articles)
    for text in (f"{a} (see [Bonus]({url_a})) {b} (see [Leave]({url_b}))",
                 f"{a} See [Bonus]({url_a}). {b} See [Leave]({url_b}).",
                 f"{a} [ID: {bonus.id}] {b} [ID: {leave.id}]\n\n[ID: {leave.id}].",
                 f"{a[:-1]} [ID: {bonus.id}]. {b[:-1]} [ID: {leave.id}].\n\n[ID: {leave.id}]."):
        for got in (refs.sentences(text), refs.segments(text)):
            assert [(x.text if hasattr(x, "articles") else x.claim, tuple(getattr(x, "articles", x.citations)))
                    for x in got] == [(a, (bonus.id,)), (b, (leave.id,))], text
    # a closing citation of another article cites the sentence before it too; nothing of it is a claim
    got = refs.segments(f"{a} [ID: {bonus.id}]\n\n[ID: {leave.id}].")
    assert [(x.claim, x.citations) for x in got] == [(a, (bonus.id, leave.id))]
    # one sentence, one footnote: the claim is the sentence, without its marker
    [seg] = refs.segments(f"{a[:-1]} [1].\n\nSources:\n[1] {url_a}")
    assert (seg.claim, seg.citations) == (a, (bonus.id,))
    # text and a bare citation between cited sentences: the text is an uncited claim, the citation none
    got = refs.segments(f"{a} [ID: {bonus.id}] Enjoy it. [ID: {bonus.id}] {b} [ID: {leave.id}]")
    assert [(x.claim, x.citations) for x in got] == [(a, (bonus.id,)), ("Enjoy it.", (bonus.id,)), (b, (leave.id,))]


def test_the_multi_citation_cases_are_built_from_the_sample_and_bad_ones_are_named(tmp_path, kb_dir):
    kb = load_kb(kb_dir)
    cases = load_citation_cases()
    assert len(cases) >= 10
    labels = [x for c in cases for x in c.expected]
    assert {labels.count(x) > 0 for x in ("own", "other", "none")} == {True}
    texts = {a.id: a.text for a in kb.articles}
    for c in cases:  # the articles are the sample KB's, as built today
        for a in c.articles:
            assert texts[a.id] == a.text, (c.id, a.id)
    assert CASES.name == "citation_cases.jsonl" and CASES.parent.name == "spotcheck"
    bad = write(tmp_path / "bad.jsonl", json.dumps({"id": "x", "articles": [{"id": "1", "title": "", "text": "t"}],
                                                    "sentences": [{"text": "s", "cites": ["2"], "expected": "own"}]}) + "\n")
    with pytest.raises(GraceError, match=r"bad.jsonl:1: a case needs id, articles"):
        load_citation_cases(bad)


def test_meta_eval_reports_the_multi_citation_cases_with_kappa(tmp_path, srv):
    out = tmp_path / "meta.json"
    code, text = run_grace("spotcheck", "meta-eval", "--judge", "openai:judge-mini", "--no-quality", "--out", out,
                           "--max-attempts", "1")
    assert code == 0, text
    result = json.loads(out.read_text())["citations"]
    assert result["kappa"] == 1.0 and result["n"] == result["sentences"] and result["failures"] == []
    assert result["template"] == "claims.v1" and "Multi-citation meta-eval" in text
    code, text = run_grace("spotcheck", "meta-eval", "--judge", "openai:judge-mini", "--no-quality", "--no-citations",
                           "--out", tmp_path / "m2.json", "--max-attempts", "1")
    assert code == 0 and "citations" not in json.loads((tmp_path / "m2.json").read_text())



def test_dry_run_counts_the_support_calls_exactly(tmp_path, kb_dir, srv, monkeypatch):
    answers, _, _ = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    monkeypatch.delenv("OPENAI_API_KEY")  # a dry run needs no key
    code, out = run_grace("spotcheck", "run", run, "--kb", kb_dir, "--judge", "openai:judge-mini", "--all", "--dry-run")
    assert code == 0, out
    assert srv.requests == [] and not (run / "spotcheck.json").exists()
    support = [line for line in out.splitlines() if "citations: checking" in line]
    meta = [line for line in out.splitlines() if "citations: meta-eval" in line]
    # q1 cites two articles, q2 and q3 one each (their other references resolve to nothing); two per case
    assert re.search(r"│\s*4\s*│\s*0\s*│", support[0]), out
    assert re.search(rf"│\s*{2 * len(load_citation_cases())}\s*│\s*0\s*│", meta[0]), out


def test_the_answers_as_written_are_read_into_their_sentences_or_counted_as_misread(tmp_path, srv):
    """The meta-eval's answers as written (footnotes, links after the sentence, [ID: x] closing the answer) are read
    before they are judged; a reading that does not give the sentences and citations written is a miss."""
    cases = load_citation_cases()
    written = [c for c in cases if c.answer is not None]
    assert len(written) >= 4 and {c.reads for c in written} == {"references", "ids"}
    assert any("(see [" in c.answer for c in written) and any("\n\n[ID: " in c.answer for c in written)
    for c in written:  # the reading gives back the sentences written, with their citations
        assert [(s.text, sorted(s.articles)) for s in c.read()] == [(s.text, sorted(s.articles)) for s in c.sentences]
    line = json.loads(CASES.read_text(encoding="utf-8").splitlines()[cases.index(written[0])])
    line["sentences"] = line["sentences"][:1] + line["sentences"][2:]  # one sentence fewer than the answer has
    path = write(tmp_path / "cases.jsonl", json.dumps(line) + "\n")
    srv.clear()
    judge = Judge(*make_judge("openai:judge-mini"), load_claims_template())
    result = run_citation_meta_eval(judge, judge.template, load_citation_cases(path), CallSettings(max_attempts=1))
    assert result["misread_cases"] == 1 and result["written_cases"] == 1 and srv.requests == []
    [miss] = result["failures"]
    assert miss["judge"] == "misread" and "read as" in miss["reading"]
    assert result["n"] == len(line["sentences"]) and result["agreement"] == 0.0


def test_the_word_overlap_judge_misses_a_swapped_entity_in_the_citation_cases(tmp_path):
    """The cases tell judges apart: a word-overlap judge finds every word of "In Portugal ... T4" (the article says
    Canada) and calls it supported; its kappa is below 1."""
    out = tmp_path / "meta.json"
    code, text = run_grace("spotcheck", "meta-eval", "--judge", "baseline:lexical", "--no-quality", "--out", out)
    assert code == 0, text
    result = json.loads(out.read_text())["citations"]
    assert result["kappa"] is not None and 0.5 < result["kappa"] < 1
    assert any(f["expected"] == "none" and f["judge"] == "own" for f in result["failures"])


def test_an_unreadable_support_reply_leaves_its_answer_out_counted_and_is_asked_again_next_time(tmp_path, kb_dir, srv):
    def garbled(body):  # q1's support calls (its four cited sentences, the invented one among them) get prose
        text = prompt_text(body)
        if "<claims>" in text and "99 times" in text and len(re.findall(r"^\[\d+\] ", text.split("<claims>")[1],
                                                                           re.M)) == 4:
            return "I think they are mostly fine."
        return judge(body)

    srv.responder = garbled
    answers, _, _ = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    spotfile, _ = spot(run, kb_dir)
    cs = spotfile["models"]["bot"]["citation_support"]
    assert (cs["n"], cs["n_incomplete"], cs["n_sentences"]) == (2, 1, 4)  # q2 and q3 only
    rows = sentence_rows(run)
    assert rows[("q1", 0)]["label"] is None and "no readable verdicts" in rows[("q1", 0)]["error"]
    assert rows[("q1", 0)]["citations"][0]["status"] is None
    assert any("left out of the citation support figures" in w for w in spotfile["warnings"])
    srv.responder = judge
    again, _ = spot(run, kb_dir)
    assert again["models"]["bot"]["citation_support"]["n"] == 3  # the unreadable replies were not cached


def test_segments_mode_reads_the_markers_the_same_way_and_checks_support_too(tmp_path, kb_dir, srv):
    def either(body):  # segments mode asks {"supported": true|false} per segment against its cited article(s)
        text = prompt_text(body)
        if "<claims>" in text or "<answer>" in text:
            return judge(body)
        m = re.search(r"<source>\n(.*?)\n</source>", text, re.S)
        seg = re.search(r"<segment>\n?(.*?)\n?</segment>", text, re.S)
        ok = bool(m and seg and norm(seg.group(1)) in norm(m.group(1)))
        return json.dumps({"explanation": "checked", "supported": ok})

    srv.responder = either
    answers, bonus, leave = answers_over(kb_dir)
    run = write_run(tmp_path, kb_dir, answers)
    spotfile, _ = spot(run, kb_dir, "--mode", "segments")
    rows = [json.loads(x) for x in (run / "spotcheck" / "judgements.jsonl").read_text().splitlines()]
    cited = {tuple(r["citations"]) for r in rows if r["model"] == "bot" and r["pass"] == "cited"}
    assert cited == {(bonus.id,), (leave.id,)}  # never article "1", "2" or "7"
    cs = spotfile["models"]["bot"]["citation_support"]
    assert (cs["n_own"], cs["n_other"], cs["n_none"]) == (4, 2, 2)
