"""Token prices (USD per 1M tokens) for cost columns; unknown models cost ``null``.

Prices change; these are list prices as published in 2025 for common models,
kept here only so a leaderboard shows a cost without configuration. Override
per model in the leaderboard TOML (``price_input``/``price_output``) or for
all with ``--prices FILE.json`` ({"model": [input, output]} or
[input, output, batch_input, batch_output]). A cost shown is never invented: a
model missing from every table gets ``cost_usd: null``.

Batch prices: OpenAI's Batch API, Anthropic's Message Batches and Gemini's
batch mode all bill half the list price, so a model's batch price is half its
real-time one unless a table or the TOML (``price_batch_input``,
``price_batch_output``) says otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec

BATCH_DISCOUNT = 0.5  # the documented batch price of all three vendors, as a share of the list price

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


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens, real-time and through the batch API."""

    input: float
    output: float
    batch_input: float | None = None  # None: BATCH_DISCOUNT of the real-time price
    batch_output: float | None = None

    @property
    def batch(self) -> tuple[float, float]:
        return (self.input * BATCH_DISCOUNT if self.batch_input is None else self.batch_input,
                self.output * BATCH_DISCOUNT if self.batch_output is None else self.batch_output)


def load_prices(path: Path | None) -> dict[str, Price]:
    table = {model: Price(*pair) for model, pair in PRICES.items()}
    if path is None:
        return table
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for model, values in data.items():
            if not isinstance(values, list) or len(values) not in (2, 4):
                raise ValueError(f"{model!r}: expected 2 or 4 numbers, got {values!r}")
            table[model] = Price(*(float(v) for v in values))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise GraceError(f"{path}: prices must be JSON {{\"model\": [input_per_mtok, output_per_mtok]}} or "
                         f"[input, output, batch_input, batch_output] ({exc})") from None
    return table


def apply_price(spec: ModelSpec, table: dict[str, Price]) -> ModelSpec:
    """Fill the prices a spec does not set itself (TOML wins) from the table; batch prices default to half."""
    known = table.get(spec.model)
    if spec.price_input_per_mtok is None and known is not None:
        spec.price_input_per_mtok, spec.price_output_per_mtok = known.input, known.output
        if spec.price_batch_input_per_mtok is None:
            spec.price_batch_input_per_mtok, spec.price_batch_output_per_mtok = known.batch
    return spec


def batch_price(spec: ModelSpec) -> tuple[float | None, float | None]:
    """USD per 1M input and output tokens through the batch API (half the real-time price unless set)."""
    if spec.price_input_per_mtok is None or spec.price_output_per_mtok is None:
        return spec.price_batch_input_per_mtok, spec.price_batch_output_per_mtok
    price = Price(spec.price_input_per_mtok, spec.price_output_per_mtok, spec.price_batch_input_per_mtok,
                  spec.price_batch_output_per_mtok)
    return price.batch


def call_cost(
    input_tokens: int | None, output_tokens: int | None, price_in: float | None, price_out: float | None
) -> float | None:
    if price_in is None or price_out is None or input_tokens is None or output_tokens is None:
        return None
    return round((input_tokens * price_in + output_tokens * price_out) / 1_000_000, 8)
