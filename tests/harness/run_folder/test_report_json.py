"""``report.json`` has one typed model: the scorer writes it, and every reader (the reports, gate, the API) gets it back."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

import grace
from harness.core.errors import GraceError
from harness.reports import write_reports
from harness.reports.leaderboard import COLUMNS, Column, pct
from harness.run_folder.report import REPORT_SCHEMA_VERSION, ModelReport, Report, read_report, report_json
from harness.run_folder.run_dir import RunDir
from harness.run_folder.scores import CITATION_FIELDS, SCORE_FIELDS, ScoreLine
from tests.harness.reports.test_reports import build_run


@pytest.fixture
def run(tmp_path):
    return build_run(tmp_path)


def test_read_report_returns_the_typed_report(run):
    out, _ = run
    report = read_report(out / "report.json")
    assert isinstance(report, Report) and RunDir(out).read_report() == report
    top = report.ranked()[0]
    assert isinstance(top, ModelReport) and top.model == report.leaderboard[0] == "acme/large"
    assert top.rank == 1 and top.refusal.calibration == 0.7 and top.cost.per_1k_questions_usd == pytest.approx(2.0)
    assert (top.ci_low, top.ci_high) == tuple(top.accuracy_ci95)
    # a schema-1 report has no unshown-citation rate or truncation block: None, shown as a dash, never 0
    assert top.unshown_citation_rate is None and top.truncated is None
    assert report.gold.n_questions == 11 and report.kb.n_articles == 8 and report.pairwise[0].significant is False


def test_a_newer_schema_version_is_refused_with_what_to_do(run):
    out, _ = run
    data = json.loads((out / "report.json").read_text())
    data["schema_version"] = REPORT_SCHEMA_VERSION + 1
    (out / "report.json").write_text(json.dumps(data))
    with pytest.raises(GraceError) as err:
        read_report(out / "report.json")
    assert (f"report schema_version {REPORT_SCHEMA_VERSION + 1} is not one this grace reads "
            f"(<= {REPORT_SCHEMA_VERSION}); upgrade grace or re-run 'grace score'") in str(err.value)
    with pytest.raises(GraceError, match="upgrade grace"):
        write_reports(out)


def test_fields_this_grace_does_not_know_are_read_with_a_warning_and_not_written_back(run, caplog):
    out, _ = run
    data = json.loads((out / "report.json").read_text())
    data["models"]["acme/large"]["future_metric"] = 0.5
    data["future_block"] = {"x": 1}
    (out / "report.json").write_text(json.dumps(data))
    with caplog.at_level("WARNING", logger="grace"):
        again = json.loads(report_json(read_report(out / "report.json")))
    assert "models['acme/large'].future_metric, future_block" in caplog.text  # said, never silent
    assert "future_metric" not in again["models"]["acme/large"] and "future_block" not in again
    assert "model" not in again["models"]["acme/large"]  # the name is the key, never a field in the file


def test_the_scorer_writes_what_the_model_dumps_and_reads_back_equal(tmp_path, monkeypatch):
    from tests.harness.scoring.test_scoring import ALPHA, make_gold, make_kb, response_row, write_jsonl

    monkeypatch.setenv("GRACE_TOKENIZER", "approx")
    kb, gold = make_kb(tmp_path / "kb"), make_gold(tmp_path / "gold.csv")
    rows = [response_row(q, "alpha", text) for q, (text, *_) in ALPHA.items()]
    report = grace.score(write_jsonl(tmp_path / "r.jsonl", rows), gold, kb, tmp_path / "out", bootstrap=50).report
    path = tmp_path / "out" / "report.json"
    assert path.read_text() == report_json(report)  # byte for byte: written through the model, once
    lines = (tmp_path / "out" / "scores.jsonl").read_text().splitlines()
    for line in lines:  # the fast writer's lines are the model's fields, in its order (a GRACE model's: no citations)
        assert tuple(json.loads(line)) == SCORE_FIELDS and SCORE_FIELDS + CITATION_FIELDS == tuple(ScoreLine.model_fields)
        ScoreLine.model_validate_json(line)


def test_the_api_leaderboard_rows_are_the_reports_model_blocks(run):
    out, _ = run
    board = grace.load_run(out).leaderboard
    report = read_report(out / "report.json")
    assert [r.model for r in board] == report.leaderboard and board["acme/large"] == report.models["acme/large"]
    assert grace.LeaderboardRow is ModelReport
    record = board.to_records()[0]
    assert list(record)[:4] == ["model", "rank", "significance_group", "n"]
    assert record["ci_low"] == board["acme/large"].ci_low and record["refusal_calibration"] == 0.7
    assert record["cost_per_1k_questions_usd"] == pytest.approx(2.0) and "latency_p50_ms" in record
    assert not any(isinstance(v, dict | list) for v in record.values())  # flat: one DataFrame row per model
    assert board.failed == {} and board.warnings == ()


def test_one_column_spec_feeds_the_terminal_markdown_and_html(run):
    """Adding a leaderboard metric is a field in the report model and one Column: every view shows it."""
    out, kb = run
    extra = Column("macro_f1", "Macro F1", lambda m: pct(m.macro_f1), drop=7)
    COLUMNS.insert(-1, extra)
    try:
        console = Console(file=io.StringIO(), width=100, record=True)
        written = write_reports(out, kb=kb, console=console)
    finally:
        COLUMNS.remove(extra)
    md = written["markdown"].read_text()
    assert "| Macro F1 | Sig. |" in md and "| 79.0% | a |" in md
    assert "<th class=num>Macro F1</th>" in written["html"].read_text()
    assert "Macro F1" in console.export_text()
