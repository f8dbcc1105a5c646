"""The Python API: the documented example (docs/how-to/python-api.md) runs as written, and results are typed."""

from __future__ import annotations

import re

import pytest

import grace
from tests.conftest import ROOT


def readme_example() -> str:
    text = (ROOT / "docs" / "how-to" / "python-api.md").read_text(encoding="utf-8")
    section = text.split("## Example", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = readme_example().replace("benchmarks/sample", str(ROOT / "benchmarks" / "sample"))
    scope: dict = {}
    exec(compile(code, "docs/how-to/python-api.md", "exec"), scope)  # noqa: S102 - the documented example, as a user runs it
    board, df, run = scope["board"], scope["df"], scope["run"]
    assert [r.model for r in board] == ["baseline:threshold", "baseline:top1"]
    assert board["baseline:top1"].n_questions == 90 and 0 < board["baseline:top1"].accuracy < 1
    assert list(df.index) == ["baseline:threshold", "baseline:top1"] and "ci_low" in df.columns
    assert run.info.rows["baseline:top1"].rows == 90 and len(run.responses()) == 90 + 90  # both answer all
    assert "1 " in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == ["grace-example"]  # nothing else in the user's folder
    assert (tmp_path / "grace-example" / "runs" / "first" / "report.html").is_file()


def test_errors_are_grace_errors_and_unscored_runs_say_so(tmp_path):
    with pytest.raises(grace.GraceError, match="no models"):
        grace.run(kb=tmp_path, gold=tmp_path / "g.csv", out=tmp_path / "o")
    (tmp_path / "empty").mkdir()
    run = grace.load_run(tmp_path / "empty")
    with pytest.raises(grace.GraceError, match="not scored yet"):
        _ = run.leaderboard


def test_every_workflow_is_in_the_api():
    """A workflow (harness.workflows: one function per command) is callable from Python as ``grace.NAME``, and
    every name a workflow module lists in ``__all__`` is ``grace.NAME``, the same object."""
    import importlib
    import inspect

    for path in sorted((ROOT / "harness" / "workflows").glob("[!_]*.py")):
        module = importlib.import_module(f"harness.workflows.{path.stem}")
        for name, value in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == module.__name__:
                assert name in grace.__all__ and getattr(grace, name) is value, f"{module.__name__}.{name}"
        for name in getattr(module, "__all__", ()):
            assert name in grace.__all__ and getattr(grace, name) is getattr(module, name), f"{module.__name__}.{name}"


def test_every_command_is_found_in_its_module():
    """``grace --help`` lists what the command modules declare (``COMMANDS``), each a click command of that name."""
    import importlib

    import click

    from harness.cli.app import COMMANDS, discover

    assert COMMANDS == discover() and {"kb", "run", "spotcheck", "gold", "annotate"} <= set(COMMANDS)
    for name, (target, help_text) in COMMANDS.items():
        module, _, attr = target.partition(":")
        found = importlib.import_module(module)
        assert attr == name.replace("-", "_") and isinstance(getattr(found, attr), click.Command)  # import-logs
        assert found.COMMANDS[name] == help_text and getattr(found, attr).name == name
