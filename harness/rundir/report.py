"""``report.json`` and ``scores.jsonl``: their one reader and writer, with the schema version checked on read."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from harness.core.jsonl import iter_jsonl

try:  # the C function json.dumps itself uses for a str (with ensure_ascii, the default)
    from _json import encode_basestring_ascii as _json_str
except ImportError:  # pragma: no cover - a Python built without the C accelerator
    from json.encoder import py_encode_basestring_ascii as _json_str

REPORT_SCHEMA_VERSION = 2  # 2: outcome unshown_citation, unshown_citation_rate and truncated per model
SCORES_SCHEMA_VERSION = 2  # 2: outcome unshown_citation, truncated


# the fields of a scores line, in file order; ``score_line`` writes exactly what json.dumps of a dict with
# these keys gives, 3-4x faster (a million lines: ~12 s less CPU), because the scorer writes one per response
SCORE_FIELDS = (
    "schema_version", "question_id", "model", "repeat", "cited_ids", "refused", "outcome", "extraction",
    "strict_cited_ids", "strict_refused", "strict_outcome", "must_refuse", "expected_citations", "retrieved_ids",
    "expected_retrieved", "cost_usd", "latency_ms", "input_tokens", "output_tokens", "truncated",
)
_LITERAL = {True: "true", False: "false", None: "null"}
_BOOLISH = defaultdict(bool, {bool: True, type(None): True})  # flags written from _LITERAL; others by json.dumps
_INF = float("inf")


def _number(x: Any) -> str:
    """``json.dumps`` of an int, a float or None."""
    t = type(x)
    if t is float:
        if x != x:
            return "NaN"
        if x == _INF or x == -_INF:
            return "Infinity" if x > 0 else "-Infinity"
        return float.__repr__(x)
    if t is int:
        return int.__repr__(x)
    return _LITERAL[x] if x is None or t is bool else json.dumps(x)


def _ids(items: list[str] | None) -> str:
    """``json.dumps`` of a list of str or None."""
    if items is None:
        return "null"
    return "[" + ", ".join(map(_json_str, items)) + "]" if items else "[]"


def score_line(question_id: str, model: str, repeat: int, cited: list[str], refused: bool, outcome: str,
               rule: str, strict_cited: list[str], strict_refused: bool, strict_outcome: str, must_refuse: bool,
               expected: list[str], retrieved: list[str] | None, expected_retrieved: bool | None,
               cost: float | None, latency: float | None, tokens_in: int | None, tokens_out: int | None,
               truncated: bool) -> str:
    """One ``scores.jsonl`` line (without the newline), byte for byte what ``json.dumps`` writes."""
    return ScoreLines().line(question_id, model, repeat, cited, refused, outcome, rule, strict_cited, strict_refused,
                             strict_outcome, must_refuse, expected, retrieved, expected_retrieved, cost, latency,
                             tokens_in, tokens_out, truncated)


class ScoreLines:
    """:func:`score_line` for a whole file: the strings that repeat from line to line (question IDs, model
    and outcome names) are encoded once."""

    def __init__(self) -> None:
        self._text: dict[str, str] = {}

    def _str(self, value: str) -> str:
        out = self._text.get(value)
        if out is None:
            out = _json_str(value)
            if len(self._text) < 1_000_000:
                self._text[value] = out
        return out

    def line(self, question_id: str, model: str, repeat: int, cited: list[str], refused: bool, outcome: str,
             rule: str, strict_cited: list[str], strict_refused: bool, strict_outcome: str, must_refuse: bool,
             expected: list[str], retrieved: list[str] | None, expected_retrieved: bool | None,
             cost: float | None, latency: float | None, tokens_in: int | None, tokens_out: int | None,
             truncated: bool) -> str:
        s, ids, num, lit = self._str, _ids, _number, _LITERAL
        if not (_BOOLISH[type(refused)] and _BOOLISH[type(strict_refused)] and _BOOLISH[type(must_refuse)]
                and _BOOLISH[type(expected_retrieved)] and _BOOLISH[type(truncated)]):
            return json.dumps(dict(zip(SCORE_FIELDS, (
                SCORES_SCHEMA_VERSION, question_id, model, repeat, cited, refused, outcome, rule, strict_cited,
                strict_refused, strict_outcome, must_refuse, expected, retrieved, expected_retrieved, cost, latency,
                tokens_in, tokens_out, truncated), strict=True)))
        return (f'{{"schema_version": {SCORES_SCHEMA_VERSION}, "question_id": {s(question_id)}, "model": {s(model)}, '
                f'"repeat": {int.__repr__(repeat)}, "cited_ids": {ids(cited)}, "refused": {lit[refused]}, '
                f'"outcome": {s(outcome)}, "extraction": {s(rule)}, "strict_cited_ids": {ids(strict_cited)}, '
                f'"strict_refused": {lit[strict_refused]}, "strict_outcome": {s(strict_outcome)}, '
                f'"must_refuse": {lit[must_refuse]}, "expected_citations": {ids(expected)}, '
                f'"retrieved_ids": {ids(retrieved)}, "expected_retrieved": {lit[expected_retrieved]}, '
                f'"cost_usd": {num(cost)}, "latency_ms": {num(latency)}, "input_tokens": {num(tokens_in)}, '
                f'"output_tokens": {num(tokens_out)}, "truncated": {lit[truncated]}}}')


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
