"""grace export --to wandb: offline W&B runs written by wandb's SDK, read back from the files W&B itself uploads.

wandb (0.2x and later) keeps no Python reader of a run's transaction log (``run-ID.wandb``; its reader moved into
the Go service), so :func:`records` reads it here: LevelDB's log framing (documented by LevelDB, and in wandb's own
format header) around wandb's own protobuf records (``wandb.proto.wandb_internal_pb2.Record``). What it reads is
exactly what ``wandb sync`` would upload. Nothing here touches the network: every run is offline.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.run_folder.run_dir import RunDir
from tests.conftest import run_grace
from tests.export_runs import MODELS, build_sample_run

wandb = pytest.importorskip("wandb", reason="the wandb extra (the W&B SDK) is not installed")
pytest.importorskip("pyarrow", reason="the per-question table needs pyarrow (the parquet extra)")

from harness.exports.wandb_run import export  # noqa: E402 - after the skip: it is the wandb extra's module

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """Built once, copied by each test."""
    return build_sample_run(tmp_path_factory.mktemp("sample"))


@pytest.fixture
def run(sample_run, tmp_path, monkeypatch):
    """A copy of the run, and W&B confined to tmp_path: offline, silent, no key, its folders all under tmp_path."""
    for var in ("WANDB_API_KEY", "WANDB_PROJECT", "WANDB_ENTITY", "WANDB_BASE_URL", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_ERROR_REPORTING", "false")
    for var, name in (("WANDB_CONFIG_DIR", "config"), ("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data"),
                      ("WANDB_ARTIFACT_DIR", "artifacts")):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home" / name))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(sample_run, tmp_path / "run")
    return tmp_path / "run"


def records(path: Path):
    """Each record of a W&B transaction log (run-ID.wandb), as wandb's protobuf Record."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert ident == b":W&B" and magic == 0xBEE1, f"{path}: not a W&B transaction log"
    block, pos, pending = 32768, 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL, or the LAST piece of a record split across blocks
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def read_offline_run(folder: Path) -> dict:
    """What an offline run holds: its run record, final summary and config (folded as W&B folds them)."""
    (log,) = folder.glob("run-*.wandb")
    out: dict = {"summary": {}, "config": {}, "run": None, "exited": False}
    for rec in records(log):
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            out["run"] = rec.run
            out["config"].update({u.key: json.loads(u.value_json) for u in rec.run.config.update})
        elif kind == "config":
            out["config"].update({u.key: json.loads(u.value_json) for u in rec.config.update})
        elif kind == "summary":
            for u in rec.summary.update:
                keys = [u.key] if u.key else list(u.nested_key)
                node = out["summary"]
                for k in keys[:-1]:
                    node = node.setdefault(k, {})
                node[keys[-1]] = json.loads(u.value_json)
        elif kind == "exit":
            out["exited"] = True
    return out


def _wandb_core_children() -> list[str]:
    """wandb-core service processes this test process started and left running."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == os.getpid() and "wandb-core" in cmd:
            found.append(cmd)
    return found


def test_an_offline_export_writes_one_run_per_model_whose_summary_is_report_json(run, tmp_path, capfd):
    done = export(RunDir(run), str(tmp_path / "wb"), {})
    assert done.target == "wandb" and done.location == str(tmp_path / "wb" / "wandb")
    assert set(done.ids) == set(MODELS) and done.models == 2 and done.rows == 180
    report = json.loads((run / "report.json").read_text())
    info = json.loads((run / "run.json").read_text())
    groups = set()
    for model in MODELS:
        (folder,) = (tmp_path / "wb" / "wandb").glob(f"offline-run-*-{done.ids[model]}")
        got = read_offline_run(folder)
        assert got["exited"] and got["run"].display_name == model and got["run"].project == "sample"
        groups.add(got["run"].run_group)
        block = report["models"][model]
        spot = report["spotcheck"]["models"][model]
        expected = {
            "accuracy": block["accuracy"], "accuracy_ci_low": block["accuracy_ci95"][0],
            "accuracy_ci_high": block["accuracy_ci95"][1], "strict_accuracy": block["strict_accuracy"],
            "refusal_calibration": block["refusal"]["calibration"],
            "invalid_citation_rate": block["invalid_citation_rate"],
            "unshown_citation_rate": block["unshown_citation_rate"], "cost_total_usd": block["cost"]["total_usd"],
            "n": block["n"], "spotcheck_hallucination_rate": spot["hallucination_rate"],
            **{f"category/{c}/accuracy": v["accuracy"] for c, v in block["categories"].items()},
            **{f"outcome_{k}": v for k, v in block["outcomes"].items()},
        }
        assert {k: got["summary"].get(k) for k in expected} == expected
        assert "latency_p50_ms" not in got["summary"]  # null in report.json: not sent
        config = got["config"]
        assert (config["model"], config["k"], config["kb_hash"], config["gold_hash"], config["grace_version"]) == (
            model, info["config"]["k"], report["kb"]["hash"], report["gold"]["hash"], report["grace_version"])
        assert config["grace"]["report_sha256"] == done.ids[model].split("-")[0]
        # the per-question table: the model's rows, whose mean of "correct" is the report's accuracy
        table = got["summary"]["questions"]
        assert table["_type"] == "table-file" and table["nrows"] == block["n"]
        data = json.loads((folder / "files" / table["path"]).read_text())
        correct = data["columns"].index("correct")
        assert len(data["data"]) == block["n"] and {row[data["columns"].index("model")] for row in data["data"]} == {
            model}
        assert round(sum(row[correct] for row in data["data"]) / len(data["data"]), 6) == block["accuracy"]
    assert len(groups) == 1 and groups.pop().startswith("run-")  # grouped by the grace run
    assert _wandb_core_children() == []  # the service process exited with the export
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "wandb:" not in out + err, out + err


def test_exporting_the_same_report_again_offline_makes_no_second_run(run, tmp_path):
    first = export(RunDir(run), None, {})  # default: the run folder's wandb/ (WANDB_DIR unset)
    folders = sorted((run / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and first.location == str(run.resolve() / "wandb")
    again = export(RunDir(run), None, {})
    assert again.ids == first.ids and sorted((run / "wandb").glob("offline-run-*")) == folders
    assert sum("already exported offline" in n for n in again.notes) == 2


def test_project_table_and_row_options(run, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "from-env"))
    done = export(RunDir(run), "team/handbook-qa", {"max_rows": 5, "artifacts": False})
    assert done.location == str((tmp_path / "from-env" / "wandb").resolve()) and done.rows == 10
    assert sum("first 5 of 90 rows" in n for n in done.notes) == 2
    (folder, *_) = (tmp_path / "from-env" / "wandb").glob("offline-run-*")
    got = read_offline_run(folder)
    assert got["run"].project == "handbook-qa" and got["run"].entity == "team"
    assert got["summary"]["questions"]["nrows"] == 5
    bare = export(RunDir(run), str(tmp_path / "bare"), {"table": False})
    (folder, *_) = (tmp_path / "bare" / "wandb").glob("offline-run-*")
    assert bare.rows == 0 and "questions" not in read_offline_run(folder)["summary"]


def test_modes_options_and_missing_library_are_grace_errors(run, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    with pytest.raises(GraceError, match="mode 'disabled'.*use offline or online"):
        export(RunDir(run), None, {})
    monkeypatch.delenv("WANDB_MODE")
    with pytest.raises(GraceError, match="unknown option.*colour"):
        export(RunDir(run), None, {"colour": "red"})
    with pytest.raises(GraceError, match="max_rows"):
        export(RunDir(run), None, {"max_rows": "lots"})
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError, as when not installed
    with pytest.raises(GraceError, match=r"pip install 'grace-eval\[wandb\]'"):
        export(RunDir(run), None, {"table": False})
    assert not (run / "wandb").exists()  # nothing was written by the failed attempts


def test_through_grace_export_with_no_key_and_no_mode_it_is_offline(run, monkeypatch):
    monkeypatch.delenv("WANDB_MODE")
    code, out = run_grace("export", run, "--to", "wandb", "--option", "table=false")
    assert code == 0 and "exported to wandb" in out and "wandb sync" in out, out
    assert len(list((run / "wandb").glob("offline-run-*"))) == 2


def test_no_copy_of_the_report_files_is_left_outside_the_destination(run, tmp_path, monkeypatch):
    """W&B stages each artifact file (a copy) in its data folder, ~/.local/share/wandb by default: the report files
    hold the questions and answers, so no copy may stay anywhere but the destination the user named."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR", "XDG_DATA_HOME",
                "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    dest = tmp_path / "wb"
    export(RunDir(run), str(dest), {})
    originals = {p.read_bytes() for p in (run / "report.json", run / "leaderboard.md", run / "report.html")}
    copies = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(dest) and not p.is_relative_to(run)
              and p.read_bytes() in originals]
    assert copies == []
    staged = [p for p in dest.rglob("*") if p.is_file() and p.read_bytes() in originals]
    assert staged  # the offline run's artifact keeps its files for 'wandb sync', inside the destination
