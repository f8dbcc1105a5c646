"""grace annotations validate and stats: a gold set checked against its KB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotations.labels import LabelRecord
from annotations.stats import gold_stats
from annotations.validate import near_duplicates, validate_gold
from harness.cli.app import cli
from harness.core.errors import GraceError

ARTICLES = [
    ("1", "Annual leave", "You earn annual leave every pay period and can carry over 240 hours.", ["Leave"]),
    ("2", "Sick leave", "Sick leave covers illness, medical appointments and caring for family.", ["Leave"]),
    ("3", "Laptops", "Your laptop is shipped to your home address before your first day.", ["Equipment"]),
    ("4", "Travel approval", "Your supervisor approves conference travel before you book.", ["Travel"]),
    ("5", "Expense claims", "Submit receipts for expense claims within 30 days of the trip.", ["Travel"]),
    ("6", "Parking", "Parking permits are issued by the facilities team at the front desk.", ["Facilities"]),
]


def make_kb(path: Path, articles=ARTICLES) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": i, "title": t, "text": x, "heading_path": h}) for i, t, x, h in articles]
    (path / "articles.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text.lstrip(), encoding="utf-8")
    return path


GOOD = """
question_id,question,expected_citations,must_refuse,category
q1,How many hours of annual leave can I carry over?,1,false,leave
q2,Can I take sick leave to care for family?,2,false,leave
q3,When is my laptop shipped?,3,false,equipment
q4,Who approves conference travel?,4,false,travel
q5,What is the capital of France?,,true,out-of-scope
"""


def test_a_good_gold_set_passes(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = write(tmp_path / "gold.csv", GOOD)
    rep = validate_gold(gold, kb)
    assert rep.errors == [] and rep.must_refuse_share == pytest.approx(0.2)
    assert [w.kind for w in rep.warnings] == []
    res = CliRunner().invoke(cli, ["annotations", "validate", str(gold), "--kb", str(kb)])
    assert res.exit_code == 0, res.output
    assert "must_refuse: 1 of 5 labelled (20.0%" in res.output and "OK: no errors" in res.output


def test_every_problem_is_reported_at_once(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = write(
        tmp_path / "gold.csv",
        """
question_id,question,expected_citations,must_refuse
q1,How many hours of annual leave can I carry over?,1,false
q2,How many hours of annual leave can I carry over ?,1,false
q1,Duplicate id here?,2,false
q3,Where do I park?,9,false
q4,What is the capital of France?,3,true
q5,Who approves conference travel?,,false
q6,Where can I read about parking permits at the front desk?,1,false
""",
    )
    rep = validate_gold(gold, kb, k=1)
    kinds = sorted(e.kind for e in rep.errors)
    assert kinds == ["duplicate_id", "row", "row", "unknown_id"]
    msgs = "\n".join(e.message for e in rep.errors)
    assert "gold.csv:4: duplicate question_id 'q1'" in msgs
    assert "gold.csv:5: question 'q3' cites article 9, not in the KB" in msgs
    assert "gold.csv:6: question 'q4' is must_refuse but lists expected_citations 3" in msgs
    assert "gold.csv:7: question 'q5' has no expected_citations" in msgs
    assert rep.near_duplicates and rep.near_duplicates[0][:2] == ("q1", "q2")
    assert rep.must_refuse_share == 0 and "refuse_share" in {w.kind for w in rep.warnings}
    assert [u.question_id for u in rep.unsurfaced] == ["q6"] and rep.unsurfaced[0].best_rank is None or rep.unsurfaced[0].best_rank > 1
    res = CliRunner().invoke(cli, ["annotations", "validate", str(gold), "--kb", str(kb), "-k", "1"])
    assert res.exit_code == 1 and "FAILED: 4 error(s)" in res.output and "q6  gold 1" in res.output


def test_skipped_and_unlabelled_rows_are_counted_not_errors(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = write(
        tmp_path / "gold.csv",
        """
question_id,question,expected_citations,must_refuse,status
q1,How many hours of annual leave can I carry over?,1,false,labelled
q2,Something odd?,,false,skipped
q3,Not yet looked at?,,false,unlabelled
q4,What is the capital of France?,,true,labelled
""",
    )
    rep = validate_gold(gold, kb)
    assert rep.errors == [] and (rep.labelled, rep.skipped, rep.unlabelled) == (2, 1, 1)
    assert "not_labelled" in {w.kind for w in rep.warnings}
    assert rep.must_refuse_share == 0.5  # of labelled rows only


def test_retired_ids_are_named_with_their_old_titles(tmp_path):
    old = make_kb(tmp_path / "old", ARTICLES + [("7", "Bike storage", "Bikes go in the basement.", ["Facilities"])])
    kb = make_kb(tmp_path / "kb")
    gold = write(tmp_path / "gold.csv", GOOD + "q6,Where do I store my bike?,7,false,facilities\n")

    rep = validate_gold(gold, kb, old_kb=old)
    assert [(r.article_id, r.old_title) for r in rep.retired] == [("7", "Bike storage")]
    assert "cites article 7, not in the KB, was 'Bike storage' (from old KB" in rep.errors[0].message

    (kb / "retired.jsonl").write_text(json.dumps({"id": "7", "title": "Bicycles"}) + "\n")
    assert validate_gold(gold, kb).retired[0].old_title == "Bicycles"
    (kb / "retired.jsonl").unlink()

    titled = write(
        tmp_path / "titled.csv",
        "question_id,question,expected_citations,must_refuse,expected_titles\n"
        "q1,Where do I store my bike?,1;7,false,Annual leave | Bike room\n",
    )
    rep = validate_gold(titled, kb)
    assert rep.retired[0].old_title == "Bike room" and rep.retired[0].title_from == "expected_titles column"
    assert validate_gold(gold, kb).retired[0].old_title is None  # nothing to go on: ID only


def test_near_duplicates_ignore_distinct_questions():
    recs = [LabelRecord(f"q{i}", t) for i, t in enumerate(
        ["How do I book travel?", "how do I book travel", "Where is my laptop?", "Who approves expense claims?"])]
    assert [(a, b) for a, b, _ in near_duplicates(recs)] == [("q0", "q1")]


def test_validate_bad_input_is_a_grace_error(tmp_path):
    kb = make_kb(tmp_path / "kb")
    with pytest.raises(GraceError, match="file not found"):
        validate_gold(tmp_path / "nope.csv", kb)
    bad = write(tmp_path / "bad.csv", 'question_id,question\nq1,"unterminated\nq2,lost?\n')
    with pytest.raises(GraceError, match=r"bad\.csv:2: unreadable CSV .*unclosed quote"):
        validate_gold(bad, kb)
    (tmp_path / "empty").mkdir()
    with pytest.raises(GraceError, match="articles.jsonl"):
        validate_gold(write(tmp_path / "g.csv", GOOD), tmp_path / "empty")


def test_stats_counts_questions_per_article_gaps_and_categories(tmp_path):
    kb = make_kb(tmp_path / "kb")
    gold = write(tmp_path / "gold.csv", GOOD + "q6,How much annual leave do I earn?,1,false,leave\n")
    st = gold_stats(gold, kb)
    assert [(a.id, a.questions) for a in st.per_article] == [("1", 2), ("2", 1), ("3", 1), ("4", 1)]
    assert [a.id for a in st.uncovered] == ["5", "6"]
    assert st.category_column == "category" and st.categories == {"leave": 3, "equipment": 1, "travel": 1, "out-of-scope": 1}
    assert {s.section: (s.covered, s.articles) for s in st.sections}["Travel"] == (1, 2)
    res = CliRunner().invoke(cli, ["annotations", "stats", str(gold), "--kb", str(kb)])
    assert res.exit_code == 0, res.output
    assert "coverage gaps: 2 article(s) with no question" in res.output and "questions by category:" in res.output
    res = CliRunner().invoke(cli, ["annotations", "stats", str(gold), "--kb", str(kb), "--by", "topic"])
    assert isinstance(res.exception, GraceError) and "no column 'topic'" in str(res.exception)
