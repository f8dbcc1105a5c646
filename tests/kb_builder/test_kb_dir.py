"""The KB folder has one owner, as the run folder has: kb_builder.kb_dir.KbDir spells its file names, every reader and
writer asks it for their paths, and the KB builder knows no run folder (the workflow reads a run's scores through
RunDir and hands the rows over)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.run_folder import file_names
from harness.workflows.curate_app import open_curating
from kb_builder import kb_dir
from kb_builder.kb_dir import KbDir
from tests.conftest import ROOT
from tests.curate_kb import write_kb

OWNER = "kb_builder/kb_dir.py"
# the names only a KB folder holds (embeddings/ and index/ are KbDir's too, but common words elsewhere)
KB_NAMES = {kb_dir.ARTICLES, kb_dir.MANIFEST, kb_dir.RETIRED, kb_dir.CURATION, kb_dir.CONFLICTS, kb_dir.LOCK}
RUN_NAMES = {v for k, v in vars(file_names).items() if k.isupper() and isinstance(v, str) and "." in v}


def spelled(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """Where a module spells one of ``names`` as a whole string, or as a path's last part (``"/articles.jsonl"`` in an
    f-string): prose in a longer string (a message, a docstring) does not count."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and (n.value in names or any(n.value.endswith("/" + name) for name in names))]


def sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


def test_the_kb_file_names_are_spelled_in_one_module():
    """build.py wrote retired.jsonl and validate.py read it by hand; workflows/kb.py, review_sources.py and the CLI
    spelled articles.jsonl and curation_conflicts.jsonl again; now they ask a KbDir."""
    found = [f"{rel}:{line}: {value!r}: ask kb_builder.kb_dir.KbDir for the path"
             for rel, path in sources("harness", "kb_builder", "annotations") if rel != OWNER
             for line, value in spelled(path, KB_NAMES)]
    assert found == [], "\n".join(found)
    assert sorted(v for _, v in spelled(ROOT / OWNER, KB_NAMES)) == sorted(KB_NAMES)  # once each, as the constants


def test_the_kb_builder_reads_no_run_folder():
    """curation.py read a run folder's scores.jsonl itself; the workflow layer reads it through RunDir now."""
    assert "scores.jsonl" in RUN_NAMES  # the check below knows the run folder's names
    found = [f"{rel}:{line}: {value!r}" for rel, path in sources("kb_builder") for line, value in spelled(path, RUN_NAMES)]
    assert found == [], "\n".join(found)


def test_kbdir_names_a_folder_or_its_articles_file(tmp_path):
    folder = write_kb(tmp_path / "kb")
    assert KbDir.of(folder).path == KbDir.of(folder / kb_dir.ARTICLES).path == folder
    assert KbDir(folder).has_articles() and not KbDir(tmp_path).has_articles()
    assert KbDir(folder).files() == [folder / kb_dir.ARTICLES, folder / kb_dir.MANIFEST]


def test_the_retired_log_has_one_reader_and_one_writer(tmp_path):
    from kb_builder.kb_records import Article

    folder = KbDir(tmp_path)
    assert folder.retired_titles() == {}
    folder.append_retired([Article(id="7", title="Old leave", text="x", source="a.md")])
    folder.append_retired([Article(id="9", title="Old travel", text="y")])
    assert folder.retired_titles() == {"7": "Old leave", "9": "Old travel"}
    row = json.loads(folder.retired.read_text(encoding="utf-8").splitlines()[0])
    assert set(row) == {"id", "title", "source", "retired_at"}  # the file format is unchanged
    folder.retired.write_text('{"id": "7", "title": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(GraceError, match=r"retired\.jsonl:2: expected a JSON object with id and title"):
        folder.retired_titles()


def test_the_curation_app_gets_a_scored_runs_swaps_from_the_workflow(tmp_path):
    """``grace kb curate --run``: the workflow reads the run's scores (its folder or its scores file) and hands the
    rows to the curation overlay, which lists the pairs the models swap."""
    kb = write_kb(tmp_path / "kb")
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"question_id": f"q{i}", "model": "m", "outcome": "wrong_citation", "cited_ids": ["1"],
             "expected_citations": ["7"]} for i in range(3)]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for given in (run, run / "scores.jsonl"):
        with open_curating(kb, author="tester", run=given) as opened:
            assert "swapped_in_run:1+7" in {f["key"] for f in opened.app.state()["findings"]}
    (run / "scores.jsonl").unlink()
    with pytest.raises(GraceError, match="no scores.jsonl; score the run first"):
        open_curating(kb, author="tester", run=run)
    with pytest.raises(GraceError, match="not found; score the run first"):
        open_curating(kb, author="tester", run=run / "scores.jsonl")
