"""Bad user input (config types, file encodings, formula-looking cells) gives a clear message, never a traceback."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from tests.conftest import ROOT, run_grace, small_bench, write

# -- leaderboard TOML -----------------------------------------------------------------------------

MODEL = '[[models]]\nspec = "baseline:top1"\n'


def load(tmp_path: Path, body: str):
    from harness.runner.config import load_config

    return load_config(write(tmp_path / "board.toml", body))


@pytest.mark.parametrize("body, expected", [
    ('[run]\nk = "3"\n' + MODEL, ["[run]", "'k'", "a whole number", '"3" (a string)']),
    (MODEL + 'temperature = "hot"\n', ["[[models]] #1", "'temperature'", "a number", '"hot" (a string)']),
    (MODEL + 'price_input = "cheap"\n', ["[[models]] #1", "'price_input'", "a number", '"cheap" (a string)']),
    ('[run]\nconcurrency = 2.5\n' + MODEL, ["[run]", "'concurrency'", "a whole number", "2.5 (a float)"]),
    (MODEL + 'timeout = "x"\n', ["[[models]] #1", "'timeout'", "a number", '"x" (a string)']),
    (MODEL + MODEL + 'options = 3\n', ["[[models]] #2", "'options'", "a table", "got an integer"]),  # value unshown
    ('models = {}\n', ["top level", "'models'", "[[models]]", "{} (a table)"]),
    ('[run]\nconcurency = 2\n' + MODEL, ["[run]", "unknown key 'concurency'", "did you mean 'concurrency'?"]),
    (MODEL + 'temprature = 0\n', ["[[models]] #1", "unknown key 'temprature'", "did you mean 'temperature'?"]),
    ('[runs]\nk = 2\n' + MODEL, ["top level", "unknown key 'runs'", "did you mean 'run'?"]),
    ('[run]\nk = 0\n' + MODEL, ["[run]", "'k'", "1 or more", "0 (an integer)"]),
    ('[run]\nmax_attempts = 0\nrepeats = -1\n' + MODEL, ["'max_attempts' must be 1 or more", "'repeats' must be 1 or more"]),
    (MODEL + 'price_output = -0.5\n', ["[[models]] #1", "'price_output'", "0 or more", "-0.5 (a float)"]),
    (MODEL + 'timeout = 0\n', ["'timeout'", "more than 0"]),
    ('[run]\noutput_mode = "yaml"\n' + MODEL, ["'output_mode'", "'inline'", "'json'", '"yaml"']),
    ('[run]\nno_score = "yes"\n' + MODEL, ["'no_score'", "true or false"]),
    ('[[models]]\nname = "x"\n', ["[[models]] #1", "missing key 'spec'"]),
    ('k = 3\n' + MODEL, ["top level", "unknown key 'k'; it belongs under [run]"]),
    (MODEL + 'stop = ["a", 3]\n', ["'stop' must be a string or an array of strings", '["a", 3] (an array)']),
    ('[[models]]\nspec = "nope"\n', ["[[models]] #1: key 'spec'", "PROVIDER:MODEL"]),
])
def test_bad_config_values_name_file_table_key_expected_and_given(tmp_path, body, expected):
    with pytest.raises(GraceError) as exc:
        load(tmp_path, body)
    msg = str(exc.value)
    assert str(tmp_path / "board.toml") in msg
    for part in expected:
        assert part in msg, (part, msg)


def test_valid_config_keeps_run_table_as_written_and_floats_take_ints(tmp_path):
    body = ('[run]\nk = 2\ntemperature = 0\ntimeout = 30\nrpm = 0\nseed = 7\nembedder = "bm25"\nno_score = true\n'
            'template = "inline"\noutput_mode = "json"\nmax_tokens = 100\ntpm = 1000.5\nrepeats = 1\nmax_attempts = 3\n'
            'concurrency = 4\n' + MODEL + 'temperature = 0.0\nprice_input = 0\nprice_output = 0.6\ntimeout = 5\n'
            'stop = ["\\n"]\noptions = { threshold = 0.2 }\n')
    models, run = load(tmp_path, body)
    assert run == {"k": 2, "temperature": 0, "timeout": 30, "rpm": 0, "seed": 7, "embedder": "bm25", "no_score": True,
                   "template": "inline", "output_mode": "json", "max_tokens": 100, "tpm": 1000.5, "repeats": 1,
                   "max_attempts": 3, "concurrency": 4}
    assert type(run["temperature"]) is int  # as written: params feed cache fingerprints
    (m,) = models
    assert m.params == {"temperature": 0.0, "stop": ["\n"]} and m.price_input_per_mtok == 0 and m.timeout_s == 5.0
    assert m.options == {"threshold": 0.2}
    assert load(tmp_path, MODEL)[1] == {}


def test_config_lists_every_problem_at_once(tmp_path):
    with pytest.raises(GraceError) as exc:
        load(tmp_path, '[run]\nk = "3"\nconcurency = 2\n' + MODEL + MODEL + 'price_input = "cheap"\n')
    lines = str(exc.value).splitlines()
    assert len(lines) == 3 and all(line.startswith(str(tmp_path / "board.toml")) for line in lines)


def test_non_utf8_config_names_the_line(tmp_path):
    path = tmp_path / "board.toml"
    path.write_bytes(b'[run]\nk = 2\n[[models]]\nspec = "baseline:top1"\nname = "caf\xe9"\n')
    from harness.runner.config import load_config

    with pytest.raises(GraceError, match=r"board\.toml:5: not UTF-8 .*save the file as UTF-8"):
        load_config(path)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 4, ["what is the wifi password"])


def test_bad_config_through_grace_run_exits_2_without_traceback(bench, tmp_path):
    cfg = write(tmp_path / "board.toml", '[run]\nconcurrency = 2.5\n' + MODEL)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", cfg,
                          "--out", tmp_path / "run", "--no-score")
    assert code == 2 and "Traceback" not in out
    assert "[run]: key 'concurrency' must be a whole number, got 2.5 (a float)" in out


# -- gold CSV encodings and NUL bytes -------------------------------------------------------------

GOLD_HEAD = b"question_id,question,expected_answer,expected_citations,must_refuse,notes\n"
GOOD = b"q1,how many sick days do I get,,1,false,\nq2,how long is parental leave,,2,false,\n"


@pytest.fixture(scope="module")
def scored_run(bench):
    out = bench / "run_ok"
    code, text = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                           "--out", out, "--no-score")
    assert code == 0, text
    return out


def _commands(bench: Path, run_dir: Path, gold: Path) -> dict[str, list]:
    return {
        "run": ["run", "--kb", bench / "kb", "--gold", gold, "--model", "baseline:top1", "--out", gold.parent / "out",
                "--no-score"],
        "score": ["score", run_dir / "responses.jsonl", "--gold", gold, "--kb", bench / "kb", "--out", gold.parent / "s"],
        "kb eval": ["kb", "eval", bench / "kb", "--gold", gold],
    }


@pytest.mark.parametrize("command", ["run", "score", "kb eval"])
@pytest.mark.parametrize("tail, line, what", [
    (b"q4,where do I book fl\xfcghts,,3,false,\n", 7, "not UTF-8"),  # latin-1
    (b"q4,caf\x92 menu,,1,false,\n", 7, "not UTF-8"),  # a cp1252 quote
    (b"q4,where do I\x00 book flights,,3,false,\n", 7, "contains a NUL byte"),
    (b'q4,"how many\nsick days",,1,false,\nq5,ok,,2,false,notes \x00\n', 9, "contains a NUL byte"),
])
def test_bad_bytes_in_gold_name_the_line_in_every_command(bench, scored_run, tmp_path, command, tail, line, what):
    """The gold is the run's own (6 lines) plus a bad tail, so only the bad bytes can fail the command."""
    gold = tmp_path / "gold.csv"
    gold.write_bytes((bench / "gold.csv").read_bytes() + tail)
    code, out = run_grace(*_commands(bench, scored_run, gold)[command])
    assert code == 2, out
    assert "Traceback" not in out and "UnicodeDecodeError" not in out
    assert f"{gold}:{line}: {what}" in out
    assert "save the file as UTF-8" in out or "remove it" in out


def test_non_utf8_after_a_bom_counts_lines_from_the_top(tmp_path):
    from kb_builder.gold import read_gold

    gold = tmp_path / "gold.csv"
    gold.write_bytes(b"\xef\xbb\xbf" + GOLD_HEAD + b"q1,caf\x92,,1,false,\n")
    with pytest.raises(GraceError, match=r"gold\.csv:2: not UTF-8 text \(byte 0x92\)"):
        read_gold(gold)


@pytest.mark.parametrize("name", ["questions.csv", "questions.txt"])
def test_read_questions_rejects_bad_bytes_with_the_line(tmp_path, name):
    from kb_builder.gold import read_questions

    path = tmp_path / name
    head = b"question_id,question\n" if name.endswith(".csv") else b""
    ok = b"q1,how many sick days\n" if name.endswith(".csv") else b"how many sick days\n"
    path.write_bytes(head + ok + b"q2,caf\xe9 menu\n")
    with pytest.raises(GraceError, match=rf"{name}:{2 + bool(head)}: not UTF-8.*save the file as UTF-8"):
        read_questions(path)
    path.write_bytes(head + ok + b"q2,what\x00 now\n")
    with pytest.raises(GraceError, match=rf"{name}:{2 + bool(head)}: contains a NUL byte"):
        read_questions(path)


def test_gold_with_a_bom_still_reads(tmp_path):
    from kb_builder.gold import read_gold, read_questions

    path = tmp_path / "gold.csv"
    path.write_bytes(b"\xef\xbb\xbf" + GOLD_HEAD + GOOD)
    assert [q.question_id for q in read_gold(path)] == ["q1", "q2"]
    txt = tmp_path / "q.txt"
    txt.write_bytes(b"\xef\xbb\xbfhow many sick days\n")
    assert read_questions(txt)[0].question == "how many sick days"


# -- token_stats percentiles ----------------------------------------------------------------------

@pytest.mark.parametrize("counts", [[1, 100], [10, 20, 30], [5, 5, 6, 1000], [7], [3, 3], [1, 2, 3, 4, 5, 400]])
def test_token_stats_percentiles_stay_within_min_and_max(counts):
    from kb_builder.kb_records import Article
    from kb_builder.store import token_stats

    stats = token_stats([Article(id=str(i), title="t", text="x", tokens=n) for i, n in enumerate(counts)])
    assert stats["min"] <= stats["p5"] <= stats["median"] <= stats["p95"] <= stats["max"]
    assert (stats["min"], stats["max"]) == (min(counts), max(counts))


# -- CSV injection --------------------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://x","click")', "+1+2", "-2+3", "@SUM(A1:A2)", "plain, text"]


def _raw_cells(path: Path, column: str) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [row[column] for row in csv.DictReader(fh)]


def test_review_csv_escapes_formulas_and_reads_them_back_exactly(tmp_path):
    from harness.spotcheck.review import read_labels, write_review_csv

    path = tmp_path / "spotcheck_review.csv"
    rows = [{"model": "m", "question_id": "q1", "repeat": 0, "segment_index": i, "citation": "1", "segment_text": t}
            for i, t in enumerate(FORMULAS)]
    write_review_csv(path, rows)
    raw = _raw_cells(path, "segment_text")
    assert all(cell.startswith("'") for cell in raw[:4]) and raw[:4] == ["'" + t for t in FORMULAS[:4]]
    # a reviewer labels every row, with a note that also looks like a formula
    labelled = path.read_text(encoding="utf-8").splitlines()
    labelled = [labelled[0]] + [line[: -len(",,,")] + ",true,'-checked,alice" for line in labelled[1:]]
    path.write_text("\n".join(labelled) + "\n", encoding="utf-8")
    labels = read_labels(path)
    assert [lab.segment_text for lab in labels] == FORMULAS
    assert {lab.note for lab in labels} == {"-checked"}
    # re-running the spot-check with the same segments keeps every label: the merge compares unescaped text
    assert write_review_csv(path, rows) == len(FORMULAS)
    assert [lab.segment_text for lab in read_labels(path)] == FORMULAS
    assert set(_raw_cells(path, "note")) == {"'-checked"}


def test_label_files_escape_formulas_and_read_them_back_exactly(tmp_path):
    from annotations.agreement import compare_files, write_merge
    from annotations.labels import LabelRecord, read_labels, read_rows, render_csv
    from kb_builder.gold import read_gold

    recs = [LabelRecord(f"q{i}", text, ["1"], status="labelled", notes=text) for i, text in enumerate(FORMULAS)]
    files = []
    for name in ("alice", "bob"):
        path = write(tmp_path / f"{name}.csv", render_csv(recs, []))
        assert _raw_cells(path, "question")[:4] == ["'" + t for t in FORMULAS[:4]]
        files.append(path)
    assert [r.question for r in read_labels(files[0])[0]] == FORMULAS
    assert [r["notes"] for _, r in read_rows(files[0])[1]] == FORMULAS
    assert [q.question for q in read_gold(files[0])] == FORMULAS  # an annotation file is a gold file
    merged = tmp_path / "merged.csv"
    write_merge(compare_files(files), merged)
    assert _raw_cells(merged, "question")[:4] == ["'" + t for t in FORMULAS[:4]]
    assert _raw_cells(merged, "notes_alice")[:4] == ["'" + t for t in FORMULAS[:4]]
    assert [r.question for r in read_labels(merged)[0]] == FORMULAS


def test_review_page_finds_an_escaped_segment_in_the_answer():
    from annotations.review_sources import locate

    answer = 'See =HYPERLINK("http://x","click") now. -2+3 is one.'
    assert locate(answer, ['\'=HYPERLINK("http://x","click")', "'-2+3 is one."]) == [(4, 34), (40, 52)]


@pytest.mark.parametrize("value", ["=SUM(A1)", "'=1", "''+1", "-3 days", "@here", "\tx", "'quoted'", "'", "", "plain"])
def test_spreadsheet_escape_round_trips_exactly_and_never_starts_a_formula(value):
    from harness.core.files import spreadsheet_safe, spreadsheet_unsafe

    stored = spreadsheet_safe(value)
    assert spreadsheet_unsafe(stored) == value
    assert not stored.startswith(("=", "+", "-", "@", "\t", "\r"))


@pytest.mark.parametrize("name, body", [
    ("articles.csv", "id,title,text\n1,Leave,Annual leave is 25 days.\n2,Caf\xe9,Lunch is served at noon.\n"),
    ("articles.json", '[{"id": 1, "title": "Leave", "text": "Annual leave is 25 days."},\n'
                      ' {"id": 2, "title": "Caf\xe9", "text": "Lunch is served at noon."}]\n'),
])
def test_imported_articles_in_a_legacy_encoding_name_the_line(tmp_path, name, body):
    src = tmp_path / name
    src.write_bytes(body.encode("cp1252"))
    code, out = run_grace("kb", "build", "--articles", src, "--out", tmp_path / "kb")
    assert code == 2, out
    assert f"{src}:3" in out if name.endswith(".csv") else f"{src}:2" in out
    assert "not UTF-8" in out and "Traceback" not in out


def test_gold_read_again_after_an_edit_of_the_same_size(tmp_path):
    # read_gold keeps the last file read; an edit that keeps the size (and, within a clock tick, the mtime) must
    # still be seen
    from kb_builder.gold import read_gold

    gold = tmp_path / "gold.csv"
    gold.write_text("question_id,question,expected_citations,must_refuse\nq1,How many days?,17,false\n")
    assert read_gold(gold)[0].expected_citations == ["17"]
    gold.write_text("question_id,question,expected_citations,must_refuse\nq1,How many days?,18,false\n")
    assert read_gold(gold)[0].expected_citations == ["18"]
    first, second = read_gold(gold), read_gold(gold)
    assert first == second and first is not second


# -- model names ----------------------------------------------------------------------------------


def test_an_unknown_provider_lists_only_documented_providers(tmp_path):
    from harness.providers import parse_model_spec, public_providers

    root = ROOT  # the README and the docs pages that list the providers
    documented = "\n".join(p.read_text(encoding="utf-8") for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))])
    assert public_providers() and all(f"`{name}" in documented for name in public_providers())
    with pytest.raises(GraceError) as exc:
        parse_model_spec("opnai:gpt-4o-mini")
    listed = str(exc.value).split("known: ", 1)[1]
    assert "openai" in listed and "baseline" in listed and "scripted" not in listed
    assert parse_model_spec("scripted:any").provider == "scripted"  # the test model still works
