"""An outcome has one home: harness/run_folder/outcome_table.py, its name (``Outcome``, in code order) and its
descriptor (:class:`OutcomeKind`: label, colour, tone, cell text, sentence, counts as correct, is a refusal...).

The scorer, the reports, the spot-check, the exports and the viewer take what they need from there, and the
viewer's page receives it (with each outcome's label and cell text) from /api/questions, or in a static export
from data/export.js: view.js spelled the list a third time, and the names again in its cell texts. The colours
and labels (reports/svg.py), cells and tones (viewer/grid.py), sentences (viewer/question.py) and the sets "counts
as correct" (scoring, reports/inputs.py, reports/failures.py) and "is a refusal" (exports/inspect_log.py,
spotcheck/inputs.py) were spelled again in each reader, so a new outcome was learnt from failing tests; now a new
outcome is its entry in the table and its rule in harness/scoring/outcomes.py.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import string
from pathlib import Path

import pytest

from harness.reports.svg import OUTCOME_COLORS, OUTCOME_LABELS
from harness.run_folder.outcome_table import OUTCOME_KINDS, OUTCOME_TABLE, TONES, OutcomeKind
from harness.run_folder.scores import OUTCOMES, ScoreLine
from harness.viewer import open_viewer
from harness.viewer.export import export
from harness.viewer.grid import OUTCOME_NAMES
from tests.conftest import ROOT
from tests.view_runs import build_view_runs

VIEW_JS = ROOT / "harness" / "viewer" / "static" / "view.js"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_view_runs(tmp_path_factory.mktemp("outcome-names"))


TABLE = "harness/run_folder/outcome_table.py"
PACKAGES = ("harness", "kb_builder", "annotations", "grace")


def _sources(root: Path) -> list[Path]:
    return sorted(p for package in PACKAGES if (root / package).is_dir() for p in (root / package).rglob("*.py"))


def test_the_outcome_list_is_spelled_once():
    """No literal list, tuple or set (a Literal[...] included) of every outcome outside the outcome table."""
    lists = []
    for path in _sources(ROOT):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.List | ast.Tuple | ast.Set):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if set(OUTCOMES) <= names:
                    lists.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert [at.split(":")[0] for at in lists] == [TABLE], lists
    assert OUTCOMES == ScoreLine.model_fields["outcome"].annotation.__args__


def test_the_viewer_script_names_no_outcome():
    """view.js spells no outcome as a string or an object key (prose such as "repeats correct" aside)."""
    js = VIEW_JS.read_text(encoding="utf-8")
    named = [name for name in OUTCOMES if re.search(rf"""["'`]{name}["'`]|(?<![\w.$-]){name}\s*:(?!:)""", js)]
    assert named == [], f"view.js names {named}: take them from the data's outcomes"


def _spelled_outcomes(node: ast.AST) -> list[str]:
    """The outcome names a node spells directly: a string, or a lookup by one (``OUTCOME_CODE["error"]``)."""
    if isinstance(node, ast.Subscript):
        node = node.slice
    return [node.value] if isinstance(node, ast.Constant) and node.value in OUTCOMES else []


def outcome_sets(source: str) -> list[int]:
    """The lines where code spells a set of outcomes: a list, tuple, set or dict's keys of two or more outcome
    names and nothing else (a column list that holds "correct" and "error" among others is no outcome set), or a
    chain of comparisons (``o == "a" or o == "b"``) against two or more."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            items = [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else node.elts
            names = [n for item in items for n in _spelled_outcomes(item)]
            if len(set(names)) >= 2 and len(names) == len(items):
                found.append(node.lineno)
        elif isinstance(node, ast.BoolOp):
            names = {n for v in node.values if isinstance(v, ast.Compare)
                     for side in (v.left, *v.comparators) for n in _spelled_outcomes(side)}
            if len(names) >= 2:
                found.append(node.lineno)
    return found


def test_the_check_finds_outcome_sets_as_they_were_spelled():
    """The shapes the readers used (each from a real module before the table) are found; others are not."""
    spelled = [
        'refused = outcome in ("correct_refusal", "false_refusal", "refusal")',  # exports/inspect_log.py
        'CORRECT = {"correct", "correct_refusal"}',  # reports/inputs.py, reports/failures.py
        '_NOT_ANSWERED = frozenset({"correct_refusal", "false_refusal", "refusal", "error"})',  # spotcheck/inputs.py
        'C = {"correct": "#2e7d32", "error": "#37474f"}',  # reports/svg.py
        'ok = outcome == "correct" or outcome == "unjudged_citation"',  # spotcheck/inputs.py
        '_NO_VOTE = (OUTCOME_CODE["error"], OUTCOME_CODE["unshown_citation"])',  # viewer/build.py
    ]
    assert [outcome_sets(s) for s in spelled] == [[1]] * len(spelled)
    fine = ['names = ["question_id", "model", "correct", "error", "outcome"]', 'x = OUTCOME_CODE["error"]',
            'ok = row.get("outcome") == "wrong_citation"', 'o = "correct" if hit else "wrong_citation"']
    assert [outcome_sets(s) for s in fine] == [[]] * len(fine)


def test_no_module_but_the_table_spells_an_outcome_set():
    """What an outcome counts as (correct, a refusal, a failed call, checked, a vote...), how it looks and reads:
    each reader asks the table, so a new outcome needs no edit in any of them."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{line}" for path in _sources(ROOT)
             for line in outcome_sets(path.read_text(encoding="utf-8"))]
    assert [at for at in found if not at.startswith(TABLE + ":")] == [], "ask harness.run_folder.outcome_table"


def test_every_outcome_has_one_complete_descriptor():
    """One entry per outcome, every field given (none has a default) and well formed."""
    assert sorted(k.name for k in OUTCOME_TABLE) == sorted(OUTCOMES)
    assert set(OUTCOME_KINDS) == set(OUTCOMES) and len(OUTCOME_KINDS) == len(OUTCOME_TABLE)
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(OutcomeKind))
    colours = [k.colour for k in OUTCOME_TABLE]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours) and len(set(colours)) == len(colours)
    facts = {"ids": "7", "gold": "3", "shown": "3, 7", "error": "timeout", "it": "it", "citing": ", citing 7"}
    for k in OUTCOME_TABLE:
        assert k.label.strip() and k.cell.strip() and k.sentence.strip(), k.name
        assert k.tone in TONES, k.name
        assert {f for _, f, _, _ in string.Formatter().parse(k.cell) if f is not None} <= {"cited"}, k.name
        assert {f for _, f, _, _ in string.Formatter().parse(k.sentence) if f is not None} <= set(facts), k.name
        k.sentence.format(**facts)
        flags = (k.correct, k.refusal, k.failed, k.white_ink, k.spot_checked, k.votes)
        assert all(isinstance(b, bool) for b in flags) and k.needs_label in (True, False, None), k.name
        # what the flags mean together: a failed call is no answer; a hit needs a label to be judged
        assert not (k.failed and (k.correct or k.refusal or k.spot_checked or k.votes)), k.name
        assert not k.correct or k.needs_label is True, k.name
        assert not (k.spot_checked and k.refusal), k.name


def test_every_outcome_has_a_cell_text_in_code_order():
    assert [o["name"] for o in OUTCOME_NAMES] == list(OUTCOMES)
    assert OUTCOME_NAMES[OUTCOMES.index("wrong_citation")] == {"name": "wrong_citation", "label": "wrong citation",
                                                                 "cell": "✗ {cited}", "tone": "none"}


def test_every_outcome_has_a_colour_and_a_label_in_the_plots():
    assert set(OUTCOME_COLORS) == set(OUTCOMES) == set(OUTCOME_LABELS)


def test_the_stylesheet_names_no_outcome():
    """view.css colours by tone (.tone-warn, ...), which the data hands the page with each outcome."""
    css = (VIEW_JS.parent / "view.css").read_text(encoding="utf-8")
    assert [o for o in OUTCOMES if re.search(rf"[.-]{o}\b", css) or ("_" in o and o in css)] == []


def test_the_api_and_the_export_hand_the_page_the_names(built, tmp_path):
    app, indexer = open_viewer([built / "b"], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        page = app.questions({"runs": ["b"]})
    finally:
        indexer.stop()
    assert page["outcomes"] == OUTCOME_NAMES
    # the grid's codes index that list: a cell's outcome is the name at its code
    assert {c["outcome"] for r in page["rows"] for c in r["cells"] if c} <= set(OUTCOMES)
    out = export(built / "b", tmp_path / "site", cache_dir=tmp_path / "cache2").parent
    text = (out / "data" / "export.js").read_text(encoding="utf-8")
    data = json.loads(text.removeprefix("window.GRACE_EXPORT = ").rstrip().removesuffix(";"))
    assert data["grid"]["outcomes"] == OUTCOME_NAMES
    assert max(data["grid"]["outcome"]) < len(OUTCOME_NAMES)
