"""Token prices (USD per 1M tokens) for cost columns; unknown models cost ``null``.

Prices change; these are list prices as published in 2025 for common models,
kept here only so a leaderboard shows a cost without configuration. Override
per model in the leaderboard TOML (``price_input``/``price_output``) or for
all with ``--prices FILE.json`` ({"model": [input, output]} or
[input, output, batch_input, batch_output]). A cost shown is never invented: a
model missing from every table gets ``cost_usd: null``.

A self-hosted model is billed by its server's time, not its tokens: ``price_server_hour`` (the TOML, or
``--price-server-hour``) is what one of its servers costs an hour, and the report prices its questions by the
seconds its calls kept its servers busy (:func:`server_cost`).

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


def apply_server_prices(specs: list[ModelSpec], given: tuple[str, ...] | list[str]) -> None:
    """``--price-server-hour`` values over the TOML's: ``MODEL=USD`` for one model, a bare ``USD`` for every model on
    a server on this machine or network (a self-hosted one) that has no price of its own."""
    from harness.providers import endpoint_of
    from harness.providers.base import is_local_url

    names = {s.name: s for s in specs}
    every: float | None = None
    for value in given:
        name, _, amount = value.rpartition("=") if "=" in value else ("", "", value)
        try:
            usd = float(amount)
            if not usd >= 0 or usd == float("inf"):
                raise ValueError
        except ValueError:
            raise GraceError(f"--price-server-hour {value!r}: give USD per server-hour (e.g. 1.20), or MODEL=USD for "
                             "one model") from None
        if not name:
            every = usd
        elif name not in names:
            raise GraceError(f"--price-server-hour {value!r}: no model named {name!r} in this run (its models: "
                             f"{', '.join(names)})")
        else:
            names[name].price_server_hour = usd
    if every is not None:
        for s in specs:
            if s.price_server_hour is None and is_local_url(endpoint_of(s)):
                s.price_server_hour = every


def server_cost(server_s: float, price_server_hour: float | None) -> float | None:
    """USD for ``server_s`` seconds of servers at ``price_server_hour`` each; None without a price."""
    return None if price_server_hour is None else round(server_s / 3600 * price_server_hour, 8)


def call_cost(
    input_tokens: int | None, output_tokens: int | None, price_in: float | None, price_out: float | None
) -> float | None:
    if price_in is None or price_out is None or input_tokens is None or output_tokens is None:
        return None
    return round((input_tokens * price_in + output_tokens * price_out) / 1_000_000, 8)
