"""The export workflow: a scored run folder out to where teams already look (``grace export``, ``grace run --log-to``).

Each target is a module of :mod:`harness.exports` (inspect, mlflow, wandb, parquet), called through the registry
with ``(run, dest, options)``. This module adds what every target shares: the run is checked to be scored first,
and every attempt, won or lost, is one line of the run's ``exports.jsonl``
(:mod:`harness.run_folder.exports_log`), so a tracker that was down when the run ended is tried again later with
``grace export RUN --retry``. :func:`export_run` raises on failure (the caller asked for this export and nothing
else); :func:`log_exports`, what ``grace run --log-to`` calls, never does: a run that finished stays finished.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import secrets
from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.literal_secrets import fill_env, fill_env_in
from harness.exports import Exported, ExportFailed, pinned, target_function
from harness.exports.settings import check_targets, export_settings
from harness.run_folder.exports_log import ExportRecord, append_export, failed_exports, masked, masked_options
from harness.run_folder.run_dir import RunDir

log = logging.getLogger("grace")

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ExportAttempt", "export_run", "log_exports", "question_table", "retry_exports"]

RUN_LOG = "grace run --log-to"


@dataclass
class ExportAttempt:
    """One export tried by :func:`log_exports`: the ``target``, and either what it wrote (``exported``) or why it
    failed (``error``), with the command that tries it again (``retry``)."""

    target: str
    exported: Exported | None = None
    error: str | None = None
    retry: str = ""

    @property
    def ok(self) -> bool:
        return self.exported is not None


def export_run(run: str | Path | RunDir, to: str, dest: str | None = None, **options: Any) -> Exported:
    """Export the scored run folder ``run`` to target ``to`` (inspect, mlflow, wandb or parquet).

    ``dest`` is where, as the target understands it (a file or folder, a tracking URI, a W&B project; None: the
    target's default, e.g. ``RUN/results.parquet`` or ``MLFLOW_TRACKING_URI``); ``options`` are the target's own
    settings. The attempt is recorded in ``RUN/exports.jsonl`` either way. Raises ``GraceError`` when the run is not
    scored or the target's library is missing, ``ExportFailed`` when the target could not be reached or written."""
    (target,) = check_targets([to])
    folder = run if isinstance(run, RunDir) else RunDir(run)
    _check_scored(folder)
    return _attempt(folder, target, dest, options, "grace export")


def question_table(run: str | Path | RunDir) -> pa.Table:
    """The scored run as one tidy pyarrow Table, a row per question x model x repeat (the columns:
    :mod:`harness.exports.table`); ``.to_pandas()`` for a DataFrame, ``polars.from_arrow(...)`` for Polars."""
    from harness.exports.table import question_table as table

    folder = run if isinstance(run, RunDir) else RunDir(run)
    _check_scored(folder)
    return table(folder)


def log_exports(run: str | Path | RunDir, targets: list[str] | tuple[str, ...],
                settings: dict[str, dict[str, Any]] | None = None) -> list[ExportAttempt]:
    """Export a run that just finished to each target; a failure (the tracker down, its library missing, any error
    of its library) is recorded and returned, never raised: the run and its results stand.

    ``settings`` are the TOML's ``[export.TARGET]`` tables (see :func:`harness.exports.settings.export_settings`);
    without one, each target's default (its environment variables: MLFLOW_TRACKING_URI, WANDB_PROJECT, ...)."""
    folder = run if isinstance(run, RunDir) else RunDir(run)
    out = []
    for target in check_targets(targets):
        retry = _retry_command(folder, target, None)
        try:
            dest, options = export_settings(target, (settings or {}).get(target))
            dest, options = pinned(target, dest, options)
            retry = _retry_command(folder, target, dest, options)
            out.append(ExportAttempt(target, _attempt(folder, target, dest, options, RUN_LOG), retry=retry))
        except Exception as exc:  # noqa: BLE001 - a tracker's library may raise anything; the run must stand
            out.append(ExportAttempt(target, error=masked(_sentence(exc)), retry=retry))
    return out


def retry_exports(run: str | Path | RunDir) -> list[ExportAttempt]:
    """Try again every target whose last export of the run failed, with the destination and options it was asked with."""
    folder = run if isinstance(run, RunDir) else RunDir(run)
    _check_scored(folder)
    out = []
    for rec in failed_exports(folder.exports):
        retry = _retry_command(folder, rec.target, rec.dest, rec.options)
        if "***" in (rec.dest or "") or "***" in str(rec.options):
            out.append(ExportAttempt(rec.target, error="its destination or options held a secret, which was not "
                                     "recorded; export it again giving them", retry=retry))
            continue
        try:
            out.append(ExportAttempt(rec.target, _attempt(folder, rec.target, rec.dest, dict(rec.options),
                                                          "grace export --retry"), retry=retry))
        except Exception as exc:  # noqa: BLE001 - as in log_exports: report each, try the next
            out.append(ExportAttempt(rec.target, error=masked(_sentence(exc)), retry=retry))
    return out


def _check_scored(folder: RunDir) -> None:
    if not folder.path.is_dir():
        raise GraceError(f"{folder.path}: run folder not found")
    if not folder.scores.exists() or not folder.report.exists():
        raise GraceError(f"{folder.path}: not scored yet (no report.json); score it first with 'grace score "
                         f"{folder.responses} --gold GOLD --kb KB' (a finished 'grace run' scores it), then export")


def _attempt(folder: RunDir, target: str, dest: str | None, options: dict[str, Any], by: str) -> Exported:
    """Call the target and record the attempt, with the destination and options pinned (what the environment decided
    written in: :func:`harness.exports.pinned`); an error of the target's library becomes ``ExportFailed``."""
    dest, options = pinned(target, dest, options)
    # the tracker's credentials (a URI's password, WANDB_API_KEY, a token option) are masked in all grace prints
    secrets.remember_uri(dest)
    secrets.remember_environment()
    for name, value in options.items():
        if isinstance(value, str) and secrets.secret_variable(name):
            secrets.remember(value)
    # recorded as given, ${VAR} and all (so --retry fills them again); the target gets them filled
    record = ExportRecord(target=target, dest=dest, options=options, ok=False, by=by, at=now())
    try:
        filled = fill_env(dest, f"{target} export: dest", url=True) if dest else dest
        done: Exported = target_function(target)(folder, filled, fill_env_in(dict(options), f"{target} export: option"))
    except GraceError as exc:
        _record(folder, record.model_copy(update={"error": str(exc), "at": now()}))
        raise
    except Exception as exc:
        _record(folder, record.model_copy(update={"error": _sentence(exc), "at": now()}))
        raise ExportFailed(f"export to {target} failed: {_sentence(exc)}") from exc
    _record(folder, record.model_copy(update={"ok": True, "location": done.location, "rows": done.rows,
                                              "ids": dict(done.ids), "at": now()}))
    return done


def _record(folder: RunDir, record: ExportRecord) -> None:
    try:
        append_export(folder.exports, record)
    except GraceError as exc:  # a read-only folder: the export itself is what was asked for
        log.warning(f"the export was not recorded in {folder.exports}: {exc}")


def _retry_command(folder: RunDir, target: str, dest: str | None, options: dict[str, Any] | None = None) -> str:
    """The command that exports again, as printed (a password in the destination or a secret option as ***)."""
    import json
    import shlex

    command = f"grace export {shlex.quote(str(folder.path))} --to {target}"
    command += f" --dest {shlex.quote(masked(dest) or '')}" if dest else ""
    for key, value in masked_options(options or {}).items():
        text = value if isinstance(value, str) else json.dumps(value)
        command += f" --option {shlex.quote(f'{key}={text}')}"
    return command


def _sentence(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, GraceError) else f"{type(exc).__name__}: {text}"
