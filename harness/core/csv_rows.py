"""The one way grace reads a CSV: header and rows, each row with the physical line it starts on.

``csv.DictReader`` reads a quote that is never closed as one cell holding the rest
of the file, and one closed rows later (a stray ``12"``) as one cell holding the
rows in between: 20 questions came back as 9, one of them eleven lines long, and
nothing said so. Here every CSV is read strictly, and stops with a ``GraceError``
that names the line the fault starts on and what to do:

* a quoted cell that runs to the end of the file, or that is followed by text
  after its closing quote (``csv`` says only "unexpected end of data" or
  "',' expected", on the line it gave up);
* a quoted cell spanning lines of which two or more read as rows of this file
  (the header's number of cells, the first cell shaped like the IDs around it):
  a runaway quote that happened to close cleanly; a real multi-line cell (a
  question with a line break, a note with a list) does not look like that;
* a row with more or fewer cells than the header.

Rows whose cells are all blank are left out; cells are as written (callers
undo grace's spreadsheet escaping, since only they know which files it wrote).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from harness.core.errors import GraceError, where
from harness.core.files import read_text_checked

Row = tuple[int, dict[str, str]]  # (line the row starts on, cells by column)

RUNAWAY_ROWS = 2  # lines inside one cell that read as rows before it is called a runaway quote, not a long cell
FIX = 'close the quote, or double a quote inside a quoted cell as ""'
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_UNQUOTED_END = re.compile(r"[,\r\n]")
_WORDS, _DIGITS = re.compile(r"[^\W\d_]+"), re.compile(r"\d+")

# csv's default cell limit (128 KiB) turns a long article in an articles CSV into "field larger than field limit";
# grace reads whole files into memory anyway, so a cell may be as long as the file
csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))


def read_csv_rows(path: Path | str, text: str | None = None) -> tuple[list[str], list[Row]]:
    """The header (names stripped) and the non-blank rows of a CSV, each with the line it starts on.

    ``text``: the file's content when the caller has read it already (messages still name ``path``).
    An empty file gives ``([], [])``; the caller says which columns it needed.
    """
    path = Path(path)
    text = read_text_checked(path) if text is None else text
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] = []
    rows: list[Row] = []
    start = 1  # the physical line the next record starts on: csv yields [] for a blank line, so none is skipped
    prev_first = ""
    try:
        for cells in reader:
            end = reader.line_num
            if not header:
                header = [h.strip() for h in cells]
                start = end + 1
                continue
            width = len(header)
            if end != start:
                _check_runaway(path, cells, start, width, prev_first)
            if len(cells) != width or not cells[0].strip():  # only then can it be blank: the common row pays one strip
                if not "".join(cells).strip():
                    start = end + 1
                    continue
                if len(cells) != width:
                    raise GraceError(_width_message(path, start, len(cells), width))
            rows.append((start, dict(zip(header, cells, strict=True))))
            prev_first = cells[0]
            start = end + 1
    except csv.Error as exc:
        raise GraceError(_quote_message(path, text, start, exc)) from None
    return header, rows


def _width_message(path: Path, line: int, got: int, width: int) -> str:
    if got > width:
        return (f"{where(path, line)}: more fields than header columns ({got}; the header has {width}): "
                "an unquoted comma? put a cell holding a comma in double quotes")
    return (f"{where(path, line)}: fewer fields than header columns ({got}; the header has {width}): "
            "add the missing cells (an empty cell is just a comma), or join a row split over two lines")


def _shape(cell: str) -> str:
    """``q17`` -> ``a9``, ``HR-2024-3`` -> ``a-9-9``: what IDs in one column have in common."""
    return _DIGITS.sub("9", _WORDS.sub("a", cell))


def _id_like(cell: str) -> bool:
    return 0 < len(cell) <= 64 and not any(ch.isspace() for ch in cell)


def _fields(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def _check_runaway(path: Path, cells: list[str], start: int, width: int, prev_first: str) -> None:
    """A record spanning lines: raise if one of its cells holds lines that read as rows of this file."""
    if width < 2:
        return  # every line of a one-column file reads as a row
    line = start
    for col, cell in enumerate(cells):
        breaks = _LINE_BREAK.findall(cell)
        if len(breaks) < RUNAWAY_ROWS:
            line += len(breaks)
            continue
        inner = _LINE_BREAK.split(cell)
        shapes = {_shape(c) for c in (prev_first, cells[0] if col else "") if _id_like(c)}
        if not shapes and col == 0:  # the quote opens the first row's first cell: its first line is a row
            shapes = {_shape(c) for c in _fields(inner[0])[:1] if _id_like(c)}
        row_like = []
        for n, text in enumerate(inner[1:], 1):
            fields = _fields(text)
            if len(fields) == width and _id_like(fields[0]) and _shape(fields[0]) in shapes:
                row_like.append(line + n)
        if len(row_like) >= RUNAWAY_ROWS:
            shown = ", ".join(map(str, row_like[:5])) + (", ..." if len(row_like) > 5 else "")
            raise GraceError(
                f"{where(path, line)}: an unclosed quote? the quoted cell that starts on this line closes on line "
                f"{line + len(breaks)}, and lines {shown} inside it read as rows of their own "
                f"({len(row_like)} rows would be read as part of this one cell); {FIX}"
            )
        line += len(breaks)


def _quote_message(path: Path, text: str, start: int, exc: csv.Error) -> str:
    """csv's complaint, told from where the quoted cell it was reading opened."""
    lines = io.StringIO(text, newline="").readlines()
    offset = sum(len(s) for s in lines[: start - 1])
    fault = _quote_fault(text, offset, start)
    if fault is None:
        return f"{where(path, start)}: unreadable CSV ({exc}); {FIX}"
    kind, opened, closed = fault
    if kind == "eof":
        return (f"{where(path, opened)}: unreadable CSV (an unclosed quote): the quoted cell that starts on this "
                f"line runs to the end of the file; {FIX}")
    if opened == closed:
        return (f"{where(path, opened)}: unreadable CSV (text after a closing quote): a quote inside this quoted "
                'cell ends it early; double a quote inside a quoted cell as "" ("say ""hi"" now")')
    return (f"{where(path, opened)}: unreadable CSV (an unclosed quote): the quoted cell that starts on this line "
            f"closes on line {closed} and swallows the rows between; {FIX}")


def _breaks(text: str, a: int, b: int) -> int:
    return text.count("\n", a, b) + text.count("\r", a, b) - text.count("\r\n", a, b)


def _quote_fault(text: str, pos: int, line: int) -> tuple[str, int, int | None] | None:
    """Scan the record at ``pos`` as csv does: ``("eof", opened, None)`` for a quote that never closes,
    ``("stray", opened, closed)`` for text after a closing quote, ``None`` when no quote is at fault."""
    n = len(text)
    while pos < n:
        if text[pos] != '"':  # an unquoted cell: a quote inside it is just a character
            m = _UNQUOTED_END.search(text, pos)
            if m is None or m.group() != ",":
                return None
            pos = m.end()
            continue
        opened = line
        pos += 1
        while True:
            q = text.find('"', pos)
            if q < 0:
                return "eof", opened, None
            line += _breaks(text, pos, q)
            if text.startswith('""', q):
                pos = q + 2
                continue
            pos = q + 1
            break
        if pos >= n or text[pos] in "\r\n":
            return None
        if text[pos] != ",":
            return "stray", opened, line
        pos += 1
    return None
