"""The terminal leaderboard: whole at its natural width in a pipe or a log, degrading column by column on a
narrow terminal, never cutting a header, a model name or the significance letters."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from harness.reports.inputs import load_inputs
from harness.reports.leaderboard import columns_for
from harness.reports.terminal import break_name, print_leaderboard
from tests.harness.reports.test_reports import build_run

LONG = "openrouter:meta-llama/llama-3.1-70b-instruct"
GROUPS = {"acme/large": "a", LONG: "a", "local-llama": "b"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    out, kb = build_run(tmp_path_factory.mktemp("board"))
    report = json.loads((out / "report.json").read_text())
    report["models"][LONG] = report["models"].pop("cheap-mini")
    report["leaderboard"] = [LONG if m == "cheap-mini" else m for m in report["leaderboard"]]
    (out / "report.json").write_text(json.dumps(report))
    return load_inputs(out, kb)


@pytest.fixture(autouse=True)
def _terminal_type(monkeypatch):
    """Each test's terminal is the one it names, whatever the shell running the tests is (rich reads TERM: under
    TERM=dumb it takes any terminal for 80 columns)."""
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("COLUMNS", raising=False)


def printed(inputs, width: int, terminal: bool) -> str:
    console = Console(file=io.StringIO(), width=width, height=50, force_terminal=terminal, color_system=None,
                      record=True)
    print_leaderboard(inputs, console)
    return console.export_text()


def model_lines(text: str) -> dict[str, str]:
    """The first table line of each model: where its rank, name, accuracy and letters are."""
    return {name: next(line for line in text.splitlines() if re.search(rf"\b\d\b\s+\S*\s*{re.escape(name[:10])}", line))
            for name in GROUPS}


def test_piped_output_is_the_whole_table_at_its_natural_width(inputs):
    text = printed(inputs, 80, terminal=False)  # what CI logs and `grace report | tee` get
    for c in columns_for(inputs.ranked):  # the run's columns (no forbidden-citation rate: its KB restricts nothing)
        assert c.header in text, c.header  # every column, every header whole on one line
    assert "Forbidden cit." not in text
    rows = model_lines(text)
    for name, group in GROUPS.items():
        assert name in rows[name] and rows[name].rstrip().rstrip("│ ").endswith(group)  # names whole, letters kept
    assert max(len(line.rstrip()) for line in text.splitlines()) > 80  # not squeezed into the console's width
    assert "left out" not in text
    assert "Failed calls are counted as wrong answers (local-llama: 1 of 11). Run the same" in text  # one line


def test_a_wide_terminal_gets_the_same_table(inputs):
    assert printed(inputs, 250, terminal=True) == printed(inputs, 80, terminal=False)


def test_a_dumb_terminal_gets_the_whole_table_as_a_log_does(inputs, monkeypatch):
    """TERM=dumb (an editor's shell, some CI runners): rich cannot read its width and says 80, so the table is not
    fitted to it (which would leave columns out and ask to widen a terminal that may be wide already)."""
    piped = printed(inputs, 80, terminal=False)
    monkeypatch.setenv("TERM", "dumb")
    assert printed(inputs, 100, terminal=True) == piped


@pytest.mark.parametrize("width", [120, 100, 80])
def test_a_narrow_terminal_leaves_out_the_least_important_columns_and_says_which(inputs, width):
    text = printed(inputs, width, terminal=True)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    rows = model_lines(text)
    for name, group in GROUPS.items():
        assert name in rows[name] and rows[name].rstrip().endswith(f"  {group}")  # whole name, its letters
    note = " ".join(text.split("left out for the terminal's width: ")[1].split()) if "left out" in text else ""
    columns = columns_for(inputs.ranked)
    left_out = [c for c in columns if c.header in note]
    shown = [c for c in columns if c not in left_out]
    head_words = text.split("\n1  ")[0].split()  # the title and the two-line compact header
    for c in shown:
        assert all(word in head_words for word in ("#" if c.key == "rank" else c.header).split()), c.header  # not cut
    assert {"rank", "model", "accuracy", "group"} <= {c.key for c in shown}
    assert all(a.drop >= b.drop for a in left_out for b in shown if b.drop)  # least important first
    if left_out:
        assert note.startswith(", ".join(c.header for c in left_out) + " (widen it, or read leaderboard.md)")
    assert (width == 120) == (not left_out)
    assert width == 120 or "latency" not in head_words  # the latency goes first


def test_a_very_narrow_terminal_breaks_long_names_at_their_separators_only(inputs):
    text = printed(inputs, 50, terminal=True)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 50
    assert "acme/large" in text and "local-llama" in text
    assert re.search(r"openrouter:meta-\s", text) or re.search(r"openrouter:meta-llama/\s", text)
    assert "Sig." in text and re.search(r"acme/large\s.*\sa\s*$", text, re.M)


def test_break_name():
    assert break_name(LONG, 80) == LONG
    assert break_name(LONG, 20) == "openrouter:meta-\nllama/llama-3.1-70b-\ninstruct"
    assert break_name("averyveryverylongname", 8) == "averyver\nyverylon\ngname"  # no separator: cut, last resort
