"""Answers as small local models really write them, scored end to end and shown in the reports.

The cases come from a run of a small model on a llama.cpp server where a
careful person gave each answer the outcome grace's own rules call for, and
grace disagreed: invented JSON objects with an ``id`` read as citations, a
citation nested in the answer object read only when the JSON was cut off, a
title split on "and" into IDs, generic declines not taken for refusals,
citations of articles the model was never shown, and answers cut off by
max_tokens with nothing in the report to say so. Each row here is scored
through ``score_responses`` and its outcome checked against the rules.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.reports import write_reports
from harness.run_folder.report import REPORT_SCHEMA_VERSION
from harness.run_folder.scores import ScoreLine
from harness.scoring import score_responses
from tests.conftest import write

TITLES = {
    "3": "Expenses and receipts", "4": "Annual leave", "7": "Remote work", "9": "Travel booking",
    "12": "Who to contact in HR", "14": "Conduct and ethics", "15": "Notice periods", "18": "Premises",
    "22": "Parking", "40": "Staff directory",
}
SHOWN = ["3", "4", "12", "14", "15", "18"]  # what retrieval put in front of the model, unless a row says otherwise
NOT_SHOWN = ["3", "7", "9"]

# question_id -> (expected citations, must_refuse)
GOLD = {
    "q_premises": ("18", False), "q_hr_contact": ("12", False), "q_notice": ("15", False),
    "q_notice_cut": ("15", False), "q_conduct": ("14", False), "q_parking": ("22", False),
    "q_expenses_cut": ("3", False), "q_weather": ("", True), "q_ceo": ("", True), "q_form": ("4", False),
    "q_carry": ("4", False), "q_source_title": ("14", False), "q_two": ("4", False), "q_leave_cut": ("4", False),
    "q_external": ("4", False), "q_verify": ("4", False),
}

FENCE = "```"
# model -> question_id -> (response, finish_reason, retrieved_ids, lenient outcome, cited IDs)
ANSWERS: dict[str, dict[str, tuple[str, str, list[str] | None, str, list[str]]]] = {
    "llama-local-json": {
        # an object the model made up: its "id" is not a citation (was scored correct)
        "q_premises": (f"Sure! Here is the information about the premises:\n\n{FENCE}json\n"
                       '{\n  "id": 18,\n  "title": "Premises",\n  "content": "The office opens at 8am."\n}\n'
                       f"{FENCE}\n", "stop", SHOWN, "no_citation", []),
        # (was scored wrong_citation, from the "id" of a person)
        "q_hr_contact": ('{"answer": {"id": 40, "name": "Olivia", "role": "HR manager", "email": "olivia@example.com"},'
                         ' "citation": null}', "stop", SHOWN, "no_citation", []),
        # a citation nested in the answer object: read whether the JSON parses ...
        "q_notice": (f"{FENCE}json\n"
                     '{"answer": {"citation_id": "15", "text": "You must give four weeks\' notice in writing."}}\n'
                     f"{FENCE}", "stop", SHOWN, "correct", ["15"]),
        # ... or was cut off by max_tokens
        "q_notice_cut": (f"{FENCE}json\n"
                         '{"answer": {"citation_id": "15", "text": "You must give four weeks\' notice in writing to '
                         'your line manager, who will confirm your last working day and arrange',
                         "length", SHOWN, "correct", ["15"]),
        # a title with "and" in a citation list is not split into IDs (was three IDs: multiple_citations)
        "q_conduct": ('{"answer": "Report misconduct to HR within 7 days.", '
                      '"citation": ["Part 3: Conduct and ethics", "ID: 14"]}', "stop", SHOWN, "correct", ["14"]),
        # the right article, but the model was never shown it (was scored correct)
        "q_parking": ('{"answer": "Permits are issued by Facilities.", "citation": "22"}', "stop", NOT_SHOWN,
                      "unshown_citation", ["22"]),
        # cut off before any citation
        "q_expenses_cut": ('{"answer": "The reimbursement process has several steps. First, collect every receipt, '
                           "then fill in the claim form <script>window.__pwned = 1</script>, attach the receipts and",
                           "length", SHOWN, "no_citation", []),
        "q_weather": ('{"answer": "I don\'t have enough information to answer this question.", "citation": null}',
                      "stop", SHOWN, "correct_refusal", []),
        # must_refuse, and the cited article was not shown: unshown_citation is judged before answered_unanswerable
        "q_ceo": ('{"answer": "The CEO is listed in the staff directory.", "citation": 40}', "stop", NOT_SHOWN,
                  "unshown_citation", ["40"]),
    },
    "llama-local": {
        # generic declines are refusals (were no_citation / answered_unanswerable)
        "q_weather": ("As an AI assistant, I don't have the ability to verify the current weather conditions. "
                      "Please check a weather service.", "stop", SHOWN, "correct_refusal", []),
        "q_ceo": ("I'm not able to provide information about the company's leadership.", "stop", SHOWN,
                  "correct_refusal", []),
        # real answers that say "don't have to" / "cannot" are not refusals
        "q_form": ("You don't have to fill in a form; just tell your manager [ID: 4].", "stop", SHOWN, "correct", ["4"]),
        "q_carry": ("You cannot carry over more than 5 days of leave into the next year [ID: 4].", "stop", SHOWN,
                    "correct", ["4"]),
        "q_verify": ("As an AI, I can't verify your own balance, but full-time staff get 25 days a year [ID: 4].",
                     "stop", SHOWN, "correct", ["4"]),
        # a title in a source label is not a citation
        "q_source_title": ("Misconduct is reported to HR. [Source: Conduct and ethics]", "stop", SHOWN,
                           "no_citation", []),
        # a genuine ID list still is one
        "q_two": ("Leave is 25 days [ID: 3, 4].", "stop", SHOWN, "multiple_citations", ["3", "4"]),
        "q_leave_cut": ("Annual leave is accrued monthly. To work out your balance, take the number of months you "
                        "have worked this year, multiply by", "length", SHOWN, "no_citation", []),
        "q_parking": ("Parking permits are issued by Facilities [ID: 22].", "stop", NOT_SHOWN, "unshown_citation",
                      ["22"]),
        # an external responses file says nothing about what was shown: no unshown check
        "q_external": ("Full-time staff get 25 days [ID: 4].", "stop", None, "correct", ["4"]),
    },
}


@pytest.fixture(autouse=True)
def _offline_tokens(monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")


@pytest.fixture
def scored(tmp_path: Path) -> tuple[Path, Path, dict]:
    kb = tmp_path / "kb"
    write(kb / "articles.jsonl", "".join(json.dumps({"id": a, "title": t, "text": f"{t}: the policy."}) + "\n"
                                         for a, t in TITLES.items()))
    gold = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n" + "".join(
        f"{q},What about {q}?,{e},{str(m).lower()}\n" for q, (e, m) in GOLD.items()))
    rows = []
    for model, answers in ANSWERS.items():
        for qid, (text, finish, retrieved, _, _) in answers.items():
            row = {"schema_version": 2, "question_id": qid, "model": model, "repeat": 0, "response": text,
                   "params": {"temperature": 0.0, "max_tokens": 400}, "finish_reason": finish, "error": None,
                   "output_tokens": 400 if finish == "length" else 60}
            if retrieved is not None:
                row["retrieved_ids"] = retrieved
            rows.append(row)
    responses = write(tmp_path / "out" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    report = score_responses(responses, gold, kb, tmp_path / "out", bootstrap=50)
    return tmp_path / "out", kb, report


def test_each_answer_gets_the_outcome_the_rules_call_for(scored):
    out, _, _ = scored
    lines = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    got = {(s["model"], s["question_id"]): s for s in lines}
    assert len(got) == sum(len(a) for a in ANSWERS.values())
    for model, answers in ANSWERS.items():
        for qid, (_, finish, _, outcome, cited) in answers.items():
            s = got[(model, qid)]
            assert (s["outcome"], s["cited_ids"]) == (outcome, cited), (model, qid)
            assert s["truncated"] is (finish == "length")
            ScoreLine.model_validate(s)


def test_report_counts_unshown_citations_and_cut_off_answers(scored):
    _, _, report = scored
    assert report.schema_version == REPORT_SCHEMA_VERSION
    js, inline = report.models["llama-local-json"], report.models["llama-local"]
    assert js.outcomes["unshown_citation"] == 2 and inline.outcomes["unshown_citation"] == 1
    assert js.unshown_citation_rate == round(2 / 9, 6) and inline.unshown_citation_rate == round(1 / 10, 6)
    # q_notice_cut was cut off but had already cited; q_expenses_cut was cut off before any citation
    assert js.truncated.model_dump() == {"n": 2, "share": round(2 / 9, 6), "no_citation": 1, "max_tokens": 400}
    assert inline.truncated.model_dump() == {"n": 1, "share": 0.1, "no_citation": 1, "max_tokens": 400}
    # an unshown citation names no article in the per-article metrics
    conf = inline.confusion
    row = conf.labels.index("22")
    assert conf.matrix[row][conf.labels.index("none")] == 1
    assert report.warnings == [w for w in report.warnings if "cut off" not in w]  # the writers warn, once


def test_reports_show_the_shares_and_warn_about_max_tokens(scored):
    out, kb, _ = scored
    console = Console(file=io.StringIO(), width=160, record=True)
    written = write_reports(out, kb=kb, console=console)
    warning = "llama-local-json: 2 of 9 answers (22%) were cut off by max_tokens (400) before finishing, 1 of them " \
              "before any citation; raise --max-tokens"
    terminal = " ".join(console.export_text().split())
    assert warning in terminal and "Unshown" in terminal
    md = written["markdown"].read_text()
    assert "max\\_tokens (400)" in md and "| Unshown cit. |" in md
    details = md.split("## Details")[1]
    assert re.search(r"\| llama-local-json \| 9 \| [\d.]+% \| [\d.]+% \| 22\.2% \| (?:[\d.]+%|–) \| 22\.2% \(2\) \| 1 \| 400 \|", details)
    html = written["html"].read_text()
    assert "cut off by max_tokens (400)" in html and "Answer format" in html and "unshown citation" in html
    # model output is hostile: the cut-off answer is shown as text among the failures, never as markup
    assert not re.search(r"<script", html, re.I) and "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html


def test_cut_off_answers_from_other_apis(tmp_path):
    """Anthropic says "max_tokens" and Gemini "MAX_TOKENS" where OpenAI-compatible servers say "length"."""
    kb = write(tmp_path / "kb" / "articles.jsonl", json.dumps({"id": "4", "title": "Leave", "text": "25 days."}) + "\n")
    gold = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\nq1,Leave?,4,false\n")
    rows = [{"question_id": "q1", "model": m, "response": "Annual leave is accrued", "finish_reason": r,
             "params": {"max_tokens": 64}} for m, r in [("claude", "max_tokens"), ("gemini", "MAX_TOKENS"),
                                                        ("gpt", "stop"), ("old", None)]]
    responses = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    report = score_responses(responses, gold, kb.parent, tmp_path / "out", bootstrap=0)
    cut = {name: m.truncated.n for name, m in report.models.items()}
    assert cut == {"claude": 1, "gemini": 1, "gpt": 0, "old": 0}
    assert report.models["claude"].truncated.max_tokens == 64
