"""grace annotations agree: kappas against scikit-learn and a textbook table, disagreements, merge."""

from __future__ import annotations

import csv
import math
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from annotations.agreement import cohen_kappa, compare_files, fleiss_kappa
from annotations.labels import read_labels
from harness.cli.app import cli
from harness.core.errors import GraceError

# Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def write_labels(path: Path, annotator: str, labels: dict[str, str], status: dict[str, str] | None = None) -> Path:
    """labels: question_id -> 'REFUSE' or '17' or '17;18'."""
    status = status or {}
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["question_id", "question", "expected_citations", "must_refuse", "notes", "status", "annotator"])
        for qid, lab in labels.items():
            st = status.get(qid, "labelled")
            refuse = lab == "REFUSE" and st == "labelled"
            cites = "" if refuse or st != "labelled" else lab
            w.writerow([qid, f"Question {qid}?", cites, "true" if refuse else "false", f"note {annotator}", st, annotator])
    return path


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_cohen_kappa_matches_scikit_learn(seed):
    rng = random.Random(seed)
    cats = ["REFUSE", "1", "2", "3", "4;5", "7"]
    a = [rng.choice(cats) for _ in range(80)]
    b = [x if rng.random() < 0.6 else rng.choice(cats) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_edge_cases():
    assert cohen_kappa(["1", "2", "1"], ["1", "2", "1"]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa(["1", "1"], ["1", "1"]))  # one label throughout: chance agreement is total
    with pytest.raises(ValueError):
        cohen_kappa(["1"], ["1", "2"])


def test_fleiss_kappa_on_the_textbook_table():
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.20993, abs=1e-4)
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 1], [1, 1]])  # different numbers of ratings per subject


def test_agree_two_annotators_prints_cohen_and_disagreements(tmp_path):
    a = {"q1": "1", "q2": "2", "q3": "REFUSE", "q4": "3;4", "q5": "5", "q6": "1", "q7": "2", "q8": "6"}
    b = {"q1": "1", "q2": "3", "q3": "REFUSE", "q4": "4;3", "q5": "REFUSE", "q6": "1", "q7": "2;8", "q8": "6"}
    fa = write_labels(tmp_path / "alice.csv", "alice", {**a, "q9": "1"})
    fb = write_labels(tmp_path / "bob.csv", "bob", {**b, "q9": ""}, status={"q9": "skipped"})
    res = CliRunner().invoke(cli, ["annotations", "agree", str(fa), str(fb), "--merge", str(tmp_path / "adj.csv")])
    assert res.exit_code == 0, res.output
    la = [";".join(sorted(v.split(";"))) for v in a.values()]
    lb = [";".join(sorted(v.split(";"))) for v in b.values()]
    expected = cohen_kappa_score(la, lb)
    m = re.search(r"Cohen's kappa: (\d\.\d{3})", res.output)
    assert m and float(m.group(1)) == pytest.approx(expected, abs=5e-4)
    assert "raw agreement: 0.625 (5/8)" in res.output
    assert "1 not labelled by all" in res.output
    # q4 clicked in another order is agreement; q2, q5, q7 are the three to adjudicate
    listed = re.findall(r"^  (q\d+)  ", res.output, re.M)
    assert listed == ["q2", "q5", "q7"]
    assert "1 different article" in res.output and "1 refuse vs answer" in res.output and "1 partial overlap" in res.output

    with (tmp_path / "adj.csv").open(newline="") as fh:
        rows = {r["question_id"]: r for r in csv.DictReader(fh)}
    assert rows["q2"]["label_alice"] == "2" and rows["q2"]["label_bob"] == "3" and rows["q2"]["agreement"] == "disagree"
    assert rows["q4"]["expected_citations"] == "3;4" and rows["q4"]["status"] == "labelled"
    assert rows["q9"]["agreement"] == "incomplete" and rows["q9"]["label_bob"] == "skipped"
    # the adjudication sheet opens in `grace annotate --from-gold`: agreed rows labelled, the rest not
    recs, extra = read_labels(tmp_path / "adj.csv")
    assert {r.question_id for r in recs if r.status == "labelled"} == {"q1", "q3", "q4", "q6", "q8"}
    assert "label_alice" in extra


def test_agree_three_annotators_uses_fleiss(tmp_path):
    labels = {
        "x": {"q1": "1", "q2": "2", "q3": "REFUSE", "q4": "4"},
        "y": {"q1": "1", "q2": "2", "q3": "REFUSE", "q4": "5"},
        "z": {"q1": "1", "q2": "3", "q3": "REFUSE", "q4": "4"},
    }
    files = [str(write_labels(tmp_path / f"{n}.csv", n, lab)) for n, lab in labels.items()]
    res = CliRunner().invoke(cli, ["annotations", "agree", *files])
    assert res.exit_code == 0, res.output
    cmp_ = compare_files([Path(f) for f in files])
    # by hand: P_i = 1, 1/3, 1, 1/3 -> P̄ = 2/3; p_j = 1:3/12 2:2/12 3:1/12 REFUSE:3/12 4:2/12 5:1/12
    p_e = (9 + 4 + 1 + 9 + 4 + 1) / 144
    assert cmp_.kappa == pytest.approx((2 / 3 - p_e) / (1 - p_e))
    assert f"Fleiss' kappa: {cmp_.kappa:.3f}" in res.output
    assert "Cohen's kappa x vs y:" in res.output


def test_agree_without_shared_questions_is_an_error(tmp_path):
    fa = write_labels(tmp_path / "a.csv", "a", {"q1": "1"})
    fb = write_labels(tmp_path / "b.csv", "b", {"q2": "1"})
    with pytest.raises(GraceError, match="no question is labelled in all"):
        compare_files([fa, fb])
    res = CliRunner().invoke(cli, ["annotations", "agree", str(fa)])
    assert isinstance(res.exception, GraceError)


def test_agree_on_an_overlap_design_compares_each_pair_on_what_it_shares(tmp_path):
    """Three people, each question given to two of them (grace annotate --assign overlap:2): no question is
    labelled by all, so each pair is compared on the questions both labelled, overall by Fleiss' kappa over the
    two labels every question has."""
    labels = {
        "x": {"q1": "1", "q2": "2", "q4": "4", "q5": "REFUSE"},
        "y": {"q1": "1", "q3": "3", "q4": "5", "q6": "6"},
        "z": {"q2": "2", "q3": "3", "q5": "5", "q6": "6"},
    }
    files = [write_labels(tmp_path / f"{n}.csv", n, lab) for n, lab in labels.items()]
    cmp_ = compare_files(files)
    assert cmp_.overlap and cmp_.compared == ["q1", "q2", "q4", "q5", "q3", "q6"]
    given = [["1", "1"], ["2", "2"], ["4", "5"], ["REFUSE", "5"], ["3", "3"], ["6", "6"]]
    from annotations.agreement import fleiss_from_labels

    assert cmp_.kappa == pytest.approx(fleiss_from_labels(given))
    assert cmp_.kappa_name == "Fleiss' kappa (2 labels per question)"
    pairs = {(a, b): k for a, b, k in cmp_.pairwise}
    assert pairs[("x", "y")] == pytest.approx(cohen_kappa_score(["1", "4"], ["1", "5"]))
    assert pairs[("y", "z")] == pytest.approx(1.0)
    assert [cmp_.compared[i] for i in cmp_.disagreements] == ["q4", "q5"]
    assert cmp_.raw_agreement == pytest.approx(4 / 6)
    res = CliRunner().invoke(cli, ["annotations", "agree", *map(str, files), "--merge", str(tmp_path / "m.csv")])
    assert res.exit_code == 0, res.output
    assert "compared 6 question(s) labelled by two or more annotators" in res.output
    assert f"Fleiss' kappa (2 labels per question): {cmp_.kappa:.3f}" in res.output
    rows = {r.question_id: r for r in read_labels(tmp_path / "m.csv")[0]}
    assert rows["q1"].label == "1" and rows["q4"].status == "unlabelled"


def test_an_overlap_with_uneven_labels_per_question_averages_the_pairs(tmp_path):
    labels = {
        "x": {"q1": "1", "q2": "2", "q3": "3"},
        "y": {"q1": "1", "q2": "9"},
        "z": {"q2": "2", "q3": "3", "q4": "4"},
        "w": {"q3": "3", "q4": "4", "q1": "7"},
    }
    files = [write_labels(tmp_path / f"{n}.csv", n, lab) for n, lab in labels.items()]
    cmp_ = compare_files(files)
    assert cmp_.kappa_name == "mean pairwise Cohen's kappa"
    defined = [k for _, _, k in cmp_.pairwise if not math.isnan(k)]
    assert defined and cmp_.kappa == pytest.approx(sum(defined) / len(defined))
