"""Prediction-powered leaderboards: PPI++ estimates equal ppi_python's, fall back to the human-only interval when
the machine labels are useless, cover the truth on a simulated set; ``grace annotations sample`` records its draw;
``grace score --gold HUMAN --machine-gold SUGGESTIONS`` puts prediction-powered figures (and the warnings about a
bad human subset) in report.json, leaderboard.md, report.html, the terminal and the viewer."""

from __future__ import annotations

import csv
import json
import math
import shutil
from html import unescape

import numpy as np
import pytest

from harness.scoring.ppi import calibration, calibration_grad, calibration_terms, estimate, tuned_lambda
from tests.conftest import ROOT, run_grace, write

SAMPLE = ROOT / "benchmarks" / "sample"


def _fixed(seed: int = 1, n: int = 60, big_n: int = 340, agree: float = 0.85):
    rng = np.random.default_rng(seed)
    truth = rng.random(n + big_n) < 0.7
    machine = np.where(rng.random(n + big_n) < agree, truth, ~truth).astype(float)
    return truth[:n].astype(float), machine[:n], machine[n:]


def test_point_estimate_interval_and_lambda_equal_ppi_python():
    ppi = pytest.importorskip("ppi_py", reason="ppi_python (the reference implementation) is not installed")
    for seed in range(5):
        y, y_hat, y_unl = _fixed(seed)
        e = estimate(y, y_hat, y_unl)
        assert math.isclose(e.value, ppi.ppi_mean_pointestimate(y, y_hat, y_unl)[0], rel_tol=1e-12)
        lo, hi = ppi.ppi_mean_ci(y, y_hat, y_unl, alpha=0.05)
        assert math.isclose(e.low, lo[0], rel_tol=1e-12) and math.isclose(e.high, hi[0], rel_tol=1e-12)
        for lam in (0.0, 0.3, 1.0):  # fixed weights too: 0 is the classical interval, 1 plain PPI
            f = estimate(y, y_hat, y_unl, lam=lam)
            lo, hi = ppi.ppi_mean_ci(y, y_hat, y_unl, alpha=0.05, lam=lam)
            assert (round(f.low, 12), round(f.high, 12)) == (round(lo[0], 12), round(hi[0], 12))
        # the paired difference's test, as the pairwise comparisons use it
        d, d_hat, d_unl = y - _fixed(seed + 10)[0], y_hat - _fixed(seed + 10)[1], y_unl - _fixed(seed + 10)[2]
        g = estimate(d, d_hat, d_unl)
        assert math.isclose(g.p_value, ppi.ppi_mean_pval(d, d_hat, d_unl, lam=g.lam)[0], rel_tol=1e-9)
    # the classical interval is ppi_python's too
    assert math.isclose(e.classical_low, ppi.classical_mean_ci(y, alpha=0.05)[0], rel_tol=1e-12)


def test_useless_machine_labels_give_back_the_human_only_interval():
    rng = np.random.default_rng(0)
    y = (rng.random(80) < 0.6).astype(float)
    constant = estimate(y, np.ones(80), np.ones(500))  # a machine that says the same for every question
    assert constant.lam == 0.0
    assert (constant.value, constant.low, constant.high) == (constant.classical, constant.classical_low,
                                                             constant.classical_high)
    assert math.isclose(constant.effective_labels, 80)
    for seed in range(50):  # noise: lambda near 0, and the interval never wider than the human-only one
        noise = np.random.default_rng(1000 + seed)
        e = estimate(y, (noise.random(80) < 0.5).astype(float), (noise.random(500) < 0.5).astype(float))
        assert e.lam < 0.35
        assert e.high - e.low <= e.classical_high - e.classical_low + 1e-12
    assert tuned_lambda(y, np.ones(80), np.ones(500)) == 0.0


def test_intervals_cover_the_truth_on_a_simulated_set_and_are_narrower():
    """500 seeded draws of 100 human labels from 2,000 questions whose machine labels are right 85% of the time."""
    rng = np.random.default_rng(7)
    size, n = 2000, 100
    hit = (rng.random(size) < 0.65).astype(float)  # the model's hit under the true label
    machine_hit = np.where(rng.random(size) < 0.85, hit, 1 - hit)  # ... under the machine label
    truth = hit.mean()
    covered = narrower = 0
    for _ in range(500):
        labelled = np.zeros(size, bool)
        labelled[rng.choice(size, n, replace=False)] = True
        e = estimate(hit[labelled], machine_hit[labelled], machine_hit[~labelled])
        covered += e.low <= truth <= e.high
        narrower += (e.high - e.low) / (e.classical_high - e.classical_low)
    assert covered / 500 >= 0.92
    assert narrower / 500 < 0.85  # at least 15% narrower with 85% agreement


def test_refusal_calibration_is_the_reports_formula_and_strata_combine_by_weight():
    must = np.array([1, 1, 0, 0, 0, 0, 1, 0], float)
    refused = np.array([1, 0, 0, 0, 1, 0, 1, 0], float)
    z = calibration_terms(must, refused)
    # the report's: mean of (refused | must refuse) = 2/3 and (answered | answerable) = 4/5
    assert math.isclose(calibration(z.mean(0)), (2 / 3 + 4 / 5) / 2)
    h = 1e-7
    numeric = [(calibration(z.mean(0) + h * np.eye(3)[i]) - calibration(z.mean(0))) / h for i in range(3)]
    assert np.allclose(numeric, calibration_grad(z.mean(0)), atol=1e-5)
    # one stratum given explicitly is the unstratified estimate
    y, y_hat, y_unl = _fixed(3)
    one = estimate(y, y_hat, y_unl, strata=np.zeros(60, int), strata_unlabelled=np.zeros(340, int),
                   weights=np.ones(1))
    assert one == estimate(y, y_hat, y_unl)
    # two strata: the weighted sum of each stratum's estimate, variances added with the weights squared
    s, su = np.arange(60) % 2, np.arange(340) % 2
    two = estimate(y, y_hat, y_unl, strata=s, strata_unlabelled=su, weights=np.array([0.25, 0.75]))
    parts = [estimate(y[s == k], y_hat[s == k], y_unl[su == k]) for k in (0, 1)]
    assert math.isclose(two.value, 0.25 * parts[0].value + 0.75 * parts[1].value)
    assert math.isclose(two.se, math.hypot(0.25 * parts[0].se, 0.75 * parts[1].se))
    assert estimate(y[:1], y_hat[:1], y_unl) is None  # one human label: no interval


# ---- the sampler -------------------------------------------------------------------------------------------------


def test_sample_draws_reproducibly_and_records_the_draw(tmp_path):
    code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "30", "--seed", "4", "--out",
                          tmp_path / "a.csv")
    assert code == 0, out
    record = json.loads((tmp_path / "a.draw.json").read_text())
    with (tmp_path / "a.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["question_id"] for r in rows] == record["drawn"] and len(rows) == 30 == record["n"]
    with (SAMPLE / "gold.csv").open(encoding="utf-8") as fh:
        source = list(csv.DictReader(fh))
    assert record["strata"][0]["question_ids"] == [r["question_id"] for r in source] and record["by"] is None
    assert rows[0] == next(r for r in source if r["question_id"] == rows[0]["question_id"])  # columns kept as written
    code, _ = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "30", "--seed", "4", "--out",
                        tmp_path / "b.csv")
    assert json.loads((tmp_path / "b.draw.json").read_text())["drawn"] == record["drawn"]
    run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "30", "--seed", "5", "--out", tmp_path / "c.csv")
    assert json.loads((tmp_path / "c.draw.json").read_text())["drawn"] != record["drawn"]
    code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "30", "--out", tmp_path / "a.csv")
    assert code != 0 and "already exists" in out


def test_a_stratified_draw_gives_each_stratum_its_share_and_records_the_weights(tmp_path):
    code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "40", "--by", "category", "--out",
                          tmp_path / "s.csv")
    assert code == 0, out
    record = json.loads((tmp_path / "s.draw.json").read_text())
    strata = record["strata"]
    assert record["by"] == "category" and sum(s["drawn"] for s in strata) == 40
    assert all(s["drawn"] >= min(2, s["population"]) for s in strata)
    assert math.isclose(sum(s["weight"] for s in strata), 1.0)
    assert all(abs(s["drawn"] - 40 * s["weight"]) <= 2 for s in strata)
    for args, words in [(["-n", "500"], "between 1 and the 90"), (["-n", "5", "--by", "nope"], "no column 'nope'"),
                        (["-n", "3", "--by", "category"], "too few for")]:
        code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", *args, "--out", tmp_path / "x.csv")
        assert code != 0 and words in out and "Traceback" not in out


# ---- scoring with machine labels ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The sample benchmark's KB, a simulated panel of four models answering all 90 questions, and their consensus
    as suggestions (the machine labels)."""
    from annotations.suggest import consensus
    from annotations.suggestions import write_suggestions
    from harness.scoring.votes import votes_from_responses
    from harness.testing.panel import simulate_panel
    from kb_builder.build import build_kb
    from kb_builder.gold import read_gold
    from kb_builder.loader import load_kb

    root = tmp_path_factory.mktemp("ppi")
    build_kb(SAMPLE / "handbook", root / "kb")
    kb = load_kb(root / "kb")
    gold = read_gold(SAMPLE / "gold.csv")
    rows = simulate_panel(kb, gold, [0.9, 0.8, 0.7, 0.6], seed=3)
    write(root / "run" / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write_suggestions(root / "suggestions.csv", consensus(gold, votes_from_responses(rows, kb.by_id), "run:panel"))
    return root


def _human(bench, tmp_path, n: int = 40, seed: int = 2, draw: bool = True):
    """``n`` sampled questions with their true labels (the people's), in ``tmp_path``; the draw record beside them
    unless ``draw`` is off."""
    code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", n, "--seed", seed, "--out",
                          tmp_path / "subset.csv")
    assert code == 0, out
    shutil.copy(tmp_path / "subset.csv", tmp_path / "human.csv")  # the people's labels: the sample's own
    if not draw:
        (tmp_path / "subset.draw.json").unlink()
    return tmp_path / "human.csv"


def _score(bench, gold, out, *extra):
    code, text = run_grace("score", bench / "run" / "responses.jsonl", "--gold", gold, "--kb", bench / "kb",
                           "--out", out, *extra)
    assert code == 0, text
    return text


def test_score_with_machine_labels_gives_prediction_powered_figures_everywhere(bench, tmp_path):
    from harness.run_folder.report import read_report
    from harness.viewer import open_viewer

    human = _human(bench, tmp_path)
    text = _score(bench, human, tmp_path / "out", "--machine-gold", bench / "suggestions.csv")
    report = read_report(tmp_path / "out" / "report.json")
    ppi = report.ppi
    assert ppi is not None and ppi.questions == 90 and ppi.human_labels == 40
    assert ppi.machine_labels + ppi.unlabelled == 50 and ppi.draw.matches and ppi.draw.path.endswith("subset.draw.json")
    assert ppi.machine_format == "suggestions" and "run:panel" in ppi.machine_source
    assert len(ppi.pairwise) == 6 and set(ppi.leaderboard) == set(report.models)
    assert report.gold.n_questions == 40 and report.responses.n == 160  # the ordinary figures: human questions only
    scores = (tmp_path / "out" / "scores.jsonl").read_text().splitlines()
    assert len(scores) == 160
    for name in ppi.leaderboard:
        m = report.models[name].ppi
        assert m.n_human == 40 and m.n_machine == 50
        assert m.accuracy.human_only == report.models[name].accuracy  # the human-only figure is the report's
        lo, hi = m.accuracy.ci95
        assert lo <= m.accuracy.value <= hi
        assert hi - lo <= m.accuracy.human_only_ci95[1] - m.accuracy.human_only_ci95[0] + 1e-9
        assert m.labels_gained == pytest.approx(m.accuracy.effective_labels - 40, abs=0.01)
        assert m.refusal_calibration is not None and m.refusal_calibration.value is not None
    # the order every view shows is the prediction-powered one
    assert [m.model for m in report.ranked()] == ppi.leaderboard
    assert [report.models[n].ppi.rank for n in ppi.leaderboard] == sorted(report.models[n].ppi.rank
                                                                          for n in ppi.leaderboard)
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    for page in (md, html, text):
        assert "PPI acc." in page and "Prediction-powered (PPI++)" in page
        assert "from 40 human labels" in page and f"{ppi.machine_labels} machine labels" in page
    assert 'id="ppi"' in html and "Effective labels" in html
    app, indexer = open_viewer([tmp_path / "out"], tmp_path / "cache", child=False)
    try:
        board = app.leaderboard("")
    finally:
        indexer.stop()
    assert [c["header"] for c in board["columns"]][2:4] == ["PPI acc. ± 95% CI", "Labels (human + machine)"]
    assert [r["model"] for r in board["rows"]] == ppi.leaderboard
    assert any("from 40 human labels" in n for n in board["notes"])
    assert not report.warnings  # a good subset: drawn, 40 labels, some disagreement


def test_machine_labels_equal_to_the_human_ones_reproduce_the_human_hits(bench, tmp_path):
    """The machine-label hits come from the same answers as the human ones: with the true labels as machine labels
    (REFUSE ones included) every model's accuracy against them is its true accuracy, and no disagreement is warned."""
    human = _human(bench, tmp_path)
    _score(bench, SAMPLE / "gold.csv", tmp_path / "all")  # every question with its true label
    _score(bench, human, tmp_path / "out", "--machine-gold", SAMPLE / "gold.csv")  # gold format: the true labels
    from harness.run_folder.report import read_report

    report, truth = read_report(tmp_path / "out" / "report.json"), read_report(tmp_path / "all" / "report.json")
    assert report.ppi.agreement == 1.0 and report.ppi.machine_format == "gold"
    for name, m in report.models.items():
        assert m.ppi.machine_accuracy == truth.models[name].accuracy
    assert any("agree with all 40 human labels" in w for w in report.warnings)
    assert "agree with all 40 human labels" in (tmp_path / "out" / "leaderboard.md").read_text()


def test_a_subset_not_drawn_or_too_small_is_warned_in_every_output(bench, tmp_path):
    human = _human(bench, tmp_path, n=20, draw=False)
    text = _score(bench, human, tmp_path / "out", "--machine-gold", bench / "suggestions.csv")
    from harness.run_folder.report import read_report

    report = read_report(tmp_path / "out" / "report.json")
    assert report.ppi.draw.path is None and not report.ppi.draw.matches
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    html = unescape((tmp_path / "out" / "report.html").read_text())
    for needle in ("were not drawn by 'grace annotations sample'", "only 20 human labels"):
        assert any(needle in w for w in report.warnings)
        for page in (md, html, " ".join(text.split())):
            assert needle in page
    # a drawn subset whose labels are not exactly the draw: labelled questions outside it, drawn ones skipped
    other = tmp_path / "other"
    other.mkdir()
    human = _human(bench, other, n=40, seed=9)
    rows = human.read_text().splitlines()
    extra = next(line for line in (SAMPLE / "gold.csv").read_text().splitlines()[1:]
                 if line.split(",")[0] not in human.read_text())
    human.write_text("\n".join(rows[:-1] + [extra]) + "\n")
    _score(bench, human, other / "out", "--machine-gold", bench / "suggestions.csv")
    report = read_report(other / "out" / "report.json")
    assert report.ppi.draw.labelled_not_drawn == 1 and report.ppi.draw.drawn_not_labelled == 1
    assert any("were not drawn by the draw recorded" in w for w in report.warnings)
    assert any("have no human label (skipped?)" in w for w in report.warnings)


def test_a_stratified_draw_weighs_the_strata(bench, tmp_path):
    code, out = run_grace("annotations", "sample", SAMPLE / "gold.csv", "-n", "45", "--by", "category", "--out",
                          tmp_path / "subset.csv")
    assert code == 0, out
    shutil.copy(tmp_path / "subset.csv", tmp_path / "human.csv")
    _score(bench, tmp_path / "human.csv", tmp_path / "out", "--machine-gold", bench / "suggestions.csv")
    from harness.run_folder.report import read_report

    report = read_report(tmp_path / "out" / "report.json")
    assert report.ppi.draw.stratified_by == "category" and "stratified by category" in report.ppi.method
    assert all(m.ppi.accuracy.value is not None for m in report.models.values())


def test_without_machine_labels_nothing_changes(bench, tmp_path):
    """No --machine-gold: no ppi block, no PPI column or note; the report reads as before (the byte-for-byte check
    against the previous grace is in the PR notes; here: the outputs hold nothing of PPI)."""
    _score(bench, SAMPLE / "gold.csv", tmp_path / "a")
    _score(bench, SAMPLE / "gold.csv", tmp_path / "b")
    data = json.loads((tmp_path / "a" / "report.json").read_text())
    assert "ppi" not in data and all("ppi" not in m for m in data["models"].values())
    for name in ("leaderboard.md", "report.html"):
        text = (tmp_path / "a" / name).read_text()
        assert "PPI" not in text and "Prediction-powered" not in text
    strip = lambda t: "\n".join(line for line in t.splitlines() if "created_at" not in line and "scored 20" not in line  # noqa: E731
                                and "Scored</dt>" not in line)
    for name in ("report.json", "leaderboard.md", "scores.jsonl"):
        assert strip((tmp_path / "a" / name).read_text()) == strip((tmp_path / "b" / name).read_text())
    from harness.run_folder.report import read_report

    record = read_report(tmp_path / "a" / "report.json").models["sim:model-1"].record()
    assert not any(k.startswith("ppi_") for k in record)


def test_run_asks_every_question_and_scores_prediction_powered(bench, tmp_path):
    human = _human(bench, tmp_path)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", human, "--machine-gold", bench / "suggestions.csv",
                          "-m", "baseline:top1", "--out", tmp_path / "run")
    assert code == 0, out
    responses = (tmp_path / "run" / "responses.jsonl").read_text().splitlines()
    assert len(responses) == 90
    from harness.run_folder.report import read_report

    report = read_report(tmp_path / "run" / "report.json")
    assert report.ppi.questions == 90 and report.models["baseline:top1"].ppi.n_machine == 50


def test_bad_machine_label_file_is_a_clear_error(bench, tmp_path):
    human = _human(bench, tmp_path)
    write(tmp_path / "m.csv", "question_id,answer\nq001,17\n")
    code, out = run_grace("score", bench / "run" / "responses.jsonl", "--gold", human, "--kb", bench / "kb",
                          "--out", tmp_path / "o", "--machine-gold", tmp_path / "m.csv")
    assert code != 0 and "not a machine-label file" in out and "Traceback" not in out


def test_the_ppi_counts_are_one_consistent_set_with_repeats(bench, tmp_path):
    """Issue 37.17: 90 questions asked twice (180 rows), 30 of them human-labelled: every view says how many
    questions are human-labelled, machine-labelled and without a usable machine label (adding up to the 90), and
    how many rows, each figure with its unit; none says "30 questions, 60 rows" as if that were the run."""
    from harness.run_folder.report import read_report

    rows = [json.loads(line) for line in (bench / "run" / "responses.jsonl").read_text().splitlines()]
    one = [r for r in rows if r["model"] == "sim:model-1"]
    write(tmp_path / "responses.jsonl", "".join(json.dumps(dict(r, repeat=k)) + "\n" for k in (0, 1) for r in one))
    # a machine-label file with no usable label for 16 more questions (the models split: no suggestion)
    human = _human(bench, tmp_path, n=30)
    labelled = {row["question_id"] for row in csv.DictReader(human.open(encoding="utf-8"))}
    with (bench / "suggestions.csv").open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, suggestions = reader.fieldnames, list(reader)
    blanked = 0
    for row in suggestions:
        if row["question_id"] not in labelled and row["suggested"] and blanked < 16:
            row.update(suggested="", support="", flag="split")
            blanked += 1
    with (tmp_path / "machine.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        writer.writerows(suggestions)
    code, text = run_grace("score", tmp_path / "responses.jsonl", "--gold", human, "--kb", bench / "kb", "--out",
                           tmp_path / "out", "--machine-gold", tmp_path / "machine.csv")
    assert code == 0, text
    report = read_report(tmp_path / "out" / "report.json")
    p, m = report.ppi, report.models["sim:model-1"].ppi
    assert (p.questions, p.human_labels, p.rows, p.human_rows) == (90, 30, 180, 60)
    assert p.unlabelled >= 16 and p.human_labels + p.machine_labels + p.unlabelled == p.questions
    assert (m.n_human, m.n_machine, m.n_no_label) == (30, 60, p.unlabelled)
    assert report.responses.n == 60 and report.gold.n_questions == 30  # the human-labelled part, said as such
    machine, none = p.machine_labels, p.unlabelled
    html = unescape((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    md = (tmp_path / "out" / "leaderboard.md").read_text(encoding="utf-8")
    for page in (html, md, text):
        assert "over all 90 questions (180 rows) from 30 human labels" in page
        assert f"and {machine} machine labels" in page and f"{none} question(s) have no usable machine label" in page
        assert f"30 + {machine} (+{none} with no label)" in page  # the model's questions, the same three counts
    assert "90 questions: 30 human-labelled" in html and "180 rows (60 on the human-labelled questions)" in html
    assert "30 questions (" not in html.split("<dl")[0]  # the subtitle is the run's, not the human subset's
    assert "90 questions: 30 human-labelled" in md
