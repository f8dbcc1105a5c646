"""Issue 46: gold that says whether its listed articles are alternatives ("any", the default) or all required
("all"), carried by every reader and writer of gold: the annotation app (its API and the file it writes), validate,
the machine labels PPI reads, and the exported table."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from annotations.machine_labels import read_machine_labels
from annotations.state import AnnotationSession, LabelRejected
from annotations.validate import validate_gold
from harness.cli.app import cli
from harness.scoring.prediction_powered import asked_questions, machine_keys
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.annotations.test_annotations_server import Server, gold_rows, make_kb, write_questions


def test_the_annotation_app_marks_a_questions_articles_all_required(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"), annotator="a")
    try:
        s.save("q2", status="labelled", expected_citations=["4", "5"])
        assert "citations_needed" not in gold_rows(tmp_path / "gold.csv")[0]  # an old-style file until asked
        srv = Server(s)
        try:
            code, body = srv.json("/api/label", {"question_id": "q2", "status": "labelled",
                                                 "expected_citations": ["4", "5"], "citations_needed": "all"})
            assert code == 200 and body["record"]["extra"]["citations_needed"] == "all"
            code, body = srv.json("/api/label", {"question_id": "q2", "status": "labelled",
                                                 "expected_citations": ["4", "5"], "citations_needed": "both"})
            assert code == 400 and "citations_needed" in str(body)
        finally:
            srv.close()
        with pytest.raises(LabelRejected):
            s.save("q1", status="labelled", expected_citations=["1"], citations_needed="every")
        s.save("q1", status="labelled", expected_citations=["1"])
        s.save("q3", status="labelled", must_refuse=True)
        s.save("q4", status="labelled", expected_citations=["2"])
    finally:
        s.close()
    rows = {r["question_id"]: r for r in gold_rows(tmp_path / "gold.csv")}
    assert rows["q2"]["citations_needed"] == "all" and rows["q1"]["citations_needed"] == ""
    needed = {g.question_id: g.citations_needed for g in read_gold(tmp_path / "gold.csv")}
    assert needed == {"q1": "any", "q2": "all", "q3": "any", "q4": "any"}
    again = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.csv", annotator="a")
    try:  # resumed: the column and its cells are kept as written
        again.save("q4", status="labelled", expected_citations=["2", "1"])
    finally:
        again.close()
    assert {r["question_id"]: r["citations_needed"] for r in gold_rows(tmp_path / "gold.csv")}["q2"] == "all"


def test_validate_counts_all_of_questions_and_names_a_bad_cell(tmp_path):
    kb = make_kb(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text("question_id,question,expected_citations,must_refuse,citations_needed\n"
                    "q1,Carry over?,1;2,false,all\nq2,Travel?,4,false,\nq3,France?,,true,all\n")
    rep = validate_gold(gold, kb)
    assert rep.errors == [] and rep.all_needed == 2
    assert [w.kind for w in rep.warnings if w.kind == "citations_needed"] == ["citations_needed"]
    res = CliRunner().invoke(cli, ["annotations", "validate", str(gold), "--kb", str(kb)])
    assert "citations_needed all: 2 question(s)" in res.output
    gold.write_text("question_id,question,expected_citations,must_refuse,citations_needed\nq1,Carry over?,1;2,false,any\n"
                    "q2,Travel?,4,false,several\n")
    rep = validate_gold(gold, kb)
    assert [e.line for e in rep.errors] == [3] and "citations_needed" in rep.errors[0].message


def test_machine_labels_carry_it_and_an_all_of_label_is_no_one_article_hit(tmp_path):
    machine = tmp_path / "machine.csv"
    machine.write_text("question_id,question,expected_citations,must_refuse,citations_needed\n"
                       "m1,One?,1;2,false,all\nm2,Two?,1;2,false,\nm3,Three?,3,false,all\n")
    labels = read_machine_labels(machine)
    assert [labels.labels[q].citations_needed for q in ("m1", "m2", "m3")] == ["all", "any", "all"]
    asked = asked_questions([], labels)
    assert [g.citations_needed for g in asked] == ["all", "any", "all"]
    names = ["1", "2", "3", "REFUSE", "none"]
    keys = machine_keys(asked, labels, names).tolist()
    # m2 (index 1): articles 1 or 2 are hits; m3 (index 2, one article): 3 is; m1 (all of two): no one article is
    assert keys == [1 * 5 + 0, 1 * 5 + 1, 2 * 5 + 2]


def test_the_label_audit_does_not_tell_an_all_of_question_to_list_an_alternative(tmp_path):
    """Three models cite article 5 on a question whose gold is 1;2: under "any" the audit says list it beside them;
    under "all" that would make it required too, so the audit says so."""
    from harness.scoring.label_audit import audit
    from harness.scoring.votes import QuestionVotes
    from kb_builder.gold import GoldQuestion

    votes = {"q": QuestionVotes("q", {"a": "5", "b": "5", "c": "5"}, {"a", "b", "c"})}
    [anyof] = audit([GoldQuestion("q", "Q?", ["1", "2"])], votes)
    [allof] = audit([GoldQuestion("q", "Q?", ["1", "2"], citations_needed="all")], votes)
    assert anyof.kind == allof.kind == "other_article"
    assert anyof.reason.endswith("(then list both: 1;2;5)")
    assert "every one required as citations_needed is all; or set it to any" in allof.reason
