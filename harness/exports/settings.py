"""Which targets, and where to: the names ``--to`` / ``--log-to`` / ``log_to`` take, and a TOML ``[export.TARGET]``
table read as the ``(dest, options)`` every target is called with.

Checked before a run spends anything: a misspelt ``--log-to mlfow`` or ``[export.mlfow]`` is an error at the
start of ``grace run``, not a failed export after an hour of calls.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import GraceError
from harness.core.literal_secrets import LiteralSecrets, option_problems, url_problems
from harness.exports import TARGETS

# the key of a TOML [export.TARGET] table that names where the export goes (the ``dest``), in the target's own words;
# ``dest`` is accepted for every target too. The table's other keys are the target's options.
DEST_KEYS = {"inspect": "log_dir", "mlflow": "tracking_uri", "wandb": "project", "parquet": "path"}


def check_targets(targets: list[str] | tuple[str, ...], where: str = "") -> list[str]:
    """The targets, checked against the registry; each once, in the order given."""
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise GraceError(f"{where}unknown export target(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(TARGETS)}")
    return list(dict.fromkeys(targets))


def export_settings(target: str, table: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """A TOML ``[export.TARGET]`` table as ``(dest, options)``: ``dest`` (or the target's own name for it:
    ``tracking_uri`` for mlflow, ``project`` for wandb, ``log_dir`` for inspect, ``path`` for parquet) is where, the
    other keys are the target's options."""
    options = dict(table or {})
    key = DEST_KEYS.get(target, "dest")
    dest, own = options.pop("dest", None), options.pop(key, None)
    if dest is not None and own is not None:
        raise GraceError(f"[export.{target}]: give dest or {key}, not both")
    dest = dest if dest is not None else own
    if dest is not None and not isinstance(dest, str):
        raise GraceError(f"[export.{target}]: {key} must be a string")  # not shown: it may hold a password
    # a password in a tracking URI, a token among the options: from the environment, as ${VAR} (filled when exporting)
    problems = [(key, text) for text in url_problems(dest or "", key)] + option_problems(options, f"[export.{target}]")
    if problems:
        raise LiteralSecrets(f"[export.{target}]", problems)
    return dest, options
