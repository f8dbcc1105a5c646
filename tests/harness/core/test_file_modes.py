"""Files grace writes get the mode a plain ``open(path, "w")`` gives them, so a teammate can open them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness.core.files import JsonlAppender, atomic_write_text, temp_path_for
from harness.core.outputs import keep_backup
from tests.conftest import run_grace, small_bench


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_file_of_a_run_is_readable_by_others_under_umask_022(tmp_path, umask_022):
    bench = small_bench(tmp_path, 4, ["what is the capital of france"])
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                          "--out", bench / "run")
    assert code == 0, out
    written = [p for p in [*(bench / "run").iterdir(), *(bench / "kb").rglob("*")] if p.is_file()]
    names = {p.name for p in written}
    assert {"report.html", "leaderboard.md", "scores.jsonl", "report.json", "run.json", "responses.jsonl",
            "articles.jsonl", "manifest.json"} <= names
    assert {p.name: oct(mode(p)) for p in written if not p.name.endswith(".lock")} == \
           {p.name: oct(0o644) for p in written if not p.name.endswith(".lock")}


def test_writers_follow_the_umask_and_keep_the_mode_of_a_replaced_file(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.txt", "x")
        assert mode(tmp_path / "new.txt") == 0o640
        (tmp_path / "shared.txt").write_text("old")
        os.chmod(tmp_path / "shared.txt", 0o664)
        atomic_write_text(tmp_path / "shared.txt", "new")  # like open(path, "w"): an existing file keeps its mode
        assert mode(tmp_path / "shared.txt") == 0o664 and (tmp_path / "shared.txt").read_text() == "new"
        tmp = temp_path_for(tmp_path / "scores.jsonl")
        assert mode(tmp) == 0o640 and tmp.name.startswith(".scores.jsonl.")
        appender = JsonlAppender(tmp_path / "rows.jsonl")
        appender.write({"a": 1})
        appender.close()
        assert mode(tmp_path / "rows.jsonl") == 0o640
        assert mode(keep_backup(tmp_path / "shared.txt")) == 0o664
    finally:
        os.umask(old)
