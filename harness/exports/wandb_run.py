"""``grace export RUN --to wandb``: one Weights & Biases run per model, grouped by the grace run, offline by default.

Written with wandb's own SDK. Each model's run has the params as its config, the metrics as its summary (both
:mod:`harness.exports.tracking`'s, the same names and numbers as MLflow gets), the model's rows of the per-question
table (:func:`harness.exports.table.question_table`) as a ``wandb.Table`` named ``questions``, and the report
files as an artifact of type ``grace-report``. The runs of one grace run share a group (the run folder's name and
the report's identity), so W&B's grouped view compares the models.

Offline unless told otherwise: ``mode`` (option) or ``WANDB_MODE`` decide; without either, online only when
``WANDB_API_KEY`` is set. An offline run is written under ``DIR/wandb/offline-run-*`` and uploaded later by
``wandb sync DIR/wandb/offline-run-*``; nothing touches the network. ``dest`` is a directory for the runs' files
when it looks like one (starts with ``/``, ``.`` or ``~``, or exists), else the project (``PROJECT`` or
``ENTITY/PROJECT``). Default directory: ``WANDB_DIR``, else the run folder (``RUN/wandb/``); default project:
``WANDB_PROJECT``, else the gold set's name.

The report files hold the questions and answers, so no copy of them is left outside the directory: W&B stages an
artifact's files in its data folder (``~/.local/share/wandb`` by default), so the export points that folder at
``DIR/wandb/grace-staging`` (kept offline, for ``wandb sync``; removed once an online run has uploaded) and keeps
them out of W&B's cache.

Options: ``mode`` (offline | online), ``project``, ``entity``, ``dir``, ``base_url`` (the W&B server, online),
``table`` (default true), ``max_rows`` (rows per model in the table, default wandb's 200,000 limit for a logged
table), ``artifacts`` (the report files, default true). What the environment decides (``WANDB_MODE``,
``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_DIR``, ``WANDB_BASE_URL``) is written into the options of the attempt's
record (:func:`pinned`), so ``grace export --retry`` from another shell goes to the same place.

Each run's ID is derived from the report's identity and the model, so exporting the same report again does not
make a second run: online it resumes (updates) the same run; offline, a run already written for that ID under the
directory is left as it is (delete its folder to write it again), and ``wandb sync`` uploads one run.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.hashing import text_hash
from harness.exports import Exported, ExportFailed
from harness.exports.tracking import TrackedModel, TrackedRun, check_options, option_bool, tracked_run
from harness.run_folder.run_dir import RunDir

PIP = "pip install 'grace-eval[wandb]'"
OPTIONS = {"mode": "offline or online", "project": "the W&B project; default: the gold set's name",
           "entity": "the W&B entity (team or user)", "dir": "where W&B writes the runs' files; default: the run "
           "folder", "table": "the per-question table (default true)", "max_rows": "rows per model in the table",
           "artifacts": "the report files as an artifact (default true)",
           "base_url": "the W&B server online; default WANDB_BASE_URL, else W&B's own"}
# for the export's length: quiet, no Sentry error reports (grace sends no telemetry, nor lets a library send any)
ENV = {"WANDB_SILENT": "true", "WANDB_ERROR_REPORTING": "false"}
WANDB_DATA = "wandb/grace-staging"  # under the export's directory: W&B's data folder (its artifact staging area)
MAX_ROWS = 200_000  # wandb.Table.MAX_ARTIFACT_ROWS: a logged table is cut there by wandb itself


def export(run: RunDir, dest: str | None, options: dict[str, Any]) -> Exported:
    """Write one W&B run per model; returns where (the directory offline, the project online) and the run IDs."""
    check_options(options, OPTIONS, "wandb")
    tracked = tracked_run(run)
    mode = _mode(options)
    directory, project, entity = _where(run, dest, options, tracked)
    with_table, with_artifacts = option_bool(options, "table", True), option_bool(options, "artifacts", True)
    max_rows = _max_rows(options)
    table = _table(run) if with_table else None  # before wandb starts: a missing pyarrow fails here, cleanly
    wandb = _wandb()
    directory.mkdir(parents=True, exist_ok=True)
    ids, notes, rows = {}, [], 0
    # W&B copies each artifact file into its data folder's staging area (~/.local/share/wandb by default) before it
    # uploads it: a copy of the questions and answers outside the destination. Staged under the destination instead,
    # where an offline run's 'wandb sync' finds it; removed once an online run has uploaded it.
    staging = directory / WANDB_DATA
    env = {**ENV, "WANDB_DATA_DIR": str(staging)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    ours = wandb.run is None  # nobody else's run is open: the service can be stopped when done
    try:
        for model in tracked.models:
            run_id = f"{tracked.key}-{text_hash(model.name, 8)}"
            earlier = _offline_run(directory, run_id) if mode == "offline" else None
            if earlier is not None:
                ids[model.name] = run_id
                notes.append(f"{model.name}: already exported offline to {earlier}; left as it is")
                continue
            model_rows = _rows(table, model.name, max_rows, notes)
            _log_model(wandb, tracked, model, run_id, mode, directory, project, entity, model_rows,
                       with_artifacts, options.get("base_url"))
            ids[model.name] = run_id
            rows += len(model_rows[1]) if model_rows else 0
    except (wandb.errors.Error, OSError, ValueError, TypeError) as exc:
        raise ExportFailed(f"W&B ({mode}, project {project!r}): {_reason(exc)} (the run folder is unchanged; "
                           "export again)") from None
    finally:
        if ours:
            wandb.teardown()  # the wandb-core service process exits now, not at interpreter exit
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if mode == "online" and ours:  # uploaded (finish waits for it): the staged copies have no further use
            shutil.rmtree(staging, ignore_errors=True)
    if mode == "offline":
        location = str(directory / "wandb")
        notes.append(f"upload: wandb sync {location}/offline-run-*-{tracked.key}-*")
    else:
        location = f"{entity + '/' if entity else ''}{project}"
    return Exported(target="wandb", location=location, models=len(ids), rows=rows, ids=ids, notes=notes)


def pinned(dest: str | None, options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Where this export goes, whatever the shell it is retried from: the mode, project, entity, directory and
    server that ``WANDB_MODE``/``WANDB_API_KEY``, ``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_DIR`` and
    ``WANDB_BASE_URL`` decide now, written into the options; a relative directory made absolute. The gold set's
    project and the run folder's directory, defaults that go with the run, stay unwritten."""
    options = dict(options)
    try:
        options["mode"] = _mode(options)
    except GraceError:
        return dest, options  # the export itself says what is wrong
    as_dir = bool(dest) and _is_dir(str(dest))
    if as_dir:
        dest = str(Path(str(dest)).expanduser().absolute())
    elif not options.get("dir") and os.environ.get("WANDB_DIR"):
        options["dir"] = os.environ["WANDB_DIR"]
    if options.get("dir"):
        options["dir"] = str(Path(str(options["dir"])).expanduser().absolute())
    if (as_dir or not dest) and not options.get("project") and os.environ.get("WANDB_PROJECT"):
        options["project"] = os.environ["WANDB_PROJECT"]
    named_entity = bool(dest) and not as_dir and "/" in str(dest)
    if not named_entity and not options.get("entity") and os.environ.get("WANDB_ENTITY"):
        options["entity"] = os.environ["WANDB_ENTITY"]
    if options["mode"] == "online" and not options.get("base_url") and os.environ.get("WANDB_BASE_URL"):
        options["base_url"] = os.environ["WANDB_BASE_URL"]
    return dest, options


def _log_model(wandb: Any, tracked: TrackedRun, model: TrackedModel, run_id: str, mode: str, directory: Path,
               project: str, entity: str | None, rows: tuple[list[str], list[list[Any]]] | None,
               artifacts: bool, base_url: str | None = None) -> None:
    config = {**model.params, "grace": {k.removeprefix("grace."): v for k, v in model.tags.items()}}
    run = wandb.init(
        mode=mode, dir=str(directory), project=project, entity=entity, group=f"{tracked.name}-{tracked.key[:8]}",
        name=model.name, id=run_id, resume="allow" if mode == "online" else None, job_type="grace-eval",
        config=config, tags=["grace"], notes=f"grace run {tracked.folder}, report {tracked.key}",
        reinit="create_new", settings=_settings(wandb, mode, base_url))
    failed = True
    try:
        run.summary.update(model.metrics)
        if rows is not None:
            columns, data = rows
            run.log({"questions": wandb.Table(columns=columns, data=data, allow_mixed_types=True)})
        if artifacts and tracked.artifacts:
            artifact = wandb.Artifact(f"grace-report-{tracked.key}", type="grace-report",
                                      description=f"report files of grace run {tracked.folder}")
            for path in tracked.artifacts:
                artifact.add_file(str(path), skip_cache=True)  # no copy into W&B's cache (~/.cache/wandb) either
            run.log_artifact(artifact)
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)


def _settings(wandb: Any, mode: str, base_url: str | None = None) -> Any:
    """Nothing but what was asked: no console capture, no git or code snapshot, no system metrics; the server
    ``base_url`` when one is named."""
    wanted = {"silent": True, "console": "off", "disable_git": True, "disable_code": True, "save_code": False,
              "x_disable_stats": True, "x_disable_meta": True, "x_save_requirements": False, "disable_job_creation":
              True, "init_timeout": 15.0 if mode == "online" else None,
              "base_url": str(base_url) if base_url and mode == "online" else None}
    fields = getattr(wandb.Settings, "model_fields", {})
    return wandb.Settings(**{k: v for k, v in wanted.items() if k in fields and v is not None})


def _mode(options: dict[str, Any]) -> str:
    mode = str(options.get("mode") or os.environ.get("WANDB_MODE")
               or ("online" if os.environ.get("WANDB_API_KEY") else "offline")).lower()
    mode = {"dryrun": "offline", "run": "online"}.get(mode, mode)
    if mode not in ("offline", "online"):
        raise GraceError(f"wandb export: mode {mode!r} (from the mode option or WANDB_MODE) writes nothing; use "
                         "offline or online")
    return mode


def _where(run: RunDir, dest: str | None, options: dict[str, Any], tracked: TrackedRun
           ) -> tuple[Path, str, str | None]:
    """(directory for the runs' files, project, entity) from ``dest`` and the options."""
    directory, project, entity = options.get("dir"), options.get("project"), options.get("entity")
    if dest and _is_dir(dest):
        if directory:
            raise GraceError(f"wandb export: {dest} is a directory, and so is option dir={directory}; give one")
        directory = dest
    elif dest:
        if project:
            raise GraceError(f"wandb export: {dest} names the project, and so does option project={project}; "
                             "give one")
        entity_part, _, project = dest.rpartition("/")
        entity = entity or entity_part or None
    project = _project_name(str(project or os.environ.get("WANDB_PROJECT") or tracked.experiment))
    directory = directory or os.environ.get("WANDB_DIR")
    path = Path(str(directory)).expanduser() if directory else run.path
    return path.resolve(), project, str(entity) if entity else None


def _is_dir(dest: str) -> bool:
    return dest.startswith(("/", ".", "~", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", dest)) or Path(dest).is_dir()


def _project_name(name: str) -> str:
    """W&B refuses ``/ \\ # ? % :`` in a project's name, and more than 128 characters."""
    return re.sub(r"[/\\#?%:]", "-", name)[:128] or "grace"


def _max_rows(options: dict[str, Any]) -> int:
    value = options.get("max_rows", MAX_ROWS)
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if n < 0:
        raise GraceError(f"wandb export: max_rows={value!r}: expected a whole number, 0 or more")
    return n


def _table(run: RunDir) -> Any:
    from harness.exports.table import question_table

    return question_table(run)


def _rows(table: Any, model: str, max_rows: int, notes: list[str]) -> tuple[list[str], list[list[Any]]] | None:
    """The model's rows of the question table, as wandb.Table wants them (columns, then lists of values)."""
    if table is None:
        return None
    import pyarrow.compute as pc

    mine = table.filter(pc.equal(table["model"], model))
    if mine.num_rows > max_rows:
        notes.append(f"{model}: the questions table holds the first {max_rows:,} of {mine.num_rows:,} rows "
                     "(option max_rows); the parquet export holds them all")
        mine = mine.slice(0, max_rows)
    data = mine.to_pydict()
    columns = list(data)
    return columns, [list(row) for row in zip(*data.values(), strict=True)]


def _offline_run(directory: Path, run_id: str) -> Path | None:
    """An offline run already written for this ID under ``directory`` (W&B names it offline-run-TIME-ID)."""
    for folder in sorted((directory / "wandb").glob(f"offline-run-*-{run_id}")):
        if (folder / f"run-{run_id}.wandb").is_file():
            return folder
    return None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def _wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise GraceError(f"--to wandb needs the W&B SDK (wandb), which is not installed; install it with: {PIP}"
                         ) from None
    return wandb
