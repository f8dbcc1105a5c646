"""Every command that writes a file refuses to write it over one of its inputs (exit 2, input unchanged),
and refuses an existing output unless --force, which keeps the old file as NAME.bak."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_grace, small_bench, write


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A KB, a gold set, a questions file, and a scored, spot-checked run of two offline models."""
    root = small_bench(tmp_path_factory.mktemp("bench"), 8, ["where is the gym"])
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "-m", "baseline:top1",
                          "-m", "baseline:threshold", "--out", root / "run")
    assert code == 0, out
    code, out = run_grace("spotcheck", "run", root / "run", "--judge", "baseline:lexical")
    assert code == 0, out
    write(root / "questions.csv", "question_id,question\nq0,how many sick days do I get\n")
    write(root / "a.csv", "question_id,question,expected_citations,must_refuse,annotator\nq0,x,1,false,ann\n")
    write(root / "b.csv", "question_id,question,expected_citations,must_refuse,annotator\nq0,x,2,false,bob\n")
    shutil.copy(Path(__import__("harness.spotcheck.meta_eval", fromlist=["CASES"]).CASES), root / "cases.jsonl")
    return root


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".grace.lock" not in p.name}


def _cases(r: Path) -> list[tuple[str, list, list[Path]]]:
    """(command name, argv with OUT for the output, the inputs to try as OUT)."""
    kb, gold, run, q = r / "kb", r / "gold.csv", r / "run", r / "questions.csv"
    kb_files = [kb / "articles.jsonl", kb / "manifest.json"]
    run_files = [run / "responses.jsonl", run / "scores.jsonl", run / "report.json", run / "run.json"]
    return [
        ("annotations audit", ["annotations", "audit", gold, "--kb", kb, "--run", run, "-o", "OUT"],
         [gold, *kb_files, *run_files]),
        ("annotations suggest", ["annotations", "suggest", q, "--kb", kb, "--run", run, "-o", "OUT"],
         [q, *kb_files, *run_files]),
        ("annotations agree --merge", ["annotations", "agree", r / "a.csv", r / "b.csv", "--merge", "OUT"],
         [r / "a.csv", r / "b.csv"]),
        ("gold generate", ["gold", "generate", kb, "-m", "baseline:top1", "-o", "OUT"], kb_files),
        ("kb search --out", ["kb", "search", kb, "--queries", q, "--out", "OUT"], [q, *kb_files]),
        ("kb eval --json", ["kb", "eval", kb, "--gold", gold, "--json", "OUT"], [gold, *kb_files]),
        ("spotcheck meta-eval --out", ["spotcheck", "meta-eval", "--judge", "baseline:lexical", "--cases",
                                       r / "cases.jsonl", "--out", "OUT"], [r / "cases.jsonl"]),
        ("annotate --out", ["annotate", kb, "--questions", q, "--out", "OUT", "--no-browser"], [q, *kb_files]),
        ("annotations review -o", ["annotations", "review", run, "--gold", gold, "-o", "OUT", "--no-browser"],
         [gold, *kb_files, *run_files, run / "spotcheck.json"]),
        ("kb build --out", ["kb", "build", r / "src", "--out", "OUT"], [r / "src"]),
        ("kb build --articles --out", ["kb", "build", "--articles", kb / "articles.jsonl", "--out", "OUT"], [kb]),
        ("run --out", ["run", "--kb", kb, "--gold", gold, "-m", "baseline:top1", "--out", "OUT"], [kb, gold]),
        ("score --out", ["score", run / "responses.jsonl", "--gold", gold, "--kb", kb, "--out", "OUT"], [kb, gold]),
    ]


def test_every_writing_command_refuses_each_of_its_inputs_as_output(bench):
    before = _snapshot(bench)
    tried = 0
    for name, argv, inputs in _cases(bench):
        for target in inputs:
            for force in ([], ["--force"]) if _takes_force(argv) else ([],):
                args = [target if a == "OUT" else a for a in argv] + force
                code, out = run_grace(*args)
                assert code == 2, (name, target, force, out)
                assert "Traceback" not in out, (name, out)
                assert str(target) in out or target.name in out, (name, target, out)
                tried += 1
    assert tried >= 60
    after = _snapshot(bench)
    changed = [p for p in before if after.get(p) != before[p]]
    assert changed == [], changed
    assert not [p for p in after if p.name.endswith(".bak")]


def _takes_force(argv: list) -> bool:
    return argv[:2] in (["annotations", "audit"], ["annotations", "suggest"], ["annotations", "agree"],
                        ["gold", "generate"], ["kb", "search"], ["kb", "eval"], ["spotcheck", "meta-eval"])


def test_an_input_reached_through_a_link_is_refused_too(bench, tmp_path):
    link = tmp_path / "gold-link.csv"
    link.symlink_to(bench / "gold.csv")
    hard = tmp_path / "gold-hard.csv"
    hard.hardlink_to(bench / "gold.csv")
    before = (bench / "gold.csv").read_bytes()
    for out in (link, hard):
        code, msg = run_grace("annotations", "audit", bench / "gold.csv", "--kb", bench / "kb", "--run", bench / "run",
                              "-o", out, "--force")
        assert code == 2 and "this command reads" in msg, msg
    assert (bench / "gold.csv").read_bytes() == before


def test_audit_onto_the_gold_file_keeps_every_label(bench, tmp_path):
    """The measured case: audit -o GOLD.csv replaced 21 lines of gold with a 5-line suspects file, exit 0."""
    gold = tmp_path / "gold.csv"
    shutil.copy(bench / "gold.csv", gold)
    before = gold.read_bytes()
    code, out = run_grace("annotations", "audit", gold, "--kb", bench / "kb", "--run", bench / "run", "-o", gold)
    assert code == 2 and f"--out {gold} is the gold CSV this command reads" in out, out
    assert gold.read_bytes() == before


def test_an_existing_output_needs_force_and_the_old_one_is_kept(bench, tmp_path):
    out = write(tmp_path / "suspects.csv", "somebody's notes\n")
    argv = ["annotations", "audit", bench / "gold.csv", "--kb", bench / "kb", "--run", bench / "run", "-o", out]
    code, msg = run_grace(*argv)
    assert code == 2 and "already exists" in msg and "--force" in msg, msg
    assert out.read_text() == "somebody's notes\n"
    code, msg = run_grace(*argv, "--force")
    assert code == 0, msg
    assert (tmp_path / "suspects.csv.bak").read_text() == "somebody's notes\n"
    assert out.read_text().startswith("question_id,")
    assert "previous version is kept as" in msg


def test_annotate_keeps_the_version_before_each_session(bench, tmp_path):
    """The gold file is the annotation app's to write: opening it (to resume) keeps the previous version."""
    from annotations.state import AnnotationSession
    from kb_builder.loader import load_kb

    gold = tmp_path / "gold.csv"
    shutil.copy(bench / "gold.csv", gold)
    before = gold.read_bytes()
    session = AnnotationSession.open(load_kb(bench / "kb"), gold, from_gold=gold, annotator="t")
    session.close()
    assert (tmp_path / "gold.csv.bak").read_bytes() == before


def test_kb_build_onto_a_file_fails_before_parsing_any_source(tmp_path):
    src = tmp_path / "src"
    write(src / "a.md", "# A\n\nText.\n")
    write(src / "broken.pdf", "not a pdf")
    target = write(tmp_path / "notes.txt", "keep me\n")
    code, out = run_grace("kb", "build", src, "--out", target)
    assert code == 2 and "is a file" in out, out
    assert target.read_text() == "keep me\n"


def test_score_refuses_a_responses_file_where_it_writes_its_scores(bench, tmp_path):
    folder = tmp_path / "scored"
    folder.mkdir()
    shutil.copy(bench / "run" / "responses.jsonl", folder / "scores.jsonl")
    before = (folder / "scores.jsonl").read_bytes()
    code, out = run_grace("score", folder / "scores.jsonl", "--gold", bench / "gold.csv", "--kb", bench / "kb")
    assert code == 2 and "where this command writes its scores.jsonl" in out, out
    assert (folder / "scores.jsonl").read_bytes() == before
