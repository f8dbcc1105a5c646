"""The cost markers say what they claim: every test that drives Chromium is marked ``browser`` (by the rule in
tests/conftest.py), and ``-m "not slow and not browser"`` leaves none of them in."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # it collects the whole suite in a subprocess


def _chromium_users() -> dict[str, set[str]]:
    """Test module -> the names of its tests and fixtures that import ``tests.browser`` (the module: all of it)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.resolve() == Path(__file__).resolve():  # this file only reads where Chromium is
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "tests.browser":
                owner = next((f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                              and f.lineno <= node.lineno <= (f.end_lineno or f.lineno)), "<module>")
                found.setdefault(str(path.relative_to(ROOT)), set()).add(owner)
    return found


def test_every_module_that_uses_chromium_follows_the_browser_rule():
    """A module importing tests.browser is a ``*_browser.py`` module, or imports it only inside the fixture named
    ``browser`` (or a helper its tests reach through that fixture), so the conftest rule marks each such test."""
    users = _chromium_users()
    assert len(users) >= 15, users  # the rule is checked on the real modules, not on none
    unmarked = {m: owners for m, owners in users.items() if not m.endswith("_browser.py")
                and not owners & {"browser"}}
    assert unmarked == {}, f"name the module *_browser.py or open Chromium in a fixture named 'browser': {unmarked}"


def _collected(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=ROOT)
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_the_fast_selection_leaves_out_every_browser_test():
    """``-m browser`` picks the Chromium tests (a whole *_browser.py module; in a mixed module, only those taking the
    browser fixture); ``-m "not slow and not browser"`` keeps the rest."""
    import os

    import pytest

    from tests.browser import CHROMIUM

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed: the browser modules skip at collection")
    files = ["tests/harness/viewer/test_view_browser.py", "tests/harness/exports/test_export_inspect.py"]
    chosen = _collected("-m", "browser", *files)
    assert any("test_view_browser.py::" in t for t in chosen), chosen
    assert {t.split("::")[1] for t in chosen if "test_export_inspect.py::" in t} == {
        "test_inspect_view_lists_the_logs_and_shows_a_samples_answer", "test_a_hostile_answer_stays_text_in_inspect_view"}
    kept = _collected("-m", "not slow and not browser", *files)
    assert kept and not set(kept) & set(chosen), kept
    assert any("test_export_inspect.py::test_results_are_report_json_figures_exactly" in t for t in kept)
