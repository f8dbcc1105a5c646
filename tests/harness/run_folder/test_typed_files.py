"""The run folder's files are typed on both sides: written from their model, read back as the same model.

report.json is built as its model (a misspelt key is an error, not a silent null), spotcheck.json has one model
for write and read, run.json's blocks are typed (a wrong type is refused, named), and a responses.jsonl row reads
back as the record written.
"""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import ValidationError

import grace
from harness.run_folder.report import ModelReport, SpotcheckBlock, SpotcheckModel, read_report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import ResponseRecord, RunInfo
from harness.run_folder.spotcheck import ModelSpot, SpotcheckFile, read_spotcheck, spotcheck_json
from tests.conftest import SAMPLE, run_grace


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """The sample benchmark, one offline model, a claims spot-check with the offline judge."""
    root = tmp_path_factory.mktemp("typed")
    kb, run = root / "kb", root / "run"
    assert run_grace("kb", "build", SAMPLE / "handbook", "--out", kb)[0] == 0
    code, out = run_grace("run", "--kb", kb, "--gold", SAMPLE / "gold.csv", "--model", "baseline:top1", "--out", run)
    assert code == 0, out
    code, out = run_grace("spotcheck", "run", run, "--kb", kb, "--judge", "baseline:lexical", "--sample", "5")
    assert code == 0, out
    return run


# -- report.json -----------------------------------------------------------------------------------------------
def test_a_misspelt_key_in_a_report_block_is_an_error_not_a_silent_null(sample_run):
    block = read_report(sample_run / "report.json").ranked()[0]
    data = block.model_dump()
    data["unshown_citaton_rate"] = data.pop("unshown_citation_rate")  # optional: it would read back as null
    with pytest.raises(ValidationError, match="unshown_citaton_rate"):
        ModelReport(**data)
    with pytest.raises(ValueError, match="rnak"):
        block.rnak = 1  # a misspelt assignment in the builder
    with pytest.raises(ValidationError, match="accuracy"):
        block.accuracy = "high"  # assigned values are checked too


def test_a_misspelt_key_in_the_scorer_stops_the_scoring(sample_run, tmp_path, monkeypatch):
    import harness.scoring.score_run as score_run

    real = score_run.cost_latency

    def misspelt(*args):
        cost, latency = real(*args)
        return cost, {"p50_ms": latency["p50_ms"], "p95_ms": latency["p95_ms"], "p99_mss": 1.0}

    monkeypatch.setattr(score_run, "cost_latency", misspelt)
    with pytest.raises(ValidationError, match="p99_mss"):
        grace.score(sample_run / "responses.jsonl", SAMPLE / "gold.csv", sample_run.parent / "kb", tmp_path / "out",
                    bootstrap=10)


def test_keys_this_grace_does_not_know_are_read_with_a_warning_naming_them(sample_run, tmp_path, caplog):
    data = json.loads((sample_run / "report.json").read_text())
    data["models"]["baseline:top1"]["future_metric"] = 0.5
    data["future_block"] = {"x": 1}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="grace"):
        report = read_report(path)
    assert report.models["baseline:top1"].accuracy == data["models"]["baseline:top1"]["accuracy"]
    assert "models['baseline:top1'].future_metric, future_block" in caplog.text and "not written back" in caplog.text
    assert "future_metric" not in report.models["baseline:top1"].model_dump()


# -- spotcheck.json --------------------------------------------------------------------------------------------
def test_spotcheck_json_round_trips_through_one_model(sample_run):
    path = RunDir(sample_run).spotcheck
    spot = read_spotcheck(path)
    assert isinstance(spot, SpotcheckFile) and isinstance(spot.models["baseline:top1"], ModelSpot)
    assert spotcheck_json(spot) == path.read_text(encoding="utf-8")  # byte for byte: read, then written again
    # the report's block is built from the same model, and its figures are ModelSpot's own fields
    block = SpotcheckBlock.from_spotcheck(spot)
    assert block.models["baseline:top1"].hits == spot.models["baseline:top1"].hits
    written = read_report(sample_run / "report.json").spotcheck
    assert written is not None and written.models == block.models and written.judge == block.judge
    for name, field in SpotcheckModel.model_fields.items():
        assert name in ModelSpot.model_fields and field.default is None


def test_spotcheck_json_figures_are_strict_when_written(sample_run):
    spot = read_spotcheck(RunDir(sample_run).spotcheck)
    figures = spot.models["baseline:top1"].model_dump()
    figures["coverge"] = figures.pop("coverage")  # optional: it would read back as null
    with pytest.raises(ValidationError, match="coverge"):
        ModelSpot(**figures)


def test_a_broken_spotcheck_json_is_refused_naming_the_field(sample_run, tmp_path):
    data = json.loads(RunDir(sample_run).spotcheck.read_text())
    data["models"]["baseline:top1"]["n"] = "many"
    path = tmp_path / "spotcheck.json"
    path.write_text(json.dumps(data))
    with pytest.raises(grace.GraceError, match=r"spotcheck.json: models.baseline:top1.n: Input should be a valid integer"):
        read_spotcheck(path)


# -- run.json --------------------------------------------------------------------------------------------------
def test_run_json_blocks_are_typed(sample_run):
    info = RunDir(sample_run).read_run_info()
    assert info is not None
    assert info.kb.articles > 0 and info.gold.questions == 90 and info.config.k == 3
    assert info.models[0].name == "baseline:top1" and info.rows["baseline:top1"].answered == 90
    assert info.counts["baseline:top1"].done == 90


def test_a_run_json_block_with_a_wrong_type_is_refused_with_a_clear_message(sample_run, tmp_path, caplog):
    data = json.loads((sample_run / "run.json").read_text())
    data["kb"]["articles"] = "sixty"
    folder = RunDir(tmp_path)
    folder.run_info.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="grace"):
        assert folder.read_run_info() is None
    assert "run.json: unreadable (kb.articles: Input should be a valid integer" in caplog.text
    with pytest.raises(ValidationError, match="json_mod"):
        RunInfo.model_validate(data | {"kb": json.loads((sample_run / "run.json").read_text())["kb"]}).models[0].learn(
            {"json_mod": "prompt"})  # what a provider learned must be a field run.json has


# -- responses.jsonl -------------------------------------------------------------------------------------------
def test_a_responses_row_reads_back_as_the_record_written(tmp_path):
    record = ResponseRecord(question_id="q1", model="m", repeat=1, response="Yes [ID: 3]", retrieved_ids=["3", "7"],
                            retrieval_scores=[1.5, 0.5], params={"max_tokens": 64}, input_tokens=10, output_tokens=4,
                            cost_usd=0.001, latency_ms=12.5, finish_reason="stop", created_at="2025-01-01T00:00:00+00:00")
    folder = RunDir(tmp_path)
    out = folder.responses_appender()
    out.write(record.model_dump(mode="json"))  # as the runner writes a row (harness.runner.engine)
    out.close()
    assert folder.response_records() == [record]
