"""``grace export RUN --to mlflow``: one MLflow run per model, nested under one parent run for the grace run.

Written through MLflow's own client (:class:`mlflow.MlflowClient`, every call given its run ID), so nothing of
MLflow's global state changes: no active run is left, the tracking URI is not set. The params, metrics and tags are
:mod:`harness.exports.tracking`'s, the same as W&B gets; the report files (``report.json``, ``leaderboard.md``,
``report.html``) are the parent run's artifacts, or each model run's when ``nested`` is off.

``dest`` is the tracking URI (``http://host:5000``, ``databricks``, ``sqlite:///path/mlflow.db``, or a plain path:
a ``.db`` file or a folder, taken as a local sqlite store); default ``MLFLOW_TRACKING_URI``, else a local store in
the run folder (``RUN/mlflow/mlflow.db``: MLflow 3's local backend, its file store being frozen). Artifacts of an
experiment grace creates in a sqlite store go beside the database (``mlartifacts/``), not in the current folder.

Options: ``experiment`` (default: the gold set's name), ``nested`` (default true: a parent run with the model runs
under it; false: the model runs side by side, each with the report files).

Exporting the same report again does not duplicate anything: every run is tagged ``grace.report_sha256`` (the
report's identity) and ``grace.model``, and a second export finds those runs and brings them up to date (same
params, metrics logged at the report's time and step 0, so MLflow keeps one value; artifacts rewritten; runs left
RUNNING by an interrupted export finished). A re-scored report is a new identity, so new runs.

A tracking server that cannot be reached fails in seconds, not after MLflow's minutes of retries: the first call
(looking the experiment up) is made with no retry and a 5 s timeout, the rest with a few quick retries; the error
is an ``ExportFailed`` naming the URI.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from harness.core.errors import GraceError
from harness.exports import Exported, ExportFailed
from harness.exports.tracking import (
    KEY_TAG,
    MODEL_TAG,
    TrackedRun,
    check_options,
    epoch_ms,
    option_bool,
    tracked_run,
)
from harness.run_folder.run_dir import RunDir

PIP = "pip install 'grace-eval[mlflow]'"
OPTIONS = {"experiment": "the MLflow experiment; default: the gold set's name",
           "nested": "true: model runs under one parent run (default); false: side by side"}
ROLE_TAG = "grace.role"  # parent | model
PREFLIGHT = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
QUIET = {"MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}  # MLflow prints each run's URL; grace returns them
# after the first call answered: a few quick retries for a server that hiccups (the user's own settings win)
RELAXED = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
           "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


def export(run: RunDir, dest: str | None, options: dict[str, Any]) -> Exported:
    """Log the run to MLflow; returns the tracking URI and each model's MLflow run ID."""
    check_options(options, OPTIONS, "mlflow")
    nested = option_bool(options, "nested", True)
    tracked = tracked_run(run)
    experiment = str(options.get("experiment") or tracked.experiment)
    uri = tracking_uri(run, dest)
    client_type, errors = _mlflow(uri)
    with _quiet(), _environ(PREFLIGHT):
        try:
            client = client_type(tracking_uri=uri)
            experiment_id = _experiment(client, experiment, uri)
        except errors as exc:
            raise ExportFailed(f"MLflow tracking URI {uri}: {_reason(exc)} (the run folder is unchanged; export "
                               "again once it is reachable)") from None
    relaxed = {**{k: os.environ.get(k, v) for k, v in RELAXED.items()}, **QUIET}
    with _quiet(), _environ(relaxed):
        try:
            return _log(client, tracked, experiment_id, experiment, uri, nested)
        except errors as exc:
            raise ExportFailed(f"MLflow at {uri} failed part-way: {_reason(exc)}; export again: the runs already "
                               "written are found by their tags and completed, not duplicated") from None


def pinned(dest: str | None, options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The tracking URI this export goes to, whatever the shell it is retried from: ``MLFLOW_TRACKING_URI`` written
    in when no ``dest`` was given (a plain path in it, which MLflow reads as a file store, as its ``file://`` URI),
    a relative path or ``sqlite:///relative.db`` made absolute. None (no dest, no variable) stays None: the run
    folder's own store."""
    if dest is None:
        env = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
        if not env:
            return None, options
        if not _has_scheme(env):
            return Path(env).expanduser().resolve().as_uri(), options
        dest = env
    if not _has_scheme(dest):
        return str(Path(dest).expanduser().resolve()), options
    if dest.startswith("sqlite:///") and not dest.startswith("sqlite:////") and not re.match(
            r"^sqlite:///[A-Za-z]:", dest):  # relative to the current folder
        relative, sep, query = dest.removeprefix("sqlite:///").partition("?")
        return "sqlite:///" + Path(relative).resolve().as_posix() + sep + query, options
    return dest, options


def _has_scheme(dest: str) -> bool:
    """A tracking URI (a scheme; a Windows drive letter is one letter), or MLflow's names for Databricks."""
    return bool(re.match(r"^[A-Za-z][\w+.-]+:", dest)) or dest in ("databricks", "databricks-uc", "uc")


def tracking_uri(run: RunDir, dest: str | None) -> str:
    """``dest`` as a tracking URI (a plain path is a local sqlite store); else MLFLOW_TRACKING_URI; else the run
    folder's own store."""
    if dest and _has_scheme(dest):
        return dest
    if dest:
        path = Path(dest).expanduser()
        return _sqlite_uri(path if path.suffix == ".db" else path / "mlflow.db")
    return os.environ.get("MLFLOW_TRACKING_URI") or _sqlite_uri(run.mlflow_db)


def _sqlite_uri(path: Path) -> str:
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return "sqlite:///" + path.as_posix()  # sqlite:////abs/path.db; on Windows sqlite:///C:/path.db


def _log(client: Any, tracked: TrackedRun, experiment_id: str, experiment: str, uri: str, nested: bool) -> Exported:
    from mlflow.entities import Metric, Param, RunTag

    found = client.search_runs([experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{tracked.key}'",
                               max_results=1000)
    earlier = {(r.data.tags.get(ROLE_TAG), r.data.tags.get(MODEL_TAG)): r.info.run_id for r in found}
    start, end, at = epoch_ms(tracked.started_at), epoch_ms(tracked.finished_at), epoch_ms(tracked.scored_at)

    def open_run(role: str, model: str | None, name: str, tags: dict[str, str]) -> str:
        run_id = earlier.get((role, model))
        if run_id is None:
            run_id = client.create_run(experiment_id, start_time=start, run_name=name, tags=tags).info.run_id
        return run_id

    def write(run_id: str, params: dict[str, Any], metrics: dict[str, float | int], tags: dict[str, str],
              artifacts: bool) -> None:
        client.log_batch(run_id, metrics=[Metric(k, float(v), at, 0) for k, v in metrics.items()],
                         params=[Param(k, _param(v)) for k, v in params.items()],
                         tags=[RunTag(k, v) for k, v in tags.items()], synchronous=True)
        if artifacts:
            for path in tracked.artifacts:
                client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, status="FINISHED", end_time=max(end, start))

    parent = None
    if nested:
        tags = {**tracked.tags, ROLE_TAG: "parent", "mlflow.note.content": tracked.leaderboard[:7900]}
        parent = open_run("parent", None, tracked.name, tags)
        write(parent, tracked.params, {"models": len(tracked.models)}, tags, True)
    ids = {}
    for model in tracked.models:
        tags = {**model.tags, ROLE_TAG: "model", **({"mlflow.parentRunId": parent} if parent else {})}
        ids[model.name] = open_run("model", model.name, model.name, tags)
        write(ids[model.name], model.params, model.metrics, tags, not nested)
    notes = [f"experiment {experiment!r} (ID {experiment_id})" + (f", parent run {parent}" if parent else "")]
    if earlier:
        notes.append("this report was exported here before: its runs were brought up to date, not duplicated")
    notes.append(_how_to_view(uri, experiment_id, parent))
    return Exported(target="mlflow", location=uri, models=len(ids), ids=ids, notes=notes)


def _experiment(client: Any, name: str, uri: str) -> str:
    """The experiment's ID, created when new (in a sqlite store, with its artifacts beside the database)."""
    found = client.get_experiment_by_name(name)
    if found is not None and found.lifecycle_stage == "deleted":
        raise ExportFailed(f"MLflow experiment {name!r} at {uri} was deleted; restore it ('mlflow experiments "
                           f"restore --experiment-id {found.experiment_id}') or name another one "
                           "(option experiment=NAME)")
    if found is not None:
        return found.experiment_id
    location = None
    if uri.startswith("sqlite:///"):
        db = Path.cwd() / unquote(uri.removeprefix("sqlite:///").split("?")[0])  # relative: to where grace runs
        location = (db.parent / "mlartifacts").resolve().as_uri()
    return client.create_experiment(name, artifact_location=location, tags={"grace": "grace eval runs"})


def _how_to_view(uri: str, experiment_id: str, parent: str | None) -> str:
    if uri.startswith(("http://", "https://")):
        return f"open {uri.rstrip('/')}/#/experiments/{experiment_id}" + (f"/runs/{parent}" if parent else "")
    if uri.startswith("sqlite:"):
        return f"view: mlflow ui --backend-store-uri {uri}"
    return f"view it where {uri} is served"


def _param(value: Any) -> str:
    return str(value)[:6000]  # MLflow's limit on a param's value


def _reason(exc: BaseException) -> str:
    """MLflow's message, cut down to its cause (a connection error repeats the URL three times)."""
    text = str(exc).strip() or type(exc).__name__
    timeout = os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "?")
    if "Read timed out" in text:
        return f"no answer within {timeout} s (connected, but the server did not reply)"
    if "timed out" in text:
        return f"could not connect within {timeout} s"
    cause = re.search(r"(\[Errno [^\]]+\][^'\")]*|Connection refused|Name or service not known)", text)
    if cause:
        return cause.group(1).strip().rstrip(".")
    return text.splitlines()[0][:300]


def _mlflow(uri: str) -> tuple[type, tuple[type[BaseException], ...]]:
    """MlflowClient and the errors a tracker can raise (imported now, with MLflow's own telemetry turned off:
    grace sends none, and lets no library send any on its behalf)."""
    saved = os.environ.get("MLFLOW_DISABLE_TELEMETRY")
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    try:
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise GraceError(f"--to mlflow needs MLflow, which is not installed; install it with: {PIP}") from None
    finally:
        _restore({"MLFLOW_DISABLE_TELEMETRY": saved})
    if uri.startswith("sqlite:"):
        try:
            import alembic  # noqa: F401 - MLflow's sqlite store needs both
            import sqlalchemy  # noqa: F401
        except ImportError:
            raise GraceError(f"a local MLflow store ({uri}) needs SQLAlchemy and Alembic; install them with: {PIP} "
                             "(or give a tracking server's URI)") from None
    import requests

    return MlflowClient, (MlflowException, requests.RequestException, OSError)


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        _restore(saved)


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextmanager
def _quiet() -> Iterator[None]:
    """MLflow's and Alembic's INFO lines ("Creating initial MLflow database tables...") are not grace's output."""
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
