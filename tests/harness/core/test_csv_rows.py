"""Every CSV grace reads stops at a runaway quote or a row of the wrong width, naming the line where it starts.

Before, an unterminated quote silently merged rows: a 20-question file read as 9
questions, one of them eleven lines long. Each reader below is driven with the
same faults, so a reader that stops using the shared one is caught here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.spotcheck.spotcheck_records import REVIEW_COLUMNS
from tests.conftest import run_grace, write


def _questions(path):
    from kb_builder.gold import read_questions
    return read_questions(path)


def _gold(path):
    from kb_builder.gold import read_gold
    return read_gold(path)


def _articles(path):
    from kb_builder.imports import read_article_file
    return read_article_file(path)


def _labels(path):
    from annotations.labels import read_rows
    return read_rows(path)[1]


def _review(path):
    from annotations.review_session import read_review_rows
    return read_review_rows(path)[1]


def _human_labels(path):
    from harness.spotcheck.review import read_labels
    return read_labels(path)


def _kept_labels(path):
    """``grace spotcheck`` reads the review file it is about to rewrite, to keep the labels already in it."""
    from harness.spotcheck.review import write_review_csv
    return write_review_csv(path, [])


def _suggestions(path):
    from annotations.suggestions import read_suggestions
    return read_suggestions(path)


def _suspects(path):
    from harness.scoring.label_audit import read_suspects
    return read_suspects(path)


GOLD = ["question_id", "question", "expected_citations", "must_refuse"]
# reader: (header, one good row, the column a person types prose into)
READERS: dict[str, tuple[Callable, list[str], Callable[[int], list[str]], int]] = {
    "questions": (_questions, ["question_id", "question"], lambda i: [f"q{i}", f"What is policy {i} about?"], 1),
    "gold": (_gold, GOLD, lambda i: [f"q{i}", f"What is policy {i} about?", str(i), "false"], 1),
    "articles": (_articles, ["id", "title", "text"], lambda i: [str(i), f"Policy {i}", f"Policy {i} says so."], 2),
    "labels": (_labels, GOLD, lambda i: [f"q{i}", f"What is policy {i} about?", str(i), "false"], 1),
    "review": (_review, list(REVIEW_COLUMNS),
               lambda i: ["m", f"q{i}", "0", "0", "1", f"Segment {i} says so.", "true", "", ""], 5),
    "human_labels": (_human_labels, list(REVIEW_COLUMNS),
                     lambda i: ["m", f"q{i}", "0", "0", "1", f"Segment {i} says so.", "true", "", ""], 5),
    "kept_labels": (_kept_labels, list(REVIEW_COLUMNS),
                    lambda i: ["m", f"q{i}", "0", "0", "1", f"Segment {i} says so.", "true", "", ""], 5),
    "suggestions": (_suggestions, ["question_id", "question", "suggested"],
                    lambda i: [f"q{i}", f"What is policy {i} about?", str(i)], 1),
    "suspects": (_suspects, ["question_id", "question", "gold"],
                 lambda i: [f"q{i}", f"What is policy {i} about?", str(i)], 1),
}


def _file(tmp_path: Path, name: str, rows: list[str]) -> Path:
    header = READERS[name][1]
    return write(tmp_path / f"{name}.csv", "\n".join([",".join(header), *rows]) + "\n")


def _rows(name: str, n: int = 20) -> list[list[str]]:
    return [READERS[name][2](i) for i in range(1, n + 1)]


def _line(cells: list[str]) -> str:
    return ",".join(cells)


@pytest.mark.parametrize("name", READERS)
def test_a_quote_never_closed_names_the_line_it_opens_on(tmp_path, name):
    """The measured case: the 5th question opens a quote, 15 normal rows follow, the file ends."""
    read, _, _, col = READERS[name]
    rows = _rows(name)
    rows[4][col] = '"' + rows[4][col]
    path = _file(tmp_path, name, [_line(r) for r in rows])
    with pytest.raises(GraceError) as err:
        read(path)
    msg = str(err.value)
    assert f"{path}:6: " in msg and "unclosed quote" in msg and "close the quote" in msg and '""' in msg, msg


@pytest.mark.parametrize("name", READERS)
def test_a_quote_closed_rows_later_is_a_runaway_quote_not_one_long_cell(tmp_path, name):
    """The probe's file: a stray inch mark on line 17 closes the quote opened on line 6; the merged row has the
    right number of cells, so only the rows inside the cell give it away (before: 9 questions, one 11 lines)."""
    read, _, _, col = READERS[name]
    rows = _rows(name)
    rows[4][col] = '"' + rows[4][col]
    rows[15][col] = 'What size is the 12"'
    path = _file(tmp_path, name, [_line(r) for r in rows])
    with pytest.raises(GraceError) as err:
        read(path)
    msg = str(err.value)
    assert f"{path}:6: " in msg and "unclosed quote" in msg and "line 17" in msg and "close the quote" in msg, msg


@pytest.mark.parametrize("name", READERS)
@pytest.mark.parametrize("extra, what", [(1, "more fields than header"), (-1, "fewer fields than header")])
def test_a_row_of_the_wrong_width_names_its_line(tmp_path, name, extra, what):
    read, header, _, col = READERS[name]
    rows = _rows(name, 8)
    rows[2][col] = '"What is policy 3,\nin short?"'  # a legit two-line cell before it: lines still count right
    rows[6] = rows[6] + ["stray"] if extra > 0 else rows[6][:-1]
    path = _file(tmp_path, name, [_line(r) for r in rows])
    with pytest.raises(GraceError) as err:
        read(path)
    msg = str(err.value)
    assert f"{path}:9: {what} columns" in msg and f"the header has {len(header)}" in msg, msg


@pytest.mark.parametrize("name", READERS)
def test_quoted_cells_with_line_breaks_commas_and_quotes_still_read(tmp_path, name):
    read, _, _, col = READERS[name]
    rows = _rows(name, 6)
    rows[1][col] = '"What is the leave policy?\nPlease answer, briefly.\n\nThanks"'
    rows[3][col] = '"Is the ""hot desk"", rule,\nq9, still in force?"'  # one inner line even looks like a row
    path = _file(tmp_path, name, [_line(r) for r in rows] + ["", ",,"[: len(READERS[name][1]) - 1]])
    got = read(path)
    if name != "kept_labels":
        assert len(got) == 6


def test_the_shared_reader_gives_header_rows_and_starting_lines(tmp_path):
    from harness.core.csv_rows import read_csv_rows

    path = write(tmp_path / "q.csv", ' question_id , question\r\nq1,"two\r\nlines"\r\n\r\nq2,plain\r\n , \r\nq3,x')
    header, rows = read_csv_rows(path)
    assert header == ["question_id", "question"]
    assert rows == [(2, {"question_id": "q1", "question": "two\r\nlines"}), (5, {"question_id": "q2", "question": "plain"}),
                    (7, {"question_id": "q3", "question": "x"})]
    assert read_csv_rows(write(tmp_path / "empty.csv", "")) == ([], [])


@pytest.mark.parametrize("body, line, words", [
    ('a,b\n1,"x\n2,y\n', 2, ["unclosed quote", "runs to the end of the file"]),
    ('a,b\n1,x\n2,"say "hi" now"\n', 3, ["text after a closing quote", 'as ""']),
    ('a,b\n1,"x\n2,y\n3,"z"\n', 2, ["unclosed quote", "closes on line 4"]),
    ('a,b,c\n1,"two\nlines",x\n2,y\n', 4, ["fewer fields than header columns (2; the header has 3)"]),
])
def test_the_shared_reader_says_what_to_fix(tmp_path, body, line, words):
    from harness.core.csv_rows import read_csv_rows

    path = write(tmp_path / "f.csv", body)
    with pytest.raises(GraceError) as err:
        read_csv_rows(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: ") and all(w in msg for w in words), msg


def test_kb_search_refuses_a_runaway_quote_with_exit_2(tmp_path):
    """Through the CLI the error is exit 2 and a message naming the line, no traceback, no search of 5 questions."""
    arts = write(tmp_path / "a.jsonl", '{"id": "1", "title": "Leave", "text": "Annual leave is 25 days."}\n')
    code, out = run_grace("kb", "build", "--articles", arts, "--out", tmp_path / "kb")
    assert code == 0, out
    rows = [f"q{i},What is policy {i} about?" for i in range(1, 21)]
    rows[4] = 'q5,"What is the leave policy?'
    path = write(tmp_path / "questions.csv", "question_id,question\n" + "\n".join(rows) + "\n")
    code, out = run_grace("kb", "search", tmp_path / "kb", "--queries", path)
    assert code == 2 and f"{path}:6: " in out and "unclosed quote" in out and "Traceback" not in out, out


def test_a_large_gold_file_with_multi_line_cells_reads_whole(tmp_path):
    """Every 100th row holds a two-line note: the runaway-quote check must not flag real multi-line cells."""
    from harness.core.csv_rows import read_csv_rows
    from kb_builder.gold import load_gold

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"])
    for i in range(20_000):
        w.writerow([f"q{i}", f"How many days of leave, in total, does policy {i} give?", f"About {i} days",
                    f"{i % 50 + 1};{i % 7 + 1}", "false", "two\nlines" if i % 100 == 0 else ""])
    path = write(tmp_path / "gold.csv", buf.getvalue())
    _, rows = read_csv_rows(path)
    gold = load_gold(path)
    assert len(rows) == len(gold.questions) == 20_000
    assert gold.questions[100].notes == "two\nlines" and gold.questions[100].line == 103  # q0 holds a line break too
