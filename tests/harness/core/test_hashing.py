"""normalise: what every cache key and response row goes through; its fast path for the plain JSON types must
give what the general one gives, so no cached answer's key changes."""

from __future__ import annotations

import enum

from harness.core.hashing import canonical_json, normalise


class Level(enum.StrEnum):
    HIGH = "high"


class Name(str):
    pass


class Count(int):
    pass


class Ratio(float):
    pass


class Table(dict):
    pass


def test_numbers_by_value_kinds_apart() -> None:
    assert normalise({"t": 0.0, "p": 1.0, "q": 0.5, "b": False, "n": None, "i": 3}) == {
        "t": 0, "p": 1, "q": 0.5, "b": False, "n": None, "i": 3}
    assert canonical_json({"temperature": 0.0}) == canonical_json({"temperature": 0})
    assert canonical_json({"x": False}) != canonical_json({"x": 0})


def test_nested_messages_and_tuples() -> None:
    messages = [{"role": "user", "content": "Why? [ID: 3]"}, {"role": "system", "content": ""}]
    assert normalise(messages) == messages
    assert normalise({"stop": ("a", "b"), "w": [1.0, (2.0, "x")]}) == {"stop": ["a", "b"], "w": [1, [2, "x"]]}
    assert normalise({1: "a", 2.5: "b"}) == {"1": "a", "2.5": "b"}


def test_subclasses_take_the_general_path() -> None:
    out = normalise(Table({"level": Level.HIGH, "n": Count(2), "r": Ratio(2.0), Name("k"): Ratio(0.5)}))
    assert type(out) is dict
    assert out == {"level": Level.HIGH, "n": 2, "r": 2, "k": 0.5}
    assert all(type(k) is str for k in out)
    assert type(out["r"]) is int
