"""``RowIndex``: a responses file as compact columns reads the rows as the whole-row readers do (the latest row per
call, keys normalised as resuming reads them), and the streamed rewrite writes the file the whole-row one did."""

from __future__ import annotations

import itertools
import json
import random

from harness.run_folder.responses import (
    RowIndex,
    compact_responses,
    latest_rows,
    read_response_lines,
    row_key,
)


def _messy_file(path, seed: int = 0) -> None:
    """Rows in arrival order with retries (an error row, then its answer), repeats, two models, an ID written as a
    number, one with spaces, rows without a repeat, a question no longer in the gold order, and a torn last line."""
    rng = random.Random(seed)
    rows = []
    for model in ("zeta", "alpha"):
        for r in range(2):
            for q in range(12):
                rows.append({"question_id": f"q{q}", "model": model, "repeat": r, "response": f"{model} {q} {r} é",
                             "fingerprint": f"{rng.getrandbits(256):064x}", "question_hash": f"h{q}",
                             "params": {"temperature": r}, "error": None})
    for row in rng.sample(rows, 10):  # a failed call, answered later in the file
        rows.append({**row, "response": None, "error": {"kind": "timeout", "message": "slow"}})
        rows.append(dict(row))
    rows.append({"question_id": 7, "model": "alpha", "repeat": 0, "response": "number ID", "error": None})
    rows.append({"question_id": " q3 ", "model": "zeta", "response": "no repeat, spaces", "error": None})
    rows.append({"question_id": "gone", "model": "alpha", "repeat": 0, "response": "old question", "error": None})
    rng.shuffle(rows)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(text + '{"question_id": "q1", "model": "al', encoding="utf-8")  # killed mid-write


def _old_compaction(path, order: list[str]) -> str:
    """The rewrite as it was before the index: every row as a dict, sorted, written with json.dumps."""
    rows = read_response_lines(path)
    latest = latest_rows(rows)
    qpos = {q: i for i, q in enumerate(order)}
    keys = sorted(latest, key=lambda k: (k[0], k[2], qpos.get(k[1], 1e9), k[1]))
    return "".join(json.dumps(latest[k], ensure_ascii=False) + "\n" for k in keys)


def test_the_index_holds_the_latest_row_of_each_call_as_the_row_readers_do(tmp_path):
    path = tmp_path / "responses.jsonl"
    _messy_file(path)
    index = RowIndex.scan(path)
    rows = read_response_lines(path)
    assert len(index) == len(rows)
    expected = latest_rows(rows)
    got = {(index.models[index.model[i]], index.qids[index.qid[i]], int(index.repeat[i])): i
           for i in index.latest().tolist()}
    assert list(got) == list(expected)  # the same calls, in the order they first appear
    for key, i in got.items():
        row = expected[key]
        assert bool(index.error[i]) == bool(row.get("error"))
        assert index.row(i) == row
        fp = row.get("fingerprint")
        assert index.fingerprint_of(i) == (bytes.fromhex(fp) if fp else bytes(32))
    models = ["alpha", "zeta", "absent"]
    grid = index.grid(models, [f"q{q}" for q in range(12)], 3)
    for m, r, qi in itertools.product(range(3), range(3), range(12)):
        assert grid[m, r, qi] == got.get((models[m], f"q{qi}", r), -1)


def test_the_streamed_rewrite_writes_what_the_whole_row_rewrite_wrote(tmp_path):
    order = [f"q{q}" for q in range(12)][::-1]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _messy_file(a)
    _messy_file(b)
    before = _old_compaction(a, order)
    dropped = compact_responses(a, order)
    assert a.read_text(encoding="utf-8") == before
    assert dropped == len(read_response_lines(b)) - len(latest_rows(read_response_lines(b)))
    assert compact_responses(a, order) == 0 and a.read_text(encoding="utf-8") == before  # in order: left as it is
    keys = [row_key(r) for r in read_response_lines(a)]
    assert len(set(keys)) == len(keys)


def test_an_empty_or_missing_file_is_an_empty_index(tmp_path):
    assert len(RowIndex.scan(tmp_path / "none.jsonl")) == 0
    (tmp_path / "empty.jsonl").write_text("")
    index = RowIndex.scan(tmp_path / "empty.jsonl")
    assert len(index) == 0 and index.latest().size == 0 and (index.grid(["m"], ["q"], 1) == -1).all()
    assert compact_responses(tmp_path / "empty.jsonl", ["q"]) == 0
