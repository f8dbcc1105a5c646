"""Prices: the built-in table, --prices files, TOML overrides, and batch prices (half the list price unless set)."""

from __future__ import annotations

import json

import pytest

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec
from harness.runner.config import load_config
from harness.runner.pricing import BATCH_DISCOUNT, Price, apply_price, batch_price, load_prices
from tests.conftest import write


def test_batch_price_is_half_the_list_price_unless_given():
    assert Price(2.0, 8.0).batch == (2.0 * BATCH_DISCOUNT, 8.0 * BATCH_DISCOUNT) == (1.0, 4.0)
    assert Price(2.0, 8.0, 0.5, 3.0).batch == (0.5, 3.0)
    spec = apply_price(ModelSpec("openai", "gpt-4o-mini"), load_prices(None))
    assert (spec.price_input_per_mtok, spec.price_output_per_mtok) == (0.15, 0.60)
    assert batch_price(spec) == (0.075, 0.30)
    assert batch_price(ModelSpec("openai", "unpriced")) == (None, None)


def test_a_prices_file_takes_two_or_four_numbers(tmp_path):
    path = write(tmp_path / "p.json", json.dumps({"mine": [1, 2], "batched": [1, 2, 0.25, 0.5]}))
    table = load_prices(path)
    assert table["mine"].batch == (0.5, 1.0) and table["batched"].batch == (0.25, 0.5)
    with pytest.raises(GraceError, match="2 or 4 numbers"):
        load_prices(write(tmp_path / "bad.json", json.dumps({"x": [1, 2, 3]})))


def test_toml_prices_win_over_the_table_and_batch_prices_follow_them(tmp_path):
    config = write(tmp_path / "b.toml", '[[models]]\nspec = "openai:gpt-4o"\nprice_input = 1.0\nprice_output = 4.0\n'
                   '[[models]]\nspec = "openai:gpt-4o-mini"\nname = "mini"\nprice_batch_input = 0.01\n'
                   'price_batch_output = 0.02\n')
    (big, mini), _ = load_config(config)
    table = load_prices(None)
    apply_price(big, table), apply_price(mini, table)
    assert (big.price_input_per_mtok, batch_price(big)) == (1.0, (0.5, 2.0))
    assert (mini.price_input_per_mtok, batch_price(mini)) == (0.15, (0.01, 0.02))
