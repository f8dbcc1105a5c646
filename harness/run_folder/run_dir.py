"""The run folder: the one owner of its file names, its readers and writers, and its lock.

A run folder holds what ``grace run``, ``grace score``, ``grace report`` and
``grace spotcheck`` write::

    run.json              what the rows on file were asked with (RunInfo)
    responses.jsonl       one row per call (ResponseRecord), appended as answers arrive
    scores.jsonl          one line per response, read strictly and leniently
    report.json           whole-run metrics; the reports are rendered from it
    leaderboard.md, report.html
    spotcheck.json, spotcheck/judgements.jsonl, spotcheck_review.csv
    batches.jsonl         batches sent to providers' batch APIs (BatchLedger): recorded before and after each submit
    malformed.jsonl       grace import-logs: the log lines not imported, and why (audit_log.LogProblem)
    unmatched.jsonl       grace import-logs --gold: the log records no gold question matched (audit_log.UnmatchedRecord)
    questions.csv         grace import-logs without gold: the questions the logs asked, with no label (to label them)
    exports.jsonl         grace export, grace run --log-to: every export tried, and how it ended (exports_log.ExportRecord)
    results.parquet       grace export --to parquet: the run as one tidy table (its default destination)
    mlflow/mlflow.db      grace export --to mlflow, no tracking URI given: a local MLflow store (artifacts: mlflow/mlartifacts)
    wandb/                grace export --to wandb, offline: W&B's offline runs, uploaded later by 'wandb sync'

``grace view`` reads a folder and writes nothing in it: its index of the folder
lives in grace's cache folder (:meth:`RunDir.view_index`).

Every other module asks a :class:`RunDir` for these paths (their names are
spelled in :mod:`harness.run_folder.file_names` only). Writers hold :meth:`RunDir.lock`: one process writes a
folder at a time, and debris a killed writer left (temp files) is removed
when the next one takes the lock.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.core.errors import GraceError
from harness.core.files import TickAppender, atomic_write_text, remove_temp_files, temp_path_for
from harness.core.hashing import file_hash
from harness.core.locks import FileLock
from harness.run_folder.batches import BatchLedger
from harness.run_folder.file_names import (
    BATCHES,
    CALIBRATION,
    CITATION_SUPPORT,
    CLAIMS,
    CLAIMS_REVIEW_CSV,
    EXPORTS,
    JUDGEMENTS,
    LEADERBOARD_MD,
    LOCK,
    MALFORMED,
    MLFLOW_DB,
    QUALITY,
    QUESTIONS,
    REPORT,
    REPORT_HTML,
    RESPONSES,
    RESULTS_PARQUET,
    REVIEW_CSV,
    RUN_INFO,
    SCORES,
    SPOTCHECK,
    TORN_RESPONSES,
    UNMATCHED,
    VIEW_INDEX,
    WANDB,
)
from harness.run_folder.report import Report, read_report, write_report
from harness.run_folder.responses import (
    RowIndex,
    compact_responses,
    iter_response_records,
    latest_rows,
    read_response_lines,
)
from harness.run_folder.run_records import RUN_INFO_SCHEMA_VERSION, ResponseRecord, RunInfo
from harness.run_folder.scores import iter_scores

log = logging.getLogger("grace")



_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> content hash: the viewer asks often


def _content_hash(path: Path, st: os.stat_result) -> str:
    """The file's hash (as the scorer records it), remembered while its size and time stay as they were."""
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        if len(_HASHES) > 256:
            _HASHES.clear()
        _HASHES[key] = file_hash(path)
    return _HASHES[key]


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._index: tuple[tuple[int, int, int], RowIndex] | None = None  # (the file's identity, its RowIndex)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # -- names ---------------------------------------------------------------
    @property
    def responses(self) -> Path:
        return self.path / RESPONSES

    @property
    def scores(self) -> Path:
        return self.path / SCORES

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def run_info(self) -> Path:
        return self.path / RUN_INFO

    @property
    def leaderboard_md(self) -> Path:
        return self.path / LEADERBOARD_MD

    @property
    def report_html(self) -> Path:
        return self.path / REPORT_HTML

    @property
    def spotcheck(self) -> Path:
        return self.path / SPOTCHECK

    @property
    def judgements(self) -> Path:
        return self.path / JUDGEMENTS

    @property
    def claims_review_csv(self) -> Path:
        return self.path / CLAIMS_REVIEW_CSV

    @property
    def citation_support(self) -> Path:
        return self.path / CITATION_SUPPORT

    @property
    def quality(self) -> Path:
        return self.path / QUALITY

    @property
    def claims(self) -> Path:
        return self.path / CLAIMS

    @property
    def review_csv(self) -> Path:
        return self.path / REVIEW_CSV

    @property
    def calibration(self) -> Path:
        return self.path / CALIBRATION

    @property
    def batches(self) -> Path:
        return self.path / BATCHES

    @property
    def malformed(self) -> Path:
        return self.path / MALFORMED

    @property
    def unmatched(self) -> Path:
        return self.path / UNMATCHED

    @property
    def questions(self) -> Path:
        return self.path / QUESTIONS

    @property
    def exports(self) -> Path:
        return self.path / EXPORTS

    @property
    def results_parquet(self) -> Path:
        return self.path / RESULTS_PARQUET

    @property
    def mlflow_db(self) -> Path:
        return self.path / MLFLOW_DB

    @property
    def wandb_dir(self) -> Path:
        return self.path / WANDB

    def view_index(self, cache_dir: Path) -> Path:
        """Where ``grace view`` keeps its index of this folder: in ``cache_dir``, one file per folder path."""
        import hashlib
        import re

        key = hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:16]
        name = re.sub(r"[^\w.-]", "_", self.path.resolve().name)[:40]
        return Path(cache_dir) / "view" / f"{name}-{key}-{VIEW_INDEX}"

    def writer(self) -> str | None:
        """The grace process writing this folder now (its lock's holder), or None; reading it takes no lock."""
        from harness.core.locks import holder

        return holder(self.path / LOCK)

    def scores_behind(self) -> bool:
        """``responses.jsonl`` is not the file ``report.json`` was scored from: answers on file the scores do not
        hold yet (a run still going, interrupted, or run with --no-score). A finished ``grace run`` scores last.

        Judged by content (the size and SHA-256 the scorer recorded), never by modification times alone: a copy of
        the folder (``cp -r``, an unpacked CI artifact) has new times and the same answers. Only a report written
        before grace recorded the hash is judged by times (responses.jsonl newer than scores.jsonl)."""
        try:
            responses, scores = self.responses.stat(), self.scores.stat()
        except OSError:
            return False
        try:
            scored = read_report(self.report).responses
        except (GraceError, OSError, ValueError):
            scored = None
        if scored is None or scored.sha256 is None or scored.size is None:
            return responses.st_mtime_ns > scores.st_mtime_ns
        if responses.st_size != scored.size:
            return True
        return _content_hash(self.responses, responses) != scored.sha256

    def batch_ledger(self) -> BatchLedger:
        return BatchLedger.read(self.batches)

    def data_files(self) -> list[Path]:
        """What a command reading this folder reads: never to be written over by another command's output."""
        return [self.responses, self.scores, self.report, self.run_info, self.spotcheck, self.judgements,
                self.review_csv, self.calibration, self.batches, self.exports]

    def derived_files(self) -> list[Path]:
        """Everything made from the answers on file (scores, reports, the spot-check and its review files, the
        judge's calibration, exports): describes that run only, so it goes when the run is replaced."""
        return [self.scores, self.report, self.leaderboard_md, self.report_html, self.spotcheck, self.judgements,
                self.claims, self.citation_support, self.quality, self.review_csv, self.claims_review_csv,
                self.calibration, self.exports, self.results_parquet]

    def discard_derived(self) -> list[Path]:
        """Remove :meth:`derived_files` (under the lock, before another run's answers are written here): a
        spot-check or report of the old answers must never be read as one of the new. Returns what was removed."""
        gone = [p for p in self.derived_files() if p.is_file()]
        for p in gone:
            p.unlink()
        try:
            self.judgements.parent.rmdir()  # spotcheck/, when nothing but the files above was in it
        except OSError:
            pass
        return gone

    def report_out_of_date(self, report: Report | None = None) -> str | None:
        """Why ``report.json`` (``report``: as already read) does not describe this run, in a sentence with the fix,
        or None.

        Its figures are of the answers it was scored from (:meth:`scores_behind`) and of the gold it was scored
        against: answers added or changed since (a run stopped between its calls and its scoring, ``--no-score``, a
        hand edit), or a later ``grace run`` with another gold file (``run.json`` is no longer the one the report
        recorded, and names another gold), make them another run's figures, which ``grace gate`` must refuse and
        every view must say. (A ``grace score`` against another gold after the run is a re-scoring, not staleness:
        it records the run.json it scored.) Judged by content, so a copy of the folder judges the same. A folder
        being written now is not judged: its writer scores last (this process holding the lock, ``grace report``
        rendering, is none)."""
        writer = self.writer()
        if writer and not writer.startswith(f"pid {os.getpid()},"):
            return None
        if not self.report.exists() or not self.responses.exists():
            return None
        fix = (f"score it again (grace score {self.responses} --gold GOLD.csv --kb KB --out {self.path}, or run the "
               "same grace run command again)")
        if self.scores_behind():
            return (f"{self.report} was scored from other answers than {self.responses} holds now (answers were "
                    "added or changed after it was scored: a run stopped before scoring, --no-score, or an edit), so "
                    f"its figures are not this run's; {fix}")
        try:
            report = report if report is not None else self.read_report()
            info = self.read_run_info()
        except (GraceError, OSError):
            return None  # an unreadable report or run.json is said by whoever reads it
        if (info is not None and report.run_json_hash is not None and info.gold.hash != report.gold.hash
                and file_hash(self.run_info) != report.run_json_hash):
            return (f"{self.report} was scored against another gold set ({report.gold.path}, hash {report.gold.hash}) "
                    f"than the grace run after it asked ({info.gold.path}, hash {info.gold.hash}), so its figures are "
                    f"not this run's; {fix}")
        return None

    def written_files(self) -> list[str]:
        """The names ``grace run`` writes here (``--log-to parquet`` too): no input of the run may sit in the folder
        under one of them."""
        return [p.name for p in self.data_files()] + [LEADERBOARD_MD, REPORT_HTML, RESULTS_PARQUET]

    @staticmethod
    def input_files(path: str | Path) -> list[Path]:
        """A run folder's data files, or the one responses file a path names: what a reader of it reads."""
        path = Path(path)
        return RunDir(path).data_files() if path.is_dir() else [path]

    # -- one writer ------------------------------------------------------------
    def lock(self) -> FileLock:
        """Hold while writing; a second process gets a ``GraceError`` naming the folder and the holder."""
        self.path.mkdir(parents=True, exist_ok=True)
        return _FolderLock(self)

    def temp_file(self, final: Path) -> Path:
        return temp_path_for(final)

    # -- run.json --------------------------------------------------------------
    def read_run_info(self) -> RunInfo | None:
        if not self.run_info.exists():
            return None
        try:
            info = RunInfo.model_validate_json(self.run_info.read_bytes())
        except ValidationError as exc:  # a wrong type or a missing field: named, and the file is not used
            e = exc.errors(include_url=False)[0]
            place = ".".join(str(p) for p in e["loc"])
            problem = f"has no {place}" if e["type"] == "missing" else f"{place}: {e['msg']} (it is {e.get('input')!r})"
            if e["type"] == "json_invalid":
                problem = f"not valid JSON ({e['msg']})"
            log.warning(f"{self.run_info}: unreadable ({problem}); it is rewritten from the rows on file")
            return None
        except ValueError:
            log.warning(f"{self.run_info}: unreadable; it is rewritten from the rows on file")
            return None
        if info.schema_version > RUN_INFO_SCHEMA_VERSION:
            raise GraceError(f"{self.run_info}: written by a newer grace (schema {info.schema_version}); upgrade grace")
        return info

    def write_run_info(self, info: RunInfo) -> None:
        atomic_write_text(self.run_info, info.model_dump_json(indent=2) + "\n")

    # -- responses.jsonl -------------------------------------------------------
    def response_rows(self) -> list[dict]:
        return read_response_lines(self.responses)

    def response_records(self) -> list[ResponseRecord]:
        """Every row as the model it was written with (:class:`ResponseRecord`)."""
        return list(iter_response_records(self.responses))

    def latest_responses(self) -> dict[tuple[str, str, int], dict]:
        return latest_rows(self.response_rows())

    def row_index(self) -> RowIndex:
        """The responses as compact columns (:class:`RowIndex`): what a resume plans from, for a million rows.

        Kept while the file stays as it was (same inode, size and modification time): a resume that asks nothing
        plans, rewrites (or not) and counts its rows from one read of the file, not three."""
        try:
            st = self.responses.stat()
        except OSError:
            self._index = None
            return RowIndex.scan(self.responses)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._index is None or self._index[0] != key:
            self._index = None  # the old one is not held while the new one is read
            self._index = (key, RowIndex.scan(self.responses))
        return self._index[1]

    def drop_row_index(self) -> None:
        """Let go of the kept :meth:`row_index` (a million rows: 100-200 MB) once nothing needs it."""
        self._index = None

    def responses_appender(self) -> TickAppender:
        """Appends the rows of ``grace run``, those finished in one turn of its event loop in one write."""
        return TickAppender(self.responses, self.path / TORN_RESPONSES)

    def compact_responses(self, question_order: list[str]) -> int:
        return compact_responses(self.responses, question_order, self.row_index())

    # -- report.json, scores.jsonl ---------------------------------------------
    def read_report(self) -> Report:
        return read_report(self.report)

    def write_report(self, report: Report) -> None:
        write_report(self.report, report)

    def iter_scores(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return iter_scores(self.scores)


class _FolderLock(FileLock):
    def __init__(self, run: RunDir):
        super().__init__(run.path / LOCK, f"{run.path} is being written by another grace process",
                         "wait for it to finish, or use another --out folder", reentrant=True)
        self.run = run

    def acquire(self) -> None:
        super().acquire()
        owned = [RESPONSES, SCORES, REPORT, RUN_INFO, LEADERBOARD_MD, REPORT_HTML, SPOTCHECK, CALIBRATION]
        for tmp in remove_temp_files(self.run.path, owned) + remove_temp_files(self.run.judgements.parent, ["*"]):
            log.info(f"removed {tmp.name}, left by an interrupted writer")


__all__ = ["RunDir", "scored_rows"]


def scored_rows(run: str | Path, then: str) -> Iterator[dict[str, Any]]:
    """A scored run's rows (its folder, or its scores file), for callers of the KB builder, which knows no run
    folder: lint and the curation app name the pairs the run's models swap. ``then``: what to do once scored."""
    from harness.run_folder.scores import iter_scores

    path = Path(run)
    if path.is_dir():
        folder = RunDir(path)
        if not folder.scores.exists():
            raise GraceError(f"{folder.path}: no {folder.scores.name}; score the run first (grace score, or grace run "
                             f"without --no-score), {then}")
        return (row for _, row in folder.iter_scores())
    if not path.exists():
        raise GraceError(f"{path}: not found; score the run first (grace score), {then}")
    return (row for _, row in iter_scores(path))
