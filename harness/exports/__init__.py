"""Results where teams already look: a scored run folder, exported through each target's own library.

One module per target, each an optional extra imported only when used: ``inspect`` (inspect_ai's eval logs),
``mlflow`` (MLflow runs), ``wandb`` (Weights & Biases runs, offline too), ``parquet`` (one tidy table that pandas,
Polars and DuckDB read). Every target reads the run through :func:`harness.exports.table.question_table` (a row
per question x model x repeat) and ``report.json`` (the figures), so a figure is computed once, by the scorer.

A target is ``"module:function"`` below, the function called as ``export(run, dest, options)``:

- ``run``: the run folder (a :class:`harness.run_folder.run_dir.RunDir`), already scored;
- ``dest``: where to write, as the target understands it (a file or folder path, a tracking URI, a W&B
  project), or None for the target's default;
- ``options``: the target's own settings (e.g. ``{"nested": True}``), as given on the command line or in TOML;

and returns an :class:`Exported`. A missing library raises ``GraceError`` with the pip command; a tracker that
cannot be reached raises ``ExportFailed`` (the run is never touched, and the export can be tried again).

Before the call, :func:`pinned` writes into ``dest`` and ``options`` what the environment and the current folder
decide (``MLFLOW_TRACKING_URI``, ``WANDB_PROJECT``, a relative path), through the target module's own ``pinned``
when it has one: the attempt is recorded with them, so ``grace export --retry`` from another shell or folder goes
where the first attempt went.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.registry import resolve, split_target

TARGETS: dict[str, str] = {
    "inspect": "harness.exports.inspect_log:export",
    "mlflow": "harness.exports.mlflow_run:export",
    "wandb": "harness.exports.wandb_run:export",
    "parquet": "harness.exports.parquet_table:export",
}


class ExportFailed(GraceError):
    """The target refused or could not be reached (a tracking server down, a full disk): worth trying again."""


@dataclass
class Exported:
    """What one export wrote: the ``target``, where it went (``location``: a path or URI a user can open), how
    many ``models`` and ``rows`` it carried, and the target's own IDs (an MLflow run ID per model, ...)."""

    target: str
    location: str
    models: int = 0
    rows: int = 0
    ids: dict[str, str] = field(default_factory=dict)  # model -> the target's ID for it (run ID, log file, ...)
    notes: list[str] = field(default_factory=list)

    def path(self) -> Path | None:
        return Path(self.location) if "://" not in self.location else None


def pinned(target: str, dest: str | None, options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """``(dest, options)`` as the target will read them now, the environment's and the current folder's part written
    in: the target module's ``pinned(dest, options)``, else a relative path made absolute. None stays None: the
    target's default inside the run folder, which goes with the folder."""
    module = resolve(split_target(TARGETS[target])[0])
    own = getattr(module, "pinned", None)
    if own is not None:
        return own(dest, dict(options))
    return absolute(dest), dict(options)


def absolute(path: str | None) -> str | None:
    """A path given relative to the current folder (or ``~``), as an absolute one; None stays None."""
    import os

    return None if path is None else os.path.abspath(os.path.expanduser(path))


def target_function(name: str) -> Any:
    """The export function of target ``name`` (imported now: each module imports its library lazily, inside)."""
    if name not in TARGETS:
        raise GraceError(f"unknown export target {name!r}; known: {', '.join(TARGETS)}")
    return resolve(TARGETS[name])
