"""Spot-check building blocks: segmentation, quotes, the lexical judge, verdict parsing, sampling, metrics, two passes."""

from __future__ import annotations

import json
import random
import re

import pytest

from harness.core.errors import GraceError
from harness.spotcheck.inputs import Hit
from harness.spotcheck.judge_calls import Judge, JudgeSettings
from harness.spotcheck.judge_prompt import (
    STRICT_INSTRUCTION,
    load_judge_template,
    make_judge,
    parse_verdict,
    strict_messages,
)
from harness.spotcheck.lexical_judge import lexical_verdict
from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI, AnswerResult, figure, model_metrics
from harness.spotcheck.passes import judge_hits, load_done
from harness.spotcheck.quotes import find_quotes, missing_quotes, quote_in
from harness.spotcheck.sampling import allocate, sample_hits
from harness.spotcheck.segmentation import answer_body, paragraphs, segment_answer
from kb_builder.loader import load_kb
from tests.conftest import write

IDS = {"1", "2", "3", "12", "17"}


def cites(segments):
    return [(s.claim, s.citations) for s in segments]


# --- segmentation -------------------------------------------------------------------------------------------------

def test_headers_are_dropped_and_paragraphs_split_at_each_citation():
    text = ("# Paid time off\n\n"
            "**Lisbon office**\n"
            "You get 25 days [ID: 1]. Up to 5 days carry over [ID: 1].\n\n"
            "Toronto\n=======\n"
            "Toronto staff start at 20 days [ID: 2].\n\n"
            "Hope this helps!")
    segs = segment_answer(text, IDS)
    assert cites(segs) == [
        ("You get 25 days.", ("1",)),
        ("Up to 5 days carry over.", ("1",)),
        ("Toronto staff start at 20 days.", ("2",)),
        ("Hope this helps!", ()),
    ]
    assert [s.paragraph for s in segs] == [0, 0, 1, 2]
    assert segs[0].text == "You get 25 days [ID: 1]."  # the reviewer sees the marker and its full stop
    assert [s.index for s in segs] == [0, 1, 2, 3]


def test_lists_with_citations_per_item_and_an_uncited_conclusion():
    text = ("To claim a taxi:\n"
            "- keep the receipt [ID: 3]\n"
            "- submit it in Petal within 60 days [ID: 12]\n"
            "1. then wait for payroll [ID: 12]\n\n"
            "In short, taxis are always reimbursed.")
    segs = segment_answer(text, IDS)
    assert cites(segs) == [
        ("To claim a taxi:\nkeep the receipt", ("3",)),  # the lead-in belongs to the first item's claim
        ("submit it in Petal within 60 days", ("12",)),
        ("then wait for payroll", ("12",)),
        ("In short, taxis are always reimbursed.", ()),
    ]


def test_text_after_the_last_citation_of_a_paragraph_is_uncited():
    segs = segment_answer("Claim A [ID: 1]. Claim B without a source.\n\nClaim C [ID: 2]", IDS)
    assert cites(segs) == [("Claim A.", ("1",)), ("Claim B without a source.", ()), ("Claim C", ("2",))]


def test_a_citation_inside_a_sentence_closes_that_sentence():
    segs = segment_answer("Under the policy [ID: 1], you get 25 days per year. Enjoy them.", IDS)
    assert cites(segs) == [("Under the policy, you get 25 days per year.", ("1",)), ("Enjoy them.", ())]
    # unless the sentence has another citation first: then each clause keeps its own
    segs = segment_answer("Lisbon gets 25 days [ID: 1] and Toronto gets 20 [ID: 2].", IDS)
    assert cites(segs) == [("Lisbon gets 25 days", ("1",)), ("and Toronto gets 20.", ("2",))]


def test_one_citation_closing_the_answer_covers_every_paragraph():
    # the grounded prompt asks for exactly this: one citation at the very end
    segs = segment_answer("Here is what the policy says.\n\nYou get 25 days.\n\nFive carry over. [ID: 17]", IDS)
    assert cites(segs) == [("Here is what the policy says.", ("17",)), ("You get 25 days.", ("17",)),
                           ("Five carry over.", ("17",))]
    # ... but not when something follows it: that is an uncited conclusion
    segs = segment_answer("You get 25 days [ID: 17].\n\nEnjoy your holidays!", IDS)
    assert cites(segs) == [("You get 25 days.", ("17",)), ("Enjoy your holidays!", ())]


def test_a_citation_after_a_full_stop_cites_the_sentence_before_it():
    # issue 46: "A. [ID: 1] B." gave A's citation to B too, and "(see [ID: 1])" left "see" in the claim
    segs = segment_answer("You get 25 days. [ID: 1] Five carry over. [ID: 2]", IDS)
    assert cites(segs) == [("You get 25 days.", ("1",)), ("Five carry over.", ("2",))]
    segs = segment_answer("You get 25 days. [ID: 1] Enjoy them.", IDS)
    assert cites(segs) == [("You get 25 days.", ("1",)), ("Enjoy them.", ())]
    segs = segment_answer("You get 25 days. (see [ID: 1]) Five carry over (Source: [ID: 2], [ID: 3]).", IDS)
    assert cites(segs) == [("You get 25 days.", ("1",)), ("Five carry over.", ("2", "3"))]
    assert segs[0].text == "You get 25 days. (see [ID: 1])"  # the reviewer sees the citation with its sentence
    assert cites(segment_answer("You get 25 days. [ID: 1].", IDS)) == [("You get 25 days.", ("1",))]


@pytest.mark.parametrize("text", [
    "You get 25 days [ID: 1]. Five carry over [ID: 2].\n\n[ID: 2].",
    "You get 25 days [ID: 1]. Five carry over.\n\n[ID: 2].",
    "You get 25 days [ID: 1]. Five carry over.\n\n(Source: [ID: 2])",
    "You get 25 days [ID: 1].\n\nFive carry over.\n\n[ID: 2]\n\n[ID: 17].",
])
def test_a_bare_citation_is_no_claim_and_cites_the_text_before_it(text):
    segs = segment_answer(text, IDS)
    assert [s.claim for s in segs] == ["You get 25 days.", "Five carry over."]
    assert segs[0].citations == ("1",) and segs[1].citations[0] == "2"
    assert not any(re.fullmatch(r"[\W\d]*(ID|Source)?[\W\d]*", s.claim) for s in segs)


def test_several_markers_on_one_claim_and_lenient_marker_forms():
    segs = segment_answer("A claim [ID: 1][ID: 2]. Another (ID: 3) and a bare one [12].", IDS)
    assert cites(segs) == [("A claim.", ("1", "2")), ("Another", ("3",)), ("and a bare one.", ("12",))]
    # a bare [n] is a citation only when n is a KB article; [ID: n] always is
    assert cites(segment_answer("See step [4] here [ID: 1]", IDS)) == [("See step [4] here", ("1",))]


def test_json_answers_take_their_citation_field():
    segs = segment_answer(json.dumps({"answer": "You get 25 days.\n\nFive carry over.", "citation": "1"}), IDS)
    assert cites(segs) == [("You get 25 days.", ("1",)), ("Five carry over.", ("1",))]


@pytest.mark.parametrize("text, body, ids", [
    ('{"answer": "You get \\"25 days\\" of leave.", "citation": "1"}', 'You get "25 days" of leave.', ("1",)),
    ('```json\n{"answer": "You get 25 days.", "citation": 1}\n```', "You get 25 days.", ("1",)),
    ('{"answer": "You get 25 days.", "citation": "1",}', "You get 25 days.", ("1",)),  # trailing comma
    ('{"answer": "You get 25 days.", "citation": ["1", 2', "You get 25 days.", ("1",)),  # cut off: "2" may be "20"
    ('{"citation": "1", "reason": "The article says 25 days."}', "The article says 25 days.", ("1",)),
    ('{"answer": "", "citation": "1"}', "", ("1",)),
    ('You get 25 days. {"citation": "1"}', "You get 25 days. ", ("1",)),
    ("You get 25 days [ID: 1].", "You get 25 days [ID: 1].", ()),
])
def test_a_json_answer_is_its_answer_text_never_its_keys(text, body, ids):
    got_body, got_ids = answer_body(text, IDS)
    assert (got_body, got_ids) == (body, ids)
    assert not any(re.search(r'"\w+"\s*:', s.text) for s in segment_answer(text, IDS))  # no field name is text


def test_json_field_names_are_never_quotes():
    raw = '{"answer": "Lisbon staff get 25 days.", "citation": "1", "confidence": "high"'
    assert find_quotes(raw) == ["Lisbon staff get 25 days."]  # a value may be; "answer", "citation" never are
    assert find_quotes('Set it in ["alpha beta", "gamma"]') == ["alpha beta", "gamma"]
    # a quotation followed by a colon in prose is still a quotation
    assert find_quotes('The rule, "within 24 hours": that is all.') == ["within 24 hours"]
    # the guard on its own: the article has the value, and no field name is asked of it
    assert missing_quotes('{"answer": "Lisbon gets 25 days", "citation_id": "1"}', "Lisbon gets 25 days") == []


def test_paragraphs_drop_rules_and_bold_titles_but_keep_bold_claims():
    text = "Intro\n\n---\n\n**Note:**\n\n**25 days** of leave [ID: 1]"
    assert paragraphs(text) == ["Intro", "**25 days** of leave [ID: 1]"]
    assert cites(segment_answer(text, IDS)) == [("Intro", ("1",)), ("25 days of leave", ("1",))]


def test_baseline_style_answer_is_one_cited_segment():
    segs = segment_answer("Never reimbursed:** personal items, fines and alcohol. [ID: 25]", {"25"})
    assert len(segs) == 1 and segs[0].citations == ("25",) and "[ID" not in segs[0].claim


# --- quotes -------------------------------------------------------------------------------------------------------

ARTICLE = ("Report a lost or stolen laptop to the **IT service desk** within 24 hours.\nPersonal software may be\n"
           "installed only if it is on the approved list \u2014 maintained by IT. Larkspur\u2019s rules apply.")


def test_quotes_are_found_in_all_styles_and_apostrophes_are_not_quotes():
    text = ('It says "within 24 hours" and \u201conly if it is on the approved list\u201d, '
            '\u00ab maintained by IT \u00bb and \u2018IT service desk\u2019. Don\u2019t forget Larkspur\u2019s rules.')
    assert find_quotes(text) == ["within 24 hours", "only if it is on the approved list", "maintained by IT",
                                 "IT service desk"]


def test_quote_verification_is_whitespace_and_style_insensitive_but_verbatim():
    assert quote_in("Personal software may be installed only if", ARTICLE)  # line break in the article
    assert quote_in("Report a lost or stolen laptop to the IT service desk", ARTICLE)  # ** emphasis in the article
    assert quote_in("approved list - maintained by IT", ARTICLE)  # dash style
    assert quote_in("Larkspur's rules apply.", ARTICLE)  # apostrophe style and end punctuation
    assert quote_in("report a lost or stolen laptop", ARTICLE)  # first-letter case
    assert quote_in("Report a lost ... within 24 hours", ARTICLE)  # ellipsis: parts in order
    assert not quote_in("within 24 hours ... Report a lost", ARTICLE)  # ... but in order
    assert not quote_in("within 48 hours", ARTICLE)
    assert not quote_in("REPORT A LOST OR STOLEN LAPTOP", ARTICLE)
    assert missing_quotes('It says "within 24 hours" and "within one day".', ARTICLE) == ["within one day"]


# --- the lexical judge and verdict parsing ---------------------------------------------------------------------------

def test_lexical_judge_checks_every_content_word_and_number():
    src = "Each employee has a learning budget of EUR 1,000 per year. Unused budget does not roll over."
    assert lexical_verdict("Employees have a learning budget of EUR 1000 a year.", src)["supported"] is True
    assert lexical_verdict("The learning budget is EUR 1,500 per year.", src)["supported"] is False
    v = lexical_verdict("Unused budget rolls over to the next year.", src)
    assert v["supported"] is False and "next" in v["explanation"]
    assert lexical_verdict("Hope this helps!", "")["supported"] is False
    assert lexical_verdict("Here it is:", "")["supported"] is True  # no content word: nothing to check
    assert list(lexical_verdict("x", "y")) == ["explanation", "supported"]  # explanation first, as the LLM judge


def test_lexical_judge_reads_a_french_source_in_french():
    """Read with English rules, every French article and verb ("les", "sont", "par") is a content word the source
    must hold, and every inflected word a miss: a faithful French claim failed."""
    from harness.spotcheck.lexical_judge import lexical_claim_verdict, source_language

    src = ("Chaque salarié a droit à 25 jours de congés payés par an. Les congés non pris ne sont pas reportés "
           "sur l'année suivante, sauf accord écrit du responsable.")
    assert source_language(src) == "fr"
    claim = "Les salariés ont droit à 25 jours de congé payé."
    assert lexical_verdict(claim, src, "en")["supported"] is False  # what the judge said before
    assert lexical_verdict(claim, src, "fr")["supported"] is True
    assert lexical_verdict("Les salariés ont droit à 30 jours de congé payé.", src, "fr")["supported"] is False
    changed = lexical_claim_verdict("Les congés non pris sont payés en fin d'année.", src, "fr")
    assert changed["verdict"] in ("partial", "unsupported") and "fin" in changed["explanation"]
    assert lexical_claim_verdict(claim, src, "fr")["evidence"].startswith("Chaque salarié")


@pytest.mark.parametrize("reply, expected", [
    ('{"explanation": "The article says 25.", "supported": true}', True),
    ('```json\n{"explanation": "no", "supported": false}\n```', False),
    ('Sure. {"explanation": "ok", "supported": "false"} Done.', False),
    ('{"Supported": "yes", "Explanation": "fine"}', True),
    ('explanation: numbers differ. "supported": false', False),
])
def test_verdict_parsing_is_lenient(reply, expected):
    assert parse_verdict(reply).supported is expected


@pytest.mark.parametrize("reply", ["", "I think it is fine.", '{"explanation": "x"}', '{"supported": "maybe"}'])
def test_unreadable_verdicts_are_unjudged_not_guessed(reply):
    v = parse_verdict(reply)
    assert v.supported is None and v.parse_error


def test_the_stricter_retry_prompt_appends_to_the_last_user_turn():
    msgs = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Segment: x\n"}]
    strict = strict_messages(msgs)
    assert [m["role"] for m in strict] == ["system", "user"] and strict[0] == msgs[0]
    assert strict[1]["content"] == "Segment: x\n\n" + STRICT_INSTRUCTION
    assert msgs[1]["content"] == "Segment: x\n"  # the original is untouched
    assert '"supported": true' in STRICT_INSTRUCTION and '"supported": false' in STRICT_INSTRUCTION


def test_unreadable_or_failed_judgements_in_the_file_are_not_reused(tmp_path):
    base = {"judge": "j", "template_hash": "t", "model": "m", "repeat": 0, "judge_repeat": 0, "answer_hash": "a",
            "context_hash": None, "source": "judge"}
    rows = [dict(base, question_id="ok", segment_index=0, supported=True),
            dict(base, question_id="garbage", segment_index=0, supported=None, parse_error="no verdict"),
            dict(base, question_id="failed", segment_index=0, supported=None, error={"kind": "server", "message": "x"}),
            dict(base, question_id="fixed", segment_index=0, supported=None, parse_error="no verdict"),
            dict(base, question_id="fixed", segment_index=0, supported=False, retry=True),
            dict(base, question_id="broke", segment_index=0, supported=True),
            dict(base, question_id="broke", segment_index=0, supported=None, parse_error="no verdict")]
    path = write(tmp_path / "judgements.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert sorted(ident[3] for ident in load_done(path)) == ["fixed", "ok"]


def test_judge_template_is_versioned_and_renders_both_passes():
    t = load_judge_template()
    assert t.name == "judge.v1" and len(t.sha256) == 16
    msgs = t.cited("You get 25 days.", [type("A", (), {"id": "4", "title": "Leave", "text": "25 days of leave."})()])
    assert msgs[0]["role"] == "system" and '"explanation"' in msgs[0]["content"]
    assert "[ID: 4] Leave" in msgs[1]["content"] and "25 days of leave." in msgs[1]["content"]
    assert "You get 25 days." in msgs[1]["content"]
    msgs = t.uncited("In short, 25 days.", ["You get 25 days."])
    assert "- You get 25 days." in msgs[1]["content"] and "In short, 25 days." in msgs[1]["content"]
    with pytest.raises(GraceError, match="not found"):
        load_judge_template("judge.v9")


def test_judge_specs():
    spec, provider = make_judge("baseline:lexical")
    assert type(provider).__name__ == "LexicalJudgeProvider" and spec.params["temperature"] == 0
    with pytest.raises(GraceError, match="not a judge"):
        make_judge("baseline:top1")
    with pytest.raises(GraceError, match="OPENAI_API_KEY"):
        make_judge("openai:gpt-4o-mini")


# --- sampling and metrics --------------------------------------------------------------------------------------------

def _hits(model, per_article):
    return [Hit(model, f"{a}-{i}", 0, (a,), "t") for a, n in per_article.items() for i in range(n)]


def test_sampling_is_per_model_stratified_by_article_and_seeded():
    hits = _hits("m1", {"1": 30, "2": 10, "3": 10}) + _hits("m2", {"1": 4})
    s = sample_hits(hits, 10, seed=3)
    assert len(s["m1"].chosen) == 10 and len(s["m2"].chosen) == 4  # fewer hits than asked: all of them
    per_article = {a: sum(h.cited_ids == (a,) for h in s["m1"].chosen) for a in "123"}
    assert per_article == {"1": 6, "2": 2, "3": 2}  # proportional to 30/10/10
    shuffled = hits[:]
    random.Random(1).shuffle(shuffled)
    assert [h.key for h in sample_hits(shuffled, 10, seed=3)["m1"].chosen] == [h.key for h in s["m1"].chosen]
    assert {h.key for h in sample_hits(hits, 10, seed=4)["m1"].chosen} != {h.key for h in s["m1"].chosen}
    assert {h.key for h in s["m1"].chosen} <= {h.key for h in sample_hits(hits, 20, seed=3)["m1"].chosen}
    assert len(sample_hits(hits, None, seed=3)["m1"].chosen) == 50
    assert s["m1"].summary() == {"hits": 50, "sampled": 10, "articles_in_hits": 3, "articles_sampled": 3}


def test_allocation_uses_largest_remainders():
    assert allocate({"a": 5, "b": 3, "c": 2}, 5, ["a", "b", "c"]) == {"a": 3, "b": 1, "c": 1}
    assert allocate({"a": 1, "b": 1, "c": 1}, 2, ["c", "a", "b"]) == {"a": 1, "b": 0, "c": 1}


def test_metrics_point_estimates_and_risk_with_correct_refusals():
    answers = [AnswerResult(("m", "q1", 0), 2, [2], [False]), AnswerResult(("m", "q2", 0), 3, [1], [True]),
               AnswerResult(("m", "q3", 0), 1, [1], [False]), AnswerResult(("m", "q4", 0), 2, [1], [True])]
    answers = answers * 3  # 12 checked answers: enough for intervals (MIN_ANSWERS_FOR_CI)
    m = model_metrics(answers, n=20, correct=10, correct_refusal=2, bootstrap=500, seed=1)
    assert m["groundedness"] == pytest.approx(5 / 8)
    assert m["hallucination_rate"] == pytest.approx(0.5)
    assert m["accuracy"] == pytest.approx(0.6)
    # 1 - (refusals_ok + answers_ok * (1 - h)) = 1 - (0.1 + 0.5 * 0.5)
    assert m["hallucination_risk"] == pytest.approx(0.65)
    for key in ("groundedness", "hallucination_rate", "hallucination_risk"):
        lo, hi = m[f"{key}_ci95"]
        assert lo <= m[key] <= hi and lo < hi
    assert model_metrics(answers, 20, 10, 2, bootstrap=500, seed=1) == m  # seeded
    no_refusals = model_metrics(answers, n=20, correct=12, correct_refusal=0, bootstrap=0)
    assert no_refusals["hallucination_risk"] == pytest.approx(1 - 0.6 * (1 - 0.5))  # the formula
    assert no_refusals["groundedness_ci95"] is None and no_refusals["groundedness_spread"] is None


def test_too_few_checked_answers_give_no_interval_and_say_so():
    assert MIN_ANSWERS_FOR_CI == 10
    one = [AnswerResult(("m", "q1", 0), 1, [1], [False])]
    m = model_metrics(one, n=10, correct=1, correct_refusal=0, bootstrap=500)
    assert m["groundedness"] == 1.0 and m["n"] == 1
    assert (m["groundedness_ci95"], m["hallucination_rate_ci95"], m["hallucination_risk_ci95"]) == (None, None, None)
    assert m["display"]["groundedness"] == "100.0% (n=1, too few for an interval)"
    assert all("(n=1, too few for an interval)" in v for v in m["display"].values())
    assert m["ci_note"] == "1 checked answer: too few for an interval (at least 10 needed)"
    nine = [AnswerResult(("m", f"q{i}", 0), 1, [1], [False]) for i in range(MIN_ANSWERS_FOR_CI - 1)]
    assert model_metrics(nine, 20, 9, 0, bootstrap=500)["groundedness_ci95"] is None
    ten = nine + [AnswerResult(("m", "q9", 0), 2, [1], [True])]
    m = model_metrics(ten, 20, 10, 0, bootstrap=500)
    assert m["groundedness_ci95"] and m["hallucination_rate_ci95"] and m["hallucination_risk_ci95"]
    assert m["ci_note"] is None and m["display"]["groundedness"].endswith("(n=10)") and "[" in m["display"]["groundedness"]
    assert figure(None, None, 0) == "- (n=0)" and figure(0.5, None, 12) == "50.0% (n=12)"
    assert figure(0.75, [0.6, 0.9], 40) == "75.0% [60.0, 90.0] (n=40)"


def test_the_hallucination_rate_interval_is_wilsons_never_a_point():
    """Issue 47: 30 faithful answers are a hallucination rate of 0% with Wilson's [0%, 11.4%] (scipy's, computed
    apart), where the bootstrap over answers said [0%, 0%]; groundedness, a pooled ratio, keeps its bootstrap."""
    from scipy.stats import binomtest

    answers = [AnswerResult(("m", f"q{i}", 0), 2, [2], [False]) for i in range(30)]
    m = model_metrics(answers, n=40, correct=30, correct_refusal=0, bootstrap=300)
    truth = binomtest(0, 30).proportion_ci(method="wilson")
    assert m["hallucination_rate"] == 0.0 and m["hallucination_rate_ci95"] == pytest.approx([0.0, truth.high], abs=1.1e-6)
    assert m["display"]["hallucination_rate"] == "0.0% [0.0, 11.4] (n=30)"
    assert m["groundedness_ci95"] == [1.0, 1.0]


def test_metrics_with_judge_repeats_show_the_spread():
    answers = [AnswerResult(("m", "q1", 0), 4, [4, 3, 4], [False, True, False]),
               AnswerResult(("m", "q2", 0), 4, [4, 4, 2], [False, False, True])]
    m = model_metrics(answers, n=2, correct=2, correct_refusal=0, bootstrap=200)
    assert m["groundedness_per_repeat"] == [1.0, 0.875, 0.75]
    assert m["groundedness_spread"] == pytest.approx(0.25)
    assert m["groundedness"] == pytest.approx(21 / 24)
    assert m["hallucination_rate"] == pytest.approx(1 / 3)


def test_metrics_without_checked_answers():
    m = model_metrics([], n=10, correct=0, correct_refusal=3, bootstrap=100)
    assert m["groundedness"] is None and m["hallucination_rate"] is None
    assert m["hallucination_risk"] == pytest.approx(0.7)  # nothing was answered correctly: only refusals were safe


# --- the two passes, with the real offline judge ----------------------------------------------------------------------

KB_ARTICLES = [
    {"id": "1", "title": "Leave > PTO", "text": "Lisbon staff get 25 working days of paid time off per year. "
                                                "Up to 5 unused days can be carried over; they expire on 31 March."},
    {"id": "2", "title": "Pay > Bonus", "text": "The annual bonus target is 10% of base salary for levels L1 to L4."},
]


@pytest.fixture()
def kb(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in KB_ARTICLES))
    return load_kb(tmp_path / "kb")


def lexical():
    spec, provider = make_judge("baseline:lexical")
    return Judge(spec, provider, load_judge_template())


def test_two_passes_conclusions_are_checked_against_supported_segments_only(kb, tmp_path):
    hits = [
        Hit("m", "restates", 0, ("1",), "Hello!\n\nLisbon staff get 25 days of paid time off [ID: 1].\n\n"
                                        "So, 25 days of paid time off."),
        Hit("m", "adds", 0, ("1",), "Lisbon staff get 25 days of paid time off [ID: 1].\n\n"
                                    "In short: 25 days, and Toronto staff get 20."),
        # the cited segment is wrong (30), so the conclusion restating it has nothing supported to stand on
        Hit("m", "unsupported-base", 0, ("1",), "Lisbon staff get 30 days [ID: 1].\n\nSo: 30 days."),
        Hit("m", "quote", 0, ("1",), 'The policy says "unused days expire on 31 March" [ID: 1]. '
                                     'Also "days can be carried over" [ID: 1].'),
    ]
    out = tmp_path / "run" / "spotcheck" / "judgements.jsonl"
    judged = judge_hits(lexical(), hits, kb, 1, out, JudgeSettings())
    verdict = lambda qid: [judged.rows[(("m", qid, 0), 0, s.index)]["supported"]  # noqa: E731
                           for s in judged.segments[("m", qid, 0)]]
    assert verdict("restates") == [False, True, True]  # "Hello!" is a new "claim" for a word-overlap judge
    assert verdict("adds") == [True, False]
    assert verdict("unsupported-base") == [False, False]
    assert verdict("quote") == [False, True]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 9 and {r["schema_version"] for r in rows} == {1}
    quote_row = next(r for r in rows if r["source"] == "quote")
    assert quote_row["missing_quotes"] == ["unused days expire on 31 March"] and quote_row["response"] is None
    conclusion = next(r for r in rows if r["question_id"] == "adds" and r["pass"] == "uncited")
    assert conclusion["context_hash"] and conclusion["citations"] == []
    assert "toronto" in conclusion["explanation"].lower()
    assert {r["template_hash"] for r in rows} == {load_judge_template().sha256}
    # resumable: everything is reused, nothing judged again
    again = judge_hits(lexical(), hits, kb, 1, out, JudgeSettings())
    assert again.reused == 9 and again.stats.calls == 0 and len(out.read_text().splitlines()) == 9
    # a changed answer is judged again
    hits[1] = Hit("m", "adds", 0, ("1",), "Lisbon staff get 25 days of paid time off [ID: 1].")
    third = judge_hits(lexical(), hits, kb, 1, out, JudgeSettings())
    assert third.stats.calls == 1 and third.reused == 7
    # the same answer read into another claim (an earlier grace read "A. [ID: 1] B." as one segment) is judged again
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    first = next(r for r in rows if r["question_id"] == "quote" and r["segment_index"] == 1)
    out.write_text("".join(json.dumps(dict(r, claim="Also an older reading.") if r is first else r) + "\n"
                           for r in rows))
    fourth = judge_hits(lexical(), hits, kb, 1, out, JudgeSettings())
    assert fourth.stats.calls == 1 and fourth.reused == 8 - 1  # the 8 judgements of these answers, less that one
    assert json.loads(out.read_text().splitlines()[-1])["claim"] == first["claim"]
