"""``grace gate``: thresholds and regressions beyond noise, for CI (exit 0 pass, 1 fail, 2 bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_grace, write


def model(accuracy: float, ci: list[float] | None = None, invalid: float = 0.0) -> dict:
    """A model's block as 'grace score' writes it (schema 1); gate reads the accuracy, its CI and the invalid rate."""
    return {"rank": 1, "significance_group": "a", "n": 100, "n_questions": 100, "repeats": 1, "accuracy": accuracy,
            "accuracy_ci95": ci, "strict_accuracy": accuracy, "strict_accuracy_ci95": ci, "outcomes": {},
            "strict_outcomes": {}, "invalid_citation_rate": invalid, "error_count": 0, "extraction_rules": {},
            "per_class": {}, **dict.fromkeys(("macro_precision", "macro_recall", "macro_f1", "weighted_precision",
                                              "weighted_recall", "weighted_f1"), 0.0),
            "refusal": {"should_refuse_did": None, "should_answer_did": None, "calibration": None},
            "confusion": {"labels": [], "matrix": []}, "retrieval": None, "repeat_stats": None,
            "cost": {"total_usd": None, "per_1k_questions_usd": None, "input_tokens": 0, "output_tokens": 0},
            "latency": {"p50_ms": None, "p95_ms": None}}


def report_json(models: dict[str, dict]) -> str:
    """A whole report.json around the blocks, given best first."""
    return json.dumps({
        "schema_version": 1, "created_at": "2025-01-02T03:04:05+00:00", "grace_version": "0.1.0",
        "gold": {"path": "gold.csv", "hash": "ab12", "n_questions": 100, "n_must_refuse": 0},
        "kb": {"path": "kb", "hash": "cd34", "n_articles": 50}, "responses": {"path": "responses.jsonl", "n": 100},
        "seed": 0, "bootstrap_samples": 2000, "leaderboard": list(models), "models": models, "pairwise": []})


def report(path: Path, models: dict[str, dict]) -> Path:
    return write(path, report_json(models))


@pytest.fixture
def new(tmp_path):
    return report(tmp_path / "new" / "report.json",
                  {"gpt": model(0.82, [0.78, 0.86], 0.01), "claude": model(0.74, [0.70, 0.78], 0.04)})


def test_all_checks_pass(new):
    code, out = run_grace("gate", new, "--min-accuracy", "0.7", "--max-invalid-rate", "0.05")
    assert code == 0, out
    assert out.count("PASS") == 4
    assert "gpt: accuracy 82.0% >= minimum 70.0%" in out
    assert "gate passed: 4 check(s)" in out


def test_accuracy_below_minimum_fails(new):
    code, out = run_grace("gate", new, "--min-accuracy", "80%")
    assert code == 1
    assert "FAIL  claude: accuracy 74.0% < minimum 80.0%" in out
    assert "PASS  gpt" in out
    assert "gate failed: 1 of 2 check(s) failed" in out


def test_invalid_rate_above_maximum_fails(new):
    code, out = run_grace("gate", new, "--max-invalid-rate", "0.02", "--model", "claude")
    assert code == 1
    assert "claude: invalid-citation rate 4.0% > maximum 2.0%" in out
    assert "gpt" not in out  # --model restricts the checks


def test_model_filter_passes_when_that_model_passes(new):
    code, out = run_grace("gate", new, "--min-accuracy", "0.8", "--model", "gpt")
    assert code == 0, out


def test_regression_beyond_noise_fails(tmp_path, new):
    old = report(tmp_path / "old" / "report.json", {"gpt": model(0.92, [0.88, 0.95])})
    code, out = run_grace("gate", new, "--baseline", old, "--max-drop", "0.05", "--model", "gpt")
    assert code == 1
    assert "regression" in out and "below the baseline 95% CI 88.0%-95.0%" in out


def test_drop_within_the_baselines_noise_passes(tmp_path, new):
    old = report(tmp_path / "old" / "report.json", {"gpt": model(0.90, [0.80, 0.97])})
    code, out = run_grace("gate", new, "--baseline", old, "--max-drop", "0.05", "--model", "gpt")
    assert code == 0, out  # dropped 8 points (> 5) but 82% is inside the old CI: noise
    assert "within noise" in out


def test_small_drop_below_the_ci_passes(tmp_path, new):
    old = report(tmp_path / "old" / "report.json", {"gpt": model(0.84, [0.83, 0.85])})
    code, out = run_grace("gate", new, "--baseline", old, "--max-drop", "0.05", "--model", "gpt")
    assert code == 0, out  # below the CI but only 2 points down, within --max-drop


def test_baseline_without_model_is_skipped_unless_named(tmp_path, new):
    old = report(tmp_path / "old" / "report.json", {"gpt": model(0.80, [0.75, 0.85])})
    code, out = run_grace("gate", new, "--baseline", old)
    assert code == 0, out
    assert "claude: not in the baseline report; regression check skipped" in out
    code, out = run_grace("gate", new, "--baseline", old, "--model", "claude")
    assert code == 2 and "no model 'claude' in the baseline report" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "report.json: not found; run 'grace score'"),
        ("{not json", "not valid JSON"),
        ('{"schema_version": 1}', "not a grace report"),
        ('{"schema_version": 99, "models": {}}', "schema_version 99 is not one this grace reads (<= 3); upgrade grace"),
        (report_json({"gpt": {k: v for k, v in model(0.8).items() if k != "accuracy"}}),
         "models['gpt'] has no accuracy; re-run 'grace score'"),
        (report_json({"gpt": {**model(0.8), "accuracy": "high"}}), "models['gpt'].accuracy: Input should be a valid"),
    ],
)
def test_bad_report_is_a_user_error(tmp_path, content, message):
    path = tmp_path / "report.json"
    if content is not None:
        write(path, content)
    code, out = run_grace("gate", path, "--min-accuracy", "0.5")
    assert code == 2
    assert message in out


def test_unknown_model_and_nothing_to_check(new):
    code, out = run_grace("gate", new, "--min-accuracy", "0.5", "--model", "llama")
    assert code == 2 and "no model 'llama' in the report; it has gpt, claude" in out
    code, out = run_grace("gate", new)
    assert code == 2 and "nothing to check" in out
    code, out = run_grace("gate", new, "--max-drop", "0.1")
    assert code == 2 and "--max-drop needs --baseline" in out
    code, out = run_grace("gate", new, "--min-accuracy", "1.5")
    assert code == 2 and "outside 0..1" in out


def test_help_documents_the_regression_rule():
    code, out = run_grace("gate", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "more than --max-drop below the baseline's accuracy AND below the lower bound of the baseline's 95% bootstrap CI" in text


def test_gate_on_a_real_scored_report(tmp_path, monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "approx")
    from harness.scoring import score_responses

    write(tmp_path / "kb" / "articles.jsonl",
          "".join(json.dumps({"id": str(i), "title": f"A{i}", "text": f"text {i}"}) + "\n" for i in range(1, 5)))
    gold = write(tmp_path / "gold.csv", "question_id,question,expected_citations,must_refuse\n"
                 + "".join(f"q{i},Q{i}?,{i},false\n" for i in range(1, 5)))
    rows = [{"question_id": f"q{i}", "model": "m", "response": f"Answer [ID: {i if i < 4 else 9}]"} for i in range(1, 5)]
    responses = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    score_responses(responses, gold, tmp_path / "kb", tmp_path / "out", bootstrap=200)
    code, out = run_grace("gate", tmp_path / "out", "--min-accuracy", "0.7", "--max-invalid-rate", "0.2")
    assert code == 1, out  # accuracy 75% passes; 25% invalid citations fail
    assert "PASS  m: accuracy 75.0% >= minimum 70.0%" in out
    assert "FAIL  m: invalid-citation rate 25.0% > maximum 20.0%" in out


def spotted(path: Path, models: dict[str, dict], spot: dict[str, tuple[float, list[float] | None, int]],
            judge: str = "openai:judge", mode: str = "claims") -> Path:
    """A report with a spot-check block as 'grace spotcheck run' writes it: model -> (rate, CI, checked answers)."""
    data = json.loads(report_json(models))
    data["spotcheck"] = {
        "schema_version": 1, "path": "spotcheck.json", "judge": {"name": judge, "template_hash": "t1"},
        "mode": mode, "scope": "hits",
        "models": {m: {"n": n, "hallucination_rate": r, "hallucination_rate_ci95": ci, "hallucination_rate_n": n}
                   for m, (r, ci, n) in spot.items()}}
    return write(path, json.dumps(data))


@pytest.fixture
def checked(tmp_path):
    return spotted(tmp_path / "new" / "report.json", {"gpt": model(0.82, [0.78, 0.86]), "claude": model(0.74)},
                   {"gpt": (0.06, [0.02, 0.12], 50), "claude": (0.20, [0.10, 0.30], 50)})


def test_hallucination_rate_above_the_maximum_fails_and_below_passes(checked):
    code, out = run_grace("gate", checked, "--max-hallucination-rate", "0.1")
    assert code == 1, out
    assert "PASS  gpt: hallucination rate 6.0% (n=50 checked answers) <= maximum 10.0%" in out
    assert "FAIL  claude: hallucination rate 20.0% (n=50 checked answers) > maximum 10.0%" in out
    code, out = run_grace("gate", checked, "--max-hallucination-rate", "20%")
    assert code == 0, out  # at the threshold passes


def test_a_hallucination_threshold_without_a_spotcheck_exits_2(new):
    code, out = run_grace("gate", new, "--max-hallucination-rate", "0.1")
    assert code == 2
    assert "no spot-check in this report" in out and "grace spotcheck run" in out


def test_a_model_missing_from_the_spotcheck_exits_2(tmp_path):
    path = spotted(tmp_path / "r" / "report.json", {"gpt": model(0.8), "claude": model(0.7)},
                   {"gpt": (0.05, None, 5)})
    code, out = run_grace("gate", path, "--max-hallucination-rate", "0.1")
    assert code == 2 and "no spot-check figures for 'claude'" in out
    code, out = run_grace("gate", path, "--max-hallucination-rate", "0.1", "--model", "gpt")
    assert code == 0, out


def test_hallucination_regression_only_beyond_the_baselines_ci(tmp_path, checked):
    # gpt 6% now; baseline 2% [0, 5]: rose 4 points and is above the CI: regression
    old = spotted(tmp_path / "old" / "report.json", {"gpt": model(0.82, [0.78, 0.86])}, {"gpt": (0.02, [0.0, 0.05], 50)})
    code, out = run_grace("gate", checked, "--baseline", old, "--model", "gpt")
    assert code == 1, out
    assert "regression: hallucination rate 6.0% vs baseline 2.0% rose 4.0%" in out and "above the baseline 95% CI" in out
    # the same rise inside a wide baseline CI is noise
    wide = spotted(tmp_path / "wide" / "report.json", {"gpt": model(0.82, [0.78, 0.86])}, {"gpt": (0.02, [0.0, 0.10], 50)})
    code, out = run_grace("gate", checked, "--baseline", wide, "--model", "gpt")
    assert code == 0 and "within noise" in out, out
    # a rise within --max-hallucination-rise passes whatever the CI
    code, out = run_grace("gate", checked, "--baseline", old, "--model", "gpt", "--max-hallucination-rise", "0.05")
    assert code == 0, out


def test_hallucination_regression_needs_the_same_judge(tmp_path, checked):
    other = spotted(tmp_path / "old" / "report.json", {"gpt": model(0.82, [0.78, 0.86])},
                    {"gpt": (0.0, [0.0, 0.01], 50)}, judge="baseline:lexical")
    code, out = run_grace("gate", checked, "--baseline", other, "--model", "gpt")
    assert code == 0, out
    assert "hallucination regression check skipped" in out
    code, out = run_grace("gate", checked, "--max-hallucination-rise", "0.05")
    assert code == 2 and "--max-hallucination-rise needs --baseline" in out


# -- gates fail closed: a figure a check reads that is not a number in 0..1 is bad input (exit 2), never a pass ------
def test_a_nan_accuracy_does_not_pass_a_regression_check(tmp_path):
    """Measured: accuracy NaN against a 55% baseline with --max-drop 0.03 printed "accuracy nan% vs baseline
    55.0%" and exited 0 (NaN compares false with everything, so the drop never counted)."""
    old = report(tmp_path / "old" / "report.json", {"gpt": model(0.55, [0.50, 0.60])})
    new = report(tmp_path / "new" / "report.json", {"gpt": model(float("nan"), [0.5, 0.6])})
    code, out = run_grace("gate", new, "--baseline", old, "--max-drop", "0.03")
    assert code == 2, out
    # refused where report.json is read (issue 37.12: figures are checked by their owner), before any check runs
    assert f"{new}: models['gpt'].accuracy is NaN, not a fraction between 0 and 1" in out
    assert "re-run 'grace score'" in out and "PASS" not in out


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING = _Missing()
RATES = [float("nan"), "NaN", "0.5", True, float("inf"), 1.5, -0.1, None, MISSING]
CIS = [[float("nan"), 0.9], ["0.5", "0.9"], [0.5], [], [0.9, 0.5], [True, 1], "x"]
SPOT = ("spotcheck", "models", "gpt")
# (options, which file holds the bad figure, where the figure is, what it can be): every check grace gate has
CHECKS = [
    (["--min-accuracy", "0.5"], "new", ("models", "gpt", "accuracy"), RATES),
    (["--max-invalid-rate", "0.5"], "new", ("models", "gpt", "invalid_citation_rate"), RATES),
    (["--baseline", "OLD", "--max-drop", "0.03"], "new", ("models", "gpt", "accuracy"), RATES),
    (["--baseline", "OLD", "--max-drop", "0.03"], "old", ("models", "gpt", "accuracy"), RATES),
    (["--baseline", "OLD"], "old", ("models", "gpt", "accuracy_ci95"), CIS),
    (["--max-hallucination-rate", "0.1"], "new", (*SPOT, "hallucination_rate"), RATES),
    (["--baseline", "OLD", "--max-hallucination-rise", "0.05"], "new", (*SPOT, "hallucination_rate"), RATES),
    (["--baseline", "OLD", "--max-hallucination-rise", "0.05"], "old", (*SPOT, "hallucination_rate"), RATES),
    (["--baseline", "OLD"], "old", (*SPOT, "hallucination_rate"), RATES[:-2]),  # unasked: null only skips
    (["--baseline", "OLD"], "old", (*SPOT, "hallucination_rate_ci95"), CIS),
]


def _shown(keys: tuple[str, ...]) -> str:
    return ".".join(keys[:-2]) + f"[{keys[-2]!r}].{keys[-1]}" if len(keys) > 3 else f"models[{keys[1]!r}].{keys[2]}"


@pytest.mark.parametrize(("options", "side", "keys", "value"),
                         [(o, s, k, v) for o, s, k, values in CHECKS for v in values],
                         ids=[f"{' '.join(o)}|{s}|{k[-1]}|{v!r}" for o, s, k, values in CHECKS for v in values])
def test_every_figure_a_check_reads_must_be_a_fraction_as_written(tmp_path, options, side, keys, value):
    files = {}
    for which, acc, rate in (("new", 0.82, 0.06), ("old", 0.84, 0.05)):
        data = json.loads(spotted(tmp_path / which / "report.json", {"gpt": model(acc, [acc - 0.03, acc + 0.03])},
                                  {"gpt": (rate, [0.02, 0.12], 50)}).read_text())
        if which == side:
            *parents, last = keys
            block = data
            for key in parents:
                block = block[key]
            if value is MISSING:
                del block[last]
            else:
                block[last] = value
        files[which] = write(tmp_path / which / "report.json", json.dumps(data))
    code, out = run_grace("gate", files["new"], *[str(files["old"]) if o == "OLD" else o for o in options])
    assert code == 2, out
    # the file, the model and the figure (a required figure missing is refused by the typed report, in its words)
    assert f"{files[side]}: {_shown(keys)}" in out or f"{files[side]}: models['gpt'] has no {keys[-1]}" in out
    assert "re-run 'grace" in out and "PASS" not in out and "Traceback" not in out


def test_a_hallucination_rise_asked_for_needs_a_comparable_spotcheck_on_both_sides(tmp_path, checked):
    """Before, each of these printed a note (or nothing) and passed: the check asked for by name never ran."""
    bare = report(tmp_path / "bare" / "report.json", {"gpt": model(0.82, [0.78, 0.86])})
    code, out = run_grace("gate", checked, "--baseline", bare, "--max-hallucination-rise", "0.05")
    assert code == 2 and f"{bare}: no spot-check in this report" in out, out
    code, out = run_grace("gate", bare, "--baseline", checked, "--max-hallucination-rise", "0.05")
    assert code == 2 and f"{bare}: no spot-check in this report" in out, out
    other = spotted(tmp_path / "other" / "report.json", {"gpt": model(0.82, [0.78, 0.86])},
                    {"gpt": (0.02, [0.0, 0.05], 50)}, judge="baseline:lexical")
    code, out = run_grace("gate", checked, "--baseline", other, "--max-hallucination-rise", "0.05", "--model", "gpt")
    assert code == 2 and "differ in judge" in out and "cannot be compared" in out, out
    unchecked = spotted(tmp_path / "old" / "report.json", {"gpt": model(0.82, [0.78, 0.86])}, {"claude": (0.1, None, 5)})
    code, out = run_grace("gate", checked, "--baseline", unchecked, "--max-hallucination-rise", "0.05", "--model", "gpt")
    assert code == 2 and f"{unchecked}: no spot-check figures for 'gpt' in the baseline" in out, out
    # the regression --baseline runs unasked says what it skipped
    code, out = run_grace("gate", checked, "--baseline", unchecked, "--model", "gpt")
    assert code == 0 and "gpt: not in the baseline's spot-check; hallucination regression check skipped" in out, out
    null = spotted(tmp_path / "null" / "report.json", {"gpt": model(0.82, [0.78, 0.86])}, {"gpt": (None, None, 0)})
    code, out = run_grace("gate", checked, "--baseline", null, "--model", "gpt")
    assert code == 0 and "gpt: no hallucination rate in the baseline; hallucination regression check skipped" in out
    code, out = run_grace("gate", checked, "--baseline", null, "--model", "gpt", "--max-hallucination-rise", "0.05")
    assert code == 2 and "spotcheck.models['gpt'].hallucination_rate is null" in out, out


def test_a_report_the_typed_model_refuses_names_the_file_the_figure_and_what_it_holds(tmp_path, new):
    bad = report(tmp_path / "bad" / "report.json", {"gpt": {**model(0.8), "n": None}})
    for args in (("gate", bad, "--min-accuracy", "0.5"), ("gate", new, "--baseline", bad)):
        code, out = run_grace(*args)
        assert code == 2 and "Traceback" not in out
        assert f"{bad}: models['gpt'].n: Input should be a valid integer (it is null); re-run 'grace score'" in out
    # a null accuracy is a report's own (an unlabelled run has none), but no figure a check can pass on
    text = json.loads(report_json({"gpt": {**model(0.8), "accuracy": None}}))
    code, out = run_grace("gate", write(tmp_path / "damaged" / "report.json", json.dumps(text)), "--min-accuracy", "0.5")
    assert code == 2 and "models['gpt'].accuracy: null in a report of labelled questions; re-run 'grace score'" in out
    text["unlabelled"] = {"absent": ["accuracy"], "reason": "the questions carry no label"}
    code, out = run_grace("gate", write(tmp_path / "unlabelled" / "report.json", json.dumps(text)), "--min-accuracy", "0.5")
    assert code == 2 and "its questions carry no label (a questions file, or imported logs without --gold), so it has no accuracy for " \
        "--min-accuracy to check" in out
    code, out = run_grace("gate", tmp_path / "unlabelled" / "report.json", "--max-invalid-rate", "0.5")
    assert code == 0, out


@pytest.mark.parametrize("threshold", ["min_accuracy", "max_invalid_rate", "max_drop", "max_hallucination_rise"])
def test_api_thresholds_are_fractions_too(tmp_path, checked, threshold):
    import grace as api
    from harness.core.errors import GraceError

    with pytest.raises(GraceError, match="must be a fraction between 0 and 1"):
        api.check_gate(checked, baseline=checked, **{threshold: float("nan")})
