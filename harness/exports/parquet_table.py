"""``grace export RUN --to parquet``: the run's tidy table (:mod:`harness.exports.table`) as one Parquet file.

Parquet is what pandas, Polars, DuckDB, Spark and every notebook read without a parser: typed columns (lists of
article IDs stay lists, a missing latency stays null), compressed, and read a column at a time. The file carries the
run's identity as key-value metadata (``grace.*``: grace version, KB hash, gold hash, when the run started), so a
table found on a shared drive says which run it is.

Options: ``compression`` (snappy, zstd, gzip, none; default snappy).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.exports import Exported, ExportFailed
from harness.exports.table import question_table, require_pyarrow, table_notes
from harness.run_folder.run_dir import RunDir

COMPRESSIONS = ("snappy", "zstd", "gzip", "none")


def export(run: RunDir, dest: str | None, options: dict[str, Any]) -> Exported:
    """Write the table to ``dest`` (default ``RUN/results.parquet``); returns where, with its rows and models."""
    require_pyarrow()
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    unknown = sorted(set(options) - {"compression"})
    if unknown:
        raise GraceError(f"parquet export: unknown option(s) {', '.join(unknown)}; the one option is compression")
    compression = str(options.get("compression", "snappy")).lower()
    if compression not in COMPRESSIONS:
        raise GraceError(f"parquet export: compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    path = Path(dest) if dest else run.results_parquet
    if path.is_dir():
        path = path / run.results_parquet.name
    report = run.read_report() if run.report.exists() else None
    if report is not None:
        _check_dest(run, path, report)
    table = question_table(run, report=report)
    notes = table_notes(table)
    table = table.replace_schema_metadata(identity(run, report))
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = run.temp_file(path)  # written beside it, then renamed over it: never a half-written file
        pq.write_table(table, tmp, compression=None if compression == "none" else compression)
        os.replace(tmp, path)
    except OSError as exc:
        raise ExportFailed(f"{path}: cannot write the parquet file ({exc.strerror or exc}); give another --dest, "
                           "or free the disk, and export again") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    models = len(pc.unique(table["model"]))
    return Exported(target="parquet", location=str(path), models=models, rows=table.num_rows, notes=notes)


def identity(run: RunDir, report: Any = None) -> dict[bytes, bytes]:
    """The run's identity as parquet key-value metadata: ``grace.version``, ``grace.kb_hash``, ``grace.gold_hash``,
    ``grace.run_started_at``, ``grace.scored_at``, ``grace.run``."""
    from harness.core.version import __version__

    report = report if report is not None else run.read_report()
    info = run.read_run_info()
    meta = {"grace.version": __version__, "grace.report_version": report.grace_version,
            "grace.kb_hash": report.kb.hash, "grace.gold_hash": report.gold.hash,
            "grace.run_started_at": info.started_at if info else None, "grace.scored_at": report.created_at,
            "grace.run": str(run.path.resolve())}
    return {k.encode(): str(v).encode() for k, v in meta.items() if v is not None}


def _check_dest(run: RunDir, path: Path, report: Any) -> None:
    """Never over one of the run's own files, nor over a file that is not a parquet file (a re-export replaces
    an earlier one)."""
    from harness.core.outputs import check_output_file

    inputs = {"run file": run.data_files(), "responses file": report.responses.path, "gold CSV": report.gold.path}
    check_output_file(path, inputs, owned=True, option="--dest")
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as fh:
            if fh.read(4) != b"PAR1":
                raise GraceError(f"--dest {path} exists and is not a parquet file; give a new file name")
