"""The outcome names have one home: ``Outcome`` in harness/run_folder/scores.py (``OUTCOMES``, in code order).

The scorer, the reports and the viewer take the list from there (harness.scoring.outcomes re-exports it), and the
viewer's page receives it (with each outcome's label and cell text) from /api/questions, or in a static export
from data/export.js: view.js spelled the list a third time, and the names again in its cell texts.
"""

from __future__ import annotations

import ast
import json
import re

import pytest

from harness.reports.svg import OUTCOME_COLORS, OUTCOME_LABELS
from harness.run_folder.scores import OUTCOMES, ScoreLine
from harness.viewer import open_viewer
from harness.viewer.export import export
from harness.viewer.grid import OUTCOME_LOOK, OUTCOME_NAMES
from tests.conftest import ROOT
from tests.view_runs import build_view_runs

VIEW_JS = ROOT / "harness" / "viewer" / "static" / "view.js"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_view_runs(tmp_path_factory.mktemp("outcome-names"))


def test_the_outcome_list_is_spelled_once():
    """No literal list, tuple or set (a Literal[...] included) of every outcome outside run_folder/scores.py."""
    lists = []
    for package in ("harness", "kb_builder", "annotations"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.List | ast.Tuple | ast.Set):
                    names = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                    if set(OUTCOMES) <= names:
                        lists.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert [at.split(":")[0] for at in lists] == ["harness/run_folder/scores.py"], lists
    assert OUTCOMES == ScoreLine.model_fields["outcome"].annotation.__args__


def test_the_viewer_script_names_no_outcome():
    """view.js spells no outcome as a string or an object key (prose such as "repeats correct" aside)."""
    js = VIEW_JS.read_text(encoding="utf-8")
    named = [name for name in OUTCOMES if re.search(rf"""["'`]{name}["'`]|(?<![\w.$-]){name}\s*:(?!:)""", js)]
    assert named == [], f"view.js names {named}: take them from the data's outcomes"


def test_every_outcome_has_a_cell_text_in_code_order():
    assert set(OUTCOME_LOOK) == set(OUTCOMES)
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
