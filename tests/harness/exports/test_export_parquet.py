"""grace export: the tidy table, the parquet file read back by pandas and DuckDB, and automatic logging (--log-to).

The runs are real: ``grace run`` with offline models, or a hand-written responses file scored by ``grace score``.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest

from tests.conftest import run_grace, small_bench, write

pa = pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")

ANSWERS = {"q0": "Ten days a year. [ID: 1]", "q1": "Sixteen weeks. [ID: 2]", "q2": "Zebras juggle quantum pineapples nightly on Mars. [ID: 3]",
           "r1": "{refusal}"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 8, ["where is the gym", "who is the CEO"])


@pytest.fixture(scope="module")
def scored(bench, tmp_path_factory):
    """Three offline models, two repeats each, scored: the run every accuracy check reads."""
    root = tmp_path_factory.mktemp("scored")
    responses = "\n".join(f"{q} = {json.dumps(t)}" for q, t in ANSWERS.items())
    write(root / "models.toml", '[[models]]\nspec = "baseline:top1"\n\n[[models]]\nspec = "baseline:threshold"\n\n'
          f'[[models]]\nspec = "scripted:writer"\n[models.options]\ndefault = "Answer. [ID: {{second_id}}]"\n'
          f"[models.options.responses]\n{responses}\n")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", root / "models.toml",
                          "--repeats", "2", "--out", root / "run")
    assert code == 0, out
    return root / "run"


def _report(run: Path) -> dict:
    return json.loads((run / "report.json").read_text(encoding="utf-8"))


def test_the_parquet_file_read_by_pandas_and_duckdb_gives_each_models_accuracy_in_report_json(scored, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed")
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    code, out = run_grace("export", run, "--to", "parquet")
    assert code == 0, out
    path = run / "results.parquet"
    assert f"exported to parquet: {path}" in out
    report = _report(run)
    # report.json's accuracy is the mean over every scored response (repeats counted one by one), to 6 places
    df = __import__("pandas").read_parquet(path)
    assert len(df) == report["responses"]["n"] == 3 * 10 * 2
    by_pandas = df.groupby("model")["correct"].mean().round(6).to_dict()
    by_duckdb = dict(duckdb.sql(f"select model, round(avg(correct::int), 6) from '{path}' group by model").fetchall())
    expected = {name: m["accuracy"] for name, m in report["models"].items()}
    assert by_pandas == by_duckdb == expected
    assert len(set(expected.values())) > 1  # the models differ: the check can tell one from another
    strict = dict(duckdb.sql(f"select model, round(avg((strict_outcome in ('correct', 'correct_refusal'))::int), 6) "
                             f"from '{path}' group by model").fetchall())
    assert strict == {name: m["strict_accuracy"] for name, m in report["models"].items()}
    # each outcome count of the report, from the table
    counts = duckdb.sql(f"select model, outcome, count(*) from '{path}' group by all").fetchall()
    for model, outcome, n in counts:
        assert report["models"][model]["outcomes"][outcome] == n
    # the run's identity travels with the file
    meta = pq.read_schema(path).metadata
    assert meta[b"grace.kb_hash"].decode() == report["kb"]["hash"]
    assert meta[b"grace.gold_hash"].decode() == report["gold"]["hash"]
    info = json.loads((run / "run.json").read_text())
    assert meta[b"grace.run_started_at"].decode() == info["started_at"]
    assert meta[b"grace.version"] and meta[b"grace.report_version"].decode() == report["grace_version"]


def test_the_table_has_the_documented_columns_and_types(scored):
    from harness.exports import table

    t = table.question_table(scored)
    assert t.schema.names == table.columns() and "spot_segments" not in t.schema.names
    assert t.schema.equals(table.schema())
    for name in t.schema.names:  # every column is named in the module docstring, where users read them
        assert f"\n{name} " in table.__doc__
    rows = t.to_pylist()
    q0 = next(r for r in rows if r["model"] == "scripted:writer" and r["question_id"] == "q0" and r["repeat"] == 1)
    assert q0["question"] == "how many sick days do I get (variant 0)" and q0["category"] is None
    assert q0["outcome"] == "correct" and q0["correct"] is True and q0["cited_ids"] == ["1"]
    assert q0["gold_ids"] == ["1"] and q0["must_refuse"] is False and q0["response"] == ANSWERS["q0"]
    assert q0["citations_needed"] == "any"  # the gold's default: any one listed article answers (issue 46)
    assert q0["gold_rank"] == q0["retrieved_ids"].index("1") + 1
    r1 = next(r for r in rows if r["model"] == "scripted:writer" and r["question_id"] == "r1")
    assert r1["outcome"] == "correct_refusal" and r1["correct"] and r1["must_refuse"] and r1["gold_rank"] is None
    assert r1["gold_ids"] == []
    assert {r["repeat"] for r in rows} == {0, 1} and all(r["error"] is None for r in rows)
    assert all(r["input_tokens"] for r in rows if r["model"] == "scripted:writer")


def _hand_run(root: Path, rows: list[dict], gold: str) -> Path:
    """A responses file written by hand (as a team's own tool would), scored by grace score."""
    run = root / "run"
    write(root / "gold.csv", gold)
    write(run / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return run


GOLD = ("question_id,question,expected_answer,expected_citations,must_refuse,category\n"
        "q1,How many sick days?,,1,false,leave\nq2,How long is parental leave?,,2;3,false,leave\n"
        "q3,Where do I book flights?,,3,false,\nr1,Where is the gym?,,,true,facilities\n")


def _rows(error: object = None) -> list[dict]:
    return [
        {"question_id": "q1", "model": "a", "response": "Ten days [ID: 1]", "retrieved_ids": ["2", "1", "3"],
         "cached": True, "input_tokens": 120, "output_tokens": 9, "cost_usd": 0.0002, "latency_ms": 812.5},
        {"question_id": "q2", "model": "a", "response": None, "retrieved_ids": ["4", "1", "3"],
         "error": error if error is not None else {"kind": "timeout", "message": "timed out", "attempts": 6}},
        {"question_id": "q3", "model": "a", "response": "See [ID: 9]", "retrieved_ids": ["4"]},
        {"question_id": "r1", "model": "a", "response": "I don't have enough information to answer this question.",
         "retrieved_ids": ["1", "2"]},
        {"question_id": "q1", "model": "b", "response": "Ten days [ID: 1]"},
        {"question_id": "q2", "model": "b", "response": "Sixteen weeks [ID: 2] and [ID: 3]",
         "retrieved_ids": ["3", "2"], "finish_reason": "length"},
        {"question_id": "q3", "model": "b", "response": "Flights: [ID: 3]", "retrieved_ids": ["3"]},
        {"question_id": "r1", "model": "b", "response": "The gym is downstairs [ID: 4]", "retrieved_ids": ["4"]},
    ]


def _score(bench: Path, run: Path, gold: Path) -> None:
    code, out = run_grace("score", run / "responses.jsonl", "--gold", gold, "--kb", bench / "kb")
    assert code == 0, out


def test_a_hand_written_run_gives_every_column_its_value(bench, tmp_path):
    run = _hand_run(tmp_path, _rows(), GOLD)
    _score(bench, run, tmp_path / "gold.csv")
    from harness.exports.table import question_table

    rows = {(r["model"], r["question_id"]): r for r in question_table(run).to_pylist()}
    a1 = rows[("a", "q1")]
    assert (a1["question"], a1["category"], a1["gold_rank"], a1["cached"]) == ("How many sick days?", "leave", 2, True)
    assert (a1["input_tokens"], a1["output_tokens"], a1["cost_usd"], a1["latency_ms"]) == (120, 9, 0.0002, 812.5)
    a2 = rows[("a", "q2")]
    assert (a2["outcome"], a2["error"], a2["response"], a2["correct"]) == ("error", "timeout", None, False)
    assert a2["gold_ids"] == ["2", "3"] and a2["gold_rank"] == 3  # 3 is the first gold article retrieved, third
    assert rows[("a", "q3")]["outcome"] == "invalid_citation" and rows[("a", "q3")]["category"] == "(no category)"
    assert rows[("a", "q3")]["gold_rank"] is None  # its gold article was not retrieved
    assert rows[("a", "r1")]["outcome"] == "correct_refusal" and rows[("a", "r1")]["gold_rank"] is None
    b1 = rows[("b", "q1")]
    assert b1["retrieved_ids"] is None and b1["gold_rank"] is None and b1["cost_usd"] is None and not b1["cached"]
    b2 = rows[("b", "q2")]
    assert b2["outcome"] == "multiple_citations" and b2["cited_ids"] == ["2", "3"] and b2["truncated"] is True
    assert b2["gold_rank"] == 1
    assert rows[("b", "r1")]["outcome"] == "answered_unanswerable" and rows[("b", "r1")]["category"] == "facilities"


def test_a_file_pyarrow_cannot_type_is_read_row_by_row_to_the_same_table(bench, tmp_path):
    """An error given as text (a team's own log) fails pyarrow's typed reader; the row reader gives the same rows."""
    from harness.exports.table import question_table

    typed = _hand_run(tmp_path / "typed", _rows(), GOLD)
    _score(bench, typed, tmp_path / "typed" / "gold.csv")
    loose = _hand_run(tmp_path / "loose", _rows(error="timeout"), GOLD)
    _score(bench, loose, tmp_path / "loose" / "gold.csv")
    assert question_table(loose).equals(question_table(typed))


def test_a_retried_call_appended_to_the_file_gives_the_row_the_scorer_kept(bench, tmp_path):
    """A re-run appends its retry of a failed call; the scorer keeps the last line, and so does the table."""
    from harness.exports.table import question_table

    rows = _rows() + [{"question_id": "q2", "model": "a", "response": "Sixteen weeks [ID: 2]",
                       "retrieved_ids": ["2"]}]
    run = _hand_run(tmp_path, rows, GOLD)
    _score(bench, run, tmp_path / "gold.csv")
    table = question_table(run).to_pylist()
    assert len(table) == 8
    a2 = next(r for r in table if (r["model"], r["question_id"]) == ("a", "q2"))
    assert (a2["outcome"], a2["error"], a2["response"], a2["gold_rank"]) == ("correct", None, "Sixteen weeks [ID: 2]", 1)
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert [(r["model"], r["question_id"]) for r in table] == [(s["model"], s["question_id"]) for s in scores]


def test_a_run_not_scored_yet_says_grace_score(bench, tmp_path):
    run = _hand_run(tmp_path, _rows(), GOLD)
    code, out = run_grace("export", run, "--to", "parquet")
    assert code == 2 and "not scored yet" in out and "grace score" in out and "Traceback" not in out
    _score(bench, run, tmp_path / "gold.csv")
    with (run / "responses.jsonl").open("a") as fh:  # an answer added after scoring: the scores are behind
        fh.write(json.dumps({"question_id": "q3", "model": "c", "response": "x"}) + "\n")
    code, out = run_grace("export", run, "--to", "parquet")
    assert code == 2 and "score it again" in out


def test_the_parquet_file_never_replaces_an_input(scored, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    before = (run / "scores.jsonl").read_bytes()
    code, out = run_grace("export", run, "--to", "parquet", "--dest", run / "scores.jsonl")
    assert code == 2 and "this command reads" in out and (run / "scores.jsonl").read_bytes() == before
    write(tmp_path / "notes.txt", "mine")
    code, out = run_grace("export", run, "--to", "parquet", "--dest", tmp_path / "notes.txt")
    assert code == 2 and "not a parquet file" in out and (tmp_path / "notes.txt").read_text() == "mine"
    code, out = run_grace("export", run, "--to", "parquet", "--dest", tmp_path / "t.parquet", "--option",
                          "compression=zstd")
    assert code == 0, out
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    (tmp_path / "out").mkdir()
    for _ in range(2):  # a folder gets results.parquet; a re-export replaces it
        code, out = run_grace("export", run, "--to", "parquet", "--dest", tmp_path / "out")
        assert code == 0 and pq.read_table(tmp_path / "out" / "results.parquet").num_rows == 60, out
    code, out = run_grace("export", run, "--to", "parquet", "--option", "level=3")
    assert code == 2 and "unknown option(s) level" in out
    assert not list(run.glob(".*.tmp")) and not list((tmp_path / "out").glob(".*.tmp"))


def test_without_pyarrow_the_error_gives_the_pip_command(scored, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed: import pyarrow raises ImportError
    code, out = run_grace("export", scored, "--to", "parquet")
    assert code == 2 and "pip install 'grace-eval[parquet]'" in out and "Traceback" not in out


def test_spot_checked_answers_carry_their_judgements(scored, tmp_path, bench):
    run = tmp_path / "run"
    shutil.copytree(scored, run)
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run, "--kb", bench / "kb", "--judge",
                          "baseline:lexical", "--all")
    assert code == 0, out
    from harness.exports.table import columns, question_table

    table = question_table(run)
    assert table.schema.names == columns(spotchecked=True)
    spot = json.loads((run / "spotcheck.json").read_text())
    df = table.to_pandas()
    checked = df[df.spot_segments.notna()]
    assert len(checked) > 10 and checked.spot_hallucinated.any() and not checked.spot_hallucinated.all()
    for model, figures in spot["models"].items():
        mine = checked[checked.model == model]
        assert len(mine) == figures["n"]  # every checked answer, and only those
        assert int(mine.spot_segments.sum()) == figures["n_segments"]
        assert float(mine.spot_unsupported.sum()) == figures["n_unsupported_segments"]
        if figures["n"]:
            assert round(float(mine.spot_hallucinated.mean()), 6) == pytest.approx(figures["hallucination_rate"])
    assert checked.correct.all()  # the spot-check checks hits
    assert df[df.spot_segments.isna()].spot_hallucinated.isna().all()


# -- automatic logging -----------------------------------------------------------------------------------------------
def test_log_to_a_target_that_fails_keeps_the_run_and_grace_export_retries_it(bench, tmp_path):
    """--log-to parquet into a path that cannot be written: the run exits 0 with its results, the failure is said
    and recorded, and grace export tries it again."""
    write(tmp_path / "blocker", "a file where a folder should be")
    write(tmp_path / "board.toml", '[run]\nlog_to = ["parquet"]\n\n[[models]]\nspec = "baseline:top1"\n\n'
          f'[export.parquet]\npath = "{tmp_path / "blocker" / "results.parquet"}"\n')
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", tmp_path / "board.toml",
                          "--out", run)
    assert code == 0, out
    assert (run / "report.json").exists() and "export to parquet failed" in out
    assert f"grace export {run} --to parquet" in out and "--retry" in out
    from harness.run_folder.exports_log import read_exports
    from harness.run_folder.run_dir import RunDir

    (rec,) = read_exports(RunDir(run).exports)
    assert (rec.target, rec.ok, rec.by, rec.dest) == ("parquet", False, "grace run --log-to",
                                                     str(tmp_path / "blocker" / "results.parquet"))
    assert "cannot write" in rec.error
    code, out = run_grace("export", run, "--retry")  # the same destination: still failing, and said so
    assert code == 2 and "export to parquet failed" in out
    (tmp_path / "blocker").unlink()
    code, out = run_grace("export", run, "--retry")
    assert code == 0 and (tmp_path / "blocker" / "results.parquet").exists(), out
    code, out = run_grace("export", run, "--retry")
    assert code == 0 and "nothing to retry" in out
    assert [r.ok for r in read_exports(RunDir(run).exports)] == [False, False, True]


def test_log_to_is_checked_before_any_call(bench, tmp_path):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "--out",
                          tmp_path / "run", "--log-to", "mlfow")
    assert code == 2 and "mlfow" in out
    write(tmp_path / "board.toml", '[[models]]\nspec = "baseline:top1"\n\n[export.mlfow]\ntracking_uri = "x"\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", tmp_path / "board.toml",
                          "--out", tmp_path / "run")
    assert code == 2 and "[export.TARGET]" in out and "'mlfow'" in out
    assert not (tmp_path / "run" / "responses.jsonl").exists()


def test_a_password_in_a_destination_is_never_recorded(tmp_path):
    from harness.run_folder.exports_log import ExportRecord, append_export, read_exports

    append_export(tmp_path / "exports.jsonl", ExportRecord(
        target="mlflow", dest="https://bob:hunter2@mlflow.example/", options={"api_key": "sk-1", "nested": True},
        ok=False, error="cannot reach https://bob:hunter2@mlflow.example/", by="grace export", at="t"))
    text = (tmp_path / "exports.jsonl").read_text()
    assert "hunter2" not in text and "sk-1" not in text
    (rec,) = read_exports(tmp_path / "exports.jsonl")
    assert rec.dest == "https://bob:***@mlflow.example/" and rec.options == {"api_key": "***", "nested": True}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_log_to_mlflow_with_the_server_down_keeps_the_run_and_a_later_export_succeeds(bench, tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    import time

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{_free_port()}")  # nothing listens there
    run = tmp_path / "run"
    started = time.monotonic()
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "-m",
                          "baseline:threshold", "--out", run, "--log-to", "mlflow")
    took = time.monotonic() - started
    assert code == 0, out
    assert (run / "report.json").exists() and (run / "scores.jsonl").exists()
    assert "export to mlflow failed" in out and f"grace export {run} --to mlflow" in out
    assert took < 60, f"an unreachable tracking server held the run for {took:.0f}s"
    from harness.run_folder.exports_log import read_exports
    from harness.run_folder.run_dir import RunDir

    (rec,) = read_exports(RunDir(run).exports)
    assert rec.target == "mlflow" and not rec.ok and rec.error
    from mlflow.tracking import MlflowClient

    accuracy = {m["accuracy"] for m in _report(run)["models"].values()}

    def exported_accuracies(store: str) -> set[float]:
        client = MlflowClient(tracking_uri=store)
        found = client.search_runs([e.experiment_id for e in client.search_experiments()])
        return {r.data.metrics.get("accuracy") for r in found}

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, out = run_grace("export", run, "--to", "mlflow", "--dest", store)  # once the tracker is there
    assert code == 0 and "exported to mlflow" in out, out
    assert accuracy <= exported_accuracies(store)
    assert [r.ok for r in read_exports(RunDir(run).exports)] == [False, True]
    code, out = run_grace("export", run, "--retry")  # that success settled the failed attempt
    assert code == 0 and "nothing to retry" in out


def test_a_failed_log_to_mlflow_is_retried_where_the_environment_sent_it(bench, tmp_path, monkeypatch):
    """No destination was given, so MLFLOW_TRACKING_URI decided where: that URI is recorded, and --retry from a
    shell without the variable goes there, not to a local store of its own."""
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    pytest.importorskip("sqlalchemy", reason="MLflow's local sqlite store needs SQLAlchemy (the mlflow extra)")
    write(tmp_path / "tracker", "a file where the tracker's folder should be")  # the tracker is not there yet
    uri = f"sqlite:///{tmp_path / 'tracker' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "--out",
                          run, "--log-to", "mlflow")
    assert code == 0 and "export to mlflow failed" in out, out
    assert f"--dest {uri}" in " ".join(out.split())  # the command printed to try again names where
    from harness.run_folder.exports_log import read_exports
    from harness.run_folder.run_dir import RunDir

    (failed,) = read_exports(RunDir(run).exports)
    assert failed.dest == uri and not failed.ok
    monkeypatch.delenv("MLFLOW_TRACKING_URI")  # another shell
    (tmp_path / "tracker").unlink()
    (tmp_path / "tracker").mkdir()
    code, out = run_grace("export", run, "--retry")
    assert code == 0 and f"exported to mlflow: {uri}" in out, out
    assert not (run / "mlflow").exists()  # not a store of the run folder's own
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert {r.data.tags.get("grace.model") for r in found} >= {"baseline:top1"}
    assert [(r.ok, r.by, r.dest) for r in read_exports(RunDir(run).exports)] == [
        (False, "grace run --log-to", uri), (True, "grace export --retry", uri)]


def test_a_tracker_uri_with_a_password_from_the_environment_is_not_retried_blindly(bench, tmp_path, monkeypatch):
    """The URI MLFLOW_TRACKING_URI gave holds a password, which is never recorded: --retry says to export again
    giving it, instead of sending the run somewhere else."""
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://bob:hunter2@127.0.0.1:{_free_port()}")  # nothing listens
    run = tmp_path / "run"
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "--out",
                          run, "--log-to", "mlflow")
    assert code == 0 and "export to mlflow failed" in out, out
    assert "hunter2" not in (run / "exports.jsonl").read_text()
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    code, out = run_grace("export", run, "--retry")
    assert code == 2 and "held a secret" in out and "export it again" in out, out
    assert not (run / "mlflow").exists()


def test_wandb_settings_from_the_environment_are_recorded_for_a_retry(tmp_path, monkeypatch):
    """W&B's mode, project, entity and folder from WANDB_* are written into the attempt's options."""
    from harness.exports import pinned

    for var, value in (("WANDB_MODE", "offline"), ("WANDB_PROJECT", "qa"), ("WANDB_ENTITY", "team"),
                       ("WANDB_DIR", "wb")):
        monkeypatch.setenv(var, value)
    monkeypatch.chdir(tmp_path)
    assert pinned("wandb", None, {"table": False}) == (None, {"table": False, "mode": "offline", "project": "qa",
                                                             "entity": "team", "dir": str(tmp_path / "wb")})
    # a project named as the destination keeps its own entity; a folder as the destination is made absolute
    assert pinned("wandb", "other/proj", {}) == ("other/proj", {"mode": "offline", "dir": str(tmp_path / "wb")})
    assert pinned("wandb", "./out", {}) == (str(tmp_path / "out"), {"mode": "offline", "project": "qa",
                                                                   "entity": "team"})
    assert pinned("parquet", "t.parquet", {}) == (str(tmp_path / "t.parquet"), {})
    assert pinned("parquet", None, {}) == (None, {})  # the run folder's own file: goes with the folder


def test_a_run_with_no_labels_has_no_correct_and_no_must_refuse(bench, tmp_path):
    """grace import-logs without gold: no accuracy in the report, so none in the table either (null, not False)."""
    write(tmp_path / "log.jsonl", "".join(json.dumps(r) + "\n" for r in [
        {"question": "how many sick days", "model": "bot", "answer": "Ten [ID: 1]", "latency_ms": 120},
        {"question": "where is the gym", "model": "bot", "answer": "I don't have enough information to answer this."},
        {"question": "who is the CEO", "model": "bot", "error": "timeout"}]))
    code, out = run_grace("import-logs", tmp_path / "log.jsonl", "--kb", bench / "kb", "--out", tmp_path / "run")
    assert code == 0, out
    from harness.exports.table import question_table

    rows = {r["question"]: r for r in question_table(tmp_path / "run").to_pylist()}
    assert {r["outcome"] for r in rows.values()} == {"unjudged_citation", "refusal", "error"}
    assert all(r["correct"] is None and r["must_refuse"] is None for r in rows.values())
    assert rows["who is the CEO"]["error"] and rows["who is the CEO"]["response"] is None
    assert rows["how many sick days"]["latency_ms"] == 120


def test_a_copied_run_folder_exports_and_a_changed_one_is_refused(scored, tmp_path):
    """Whether the scores are behind the answers is judged by content: a copy of the folder (cp -r, an unpacked CI
    artifact: every file's time is the copy's, responses.jsonl maybe the newest) exports; a changed answer does not,
    whatever the file times say."""
    import os
    import time

    run = tmp_path / "copy"
    shutil.copytree(scored, run)
    later = time.time_ns() + 10**9
    os.utime(run / "responses.jsonl", ns=(later, later))  # copied after scores.jsonl: newer than it
    code, out = run_grace("export", run, "--to", "parquet")
    assert code == 0 and "exported to parquet" in out, out
    assert pq.read_table(run / "results.parquet").num_rows == 60
    text = (run / "responses.jsonl").read_text(encoding="utf-8")
    changed = text.replace("Zebras juggle", "Zebras jiggle", 1)  # one answer changed, the same size
    assert changed != text and len(changed) == len(text)
    (run / "responses.jsonl").write_text(changed, encoding="utf-8")
    scores = (run / "scores.jsonl").stat()
    os.utime(run / "responses.jsonl", ns=(scores.st_atime_ns, scores.st_mtime_ns - 10**9))  # older, yet changed
    code, out = run_grace("export", run, "--to", "parquet", "--dest", tmp_path / "again.parquet")
    assert code == 2 and "score it again" in out and not (tmp_path / "again.parquet").exists()
