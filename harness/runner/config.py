"""Leaderboard config (TOML): models with their parameters and prices, plus run defaults.

Config is plain data naming registered providers; it never holds code::

    [run]
    k = 3
    concurrency = 8

    [[models]]
    spec = "openai:gpt-4o-mini"
    temperature = 0
    price_input = 0.15          # USD per 1M tokens
    price_output = 0.60

    [[models]]
    spec = "anthropic:claude-haiku-4-5"
    batch = true                # through Message Batches, at half price

    [[models]]
    spec = "openai:llama3.1"
    name = "llama-local"
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_KEY"

Every table is checked against a schema before anything runs: a value of the
wrong type would otherwise surface as a traceback deep in a run (or as a 400 from
an API after money was spent), and a misspelt key would be silently ignored.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.errors import GraceError
from harness.providers import parse_model_spec
from harness.providers.base import ModelSpec

# strict: TOML has real types, so "3" is a typo for 3, not a number; floats still accept ints (0 and 0.0)
_STRICT = ConfigDict(extra="forbid", strict=True)
Count = Annotated[int, Field(ge=1)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]


class GenParams(BaseModel):
    """Generation parameters, sent to the API as given."""

    model_config = _STRICT
    temperature: NonNegative | None = None
    max_tokens: Count | None = None
    top_p: NonNegative | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    reasoning_effort: str | None = None


class ModelTable(GenParams):
    """One ``[[models]]`` entry."""

    spec: str
    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    price_input: NonNegative | None = None  # USD per 1M tokens
    price_output: NonNegative | None = None
    price_batch_input: NonNegative | None = None  # USD per 1M tokens through the batch API [default: half]
    price_batch_output: NonNegative | None = None
    concurrency: Count | None = None
    batch: bool | None = None  # through the provider's batch API at half price (openai, azure, anthropic, google)
    rpm: NonNegative | None = None  # 0: no limit
    tpm: NonNegative | None = None
    timeout: Positive | None = None
    options: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


class RunTable(BaseModel):
    """``[run]``: defaults for the command-line options of ``grace run``."""

    model_config = _STRICT
    k: Count | None = None
    repeats: Count | None = None
    concurrency: Count | None = None
    max_attempts: Count | None = None
    template: str | None = None
    output_mode: Literal["inline", "json"] | None = None
    timeout: Positive | None = None
    temperature: NonNegative | None = None
    max_tokens: Count | None = None
    seed: int | None = None
    rpm: NonNegative | None = None
    tpm: NonNegative | None = None
    embedder: str | None = None
    retrieved: str | None = None  # a file of ranked article IDs per question (as --retrieved)
    rerank: str | None = None  # PROVIDER:MODEL or cross-encoder[:MODEL] (as --rerank)
    rerank_depth: Count | None = None
    no_score: bool | None = None
    batch: bool | None = None  # every model with a batch API goes through it (as --batch)
    wait: bool | None = None  # poll batches until they end (as --wait)
    poll_interval: Positive | None = None  # seconds between batch status checks [default: 30]


class Board(BaseModel):
    model_config = _STRICT
    run: dict[str, Any] | None = None
    models: list[dict[str, Any]] | None = None


_GEN_PARAMS = set(GenParams.model_fields)
_EXPECT = {
    "int_type": "a whole number", "float_type": "a number", "string_type": "a string", "bool_type": "true or false",
    "dict_type": "a table", "list_type": "an array", "model_type": "a table",
}
_BOARD_EXPECT = {"run": "a [run] table", "models": "[[models]] tables (an array of tables)"}
_MODEL_EXPECT = {"stop": "a string or an array of strings"}
_TOML_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a float", dict: "a table", list: "an array"}


def _expected(err: dict[str, Any]) -> str:
    ctx = err.get("ctx") or {}
    if err["type"] == "greater_than_equal":
        return f"{ctx['ge']:g} or more"
    if err["type"] == "greater_than":
        return f"more than {ctx['gt']:g}"
    if err["type"] == "literal_error":
        return f"one of {ctx['expected']}"
    return _EXPECT.get(err["type"], err["msg"])


def _shown(value: Any) -> str:
    return f"{json.dumps(value, default=str, ensure_ascii=False)} ({_TOML_TYPES.get(type(value), type(value).__name__)})"


def _problems(schema: type[BaseModel], table: dict[str, Any], label: str, expect: dict[str, str] | None = None) -> list[str]:
    """One line per bad key of ``table``: where it is, what was expected, what was given."""
    try:
        schema.model_validate(table)
        return []
    except ValidationError as exc:
        errors = exc.errors()
    by_key: dict[str, list[str]] = {}
    out = []
    for err in errors:
        key = str(err["loc"][0])
        if err["type"] == "extra_forbidden":
            near = difflib.get_close_matches(key, list(schema.model_fields), n=1)
            hint = f"; did you mean '{near[0]}'?" if near else f"; known keys: {', '.join(schema.model_fields)}"
            if schema is ModelTable and not near:
                hint += " (other provider settings go under options)"
            elif schema is Board and key in RunTable.model_fields | ModelTable.model_fields:
                hint = "; it belongs under [run]" if key in RunTable.model_fields else "; it belongs in a [[models]] entry"
            out.append(f"{label}: unknown key '{key}'{hint}")
        elif err["type"] == "missing":
            out.append(f"{label}: missing key '{key}'" + (' (spec = "PROVIDER:MODEL")' if key == "spec" else ""))
        else:
            wanted = by_key.setdefault(key, [])
            text = (expect or {}).get(key) or _expected(err)
            if text not in wanted:
                wanted.append(text)
    out += [f"{label}: key '{key}' must be {' or '.join(wanted)}, got {_shown(table[key])}" for key, wanted in by_key.items()]
    return out


def model_from_table(entry: dict[str, Any], where: str) -> ModelSpec:
    problems = _problems(ModelTable, entry, where, _MODEL_EXPECT)
    if problems:
        raise GraceError("\n".join(problems))
    try:
        spec = parse_model_spec(entry["spec"])
    except GraceError as exc:
        raise GraceError(f"{where}: key 'spec': {exc}") from None
    spec.name = entry.get("name") or spec.name
    spec.params = {**{k: entry[k] for k in _GEN_PARAMS if k in entry}, **entry.get("params", {})}
    spec.base_url = entry.get("base_url")
    spec.api_key_env = entry.get("api_key_env")
    spec.price_input_per_mtok = entry.get("price_input")
    spec.price_output_per_mtok = entry.get("price_output")
    spec.price_batch_input_per_mtok = entry.get("price_batch_input")
    spec.price_batch_output_per_mtok = entry.get("price_batch_output")
    spec.concurrency = entry.get("concurrency")
    spec.batch = entry.get("batch")
    spec.rpm, spec.tpm = entry.get("rpm"), entry.get("tpm")
    if "timeout" in entry:
        spec.timeout_s = float(entry["timeout"])
    spec.options = dict(entry.get("options", {}))
    return spec


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise GraceError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise GraceError(f"{path}: is a folder, expected a TOML file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise GraceError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GraceError(f"{path}: invalid TOML ({exc})") from None


def load_config(path: Path) -> tuple[list[ModelSpec], dict[str, Any]]:
    """Models and the ``[run]`` table (only the keys set, as written); every problem in the file is listed at once."""
    data = _read_toml(path)
    problems = _problems(Board, data, f"{path}: top level", _BOARD_EXPECT)
    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    entries = data.get("models") if isinstance(data.get("models"), list) else []
    problems += _problems(RunTable, run, f"{path}: [run]")
    for i, entry in enumerate(entries, 1):
        if isinstance(entry, dict):  # a non-table entry is already reported at the top level
            problems += _problems(ModelTable, entry, f"{path}: [[models]] #{i}", _MODEL_EXPECT)
    if problems:
        raise GraceError("\n".join(problems))
    models = [model_from_table(m, f"{path}: [[models]] #{i}") for i, m in enumerate(entries, 1)]
    return models, dict(run)
