"""The responses file's identity in report.json (its size and content hash) is the whole file's, however many
worker processes scored it and while they score it: what ``RunDir.scores_behind`` compares the file with."""

from __future__ import annotations

import json

import pytest

from harness.core.hashing import FileHashInThread, file_hash
from harness.run_folder.run_dir import RunDir
from harness.scoring import score_responses


@pytest.fixture()
def folder(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "articles.jsonl").write_text("".join(json.dumps({"id": str(i), "title": f"Article {i}",
                                                           "text": f"Rule number {i} says this."}) + "\n"
                                               for i in range(1, 6)))
    (tmp_path / "gold.csv").write_text("question_id,question,expected_citations,must_refuse\n" + "".join(
        f"q{i},What does rule {i % 5 + 1} say?,{i % 5 + 1},false\n" for i in range(40)))
    run = tmp_path / "run"
    run.mkdir()
    lines = [json.dumps({"question_id": f"q{i}", "model": f"m{m}", "repeat": 0,
                         "response": f"It says this. [ID: {(i + m) % 5 + 1}] {'é' * (i % 7)}"})
             for m in range(3) for i in range(40)]
    (run / "responses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_recorded_hash_is_the_whole_files_whatever_the_workers(folder, workers):
    run = RunDir(folder / "run")
    report = score_responses(run.responses, folder / "gold.csv", folder / "kb", run.path, workers=workers)
    assert report.responses.size == run.responses.stat().st_size
    assert report.responses.sha256 == file_hash(run.responses)
    assert not run.scores_behind()
    with run.responses.open("a", encoding="utf-8") as fh:  # an answer added after scoring
        fh.write(json.dumps({"question_id": "q1", "model": "m9", "response": "x [ID: 2]"}) + "\n")
    assert run.scores_behind()


def test_a_hash_in_a_thread_is_of_the_file_as_it_was_when_its_size_was_read(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a" * (3 << 20) + b"\n")
    before = file_hash(path)
    hashing = FileHashInThread(path)
    with path.open("ab") as fh:  # appended after the size was read, before the hash is taken
        fh.write(b"more\n")
    hashing.start()
    assert hashing.result() == (before, (3 << 20) + 1)
    assert FileHashInThread(tmp_path / "missing").result() == (None, None)
