"""fewer_collections: the youngest generation's threshold raised for the block, and put back after, also on error;
a collector the user switched off (threshold 0) or set higher stays as it was."""

from __future__ import annotations

import gc

import pytest

from harness.runner.collector import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture(autouse=True)
def _keep_thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_raised_inside_and_restored_after_an_error() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        raise RuntimeError("a call failed")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("young", [0, YOUNG_THRESHOLD * 2])
def test_switched_off_or_higher_is_left_alone(young: int) -> None:
    gc.set_threshold(young, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (young, 10, 10)
    assert gc.get_threshold() == (young, 10, 10)
