"""Reading a responses file (``grace run`` output, or hand-written) line by line.

Every line is checked as it is read and the first bad one stops the run with
its file:line and what to fix, because a silently skipped response would shift
every accuracy on the leaderboard. Rows are yielded as plain tuples: a million
pydantic objects would cost more than the whole scoring.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from kb_builder.errors import GraceError, where

REQUIRED = ("question_id", "model", "response")


class ResponseRow(NamedTuple):
    line: int
    question_id: str
    model: str
    repeat: int
    text: str
    error: bool  # the call failed after retries; scored as outcome "error"
    retrieved_ids: list[str] | None
    cost_usd: float | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None


def _number(row: dict, key: str, path: Path, n: int) -> float | None:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise GraceError(f"{where(path, n)}: '{key}' must be a number or null, got {v!r}")
    return float(v)


def _count(row: dict, key: str, path: Path, n: int) -> int | None:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        raise GraceError(f"{where(path, n)}: '{key}' must be a whole number or null, got {v!r}")
    return int(v)


def _bad_field(row: dict, path: Path, n: int, gold_ids: Mapping[str, object]) -> GraceError:
    """The slow path: say exactly what is wrong with a row the fast path rejected."""
    for key in REQUIRED:
        if key not in row:
            return GraceError(
                f"{where(path, n)}: missing field '{key}'; each line needs question_id, model and response"
            )
    qid, model, resp = row["question_id"], row["model"], row["response"]
    if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
        return GraceError(f"{where(path, n)}: 'question_id' must be a non-empty string, got {qid!r}")
    if str(qid).strip() not in gold_ids:
        return GraceError(
            f"{where(path, n)}: unknown question_id {str(qid)!r}: it is not in the gold file; "
            "fix the ID or score against the gold set the run used"
        )
    if not isinstance(model, str) or not model.strip():
        return GraceError(f"{where(path, n)}: 'model' must be a non-empty string, got {model!r}")
    if not isinstance(resp, str):
        return GraceError(
            f"{where(path, n)}: 'response' must be the model's text (a string), got {type(resp).__name__}; "
            "null is allowed only on a row with an 'error'"
        )
    rep = row.get("repeat", 0)
    return GraceError(f"{where(path, n)}: 'repeat' must be a whole number >= 0, got {rep!r}")


def read_responses(path: str | Path, gold_ids: Mapping[str, object]) -> Iterator[ResponseRow]:
    path = Path(path)
    if not path.exists():
        raise GraceError(f"{path}: responses file not found")
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, expected a responses .jsonl file")
    try:
        yield from _rows(path, gold_ids)
    except UnicodeDecodeError as exc:
        raise GraceError(f"{path}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from None


def _rows(path: Path, gold_ids: Mapping[str, object]) -> Iterator[ResponseRow]:
    loads = json.loads
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                row = loads(raw)
            except json.JSONDecodeError as exc:
                if not raw.strip():
                    continue
                raise GraceError(
                    f"{where(path, n)}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "each line must be one JSON object"
                ) from None
            if not isinstance(row, dict):
                raise GraceError(f"{where(path, n)}: expected a JSON object with question_id, model and response")
            qid = row.get("question_id")
            model = row.get("model")
            text = row.get("response")
            repeat = row.get("repeat", 0)
            err = row.get("error")
            error = err is not None and err is not False
            if type(qid) is not str:
                qid = str(qid) if type(qid) is int else None
            elif qid not in gold_ids:
                qid = qid.strip()
            if text is None and error:
                text = ""
            if repeat is None:
                repeat = 0
            if (
                qid not in gold_ids
                or type(model) is not str
                or not model
                or type(text) is not str
                or type(repeat) is not int
                or repeat < 0
            ):
                raise _bad_field(row, path, n, gold_ids)
            retrieved = row.get("retrieved_ids")
            if retrieved is not None:
                if not isinstance(retrieved, list):
                    raise GraceError(f"{where(path, n)}: 'retrieved_ids' must be a list of article IDs or null")
                retrieved = [str(r) for r in retrieved]
            yield ResponseRow(
                n, qid, model, repeat, text, error, retrieved,
                _number(row, "cost_usd", path, n), _number(row, "latency_ms", path, n),
                _count(row, "input_tokens", path, n), _count(row, "output_tokens", path, n),
            )
