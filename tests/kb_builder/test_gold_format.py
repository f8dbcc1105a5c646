"""The gold CSV format has one home, kb_builder/gold.py: its columns, its row rules, its record.

The harness (``grace run``, ``grace score``) and the annotation apps (``grace annotate``, ``grace annotations
validate/agree``) read the same rows through it, so a bad row is told the same thing wherever it is read.
"""

from __future__ import annotations

import ast

import pytest

from annotations.labels import OUT_COLUMNS, LabelRecord, read_labels, render_csv
from annotations.validate import validate_gold
from harness.core.errors import GraceError
from kb_builder import gold
from kb_builder.gold import GOLD_COLUMNS, NO_CATEGORY, GoldQuestion, GoldRecord, load_gold
from tests.annotations.test_annotations_validate import make_kb, write
from tests.conftest import ROOT

# the columns only the gold format has (question_id, question and notes are common words in other formats too)
GOLD_ONLY = (gold.EXPECTED_ANSWER, gold.EXPECTED_CITATIONS, gold.MUST_REFUSE)

# modules where those words name a field of another format, not a gold CSV column
OTHER_FORMATS = {
    "harness/reports/failures.py": "scores.jsonl rows (harness/run_folder/scores.py ScoreLine)",
    "harness/scoring/run_comparison.py": "scores.jsonl rows",
    "harness/spotcheck/inputs.py": "scores.jsonl rows",
    "harness/viewer/build.py": "scores.jsonl rows",
    "kb_builder/lint.py": "scores.jsonl rows",
    "harness/viewer/question.py": "the viewer's JSON API",
    "harness/viewer/runs.py": "the viewer's JSON API (run.json's gold counts)",
    "annotations/server.py": "the annotation page's JSON (LabelRecord.to_json)",
    "annotations/state.py": "the annotation page's JSON (progress counts)",
    "harness/exports/table.py": "scores.jsonl rows, and the exported table's own columns",
}


def spelled(path) -> list[tuple[int, str]]:
    """Where a module spells a gold-only column name as a whole string (prose in a longer string does not count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in GOLD_ONLY]


def test_the_gold_columns_are_spelled_in_one_module():
    """agreement.py spelled the columns a third time, labels.py and validate.py a second; now they name them
    through kb_builder.gold's constants, and only modules of other formats spell the same words."""
    found = []
    for package in ("harness", "kb_builder", "annotations"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "kb_builder/gold.py" or rel in OTHER_FORMATS:
                continue
            found += [f"{rel}:{line}: {value!r}: use kb_builder.gold's constant" for line, value in spelled(path)]
    assert found == [], "\n".join(found)
    assert len(spelled(ROOT / "kb_builder" / "gold.py")) == len(GOLD_ONLY)  # once each, as the constants


def test_the_other_formats_list_is_not_stale():
    """A module that no longer spells the words leaves the list, so the list cannot hide a new gold reader."""
    stale = [rel for rel in OTHER_FORMATS if (ROOT / rel).exists() and not spelled(ROOT / rel)]
    assert stale == [], f"remove from OTHER_FORMATS: {stale}"


BAD_ROWS = {
    ",How?,1,false": "gold.csv:3: empty question_id",
    "q2,,1,false": "gold.csv:3: question 'q2' has an empty question",
    "q2,How?,1,maybe": "gold.csv:3: column 'must_refuse' must be true or false, got 'maybe'",
    "q2,How?,1,true": "gold.csv:3: question 'q2' is must_refuse but lists expected_citations 1; clear one of the two",
    "q1,How?,1,false": "gold.csv:3: duplicate question_id 'q1' (first on line 2)",
}


@pytest.mark.parametrize("row", list(BAD_ROWS))
def test_a_bad_row_is_told_the_same_by_every_reader(tmp_path, row):
    """The harness's reader (load_gold) and the annotation apps' (read_labels) share one row validator."""
    path = write(tmp_path / "gold.csv", f"question_id,question,expected_citations,must_refuse\nq1,Hi?,1,false\n{row}\n")
    messages = []
    for read in (load_gold, read_labels):
        with pytest.raises(GraceError) as exc:
            read(path)
        messages.append(str(exc.value))
    assert messages[0] == messages[1] and messages[0].endswith(BAD_ROWS[row]), messages


def test_validate_tells_an_unlabelled_gold_row_what_grace_run_tells_it(tmp_path):
    """validate spelled the gold rule's message itself, and its fix lacked the "to true". (A file where no row has
    a label is a question set, which grace run asks without accuracy: the rule is for gold in the making.)"""
    path = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\nq0,Leave?,1,false\n"
                                        "q1,Hi?,,false\n")
    with pytest.raises(GraceError) as exc:
        load_gold(path)
    rep = validate_gold(path, make_kb(tmp_path / "kb"))
    assert [e.message for e in rep.errors] == [str(exc.value)]
    assert "give the answering article ID(s) or set must_refuse to true, or set its status to unlabelled" in str(exc.value)


def test_a_label_record_is_the_gold_record_plus_its_bookkeeping(tmp_path):
    """One typed record: an annotation row is a GoldRecord, written with the gold columns first, and a labelled
    file reads back as the same gold questions."""
    recs = [LabelRecord("q1", "=1+1?", ["7", "3"], status="labelled", notes="n", extra={"category": "x"}),
            LabelRecord("q2", "Out of scope?", must_refuse=True, status="labelled", extra={"category": ""}),
            LabelRecord("q3", "Later?", extra={"category": ""})]
    assert all(isinstance(r, GoldRecord) for r in recs)
    assert OUT_COLUMNS[: len(GOLD_COLUMNS)] == GOLD_COLUMNS
    path = tmp_path / "labels.csv"
    path.write_text(render_csv(recs, ["category"]), encoding="utf-8")
    back, extra = read_labels(path)
    assert [r.to_row() for r in back] == [r.to_row() for r in recs]
    assert extra == ["category"]
    questions = load_gold(path).questions
    assert questions == (  # the category column is also read into the question (an empty cell: its own slice)
        GoldQuestion("q1", "=1+1?", ["7", "3"], False, notes="n", line=2, extra=questions[0].extra, category="x"),
        GoldQuestion("q2", "Out of scope?", [], True, line=3, extra=questions[1].extra, category=NO_CATEGORY),
    )
    assert questions[0].extra["status"] == "labelled" and questions[0].extra["category"] == "x"
