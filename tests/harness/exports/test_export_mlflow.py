"""grace export --to mlflow: a real scored run logged through MLflow's client, read back through MLflow's client.

The run is the sample benchmark answered by two baselines and spot-checked (so categories and hallucination figures
are there). Every expected figure is read from report.json as written, by its path in the file.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.exports import ExportFailed
from harness.run_folder.run_dir import RunDir
from tests.conftest import SAMPLE, run_grace
from tests.export_runs import MODELS, build_sample_run

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra (mlflow-skinny, SQLAlchemy, Alembic) is not installed")
pytest.importorskip("sqlalchemy", reason="MLflow's local sqlite store needs SQLAlchemy (the mlflow extra)")

from harness.exports.mlflow_run import export, tracking_uri  # noqa: E402 - after the skip: it is the mlflow extra's module

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

REPORT_FILES = {"report.json", "leaderboard.md", "report.html"}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """Built once, copied by each test."""
    return build_sample_run(tmp_path_factory.mktemp("sample"))


@pytest.fixture
def run(sample_run, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)  # an MLflow default that writes to the current folder would show up here
    shutil.copytree(sample_run, tmp_path / "run")
    return tmp_path / "run"


def _client(uri: str):
    return mlflow.MlflowClient(tracking_uri=uri)


def _runs(uri: str, experiment: str = "sample") -> dict[str, object]:
    """The experiment's runs by role: "parent", and each model's name."""
    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} at {uri}"
    runs = client.search_runs([exp.experiment_id])
    return {r.data.tags["grace.model"] if r.data.tags.get("grace.role") == "model" else "parent": r for r in runs}


def _expected_metrics(block: dict, spot: dict | None) -> dict[str, float]:
    """The figures the issue names, each read from report.json by its path (null ones absent)."""
    out = {
        "accuracy": block["accuracy"], "accuracy_ci_low": block["accuracy_ci95"][0],
        "accuracy_ci_high": block["accuracy_ci95"][1], "strict_accuracy": block["strict_accuracy"],
        "strict_accuracy_ci_low": block["strict_accuracy_ci95"][0],
        "strict_accuracy_ci_high": block["strict_accuracy_ci95"][1],
        "refusal_calibration": block["refusal"]["calibration"],
        "refusal_should_refuse_did": block["refusal"]["should_refuse_did"],
        "refusal_should_answer_did": block["refusal"]["should_answer_did"],
        "invalid_citation_rate": block["invalid_citation_rate"],
        "unshown_citation_rate": block["unshown_citation_rate"],
        "cost_total_usd": block["cost"]["total_usd"], "cost_per_1k_questions_usd": block["cost"]["per_1k_questions_usd"],
        "n": block["n"], "n_questions": block["n_questions"], "error_count": block["error_count"],
        "retrieval_recall_at_k": block["retrieval"]["recall_at_k"], "macro_f1": block["macro_f1"],
        "rank": block["rank"],
    }
    out.update({f"outcome_{k}": v for k, v in block["outcomes"].items()})
    for name, cat in block["categories"].items():
        out[f"category/{name}/accuracy"] = cat["accuracy"]
        out[f"category/{name}/n"] = cat["n"]
        out[f"category/{name}/accuracy_ci_low"], out[f"category/{name}/accuracy_ci_high"] = cat["accuracy_ci95"]
    if spot is not None:
        out["spotcheck_hallucination_rate"] = spot["hallucination_rate"]
        out["spotcheck_hallucination_rate_ci_low"] = spot["hallucination_rate_ci95"][0]
        out["spotcheck_groundedness"] = spot["groundedness"]
        out["spotcheck_n"] = spot["n"]
    return {k: float(v) for k, v in out.items() if v is not None}


def test_mlflow_export_reads_back_params_metrics_and_artifacts_as_report_json_has_them(run, tmp_path):
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    tracking_before = mlflow.get_tracking_uri()
    done = export(RunDir(run), uri, {})
    assert done.target == "mlflow" and done.location == uri and set(done.ids) == set(MODELS) and done.models == 2
    # no global state of MLflow's changed: no active run left, the tracking URI not set
    assert mlflow.active_run() is None and mlflow.get_tracking_uri() == tracking_before

    report = json.loads((run / "report.json").read_text())
    info = json.loads((run / "run.json").read_text())
    runs = _runs(uri)
    assert set(runs) == {"parent", *MODELS}
    parent = runs["parent"]
    assert parent.info.status == "FINISHED" and parent.info.run_name == "run"
    assert parent.data.tags["grace.report_sha256"] and parent.data.tags["grace.started_at"] == info["started_at"]
    assert parent.data.tags["grace.run_folder"] == str(run.resolve())
    assert "baseline:threshold" in parent.data.tags["mlflow.note.content"]  # leaderboard.md as its description
    client = _client(uri)
    for model in MODELS:
        r = runs[model]
        assert r.info.run_id == done.ids[model] and r.info.run_name == model and r.info.status == "FINISHED"
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        block = report["models"][model]
        expected = _expected_metrics(block, report["spotcheck"]["models"][model])
        assert {k: r.data.metrics.get(k) for k in expected} == expected
        assert "latency_p50_ms" not in r.data.metrics  # null in report.json (baselines report no latency): not sent
        assert "forbidden_citation_rate" not in r.data.metrics  # absent from report.json
        entry = next(m for m in info["models"] if m["name"] == model)
        assert r.data.params == {**r.data.params, **{
            "model": model, "provider": entry["provider"], "provider_model": entry["model"],
            "template": "grounded-inline.v1", "template_hash": info["templates"]["grounded-inline.v1"],
            "retriever": info["kb"]["embedder"], "k": str(info["config"]["k"]),
            "repeats": str(info["config"]["repeats"]), "kb_hash": report["kb"]["hash"],
            "gold_hash": report["gold"]["hash"], "grace_version": report["grace_version"],
            "generation.max_tokens": str(entry["params"]["max_tokens"]),
        }}
        assert client.list_artifacts(r.info.run_id) == []  # nested: the report files are the parent's, once
        history = client.get_metric_history(r.info.run_id, "accuracy")
        assert [(m.step, m.value) for m in history] == [(0, block["accuracy"])]
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == REPORT_FILES
    got = mlflow.artifacts.download_artifacts(run_id=parent.info.run_id, artifact_path="report.json",
                                              tracking_uri=uri, dst_path=str(tmp_path / "dl"))
    assert Path(got).read_bytes() == (run / "report.json").read_bytes()
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlartifacts").exists()  # nothing in the cwd


def test_exporting_the_same_report_twice_updates_its_runs_instead_of_duplicating_them(run, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = export(RunDir(run), uri, {})
    again = export(RunDir(run), uri, {})
    assert again.ids == first.ids and any("not duplicated" in n for n in again.notes)
    runs = _runs(uri)
    assert len(runs) == 3 and len(_client(uri).search_runs([runs["parent"].info.experiment_id])) == 3
    history = _client(uri).get_metric_history(first.ids["baseline:top1"], "accuracy")
    assert len(history) == 1  # logged at the report's time and step 0: MLflow keeps one value
    # a re-scored report is another identity: new runs, the old ones kept
    code, out = run_grace("score", run / "responses.jsonl", "--gold", SAMPLE / "gold.csv", "--kb",
                          json.loads((run / "report.json").read_text())["kb"]["path"], "--out", run,
                          "--bootstrap", "500")
    assert code == 0, out
    rescored = export(RunDir(run), uri, {})
    assert set(rescored.ids.values()).isdisjoint(first.ids.values())
    # an experiment deleted in MLflow is named, with how to restore it, not written into
    _client(uri).delete_experiment(runs["parent"].info.experiment_id)
    with pytest.raises(ExportFailed, match="'sample' .* was deleted; restore it"):
        export(RunDir(run), uri, {})


def test_not_nested_gives_each_model_run_the_report_files_and_an_experiment_of_its_own(run, tmp_path):
    uri = f"sqlite:///{tmp_path / 'flat.db'}"
    done = export(RunDir(run), uri, {"nested": "false", "experiment": "handbook QA"})
    runs = _runs(uri, "handbook QA")
    assert set(runs) == set(MODELS)  # no parent
    for model in MODELS:
        assert "mlflow.parentRunId" not in runs[model].data.tags
        assert {a.path for a in _client(uri).list_artifacts(done.ids[model])} == REPORT_FILES


def test_default_store_is_a_sqlite_database_in_the_run_folder(run, tmp_path):
    done = export(RunDir(run), None, {})
    db = run / "mlflow" / "mlflow.db"
    assert done.location == f"sqlite:///{db.resolve()}" and db.is_file()
    assert any("mlflow ui --backend-store-uri" in n for n in done.notes)
    assert {p.name for p in (run / "mlflow" / "mlartifacts").rglob("*") if p.is_file()} == REPORT_FILES
    assert set(_runs(done.location)) == {"parent", *MODELS}


def test_dest_is_a_tracking_uri_or_a_path_to_a_local_store(tmp_path, monkeypatch):
    folder = RunDir(tmp_path / "run")
    assert tracking_uri(folder, "http://mlflow.internal:5000") == "http://mlflow.internal:5000"
    assert tracking_uri(folder, "databricks") == "databricks"
    assert tracking_uri(folder, "databricks://profile") == "databricks://profile"
    assert tracking_uri(folder, str(tmp_path / "a.db")) == f"sqlite:///{(tmp_path / 'a.db').resolve()}"
    assert tracking_uri(folder, str(tmp_path / "st")) == f"sqlite:///{(tmp_path / 'st' / 'mlflow.db').resolve()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracker:5000")
    assert tracking_uri(folder, None) == "http://tracker:5000"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_tracking_server_fails_fast_and_leaves_the_run_as_it_was(run):
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    uri = f"http://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    with pytest.raises(ExportFailed) as err:
        export(RunDir(run), uri, {})
    assert time.monotonic() - start < 20
    assert uri in str(err.value) and "Connection refused" in str(err.value)
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir()} == before


def test_a_tracking_server_that_never_answers_fails_within_seconds(run):
    """Connected, then silence: MLflow's defaults (120 s timeout, 7 retries) would wait many minutes."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        uri = f"http://127.0.0.1:{server.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(ExportFailed, match="no answer within 5 s"):
            export(RunDir(run), uri, {})
        assert time.monotonic() - start < 20


def test_through_grace_export_a_down_tracker_exits_2_with_a_message_and_a_later_export_succeeds(run, tmp_path, monkeypatch):
    uri = f"http://127.0.0.1:{_free_port()}"
    code, out = run_grace("export", run, "--to", "mlflow", "--dest", uri)
    assert code == 2 and uri in out and "Traceback" not in out
    # the tracker is "back": the same destination is now a local store (the variable the retry reads it from)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'back.db'}")
    code, out = run_grace("export", run, "--to", "mlflow")
    assert code == 0 and "exported to mlflow" in out and "baseline:top1" in out, out


def test_bad_options_and_unscored_folders_are_grace_errors(run, tmp_path):
    with pytest.raises(GraceError, match="unknown option.*colour"):
        export(RunDir(run), f"sqlite:///{tmp_path / 'x.db'}", {"colour": "red"})
    with pytest.raises(GraceError, match="nested=.*true or false"):
        export(RunDir(run), f"sqlite:///{tmp_path / 'x.db'}", {"nested": "maybe"})
    (tmp_path / "empty").mkdir()
    with pytest.raises(GraceError, match="not scored"):
        export(RunDir(tmp_path / "empty"), f"sqlite:///{tmp_path / 'x.db'}", {})


def test_without_mlflow_installed_the_error_gives_the_pip_command(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError, as when not installed
    with pytest.raises(GraceError, match=r"pip install 'grace-eval\[mlflow\]'"):
        export(RunDir(run), None, {})
