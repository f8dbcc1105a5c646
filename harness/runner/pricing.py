"""Token prices (USD per 1M tokens) for cost columns; unknown models cost ``null``.

Prices change; these are list prices as published in 2025 for common models,
kept here only so a leaderboard shows a cost without configuration. Override
per model in the leaderboard TOML (``price_input``/``price_output``) or for
all with ``--prices FILE.json`` ({"model": [input, output]}). A cost shown is
never invented: a model missing from every table gets ``cost_usd: null``.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.errors import GraceError

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-sonnet-4-0": (3.00, 15.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
}


def load_prices(path: Path | None) -> dict[str, tuple[float, float]]:
    table = dict(PRICES)
    if path is None:
        return table
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for model, pair in data.items():
            table[model] = (float(pair[0]), float(pair[1]))
    except (OSError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise GraceError(f"{path}: prices must be JSON {{\"model\": [input_per_mtok, output_per_mtok]}} ({exc})") from None
    return table


def call_cost(
    input_tokens: int | None, output_tokens: int | None, price_in: float | None, price_out: float | None
) -> float | None:
    if price_in is None or price_out is None or input_tokens is None or output_tokens is None:
        return None
    return round((input_tokens * price_in + output_tokens * price_out) / 1_000_000, 8)
