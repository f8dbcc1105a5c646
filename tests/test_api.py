"""The Python API: the README's example runs as written, and results are typed."""

from __future__ import annotations

import re

import pytest

import harness as grace
from tests.conftest import ROOT


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = readme_example().replace("benchmarks/sample", str(ROOT / "benchmarks" / "sample"))
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the documented example, as a user runs it
    board, df, run = scope["board"], scope["df"], scope["run"]
    assert [r.model for r in board] == ["baseline:threshold", "baseline:top1"]
    assert board["baseline:top1"].n_questions == 90 and 0 < board["baseline:top1"].accuracy < 1
    assert list(df.index) == ["baseline:threshold", "baseline:top1"] and "ci_low" in df.columns
    assert run.info.rows["baseline:top1"]["rows"] == 90 and len(run.responses()) == 90 + 90  # both answer all
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


def test_one_export_list_and_every_name_in_it_resolves():
    import harness.api as api

    assert list(api.__all__) == list(grace.API_NAMES)
    for name in grace.__all__:
        assert getattr(grace, name) is not None, name
    for name in grace.API_NAMES:
        assert getattr(grace, name) is getattr(api, name), name
    defined = {n for n, v in vars(api).items() if not n.startswith("_") and getattr(v, "__module__", "") == api.__name__
               and callable(v)}
    assert defined - set(grace.API_NAMES) == set(), "a public name of harness.api missing from API_NAMES"
