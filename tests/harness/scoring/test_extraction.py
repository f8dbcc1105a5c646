"""Citation and refusal extraction, strict and lenient, on hand-written responses in every form."""

from __future__ import annotations

import pytest

from harness.scoring import REFUSAL_SENTENCE, decide_outcome, extract, extract_both, is_refusal
from harness.scoring.outcomes import NONE, REFUSE, predicted_label, true_label

KB = frozenset({"5", "17", "18", "50", "uid-kb-5", "uid-kb-50"})


def lenient(text: str):
    return extract(text, KB)


def strict(text: str):
    return extract(text, KB, strict=True)


# (response, lenient cited IDs, lenient rule, strict cited IDs)
CITATIONS = [
    ("Annual leave is 25 days. [ID: 17]", ["17"], "inline", ["17"]),
    ("Annual leave is 25 days [ID:17]", ["17"], "lenient", []),
    ("Annual leave is 25 days [id: 17]", ["17"], "lenient", []),
    ("Annual leave is 25 days (ID: 17)", ["17"], "lenient", []),
    ("Annual leave is 25 days (id:17).", ["17"], "lenient", []),
    ("Annual leave is 25 days **[ID: 17]**", ["17"], "inline", ["17"]),
    ("Annual leave is 25 days [ID: 17].", ["17"], "inline", ["17"]),
    ("Annual leave is 25 days [ID: **17**]", ["17"], "lenient", ["**17**"]),
    ("Annual leave is 25 days [**ID: 17**]", ["17"], "lenient", []),
    ("Annual leave is 25 days [ID: 17.]", ["17"], "lenient", ["17."]),
    ("Annual leave is 25 days [ID 17]", ["17"], "lenient", []),
    ("Annual leave is 25 days [Article ID: 17]", ["17"], "lenient", []),
    ("Annual leave is 25 days [17]", ["17"], "lenient", []),
    ("Annual leave is 25 days [Source: 17]", ["17"], "lenient", []),
    ("Annual leave is 25 days. Source: ID: 17", ["17"], "lenient", []),
    ("Annual leave is 25 days [ID: 17, 18]", ["17", "18"], "lenient", []),
    ("Annual leave is 25 days [ID: 17; ID: 18]", ["17", "18"], "lenient", []),
    ("Annual leave is 25 days [IDs: 17 and 18]", ["17", "18"], "lenient", []),
    ("Annual leave is 25 days [17, 18]", ["17", "18"], "lenient", []),
    ("Annual leave [ID: 17] is 25 days [ID: 18]", ["17", "18"], "inline", ["17", "18"]),
    ("Leave is 25 days [ID: 17]. As [ID: 17] says, plan ahead.", ["17"], "inline", ["17"]),
    # lenient forms that only repeat a canonical citation do not change the reading: still "inline"
    ("Leave is 25 days [ID: 17] (ID: 17) [17]", ["17"], "inline", ["17"]),
    ("See the policy [ID: uid-kb-5]", ["uid-kb-5"], "inline", ["uid-kb-5"]),
    ("See the policy [ID: uid-kb-50]", ["uid-kb-50"], "inline", ["uid-kb-50"]),
    ("See the policy [uid-kb-5]", ["uid-kb-5"], "lenient", []),
    ("See the policy [ID: 999]", ["999"], "inline", ["999"]),
    ("See the policy (ID: uid-kb-7)", ["uid-kb-7"], "lenient", []),
    # not citations
    ("Annual leave is 25 days and 17 forms are needed.", [], "none", []),
    ("Annual leave is 25 days (17 in Ireland).", [], "none", []),
    ("Annual leave is 25 days (see section 5).", [], "none", []),
    ("Annual leave is 25 days [99]", [], "none", []),
    ("Annual leave is 25 days [uid-kb-500]", [], "none", []),
    ("See [the handbook](https://example.com/5) for details.", [], "none", []),
    ("Your employee ID: 4411 is on the badge.", [], "none", []),
    ("Its validity: 17 days.", [], "none", []),
    ("", [], "none", []),
]


@pytest.mark.parametrize(("text", "cited", "rule", "strict_cited"), CITATIONS)
def test_citation_forms(text, cited, rule, strict_cited):
    got = lenient(text)
    assert got.cited_ids == cited
    assert got.rule == rule
    assert got.refused is False
    assert strict(text).cited_ids == strict_cited


def test_matching_is_exact_not_prefix():
    assert lenient("[ID: uid-kb-5]").cited_ids == ["uid-kb-5"]
    assert lenient("[uid-kb-50]").cited_ids == ["uid-kb-50"]
    assert lenient("[ID: uid-kb-5]").cited_ids != ["uid-kb-50"]
    assert lenient("[1]").cited_ids == []  # "1" is a prefix of "17" but not a KB ID
    assert decide_outcome(["uid-kb-50"], False, False, {"uid-kb-5"}, KB) == "wrong_citation"


# (response, lenient cited, strict cited, strict rule is json)
JSON_ANSWERS = [
    ('{"answer": "Annual leave is 25 days.", "citation": "17"}', ["17"], ["17"], True),
    ('{"answer": "Annual leave is 25 days.", "citation": 17}', ["17"], [], True),
    ('{"answer": "Annual leave is 25 days.", "citation": 17.0}', ["17"], [], True),
    ('{"answer": "Policy.", "citation": "uid-kb-5"}', ["uid-kb-5"], ["uid-kb-5"], True),
    ('{"answer": "Annual leave is 25 days.", "citation": "[ID: 17]"}', ["17"], ["17", "[ID: 17]"], True),
    ('{"answer": "Annual leave is 25 days.", "citation": "999"}', ["999"], ["999"], True),
    ('{"answer": "Annual leave is 25 days.", "citation": null}', [], [], True),
    ('{"answer": "Annual leave is 25 days.", "citations": [17, 18]}', ["17", "18"], [], False),
    ('```json\n{"answer": "Annual leave is 25 days.", "citation": "17"}\n```', ["17"], [], False),
    ('Here is my answer:\n```json\n{"answer": "25 days", "citation": 18}\n```\nHope it helps.', ["18"], [], False),
    ('Sure. {"answer": "25 days", "citation": "18"} Let me know.', ["18"], [], False),
    ('{"Answer": "25 days", "Citation": "5"}', ["5"], [], False),
]


@pytest.mark.parametrize(("text", "cited", "strict_cited", "strict_json"), JSON_ANSWERS)
def test_json_answers(text, cited, strict_cited, strict_json):
    got = lenient(text)
    assert got.rule == "json"
    assert got.cited_ids == cited
    s = strict(text)
    assert s.cited_ids == strict_cited
    assert (s.rule == "json") is strict_json


def test_json_refusal_and_braces_that_are_not_json():
    text = '{"answer": "' + REFUSAL_SENTENCE + '", "citation": null}'
    assert lenient(text) == ([], True, "json")
    assert strict(text).refused is True
    assert lenient("Use the {placeholder} form [ID: 5]").cited_ids == ["5"]
    assert lenient("Use the {placeholder} form [ID: 5]").rule == "inline"
    assert lenient('{"note": "x"} [ID: 5]').rule == "inline"  # JSON without answer/citation keys is not an answer


PARAPHRASES = [
    "I don\u2019t have enough information to answer this question.",
    "I don't have enough information to answer that.",
    "The provided articles do not contain information about parking.",
    "The provided articles don\u2019t mention a pet policy.",
    "I cannot find any information about parking in the provided articles.",
    "I couldn't find any details about parking.",
    "No document seems to precisely answer your question.",
    "None of the provided articles address parking.",
    "Unfortunately, the given context does not specify the deadline.",
    "There is no information about parking in the provided articles.",
    "The parking policy is not mentioned in the provided articles.",
    "I'm unable to answer this question based on the articles.",
    "I am not able to answer this from the provided documents.",
    "This question cannot be answered from the articles provided.",
    "The information provided is insufficient to answer the question.",
    "Based on the articles, I do not have sufficient information to determine this.",
]


@pytest.mark.parametrize("text", PARAPHRASES)
def test_refusal_paraphrases_are_lenient_refusals(text):
    assert lenient(text) == ([], True, "lenient")
    assert strict(text) == ([], False, "none")


def test_exact_refusal_sentence_is_strict_and_lenient():
    assert strict(REFUSAL_SENTENCE) == ([], True, "inline")
    assert lenient(REFUSAL_SENTENCE) == ([], True, "inline")
    curly = REFUSAL_SENTENCE.replace("'", "\u2019")
    assert strict(curly).refused is False and lenient(curly).refused is True


def test_refusal_that_also_cites_is_a_refusal():
    text = f"{REFUSAL_SENTENCE} The closest article is [ID: 17]."
    got = lenient(text)
    assert got.refused is True and got.cited_ids == ["17"]
    assert decide_outcome(got.cited_ids, got.refused, True, set(), KB) == "correct_refusal"
    assert decide_outcome(got.cited_ids, got.refused, False, {"17"}, KB) == "false_refusal"
    para = "The provided articles do not contain the parking rules, though [ID: 18] covers travel."
    assert lenient(para).refused is True and lenient(para).cited_ids == ["18"]


NOT_REFUSALS = [
    "You do not need a form; submit it online [ID: 5].",
    "There is no limit on annual leave carry-over [ID: 17].",
    "No receipt is needed for expenses under 25 dollars [ID: 18].",
    "If HR cannot find your record, call them [ID: 5].",
    "The documents do not need to be notarised [ID: 5].",
    "Employees cannot carry over more than 5 days [ID: 17].",
    "If you don't have a receipt, submit a declaration [ID: 18].",
    "This is not covered by the travel policy; use the expense form instead [ID: 18].",
]


# "The answer is no/yes, ..." states the answer: a hedge after it about what the articles leave out is no refusal
ANSWER_IS_NO = [
    "The answer is no, you are not allowed to work from abroad, and the provided articles do not mention any "
    "exception for short trips [ID: 17].",
    "The answer is no, you are not allowed to bring pets to the office; the provided articles do not list any "
    "exceptions.",
    "The answer is no, you are not allowed to carry over more than 5 days. There is no information about exceptions "
    "in the provided articles.",
    "The short answer is no: you are not allowed to expense alcohol, and the given context does not specify "
    "exceptions [ID: 18].",
    "The answer is yes, you can, although the provided articles do not mention a limit [ID: 5].",
    '{"answer": "The answer is no, you are not allowed to; the provided articles do not mention exceptions.", '
    '"citation": "17"}',
]


@pytest.mark.parametrize("text", ANSWER_IS_NO)
def test_the_answer_is_no_is_an_answer_not_a_refusal(text):
    assert is_refusal(text) is False
    got = lenient(text)
    assert got.refused is False


def test_the_answer_is_no_keeps_the_exact_refusal_sentence_and_real_refusals():
    # the prompt's own sentence stays a refusal wherever it is; "the answer is not in ..." is not "the answer is no"
    assert is_refusal(f"The answer is no. {REFUSAL_SENTENCE}") is True
    assert is_refusal("The answer is not in the provided articles; the provided articles do not mention parking.")
    assert is_refusal("Honestly, the provided articles do not mention whether the answer is no or yes.")


@pytest.mark.parametrize("text", NOT_REFUSALS)
def test_answers_with_negations_are_not_refusals(text):
    assert is_refusal(text) is False
    assert lenient(text).refused is False


def test_extract_both_matches_single_readings():
    for text, *_ in CITATIONS + JSON_ANSWERS:
        both = extract_both(text, KB)
        assert both == (lenient(text), strict(text))


# (cited, refused, must_refuse, expected, error) -> outcome, in the order of precedence
OUTCOME_CASES = [
    ([], True, True, [], False, "correct_refusal"),
    (["999"], True, True, [], False, "correct_refusal"),  # refusal is judged before an invalid ID
    ([], True, False, ["17"], False, "false_refusal"),
    (["17"], True, False, ["17"], False, "false_refusal"),
    (["999"], False, True, [], False, "invalid_citation"),  # invalid before answered_unanswerable
    (["17", "999"], False, False, ["17"], False, "invalid_citation"),  # invalid before multiple
    (["17"], False, True, [], False, "answered_unanswerable"),
    ([], False, True, [], False, "answered_unanswerable"),
    ([], False, False, ["17"], False, "no_citation"),
    (["17", "18"], False, False, ["17", "18"], False, "multiple_citations"),
    (["18"], False, False, ["17", "18"], False, "correct"),
    (["5"], False, False, ["17"], False, "wrong_citation"),
    (["17"], False, False, ["17"], True, "error"),
]


@pytest.mark.parametrize(("cited", "refused", "must", "expected", "error", "outcome"), OUTCOME_CASES)
def test_outcome_precedence(cited, refused, must, expected, error, outcome):
    assert decide_outcome(cited, refused, must, set(expected), KB, error=error) == outcome


def test_labels():
    assert true_label([], True, []) == REFUSE
    assert true_label(["18"], False, ["17", "18"]) == "18"  # the cited one when it is expected
    assert true_label(["5"], False, ["17", "18"]) == "17"  # else the first expected
    assert predicted_label(["5"], True, KB) == REFUSE
    assert predicted_label(["5"], False, KB) == "5"
    assert predicted_label(["5", "17"], False, KB) == NONE
    assert predicted_label(["999"], False, KB) == NONE
    assert predicted_label([], False, KB) == NONE


# JSON citation fields: only the documented keys, at the top level or inside the answer object, parsed or not.
# (response, lenient cited IDs)
JSON_FIELDS = [
    # an object the model made up is not a citation, whatever its "id"
    ('{"id": 18, "title": "Premises"}', []),
    ('```json\n{"answer": {"id": 50, "name": "Olivia", "role": "HR"}, "citation": null}\n```', []),
    ('{"answer": "Olivia runs HR.", "people": [{"id": 50, "name": "Olivia"}]}', []),
    ('{"answer": "x", "ids": [17, 18]}', []),
    # the documented aliases
    ('{"answer": "x", "citation_id": "17"}', ["17"]),
    ('{"answer": "x", "cited_ids": [17, 18]}', ["17", "18"]),
    ('{"answer": "x", "source_id": 5}', ["5"]),
    ('{"answer": "x", "article_ids": ["uid-kb-5"]}', ["uid-kb-5"]),
    ('{"answer": "x", "doc_id": "18"}', ["18"]),
    ('{"answer": "x", "Document_ID": "18"}', ["18"]),
    ('{"answer": "x", "citation": {"id": 18, "title": "Premises"}}', ["18"]),  # a citation field's object: its id
    # source(s) / reference(s): only KB IDs or labelled IDs, never titles
    ('{"answer": "x", "source": 17}', ["17"]),
    ('{"answer": "x", "sources": ["Employee handbook", "ID: 18"]}', ["18"]),
    ('{"answer": "x", "reference": "Employee handbook, 2023 edition"}', []),
    ('{"answer": "x", "source": "999"}', []),
    # nested in the answer object, parsed or cut off
    ('{"answer": {"citation_id": "17", "text": "Leave is 25 days."}}', ["17"]),
    ('{"answer": {"citation_id": "17", "text": "Leave is 25 da', ["17"]),
    ('Here you go:\n```json\n{"answer": {"text": "Leave is 25 days.", "citation_ids": ["17"]', ["17"]),
    ('{"response": {"text": "Leave is 25 days.", "citation": "17"}}', ["17"]),
    # deeper than the answer object is not read
    ('{"answer": {"details": {"citation": "17"}}}', []),
    # lists: split on list syntax, never inside a title
    ('{"answer": "x", "citation": ["Part 3: Conduct and ethics", "ID: 17"]}', ["17"]),
    # a citation field holding only text that names no ID: an attempted, invalid citation (the text itself)
    ('{"answer": "x", "citation": "Part 3: Conduct and ethics"}', ["Part 3: Conduct and ethics"]),
    ('{"answer": "x", "citation": "17, 18"}', ["17", "18"]),
    ('{"answer": "x", "citation": "17; 18"}', ["17", "18"]),
    ('{"answer": "x", "citation": "17 and 18"}', ["17", "18"]),  # "and" between IDs
    ('{"answer": "x", "citation": "Article 17"}', ["17"]),
    ('{"answer": "x", "citation": "[ID: 17]"}', ["17"]),
    # a value that is not a KB ID counts (invalid) only when it looks like an ID
    ('{"answer": "x", "citation": "999"}', ["999"]),
    ('{"answer": "x", "citation": "uid-kb-7"}', ["uid-kb-7"]),
    ('{"answer": "x", "citation": "Premises"}', ["Premises"]),
    ('{"answer": "x", "citation": "Conduct and ethics"}', ["Conduct and ethics"]),
    # not quite JSON
    ("{'answer': 'Leave is 25 days.', 'citation': '17',}", ["17"]),
    ('{"answer": "He said "yes" to it", "citation": "17"}', ["17"]),
]


@pytest.mark.parametrize(("text", "cited"), JSON_FIELDS)
def test_json_citation_fields(text, cited):
    got = lenient(text)
    assert got.cited_ids == cited
    assert got.refused is False


# A citation field (not source/reference) whose value names no ID at all: a URL, a title, a sentence. A careful
# reader counts the model's attempt as an invalid citation, not as no citation. (response, lenient cited IDs)
ATTEMPTED_CITATIONS = [
    ('{"answer": "Leave is 25 days.", "citation": "https://intranet.example.com/handbook/annual-leave"}',
     ["https://intranet.example.com/handbook/annual-leave"]),
    ('{"answer": "Leave is 25 days.", "citation": "The annual leave section of the employee handbook"}',
     ["The annual leave section of the employee handbook"]),
    ('{"answer": "Leave is 25 days.", "citations": ["Annual leave", "Holidays"]}', ["Annual leave", "Holidays"]),
    ('{"answer": "Leave is 25 days.", "citation": {"title": "Annual leave", "url": "https://x.example/leave"}}',
     ["Annual leave"]),
    ('```json\n{"answer": "Leave is 25 days.", "citation_id": "Annual Leave policy (2024)"}\n```',
     ["Annual Leave policy (2024)"]),
]


@pytest.mark.parametrize(("text", "cited"), ATTEMPTED_CITATIONS)
def test_a_citation_field_with_no_id_is_an_invalid_citation(text, cited):
    got = lenient(text)
    assert (got.cited_ids, got.refused, got.rule) == (cited, False, "json")
    assert decide_outcome(got.cited_ids, got.refused, False, {"17"}, KB) == "invalid_citation"
    assert decide_outcome(got.cited_ids, got.refused, True, set(), KB) == "invalid_citation"


NOT_ATTEMPTED = [
    '{"answer": "Leave is 25 days.", "citation": null}',
    '{"answer": "Leave is 25 days.", "citation": "N/A"}',
    '{"answer": "Leave is 25 days.", "citation": "No relevant article"}',
    '{"answer": "Leave is 25 days.", "citation": "none found"}',
    '{"answer": "Leave is 25 days.", "citation": ""}',
    '{"answer": "Leave is 25 days.", "citation": []}',
    # loose keys keep their rule: titles and URLs there are no citation at all
    '{"answer": "Leave is 25 days.", "source": "https://intranet.example.com/handbook"}',
    '{"answer": "Leave is 25 days.", "reference": "Employee handbook, 2023 edition"}',
]


@pytest.mark.parametrize("text", NOT_ATTEMPTED)
def test_empty_citation_fields_and_loose_keys_stay_no_citation(text):
    got = lenient(text)
    assert got.cited_ids == [] and got.refused is False
    assert decide_outcome(got.cited_ids, got.refused, False, {"17"}, KB) == "no_citation"


def test_a_real_id_anywhere_wins_over_free_text_in_the_field():
    # an ID in the answer text, free text in the field: the ID is the citation, the text a label
    got = lenient('{"answer": "Leave is 25 days [ID: 17].", "citation": "Annual leave"}')
    assert got.cited_ids == ["17"]
    got = lenient('{"answer": "Leave is 25 days.", "citation": ["Annual leave", "ID: 17"]}')
    assert got.cited_ids == ["17"]


JSON_TO_CUT = [
    '{"answer": {"citation_id": "17", "text": "Annual leave is 25 days, and up to 5 days carry over."}}',
    '{"citation": ["Part 3: Conduct and ethics", "ID: 18"], "answer": "Report misconduct to HR within 7 days."}',
    'Sure!\n```json\n{"citations": [17], "answer": {"text": "Claims need receipts.", "refused": false}}\n```\nDone.',
    '{"answer": "Parking is free.", "citation": "uid-kb-50", "confidence": 0.9, "notes": "see the handbook"}',
]


@pytest.mark.parametrize("text", JSON_TO_CUT)
def test_a_cut_off_json_answer_gives_the_citations_of_the_whole_one(text):
    whole = lenient(text)
    assert whole.rule == "json" and len(whole.cited_ids) == 1
    value = text.index(whole.cited_ids[0]) + len(whole.cited_ids[0]) + 2  # past the ID's closing quote or bracket
    for end in range(value, len(text)):
        cut = lenient(text[:end])
        assert (cut.cited_ids, cut.rule) == (whole.cited_ids, "json"), text[:end]
    # cut inside the ID itself: nothing is guessed from half a value
    start = text.index(whole.cited_ids[0])
    assert lenient(text[:start + 1]).cited_ids == []


INLINE_LISTS = [
    ("Report it to HR [Source: Conduct and ethics].", []),
    ("Report it to HR [ID: Conduct and ethics].", []),
    ("Report it to HR [Sources: 17 and 18].", ["17", "18"]),
    ("Leave is 25 days [ID: 17 & 18]", ["17", "18"]),
    ("Leave is 25 days [ID: 3 and 4]", ["3", "4"]),  # labelled IDs, invalid ones
    ("Leave is 25 days [ID: 17, 18]", ["17", "18"]),
    ("See [Part 3: Conduct and ethics, ID: 17].", ["17"]),
]


@pytest.mark.parametrize(("text", "cited"), INLINE_LISTS)
def test_inline_lists_split_on_list_syntax_not_on_words(text, cited):
    assert lenient(text).cited_ids == cited


GENERIC_DECLINES = [
    "As an AI assistant, I don't have the ability to verify your current leave balance.",
    "As an AI language model I cannot browse the internet for today's weather.",
    "As an AI, I'm not able to give legal advice about your contract.",
    "I don't have the ability to access your payroll records.",
    "I do not have access to real-time information such as the weather.",
    "I'm not able to provide medical advice.",
    "I am unable to help with that request.",
    "I\u2019m sorry, but I can\u2019t help with booking flights.",
    "I have no way of knowing who the CEO will be next year.",
    "I don't know.",
    "I do not know who the CEO will be next year",
]


@pytest.mark.parametrize("text", GENERIC_DECLINES)
def test_generic_declines_are_lenient_refusals_when_nothing_is_cited(text):
    assert is_refusal(text) is True
    assert lenient(text) == ([], True, "lenient")
    assert strict(text) == ([], False, "none")


GENERIC_DECLINE_NOT_REFUSALS = [
    # a decline of something else, followed by an answer from an article: an answer
    "As an AI assistant, I don't have the ability to verify your balance, but new staff get 25 days [ID: 17].",
    "I can't see your records; the policy gives 25 days of leave [ID: 17].",
    '{"answer": "I am unable to check your claim, but receipts are needed over 25 dollars.", "citation": "18"}',
    # answers with "cannot", "don't have to", "not able" about someone else
    "You don't have to fill in a form; just tell your manager.",
    "You cannot carry over more than 5 days.",
    "Employees are not able to provide their own laptops.",
    "Managers do not have the ability to approve more than 10 days.",
    "As an AI assistant, I can help: annual leave is 25 days.",
    "If you don't know your manager, ask HR.",
    "I don't know the exact date, but leave resets every January.",
]


@pytest.mark.parametrize("text", GENERIC_DECLINE_NOT_REFUSALS)
def test_real_answers_are_not_generic_declines(text):
    assert lenient(text).refused is False


def test_generic_declines_count_only_without_a_citation():
    text = "As an AI assistant, I don't have the ability to verify that."
    assert is_refusal(text) is True and is_refusal(text, cites=True) is False
    # a refusal about the articles stays a refusal even when the response also cites one
    para = "The provided articles do not mention parking."
    assert is_refusal(para, cites=True) is True


# (cited, refused, must_refuse, expected, shown) -> outcome: unshown_citation sits between invalid and unanswerable
UNSHOWN_CASES = [
    (["17"], False, False, ["17"], ["5", "18"], "unshown_citation"),  # the right article, but never shown
    (["17"], False, False, ["17"], ["17", "5"], "correct"),
    (["17"], False, False, ["17"], None, "correct"),  # nothing says what was shown: not checked
    (["17"], False, False, ["17"], [], "correct"),
    (["999"], False, False, ["17"], ["5"], "invalid_citation"),  # invalid before unshown
    (["17", "5"], False, False, ["17"], ["17"], "unshown_citation"),  # unshown before multiple
    (["5"], False, True, [], ["18"], "unshown_citation"),  # unshown before answered_unanswerable
    (["5"], False, True, [], ["5"], "answered_unanswerable"),
    (["5"], True, True, [], ["18"], "correct_refusal"),  # a refusal is judged first
    ([], False, False, ["17"], ["18"], "no_citation"),
]


@pytest.mark.parametrize(("cited", "refused", "must", "expected", "shown", "outcome"), UNSHOWN_CASES)
def test_unshown_citation_precedence(cited, refused, must, expected, shown, outcome):
    assert decide_outcome(cited, refused, must, set(expected), KB, shown=shown) == outcome


def test_unshown_citation_names_no_article():
    assert predicted_label(["17"], False, KB, shown=["5"]) == NONE
    assert predicted_label(["17"], False, KB, shown=["17"]) == "17"
    assert predicted_label(["17"], False, KB, shown=None) == "17"


def test_outcome_lists_agree():
    from typing import get_args

    from harness.reports.svg import OUTCOME_COLORS, OUTCOME_LABELS
    from harness.run_folder.scores import Outcome
    from harness.scoring.outcomes import OUTCOMES

    assert get_args(Outcome) == OUTCOMES
    assert set(OUTCOME_COLORS) == set(OUTCOMES) == set(OUTCOME_LABELS)


@pytest.mark.parametrize(("reason", "cut"), [
    ("length", True), ("max_tokens", True), ("MAX_TOKENS", True), ("FinishReason.MAX_TOKENS", True),
    ("stop", False), ("end_turn", False), ("STOP", False), (None, False), ("content_filter", False),
])
def test_cut_off_finish_reasons(reason, cut):
    from harness.scoring.outcomes import is_cut_off

    assert is_cut_off(reason) is cut
