"""``score_line`` must write exactly what ``json.dumps`` wrote before it (scores.jsonl is compared byte for byte)."""

from __future__ import annotations

import json
import random

from harness.run_folder.scores import SCORE_FIELDS, SCORES_SCHEMA_VERSION, ScoreLines, score_line

STRINGS = ["", "17", "uid-kb-5", 'quote " and \\ back', "tab\tnew\nline", "caf\u00e9 \u6587\u66f8", "emoji \U0001f600",
           "lone \ud800 surrogate", "\x00\x1f control", "</script><b>x</b>", "=cmd|' /C calc'!A0"]
NUMBERS = [None, 0, -1, 7, 10**20, 0.0, -0.0, 0.1 + 0.2, 1e-7, 123456789.125, 1e300, float("nan"), float("inf"),
           float("-inf"), 2.5]
FLAGS = [True, False, None]


def _dict(args: tuple) -> dict:
    return dict(zip(SCORE_FIELDS, (SCORES_SCHEMA_VERSION, *args), strict=True))


def _random_args(rng: random.Random) -> tuple:
    def ids(nullable: bool = False):
        if nullable and rng.random() < 0.2:
            return None
        return rng.sample(STRINGS, rng.randint(0, 3))

    return (rng.choice(STRINGS), rng.choice(STRINGS), rng.randint(0, 5), ids(), rng.choice(FLAGS[:2]),
            rng.choice(STRINGS), rng.choice(STRINGS), ids(), rng.choice(FLAGS[:2]), rng.choice(STRINGS),
            rng.choice(FLAGS[:2]), ids(), ids(nullable=True), rng.choice(FLAGS), rng.choice(NUMBERS),
            rng.choice(NUMBERS), rng.choice([None, 0, 1800, 2**40]), rng.choice([None, 0, 90]), rng.choice(FLAGS[:2]))


def test_score_line_is_json_dumps_byte_for_byte():
    rng = random.Random(7)
    lines = ScoreLines()  # one writer for the whole file: its caches must not change a line
    for _ in range(5000):
        args = _random_args(rng)
        assert score_line(*args) == json.dumps(_dict(args))
        assert lines.line(*args) == json.dumps(_dict(args))


def test_score_line_keys_in_file_order_and_readable():
    args = ("q1", "m", 0, ["17"], False, "correct", "inline", ["17"], False, "correct", False, ["17"], ["17", "3"],
            True, 0.0004, 812.5, 1800, 90, False)
    row = json.loads(score_line(*args))
    assert tuple(row) == SCORE_FIELDS
    assert row["cited_ids"] == ["17"] and row["expected_retrieved"] is True and row["cost_usd"] == 0.0004


def test_score_line_writes_a_non_bool_flag_as_json_does():
    args = ("q1", "m", 0, [], 1, "refused", "inline", [], 0, "refused", True, [], None, None, None, None, None, None, 0)
    assert score_line(*args) == json.dumps(_dict(args))
    assert '"refused": 1' in score_line(*args)


def test_citation_fields_are_json_dumps_byte_for_byte():
    """A references model's line: today's keys, then CITATION_FIELDS, as json.dumps of the whole dict writes them."""
    from harness.run_folder.scores import CITATION_FIELDS, ScoreLine, citation_fields

    rng = random.Random(39)
    lines = ScoreLines()
    for _ in range(2000):
        args = _random_args(rng)
        cites = [{"reference": rng.choice(STRINGS), "articles": rng.sample(STRINGS, rng.randint(0, 2)),
                  "how": rng.choice([None, "id", "source+heading"]), "note": rng.choice(STRINGS),
                  "quote": rng.choice([None, *STRINGS]), "quote_found": rng.choice(FLAGS)}
                 for _ in range(rng.randint(0, 3))]
        figures = [rng.choice([None, 0.0, 0.5, 2 / 3, 1.0]) for _ in range(5)]
        problems = rng.sample(["unlisted_marker", "uncited_entry"], rng.randint(0, 2))
        as_tuples = [tuple(c.values()) for c in cites]
        line = lines.line(*args)[:-1] + lines.citation_fields(as_tuples, *figures, problems) + "}"
        assert citation_fields(as_tuples, *figures, problems) == lines.citation_fields(as_tuples, *figures, problems)
        whole = {**_dict(args), **dict(zip(CITATION_FIELDS, (cites, *figures, problems), strict=True))}
        assert line == json.dumps(whole)
    assert tuple(json.loads(line)) == tuple(ScoreLine.model_fields)
