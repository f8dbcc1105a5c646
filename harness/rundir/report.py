"""``report.json`` and ``scores.jsonl``: their one reader and writer, with the schema version checked on read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from harness.core.jsonl import iter_jsonl

REPORT_SCHEMA_VERSION = 2  # 2: outcome unshown_citation, unshown_citation_rate and truncated per model
SCORES_SCHEMA_VERSION = 2  # 2: outcome unshown_citation, truncated


def read_report(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise GraceError(f"{path}: not found; run 'grace score' on this folder first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise GraceError(f"{path}: not UTF-8 text; re-run 'grace score'") from None
    except json.JSONDecodeError as exc:
        raise GraceError(f"{where(path, exc.lineno)}: not valid JSON ({exc.msg}); re-run 'grace score'") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise GraceError(f"{path}: not a grace report (no 'models' object); re-run 'grace score'")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > REPORT_SCHEMA_VERSION:
        raise GraceError(
            f"{path}: report schema_version {version!r} is not one this grace reads "
            f"(<= {REPORT_SCHEMA_VERSION}); upgrade grace or re-run 'grace score'"
        )
    for name, model in data["models"].items():
        if not isinstance(model, dict):
            raise GraceError(f"{path}: models[{name!r}] must be an object; re-run 'grace score'")
    return data


def report_json(data: dict[str, Any]) -> str:
    """Indented for people and diffs, but each confusion-matrix row on one line.

    Plain ``indent`` would put each of a 500x500 matrix's numbers on its own
    line (and json's fast C encoder does not indent), so the matrices are
    swapped for placeholders, indented, then written back compactly.
    """
    rows: dict[str, str] = {}
    models = {}
    for name, m in data["models"].items():
        conf = m.get("confusion")
        if not isinstance(conf, dict) or "matrix" not in conf:
            models[name] = m
            continue
        key = f"@@confusion-{len(rows)}@@"
        rows[key] = "[" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in conf["matrix"]) + "]"
        models[name] = {**m, "confusion": {**conf, "matrix": key}}
    text = json.dumps({**data, "models": models}, indent=1, ensure_ascii=False)
    for key, value in rows.items():
        text = text.replace(json.dumps(key), value, 1)
    return text + "\n"


def write_report(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, report_json(data))


def iter_scores(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of a scores file, each row checked for the keys every reader joins on."""
    for n, row in iter_jsonl(path, hint="; run 'grace score' again"):
        try:
            row["model"], row["question_id"] = str(row["model"]), str(row["question_id"])
            row["repeat"] = int(row.get("repeat") or 0)
            row["outcome"]  # noqa: B018 - presence check
        except (KeyError, TypeError, ValueError):
            raise GraceError(f"{where(path, n)}: a scores line needs model, question_id, repeat and outcome; "
                             "run 'grace score' again") from None
        yield n, row
