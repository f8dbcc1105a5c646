"""``grace run --sample N`` (issue 47): a quick, seeded subset of the gold set, stratified by category, that stays
on the same gold set, so ``grace compare`` and trends put it beside the full run, with every view saying it is a
subset ("30 of 90 questions").

On the sample benchmark (90 questions in 16 categories), with the offline baselines. What was drawn is checked
against the gold file read here with the csv module; the allocation against each category's share computed here."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

import grace
from tests.conftest import SAMPLE, run_grace

MODELS = ["-m", "baseline:top1", "-m", "baseline:threshold"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")
    assert code == 0, out
    return root


def gold_rows() -> list[dict[str, str]]:
    with (SAMPLE / "gold.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def run(bench, out, *extra):
    return run_grace("run", "--kb", bench / "kb", "--gold", SAMPLE / "gold.csv", *MODELS, *extra, "--out", bench / out)


@pytest.fixture(scope="module")
def quick_then_full(bench):
    code, quick_out = run(bench, "quick", "--sample", "30")
    assert code == 0, quick_out
    code, out = run(bench, "full")
    assert code == 0, out
    return bench, quick_out


def test_the_sample_is_a_seeded_draw_stratified_by_category(quick_then_full):
    bench, _ = quick_then_full
    info = json.loads((bench / "quick" / "run.json").read_text(encoding="utf-8"))
    sample = info["sample"]
    rows = gold_rows()
    by_id = {r["question_id"]: r for r in rows}
    assert sample["n"] == 30 and sample["of"] == len(rows) == 90 and sample["seed"] == 0 and sample["by"] == "category"
    drawn = sample["question_ids"]
    assert len(set(drawn)) == 30 and set(drawn) <= set(by_id)
    assert drawn == [r["question_id"] for r in rows if r["question_id"] in set(drawn)]  # in the gold file's order
    sizes = Counter(r["category"] for r in rows)
    got = Counter(by_id[q]["category"] for q in drawn)
    assert got == Counter(sample["per_category"])
    for category, size in sizes.items():  # every category asked; each near its share of 30 (largest remainders)
        assert got[category] >= 1
        assert abs(got[category] - 30 * size / 90) < 1 + (got[category] == 1), category
    # only the drawn questions were asked; the gold set recorded is the whole file, as in the full run
    asked = {json.loads(line)["question_id"] for line in (bench / "quick" / "responses.jsonl").read_text().splitlines()}
    assert asked == set(drawn)
    full = json.loads((bench / "full" / "run.json").read_text(encoding="utf-8"))
    assert info["gold"] == full["gold"] and "sample" not in full


def test_the_same_seed_draws_the_same_questions_and_another_seed_others(bench, quick_then_full):
    first = json.loads((bench / "quick" / "run.json").read_text(encoding="utf-8"))["sample"]["question_ids"]
    result = grace.run(bench / "kb", SAMPLE / "gold.csv", ["baseline:top1"], out=bench / "again", sample=30,
                       no_score=True)
    assert result.ok
    again = json.loads((bench / "again" / "run.json").read_text(encoding="utf-8"))["sample"]["question_ids"]
    assert again == first
    grace.run(bench / "kb", SAMPLE / "gold.csv", ["baseline:top1"], out=bench / "seed7", sample=30, seed=7,
              no_score=True)
    other = json.loads((bench / "seed7" / "run.json").read_text(encoding="utf-8"))["sample"]["question_ids"]
    assert other != first and len(other) == 30


def test_every_view_says_the_run_is_a_subset(quick_then_full):
    bench, out = quick_then_full
    report = json.loads((bench / "quick" / "report.json").read_text(encoding="utf-8"))
    assert report["sample"] == {"n": 30, "of": 90, "seed": 0, "by": "category"}
    assert report["gold"]["n_questions"] == 90
    assert all(m["n_questions"] == 30 for m in report["models"].values())
    said = "30 of 90 questions, sampled with seed 0 by category"
    assert f"grace leaderboard ({said})" in out
    assert any(said in w and "every figure and interval is over those 30" in w for w in report["warnings"])
    assert not any("answered 30 of 90" in w for w in report["warnings"])  # said once, not per model
    assert said in (bench / "quick" / "leaderboard.md").read_text(encoding="utf-8")
    assert said in (bench / "quick" / "report.html").read_text(encoding="utf-8")


def test_compare_and_trends_match_the_sample_with_the_full_run(quick_then_full):
    bench, _ = quick_then_full
    code, out = run_grace("compare", bench / "quick", bench / "full", "--json", bench / "cmp.json")
    assert code == 0, out
    cmp = json.loads((bench / "cmp.json").read_text(encoding="utf-8"))
    assert {m["model"] for m in cmp["models"]} == {"baseline:top1", "baseline:threshold"}
    assert all(m["n_questions"] == 30 for m in cmp["models"])
    assert any(d["setting"] == "questions" and d["a"].startswith("30 of 90") and d["b"] == "all 90"
               for d in cmp["differences"])
    trend = grace.trend([bench / "quick", bench / "full"])
    assert sorted(r.id for r in trend.runs) == ["full", "quick"] and trend.left_out == []  # one gold set
    top1 = next(s for s in trend.series if s.model == "baseline:top1")
    points = {p.run: p for p in top1.points}
    assert (points["quick"].n_questions, points["quick"].sample_of) == (30, 90)
    assert (points["full"].n_questions, points["full"].sample_of) == (90, None)
    later = top1.points[1]  # (the two started within a second or so: their order is the trend's to decide)
    assert top1.points[0].change is None and later.change is not None and later.change.n_questions == 30
    # the top1 baseline answers a question alike whatever else is asked: nothing flips between the two runs
    assert later.change.improved == later.change.regressed == 0


def test_a_folder_grows_from_a_sample_to_the_full_run_never_the_other_way(bench):
    code, out = run(bench, "grow", "--sample", "20")
    assert code == 0, out
    code, out = run(bench, "grow")  # the other 70 asked; the folder is now the full run
    assert code == 0, out
    assert "sample" not in json.loads((bench / "grow" / "run.json").read_text(encoding="utf-8"))
    report = json.loads((bench / "grow" / "report.json").read_text(encoding="utf-8"))
    assert "sample" not in report and all(m["n_questions"] == 90 for m in report["models"].values())
    code, out = run(bench, "grow", "--sample", "20")
    assert code == 2 and "holds a run of every one of the gold set's 90 questions" in out and "--out" in out


def test_bad_samples_are_said_before_anything_runs(bench, caplog):
    code, out = run(bench, "few", "--sample", "5")
    assert code == 2 and "fewer than the gold set's 16 categories" in out and "--sample 16 or more" in out
    code, out = run(bench, "zero", "--sample", "0")
    assert code == 2 and "--sample" in out
    code, out = run(bench, "ppi", "--sample", "30", "--machine-gold", SAMPLE / "gold.csv")
    assert code == 2 and "--machine-gold" in out
    result = grace.run(bench / "kb", SAMPLE / "gold.csv", ["baseline:top1"], out=bench / "all", sample=500,
                       no_score=True)
    assert result.ok and "every question is asked" in caplog.text
    assert "sample" not in json.loads((bench / "all" / "run.json").read_text(encoding="utf-8"))


def test_a_gold_file_without_categories_is_drawn_uniformly(tmp_path):
    from tests.conftest import small_bench

    bench = small_bench(tmp_path, 12, ["what is the capital of France"])
    result = grace.run(bench / "kb", bench / "gold.csv", ["baseline:top1"], out=tmp_path / "run", sample=5, seed=3)
    assert result.ok
    sample = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["sample"]
    assert sample["by"] is None and "per_category" not in sample and len(sample["question_ids"]) == 5
    assert grace.load_run(tmp_path / "run").report.sample.describe() == "5 of 13 questions, sampled with seed 3"


def test_exports_carry_the_sample(quick_then_full):
    from harness.exports.tracking import run_params
    from harness.run_folder.run_dir import RunDir

    bench, _ = quick_then_full
    folder = RunDir(bench / "quick")
    assert run_params(folder.read_report(), folder.read_run_info())["sample"].startswith("30 of 90 questions")
    full = RunDir(bench / "full")
    assert "sample" not in run_params(full.read_report(), full.read_run_info())


def test_the_gate_says_a_sample_is_one(quick_then_full):
    bench, _ = quick_then_full
    code, out = run_grace("gate", bench / "quick" / "report.json", "--min-accuracy", "0.1",
                          "--baseline", bench / "full" / "report.json")
    assert code == 0, out
    assert "the report is of a sample, 30 of 90 questions, sampled with seed 0 by category" in " ".join(out.split())
    result = grace.check_gate(bench / "full" / "report.json", baseline=bench / "quick" / "report.json")
    assert any(n.startswith("the baseline is of a sample, 30 of 90") for n in result.notes)
