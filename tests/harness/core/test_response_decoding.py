"""JSONL lines are read with orjson when installed (harness.core.jsonl.loads_line); every row must come out
as json reads it, with the same errors."""

from __future__ import annotations

import json

import pytest

from harness.core import jsonl
from harness.core.errors import GraceError
from harness.run_folder import responses

GOLD = {"q1": 0, "123456789012345678901234567890": 1}
LINES = [
    {"question_id": "q1", "model": "m", "response": "See [ID: 17]", "retrieved_ids": ["17", 18], "cost_usd": 0.1},
    {"question_id": "q1", "model": "m", "repeat": 1, "response": "caf\u00e9 \U0001f600", "latency_ms": 5e-324,
     "retrieved_ids": [18446744073709551615], "output_tokens": 900719925474},  # a count is at most 10**12
    {"question_id": 123456789012345678901234567890, "model": "m", "response": "big int question ID"},
    {"question_id": "q1", "model": "m", "repeat": 2, "response": "x", "retrieved_ids": [123456789012345678901234567890]},
]
RAW = [json.dumps(x) for x in LINES] + [
    '{"question_id": "q1", "model": "m", "repeat": 3, "response": "lone \\ud800 surrogate", "cost_usd": 1.5}',
    '{"question_id": "q1", "model": "m", "repeat": 4, "response": "nan cost", "cost_usd": NaN}',
    '{"question_id": "q1", "model": "m", "repeat": 5, "response": "dup", "response": "last wins"}',
    '{"question_id": "q1", "model": "m", "repeat": 6, "response": "r", "latency_ms": 1e400}',
]


def _rows(path, fast: bool, monkeypatch):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(jsonl, "_fast_loads", None)
        return [tuple(repr(v) for v in row) for row in responses.read_responses(path, GOLD)]


def test_rows_read_as_json_reads_them(tmp_path, monkeypatch):
    pytest.importorskip("orjson")
    path = tmp_path / "responses.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(RAW).encode("utf-8") + b"\n\n")
    fast, plain = _rows(path, True, monkeypatch), _rows(path, False, monkeypatch)
    assert len(fast) == len(RAW)
    assert fast == plain
    assert "18446744073709551615" in fast[1][6] and fast[2][1] == repr("123456789012345678901234567890")


@pytest.mark.parametrize("bad, message", [
    (b'{"question_id": "q1", "model": "m", "response": "x"', "not valid JSON"),
    (b'{"question_id": "q1", "model": "m", "response": "\xff"}', "not UTF-8"),
])
def test_bad_lines_give_the_same_error_either_way(tmp_path, monkeypatch, bad, message):
    path = tmp_path / "responses.jsonl"
    path.write_bytes(json.dumps(LINES[0]).encode() + b"\n" + bad + b"\n")
    errors = []
    for fast in (True, False):
        with pytest.raises(GraceError) as exc:
            _rows(path, fast, monkeypatch)
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and message in errors[0] and ":2" in errors[0]


def test_every_jsonl_reader_reads_as_json_does(tmp_path, monkeypatch):
    pytest.importorskip("orjson")
    path = tmp_path / "rows.jsonl"
    path.write_bytes("\n".join(RAW).encode("utf-8") + b"\n")
    fast = [repr(row) for _, row in jsonl.iter_jsonl(path)]
    with monkeypatch.context() as m:
        m.setattr(jsonl, "_fast_loads", None)
        plain = [repr(row) for _, row in jsonl.iter_jsonl(path)]
    assert fast == plain and len(fast) == len(RAW)
