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
    spec = "openai:llama3.1"
    name = "llama-local"
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_KEY"
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.providers import parse_model_spec
from harness.providers.base import ModelSpec

_GEN_PARAMS = {"temperature", "max_tokens", "top_p", "seed", "stop", "frequency_penalty", "presence_penalty", "reasoning_effort"}
_FIELDS = {"spec", "name", "base_url", "api_key_env", "price_input", "price_output", "concurrency", "rpm", "tpm", "timeout", "options", "params"}


def model_from_table(entry: dict[str, Any], where: str) -> ModelSpec:
    if "spec" not in entry:
        raise GraceError(f"{where}: each [[models]] entry needs spec = \"PROVIDER:MODEL\"")
    unknown = set(entry) - _FIELDS - _GEN_PARAMS
    if unknown:
        raise GraceError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; generation parameters are "
                         f"{', '.join(sorted(_GEN_PARAMS))}, others go under options")
    spec = parse_model_spec(entry["spec"])
    spec.name = entry.get("name") or spec.name
    spec.params = {**{k: entry[k] for k in _GEN_PARAMS if k in entry}, **entry.get("params", {})}
    spec.base_url = entry.get("base_url")
    spec.api_key_env = entry.get("api_key_env")
    spec.price_input_per_mtok = entry.get("price_input")
    spec.price_output_per_mtok = entry.get("price_output")
    spec.concurrency = entry.get("concurrency")
    spec.rpm, spec.tpm = entry.get("rpm"), entry.get("tpm")
    if "timeout" in entry:
        spec.timeout_s = float(entry["timeout"])
    spec.options = dict(entry.get("options", {}))
    return spec


def load_config(path: Path) -> tuple[list[ModelSpec], dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GraceError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise GraceError(f"{path}: invalid TOML ({exc})") from None
    models = [model_from_table(m, f"{path} [[models]] #{i}") for i, m in enumerate(data.get("models", []), 1)]
    return models, dict(data.get("run", {}))
