"""Questions without labels are a first-class input: a team starts with questions and no gold.

``grace run`` (and ``grace.run``) take a file of questions alone, ask the models and report what needs no label
(answers, refusals, citations, how often the models agree), with no accuracy; the gold file's reader tells a
question set from gold in the making, and what needs labels says so. The figures are checked against counts made
here from responses.jsonl, apart from grace's scorer.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict

import pytest

import grace
from harness.core.errors import GraceError
from kb_builder.gold import load_gold, require_labels
from tests.conftest import run_grace, small_bench, write

MODELS = ("-m", "baseline:top1", "-m", "baseline:threshold", "--threshold", "0.9")


@pytest.fixture
def bench(tmp_path):
    root = small_bench(tmp_path, 8, ["What is the capital of France?", "Who won the 1998 World Cup?"])
    with (root / "gold.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    write(root / "questions.csv", "question_id,question\n" + "".join(f"{r['question_id']},{r['question']}\n" for r in rows))
    return root


@pytest.mark.parametrize("text", [
    "question_id,question\nq1,How many sick days?\nq2,Who books flights?\n",
    "question_id,question,expected_citations,must_refuse\nq1,How many sick days?,,\nq2,Who books flights?,,false\n",
    "question_id,question,expected_citations,must_refuse,status\nq1,How many sick days?,,,unlabelled\n"
    "q2,Who books flights?,,,unlabelled\n",
])
def test_a_file_of_questions_without_labels_is_a_question_set(tmp_path, text):
    gold = load_gold(write(tmp_path / "q.csv", text))
    assert not gold.labelled and [q.question_id for q in gold.questions] == ["q1", "q2"]
    assert not any(q.labelled for q in gold.questions)
    with pytest.raises(GraceError, match=r"q\.csv: an audit needs labelled questions, .* label them first"):
        require_labels(gold, "an audit")


def test_gold_in_the_making_still_refuses_a_forgotten_label_and_a_lone_label_column(tmp_path):
    mixed = write(tmp_path / "m.csv", "question_id,question,expected_citations,must_refuse\n"
                                      "q1,How many sick days?,3,false\nq2,Who books flights?,,false\n")
    with pytest.raises(GraceError, match=r"m\.csv:3: question 'q2' has no expected_citations .* set its status to "
                                         "unlabelled to leave it out"):
        load_gold(mixed)
    kept = write(tmp_path / "k.csv", "question_id,question,expected_citations,must_refuse,status\n"
                                     "q1,How many sick days?,3,false,labelled\nq2,Who books flights?,,,unlabelled\n")
    gold = load_gold(kept)
    assert gold.labelled and [q.question_id for q in gold.questions] == ["q1"]
    lone = write(tmp_path / "l.csv", "question_id,question,expected_citations\nq1,How many sick days?,3\n")
    with pytest.raises(GraceError, match=r"l\.csv:1: missing column\(s\) must_refuse; .*needs neither"):
        load_gold(lone)


def _hand_count(responses):
    """Per model, refusals and citations; per question, each model's label (an article ID or REFUSE)."""
    refused, cited = defaultdict(int), defaultdict(int)
    labels = defaultdict(dict)
    for line in responses.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        ids = re.findall(r"\[ID:\s*([^\]]+)\]", row["response"] or "")
        if ids:
            cited[row["model"]] += 1
            labels[row["question_id"]][row["model"]] = ids[0].strip()
        else:
            refused[row["model"]] += 1
            labels[row["question_id"]][row["model"]] = "REFUSE"
    return refused, cited, labels


def test_grace_run_asks_a_question_set_and_reports_without_accuracy(bench):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "questions.csv", *MODELS,
                          "--out", bench / "runs" / "first")
    assert code == 0, out
    run = bench / "runs" / "first"
    report = json.loads((run / "report.json").read_text())
    assert report["unlabelled"]["absent"] and "accuracy" in report["unlabelled"]["absent"]
    refused, cited, labels = _hand_count(run / "responses.jsonl")
    assert len(labels) == 10 and sum(refused.values()) > 0 and sum(cited.values()) > 0
    for name, m in report["models"].items():
        assert m["accuracy"] is None and m["rank"] is None and m["n"] == 10
        assert m["outcomes"]["refusal"] == refused[name]
        assert m["outcomes"]["unjudged_citation"] == cited[name]
    agree = sum(len(set(v.values())) == 1 for v in labels.values())
    assert 0 < agree < 10  # the threshold's cut makes the two models agree on some questions and not on others
    assert f"the models agree on a label for {agree} of 10 question(s)" in " ".join(out.split())
    assert f"split on {10 - agree}" in out and "grace annotations suggest" in out
    agreed = [next(iter(v.values())) for v in labels.values() if len(set(v.values())) == 1]
    cites = [a for a in agreed if a != "REFUSE"]
    assert (f"agreed labels: {agreed.count('REFUSE')} refusal(s), {len(cites)} citation(s) of {len(set(cites))} "
            "article(s)") in " ".join(out.split())
    assert "No labels, so no accuracy" in out


def test_the_api_returns_the_agreement_and_the_report_without_accuracy(bench):
    result = grace.run(kb=bench / "kb", gold=bench / "questions.csv", out=bench / "runs" / "api",
                       models=["baseline:top1", "baseline:threshold"], threshold=0.9)
    _, _, labels = _hand_count(bench / "runs" / "api" / "responses.jsonl")
    assert result.run.report.unlabelled is not None
    usable = {s.question_id: s.suggested for s in result.suggestions if s.usable}
    assert 0 < len(usable) < len(result.suggestions) == 10
    assert usable == {q: next(iter(v.values())) for q, v in labels.items() if len(set(v.values())) == 1}
    scored = grace.score(bench / "runs" / "api" / "responses.jsonl", bench / "questions.csv", bench / "kb",
                         bench / "rescored")  # grace score takes the questions alone too
    assert scored.report.unlabelled is not None and all(m.accuracy is None for m in scored.report.models.values())
    labelled = grace.run(kb=bench / "kb", gold=bench / "gold.csv", out=bench / "runs" / "gold",
                         models=["baseline:top1"])
    assert labelled.suggestions is None and labelled.run.report.unlabelled is None


def test_what_needs_labels_says_so(bench):
    q = bench / "questions.csv"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", q, "-m", "baseline:threshold", "--out", bench / "r")
    assert code == 2 and "baseline:threshold fits its refusal cut on the gold labels" in out
    code, out = run_grace("annotations", "audit", q, "--kb", bench / "kb", "--run", bench / "r", "--out", bench / "s.csv")
    assert code == 2 and "an audit of the labels needs labelled questions" in out
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", q, "--machine-gold", bench / "gold.csv",
                          "-m", "baseline:top1", "--out", bench / "r2")
    assert code == 2 and "--machine-gold (its human labels of a random subset) needs labelled questions" in out
