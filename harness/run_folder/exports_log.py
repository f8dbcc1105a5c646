"""``exports.jsonl``: every export of the run folder tried (``grace export``, ``grace run --log-to``), one line each.

An export goes to a tracker that may be down, so it can fail after the run itself succeeded. The line says so
(``ok`` false, the ``error``) and keeps what the export was asked with (``target``, ``dest``, ``options``), so
``grace export RUN --retry`` tries the failed ones again, and a reader (the viewer, a report) can show where a run
was sent: an MLflow run ID, a W&B run, a parquet file. Appended, never rewritten: the history of attempts stays.

A destination's credentials never reach the file: a password in a URI (``https://user:secret@host``) is written
as ``***``, and so is the value of an option whose name says it is a secret (key, token, password, secret).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.core.files import JsonlAppender
from harness.core.jsonl import iter_jsonl
from harness.core.secrets import MASK, mask

EXPORTS_SCHEMA_VERSION = 1
_SECRET_OPTION = re.compile(r"key|token|secret|password|credential", re.I)


class ExportRecord(BaseModel):
    """One export attempt of a run folder (a line of ``exports.jsonl``)."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = EXPORTS_SCHEMA_VERSION  # version of the line's format
    target: str  # inspect, mlflow, wandb or parquet
    # where it was to go (a path, a tracking URI, a W&B project), what the environment decided written in
    # (MLFLOW_TRACKING_URI; a relative path made absolute) so a retry from another shell goes there too; null: the
    # target's default inside the run folder
    dest: str | None = None
    # the target's own settings, as given, and what the environment decided (W&B: mode, project, entity, dir)
    options: dict[str, Any] = Field(default_factory=dict)
    ok: bool  # true: the export was written
    location: str | None = None  # where it went, as the target said (a file, a tracking URI); null when it failed
    error: str | None = None  # why it failed, in a sentence; null when it succeeded
    rows: int | None = None  # rows exported (one per question x model x repeat); null when it failed
    ids: dict[str, str] = Field(default_factory=dict)  # per model: the target's ID for it (an MLflow run ID, ...)
    by: str  # what asked for it: "grace export" or "grace run --log-to"
    at: str  # when it ended: ISO 8601, UTC, to the second


def masked(text: str | None) -> str | None:
    """A destination with the password of a URI, and every secret grace knows of, replaced by ``***``."""
    return None if text is None else mask(text, uris=True)


def masked_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: MASK if _SECRET_OPTION.search(k) else (masked(v) if isinstance(v, str) else v)
            for k, v in options.items()}


def append_export(path: Path, record: ExportRecord) -> None:
    """Add one attempt (credentials masked) to the file; the line is flushed before this returns."""
    record = record.model_copy(update={"dest": masked(record.dest), "options": masked_options(record.options),
                                       "error": masked(record.error)})
    out = JsonlAppender(path)
    try:
        out.write(record.model_dump(mode="json"))
    finally:
        out.close()


def read_exports(path: Path) -> list[ExportRecord]:
    """Every attempt on file, oldest first; [] when nothing was exported yet."""
    if not Path(path).exists():
        return []
    return [ExportRecord.model_validate(row)
            for _, row in iter_jsonl(Path(path), torn_tail_ok=True, hint="; fix or delete the line")]


def failed_exports(path: Path) -> list[ExportRecord]:
    """The targets whose latest attempt failed, that attempt each: what ``--retry`` tries again (an export that
    succeeded later, wherever to, settles its target)."""
    latest: dict[str, ExportRecord] = {}
    for rec in read_exports(path):
        latest[rec.target] = rec
    return [rec for rec in latest.values() if not rec.ok]
