"""Gold stays valid through curation: merged labels follow the surviving article, split ones are listed for
relabelling with both parts suggested, and `grace run` / `grace annotations validate` say which command fixes a
label that points at a merged or split article."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

import grace
from annotations.suggestions import read_suggestions
from harness.core.errors import GraceError
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.conftest import SAMPLE

KEEP, OTHER = "27", "28"  # "Meal allowance (per diem) on business trips" and "Client entertainment meals"
SPLIT = "37"  # "Home-office stipend": four questions cite it


def grace_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli.app", *map(str, args)], capture_output=True, text=True)


def outcomes(run_dir: Path) -> dict[str, str]:
    return {r["question_id"]: r["outcome"] for r in grace.load_run(run_dir).scores()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The sample KB, and a baseline run on it with the sample gold: the outcomes before curation."""
    root = tmp_path_factory.mktemp("migrate")
    grace.build_kb(SAMPLE / "handbook", root / "kb")
    kb = load_kb(root / "kb")
    assert "per diem" in kb.by_id[KEEP].title and "Client entertainment" in kb.by_id[OTHER].title
    grace.run(kb=root / "kb", gold=SAMPLE / "gold.csv", models=["baseline:top1"], out=root / "before")
    return root


def test_merge_two_labelled_articles_migrate_and_the_outcomes_hold(built, tmp_path):
    import shutil

    kb = tmp_path / "kb"
    shutil.copytree(built / "kb", kb)
    gold = read_gold(SAMPLE / "gold.csv")
    merged_qs = {q.question_id for q in gold if {KEEP, OTHER} & set(q.expected_citations)}
    assert len(merged_qs) == 3  # q002 (27), q057 (28), q089 (27 and 28)
    with grace.open_curation(kb) as cur:
        cur.merge_articles(KEEP, OTHER, author="ann", reason="one topic: meals on trips")

    # the old gold on the curated KB: refused, naming the label, what happened to it and the command that fixes it
    with pytest.raises(GraceError) as err:
        grace.run(kb=kb, gold=SAMPLE / "gold.csv", models=["baseline:top1"], out=tmp_path / "stale")
    said = str(err.value)
    assert f"article {OTHER} was merged into {KEEP} (curation action 1, by ann)" in said
    assert "grace annotations migrate" in said and "gold.csv" in said
    stale = grace_cli("run", "--kb", kb, "--gold", SAMPLE / "gold.csv", "--model", "baseline:top1", "--out",
                      tmp_path / "stale2")
    assert stale.returncode == 2 and "grace annotations migrate" in stale.stderr and "Traceback" not in stale.stderr
    report = grace.validate_gold(SAMPLE / "gold.csv", kb)
    curated = [i for i in report.errors if i.kind == "curated_id"]
    assert {i.question_id for i in curated} == {"q057", "q089"}
    assert all("grace annotations migrate" in i.message and f"merged into {KEEP}" in i.message for i in curated)

    done = grace_cli("annotations", "migrate", SAMPLE / "gold.csv", "--kb", kb, "--out", tmp_path / "gold.csv")
    assert done.returncode == 0, done.stderr
    assert "2 label(s) moved" in done.stdout and "0 taken off" in done.stdout
    new = {q.question_id: q for q in read_gold(tmp_path / "gold.csv")}
    assert new["q057"].expected_citations == [KEEP] and new["q089"].expected_citations == [KEEP]
    assert new["q002"].expected_citations == [KEEP] and len(new) == len(gold)
    assert "28 merged into 27" in new["q057"].notes
    assert not grace.validate_gold(tmp_path / "gold.csv", kb).errors

    grace.run(kb=kb, gold=tmp_path / "gold.csv", models=["baseline:top1"], out=tmp_path / "after")
    before, after = outcomes(built / "before"), outcomes(tmp_path / "after")
    assert {q: after[q] for q in merged_qs} == {q: before[q] for q in merged_qs}
    assert after["q057"] == "correct"  # top1 finds the merged article for a question about client meals
    # and grace score, run again on the same answers, gives the same outcomes
    rescored = tmp_path / "rescored"
    grace.score(tmp_path / "after", tmp_path / "gold.csv", kb, rescored)
    assert outcomes(rescored) == after


def test_split_labels_are_listed_for_relabelling_with_both_parts_suggested(built, tmp_path):
    import shutil

    kb = tmp_path / "kb"
    shutil.copytree(built / "kb", kb)
    cited = {q.question_id for q in read_gold(SAMPLE / "gold.csv") if SPLIT in q.expected_citations}
    assert len(cited) == 4
    with grace.open_curation(kb) as cur:
        split = cur.split_article(SPLIT, 2, titles=["Home-office stipend: amount", "Home-office stipend: claiming"])
    a, b = split.parts
    report = grace.validate_gold(SAMPLE / "gold.csv", kb)
    said = [i.message for i in report.errors if i.kind == "curated_id"]
    assert len(said) == 4 and all(f"split into {a} and {b}" in m and "grace annotations migrate" in m for m in said)

    result = grace.migrate_gold(SAMPLE / "gold.csv", kb, tmp_path / "gold.csv")
    assert {r.question_id for r in result.relabel} == cited and not result.unknown
    assert result.suggestions == tmp_path / "gold.relabel.csv"
    suggestions = read_suggestions(result.suggestions)
    assert set(suggestions) == cited
    labels = {q.question_id: q.expected_citations for q in read_gold(SAMPLE / "gold.csv")}
    for q, s in suggestions.items():  # both parts, with the rest of the label (q007 also cites 38)
        assert set(s.citations) == {a, b} | set(labels[q]) - {SPLIT} and s.usable and s.source == "migrate"
        assert "Home-office stipend: amount" in s.reason and "keep only the part(s) that answer it" in s.reason
    # the questions are out of the gold set until relabelled; the others are untouched
    rows = {r["question_id"]: r for r in csv.DictReader((tmp_path / "gold.csv").open(encoding="utf-8"))}
    assert all(rows[q]["status"] == "unlabelled" and rows[q]["expected_citations"] == "" for q in cited)
    assert all("relabel: was" in rows[q]["notes"] for q in cited)
    new_gold = read_gold(tmp_path / "gold.csv")
    assert len(new_gold) == 90 - 4 and not grace.validate_gold(tmp_path / "gold.csv", kb).errors
    # the labelling app opens the migrated file with the suggestions (one look per question)
    app = grace.open_labelling(kb, from_gold=tmp_path / "gold.csv", suggestions=result.suggestions)
    try:
        assert {q for q in cited if q in app.session.suggestions} == cited
    finally:
        app.close()
    # outputs are never written over without --force, and never onto an input
    with pytest.raises(GraceError, match="already exists"):
        grace.migrate_gold(SAMPLE / "gold.csv", kb, tmp_path / "gold.csv")
    with pytest.raises(GraceError, match="is the gold CSV"):
        grace.migrate_gold(tmp_path / "gold.csv", kb, tmp_path / "gold.csv", force=True)


def test_a_merge_then_a_split_of_the_survivor_sends_labels_to_relabelling(built, tmp_path):
    import shutil

    kb = tmp_path / "kb"
    shutil.copytree(built / "kb", kb)
    with grace.open_curation(kb) as cur:
        cur.merge_articles(KEEP, OTHER)
        split = cur.split_article(KEEP, 2)
    result = grace.migrate_gold(SAMPLE / "gold.csv", kb, tmp_path / "gold.csv")
    assert {r.question_id for r in result.relabel} == {"q002", "q057", "q089"}
    assert result.relabel[0].split[next(iter(result.relabel[0].split))] == split.parts
