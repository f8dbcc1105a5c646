"""grace annotate with suggestions: provenance decided by the server, drafts, --only, --order, agreement."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from annotations import agreement
from annotations.server import AnnotationApp
from annotations.state import AnnotationSession
from annotations.stats import gold_stats
from annotations.suggestions import Suggestion, read_suggestions, write_suggestions
from harness.cli.app import cli
from harness.core.errors import GraceError
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.annotations.test_annotations_server import gold_rows, make_kb, write_questions


@pytest.fixture
def kb(tmp_path):
    return load_kb(make_kb(tmp_path))


def app_for(session: AnnotationSession) -> AnnotationApp:
    return AnnotationApp(session, session.kb.retriever(), k=5)


def rows_by_id(path: Path) -> dict[str, dict[str, str]]:
    return {r["question_id"]: r for r in gold_rows(path)}


def label(app: AnnotationApp, qid: str, cites=(), refuse=False, status="labelled", **extra) -> dict:
    return app.label({"question_id": qid, "status": status, "expected_citations": list(cites), "must_refuse": refuse,
                      **extra})["record"]


SUGGESTIONS = {
    "q1": Suggestion("q1", suggested="1", support=1.0, source="run:r", votes="1:3", voters=3, reason="3 of 3 models cite 1"),
    "q2": Suggestion("q2", suggested="4", support=0.67, source="run:r", votes="4:2 5:1", voters=3, flag="weak",
                     reason="2 of 3 models cite 4"),
    "q3": Suggestion("q3", source="run:r", votes="1:1 2:1", voters=2, flag="split", support=0.5,
                     reason="tie between the top labels (1:1 2:1)"),
}


@pytest.fixture
def suggested(kb, tmp_path):
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"), annotator="ann")
    s.use_suggestions(SUGGESTIONS, "suggestions.csv")
    yield s, app_for(s)
    s.close()


# -- provenance -----------------------------------------------------------------------------------


def test_provenance_is_accepted_changed_or_human(suggested, tmp_path):
    session, app = suggested
    q = app.question(0)
    assert q["suggestion"]["suggested"] == "1" and q["suggestion"]["usable"]
    assert [a["title"] for a in q["suggestion"]["articles"]] == ["Annual leave"]
    assert app.question(2)["suggestion"]["usable"] is False  # split: shown, not acceptable
    assert app.question(3)["suggestion"] is None

    assert label(app, "q1", ["1"])["provenance"] == "accepted_suggestion"
    assert label(app, "q2", ["5"])["provenance"] == "changed_suggestion"  # a weak suggestion, overridden
    assert label(app, "q3", refuse=True)["provenance"] == "human"  # only an unusable suggestion was shown
    assert label(app, "q4", ["2"])["provenance"] == "human"
    rows = rows_by_id(tmp_path / "gold.csv")
    assert [(rows[q]["provenance"], rows[q]["suggested"], rows[q]["suggestion_source"]) for q in ("q1", "q2", "q3", "q4")] == [
        ("accepted_suggestion", "1", "run:r"), ("changed_suggestion", "4", "run:r"), ("human", "", ""), ("human", "", ""),
    ]
    p = app.state()["progress"]
    assert p["provenance"] == {"accepted_suggestion": 1, "changed_suggestion": 1, "human": 2} and p["suggested"] == 2


def test_the_page_cannot_claim_provenance(suggested, tmp_path):
    _, app = suggested
    rec = label(app, "q1", ["2"], provenance="accepted_suggestion", suggested="2", suggestion_source="me")
    assert (rec["provenance"], rec["suggested"], rec["suggestion_source"]) == ("changed_suggestion", "1", "run:r")
    rec = label(app, "q4", ["2"], provenance="accepted_suggestion", suggested="2")
    assert (rec["provenance"], rec["suggested"]) == ("human", "")


def test_a_text_edit_keeps_provenance_and_a_new_label_recomputes_it(suggested, tmp_path):
    _, app = suggested
    label(app, "q2", ["5"])
    assert label(app, "q2", ["5"], notes="5 is the current policy")["provenance"] == "changed_suggestion"
    assert label(app, "q2", ["4"])["provenance"] == "accepted_suggestion"
    assert label(app, "q2", ["4", "5"])["provenance"] == "changed_suggestion"
    rec = label(app, "q2", status="skipped")
    assert rec["provenance"] == "" and rec["suggested"] == "4"  # kept, so reopening shows the same suggestion
    assert label(app, "q1", refuse=True)["provenance"] == "changed_suggestion"


def test_a_label_kept_against_a_newly_shown_suggestion_is_judged_again(suggested):
    session, app = suggested
    assert label(app, "q4", ["2"])["provenance"] == "human"
    assert label(app, "q4", ["2"], notes="x")["provenance"] == "human"
    session.use_suggestions({"q4": Suggestion("q4", suggested="3", source="labeler:fake:m")}, "later.csv")
    rec = label(app, "q4", ["2"], notes="still 2")  # seen beside the suggestion and kept
    assert (rec["provenance"], rec["suggested"], rec["suggestion_source"]) == ("changed_suggestion", "3", "labeler:fake:m")


def test_a_reopened_file_shows_the_suggestion_its_labels_were_judged_against(kb, tmp_path):
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"))
    s.use_suggestions(SUGGESTIONS, "suggestions.csv")
    label(app_for(s), "q1", ["1"])
    s.close()
    again = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.csv")  # no suggestions given
    try:
        app = app_for(again)
        assert app.question(0)["suggestion"]["suggested"] == "1" and app.question(1)["suggestion"] is None
        assert label(app, "q1", ["3"])["provenance"] == "changed_suggestion"
    finally:
        again.close()


# -- the suggestions file and a run ---------------------------------------------------------------


def test_a_suggestions_file_round_trips_and_bad_ones_say_where(kb, tmp_path):
    path = write_suggestions(tmp_path / "s.csv", SUGGESTIONS.values())
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"))
    try:
        assert s.use_suggestions(read_suggestions(path), path) == 3
        other = {"x1": Suggestion("x1", suggested="1")}
        with pytest.raises(GraceError, match=r"none of its 1 question_id\(s\).*grace annotations suggest"):
            s.use_suggestions(other, "other.csv")
        bad = tmp_path / "bad.csv"
        bad.write_text("question_id,suggested\nq1,1\nq2,99\n", encoding="utf-8")
        with pytest.raises(GraceError, match=r"bad\.csv:3: question 'q2' is suggested article\(s\) 99, not in the KB"):
            s.use_suggestions(read_suggestions(bad), bad)
    finally:
        s.close()


def test_run_consensus_through_the_labelling_workflow(kb, tmp_path):
    from grace import open_labelling

    responses = tmp_path / "responses.jsonl"
    rows = [{"question_id": q, "model": m, "repeat": 0, "response": text}
            for q, answers in {"q1": ["[ID: 1]", "[ID: 1]", "[ID: 2]"], "q2": ["[ID: 4]", "[ID: 5]", "[ID: 6]"]}.items()
            for m, text in zip(("a", "b", "c"), answers, strict=True)]
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with open_labelling(kb.path, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"), k=5,
                        run=responses, order="informative") as opened:
        app = opened.app
        assert opened.notes == [f"consensus of 3 model(s) in {responses}: a suggestion for 1 of 4 questions"]
        assert opened.warnings == []
        # informative: no suggestion first (q3, q4 have no votes; q2 split), the 2-of-3 consensus last
        assert app.state()["question_ids"] == ["q2", "q3", "q4", "q1"]
        q1 = app.question(3)["suggestion"]
        assert (q1["suggested"], q1["flag"], q1["source"]) == ("1", "weak", f"run:{responses}")
        assert label(app, "q1", ["1"])["provenance"] == "accepted_suggestion"
    # closed: the gold file is free for the next writer, and holds the accepted label
    assert rows_by_id(tmp_path / "gold.csv")["q1"]["expected_citations"] == "1"


def test_order_informative_puts_the_weakest_suggestions_first(suggested):
    session, app = suggested
    assert app.state()["question_ids"] == ["q1", "q2", "q3", "q4"]
    session.order_by("informative")
    # q4 has no row at all, q3 none usable, then by rising support
    assert app.state()["question_ids"] == ["q4", "q3", "q2", "q1"]
    assert app.question(0)["record"]["question_id"] == "q4"
    label(app, "q4", ["2"])
    assert app.state()["statuses"] == ["labelled", "unlabelled", "unlabelled", "unlabelled"]
    assert app.state()["progress"]["first_unlabelled"] == 1
    with pytest.raises(GraceError, match="--order must be one of"):
        session.order_by("random")


# -- drafts ---------------------------------------------------------------------------------------


def write_drafts(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse", "status", "suggestion_source"])
        w.writerow(["d1", "How many hours of annual leave can I carry over?", "1", "false", "draft", "generated:fake:m"])
        w.writerow(["d2", "Who approves my conference travel?", "4", "false", "draft", "generated:fake:m"])
        w.writerow(["d3", "Can I work from Spain for a month?", "", "true", "draft", "generated:fake:m"])
        w.writerow(["d4", "Where is my laptop?", "3", "false", "labelled", ""])
    return path


def test_drafts_are_suggested_and_become_gold_only_when_accepted(kb, tmp_path):
    gold = write_drafts(tmp_path / "draft.csv")
    assert [g.question_id for g in read_gold(gold)] == ["d4"]
    s = AnnotationSession.open(kb, gold, from_gold=gold, annotator="ann")
    try:
        app = app_for(s)
        assert app.state()["progress"]["first_unlabelled"] == 0 and app.state()["progress"]["draft"] == 3
        q = app.question(0)
        assert q["record"]["status"] == "draft" and q["suggestion"]["source"] == "generated:fake:m"
        assert app.question(3)["suggestion"] is None
        # a text edit keeps the draft and its proposal; the page cannot make a draft of a labelled row
        rec = label(app, "d2", status="draft", notes="check the travel page")
        assert (rec["status"], rec["expected_citations"]) == ("draft", ["4"])
        with pytest.raises(ValueError, match="only 'grace gold generate' writes drafts"):
            label(app, "d4", status="draft")
        rec = label(app, "d1", ["1"])
        assert (rec["status"], rec["provenance"], rec["suggested"]) == ("labelled", "accepted_suggestion", "1")
        assert label(app, "d3", refuse=True)["provenance"] == "accepted_suggestion"
        assert label(app, "d2", ["5"])["provenance"] == "changed_suggestion"
    finally:
        s.close()
    rows = rows_by_id(gold)
    assert rows["d1"]["suggestion_source"] == "generated:fake:m" and rows["d3"]["suggested"] == "REFUSE"
    assert rows["d2"]["notes"] == "check the travel page" and rows["d2"]["suggested"] == "4"
    assert [g.label for g in read_gold(gold)] == ["1", "5", "REFUSE", "3"]


# -- --only SUSPECTS ------------------------------------------------------------------------------


def write_gold(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse", "notes"])
        for qid, text, cites in [("g1", "How many hours of annual leave can I carry over?", "1"),
                                 ("g2", "Who approves my conference travel?", "5"),
                                 ("g3", "Can I take leave for my child's illness?", "1"),
                                 ("g4", "Do I get leave when I am sick?", "2"),
                                 ("g5", "Where is my laptop?", "3"),
                                 ("g6", "What is the capital of France?", "")]:
            w.writerow([qid, text, cites, "false" if cites else "true", f"note {qid}"])
    return path


def write_suspects(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "gold", "suggested", "agree", "gold_votes", "voters", "kind", "check", "reason"])
        w.writerows(rows)
    return path


SUSPECTS = [
    ["g2", "Who approves my conference travel?", "5", "4", "3", "0", "3", "other_article", "article 4 (Travel approval)",
     "3 of 3 models cite 4 (Travel approval), 0 the gold article"],
    ["g3;g4", "", "1;2", "1;2", "4", "0", "0", "near_duplicates", "articles 1 and 2",
     "models swap 1 and 2 both ways: accept both as answers, or merge them in the KB"],
]


def test_only_opens_exactly_the_listed_questions_and_saves_into_the_whole_file(kb, tmp_path):
    gold = write_gold(tmp_path / "gold.csv")
    suspects = write_suspects(tmp_path / "suspects.csv", SUSPECTS)
    s = AnnotationSession.open(kb, gold, from_gold=gold, annotator="rev")
    before = rows_by_id(gold)
    try:
        assert s.only(suspects) == 3
        app = app_for(s)
        st = app.state()
        assert st["question_ids"] == ["g2", "g3", "g4"] and st["review"] is True
        assert (st["progress"]["total"], st["progress"]["file_total"], st["progress"]["reviewed"]) == (3, 6, 0)
        q = app.question(0)
        assert q["record"]["expected_citations"] == ["5"]  # the gold label ...
        assert q["suggestion"]["suggested"] == "4" and q["suggestion"]["support"] == 1.0  # ... beside the suggestion
        assert q["suggestion"]["source"] == f"audit:{suspects}"
        assert q["audit"][0]["kind"] == "other_article" and "3 of 3 models" in q["audit"][0]["reason"]
        assert app.question(2)["suggestion"]["suggested"] == "1;2" and app.question(2)["audit"][0]["questions"] == 2
        assert label(app, "g2", ["4"])["provenance"] == "accepted_suggestion"
        assert label(app, "g3", ["1"])["provenance"] == "changed_suggestion"  # kept the gold, against the audit
        assert app.state()["progress"]["reviewed"] == 2
    finally:
        s.close()
    after = rows_by_id(gold)
    assert list(after) == ["g1", "g2", "g3", "g4", "g5", "g6"]
    assert after["g2"]["expected_citations"] == "4" and after["g3"]["expected_citations"] == "1"
    for qid in ("g1", "g4", "g5", "g6"):  # untouched rows keep their label and notes
        assert {k: after[qid][k] for k in before[qid]} == before[qid]


@pytest.mark.parametrize("rows, message", [
    ([SUSPECTS[0], ["g2;g99", "", "5", "4", "1", "0", "1", "near_duplicates", "", ""]],
     r"suspects\.csv:3: question 'g99' is not in the gold labels being reviewed .*grace annotations audit"),
    ([SUSPECTS[0], ["", "", "5", "4", "1", "0", "1", "other_article", "", ""]], r"suspects\.csv:3: empty question_id"),
    ([["g2", "", "5", "77", "2", "0", "2", "other_article", "", ""]], r"suspects\.csv:2: question 'g2' is suggested .*77"),
    ([["g2", "", "5", "4", "two", "0", "2", "other_article", "", ""]], r"suspects\.csv:2: agree must be a whole number"),
    ([], r"suspects\.csv: lists no suspect"),
])
def test_a_bad_suspects_file_says_where_and_what_to_do(kb, tmp_path, rows, message):
    gold = write_gold(tmp_path / "gold.csv")
    s = AnnotationSession.open(kb, gold, from_gold=gold)
    before = gold.read_text()
    try:
        with pytest.raises(GraceError, match=message):
            s.only(write_suspects(tmp_path / "suspects.csv", rows))
    finally:
        s.close()
    assert gold.read_text() == before


def test_the_cli_refuses_a_bad_suspects_file_before_serving(tmp_path):
    kb = make_kb(tmp_path)
    gold = write_gold(tmp_path / "gold.csv")
    suspects = write_suspects(tmp_path / "suspects.csv", [["g7", "", "5", "4", "1", "0", "1", "other_article", "", ""]])
    res = CliRunner().invoke(cli, ["annotate", str(kb), "--from-gold", str(gold), "--only", str(suspects), "--no-browser"])
    assert isinstance(res.exception, GraceError) and "suspects.csv:2: question 'g7'" in str(res.exception)
    res = CliRunner().invoke(cli, ["annotate", str(kb), "--from-gold", str(gold), "--suggestions", str(suspects),
                                   "--run", str(tmp_path), "--no-browser"])
    assert isinstance(res.exception, GraceError) and "not both" in str(res.exception)
    # the lock was released: the same file opens again
    AnnotationSession.open(load_kb(kb), gold, from_gold=gold).close()


# -- agreement and stats --------------------------------------------------------------------------


def test_agree_reports_the_suggester_against_people_per_source(kb, tmp_path):
    s = AnnotationSession.open(kb, tmp_path / "a.csv", questions=write_questions(tmp_path / "q.csv"), annotator="alice")
    s.use_suggestions({**SUGGESTIONS, "q4": Suggestion("q4", suggested="2", source="labeler:fake:m", reason="r")}, "s.csv")
    app = app_for(s)
    label(app, "q1", ["1"]), label(app, "q2", ["5"]), label(app, "q3", refuse=True), label(app, "q4", ["2"])
    s.close()
    rows = agreement.suggester_agreement([tmp_path / "a.csv"])
    by = {r.source: r for r in rows}
    assert [r.source for r in rows] == ["run:r", "labeler:fake:m", "all"]
    assert (by["run:r"].rows, by["run:r"].accepted) == (2, 1) and (by["all"].rows, by["all"].accepted) == (3, 2)
    assert by["all"].kappa == pytest.approx(cohen_kappa_score(["1", "4", "2"], ["1", "5", "2"]))
    assert math.isnan(by["labeler:fake:m"].kappa)  # one row, one label: chance agreement is total

    res = CliRunner().invoke(cli, ["annotations", "agree", str(tmp_path / "a.csv")])  # one file: the suggester only
    assert res.exit_code == 0, res.output
    assert "run:r: 2 row(s), accepted 1 (50.0%)" in res.output and "all: 3 row(s), accepted 2 (66.7%)" in res.output

    st = gold_stats(tmp_path / "a.csv", tmp_path / "kb")
    assert st.provenance == {"accepted_suggestion": 2, "changed_suggestion": 1, "human": 1}
    from annotations.stats import render
    assert "labels by provenance:" in render(st)
