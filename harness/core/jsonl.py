"""Reading JSON Lines files that users may have written or edited by hand.

Every JSONL grace reads (articles, responses, scores, judgements) goes through
:func:`iter_jsonl`, so a bad line always gets the same message: file, line
number, and what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from harness.core.errors import GraceError, where

try:  # 3x faster than json on a JSONL line (a million-row file: seconds)
    from orjson import JSONDecodeError as _FastError
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - an install without it is slower, not different
    _fast_loads = None
# orjson reads an integer beyond 64 bits as a float where json keeps it exact; a line with 19 digits in a row
# goes to json, like one orjson refuses (NaN, a lone surrogate, bad UTF-8 or JSON), so every line is read exactly
# as json reads it. (Digits mapped to "0", then a substring test: 0.9 us a line where a regex took 6.)
_DIGITS_AS_ZERO = bytes(48 if 48 <= i <= 57 else i for i in range(256))
_LONG_RUN = b"0" * 19
_decode = json.JSONDecoder().decode  # on str: json.loads(bytes) would sniff the encoding of every line


def loads_line(raw: bytes, *, max_depth: int | None = None) -> Any:
    """One JSON line as ``json.loads`` reads it (same value, same errors), with orjson where that is the same.

    Raises ``UnicodeDecodeError`` or ``json.JSONDecodeError`` as json would; callers name the file and line. A line
    nested deeper than the parsers go (orjson stops at 1024 levels, json at the interpreter's recursion limit) is a
    ``JSONDecodeError`` too, never a ``RecursionError``; ``max_depth`` sets a lower limit, for a reader whose values
    are written back (pydantic serialises 255 levels at most, json.dumps about 1000).
    """
    if _fast_loads is not None and _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            value = _fast_loads(raw)
        except _FastError:
            value = _slow_loads(raw)  # json decides: it reads what orjson refuses, or raises its own error
    else:
        value = _slow_loads(raw)
    if max_depth is not None and raw.count(b"[") + raw.count(b"{") > max_depth and _deeper(value, max_depth):
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", "", 0)
    return value


def _slow_loads(raw: bytes) -> Any:
    try:
        return _decode(raw.decode("utf-8"))
    except RecursionError:  # the C scanner recurses once per level: a hostile line must not end the reader
        raise json.JSONDecodeError("nested too deeply to read", "", 0) from None


def _deeper(value: Any, limit: int) -> bool:
    """Is ``value`` nested more than ``limit`` levels deep? Walked with a stack, not recursion (only lines with more
    brackets than ``limit`` get here, so an ordinary line costs two byte counts)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _open(path: Path, expected: str) -> BinaryIO:
    """The file for reading as bytes, or the error a user can act on (missing, or a folder)."""
    path = Path(path)
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise GraceError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise GraceError(f"{path}: is a folder, expected {expected}") from None


def iter_lines(path: Path, *, expected: str = "a .jsonl file") -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, raw line)`` of a JSON Lines file, a UTF-8 byte-order mark and blank lines left out:
    the part every JSONL reader shares, whether a bad line stops it (:func:`iter_jsonl`) or is set aside."""
    with _open(path, expected) as fh:
        for n, raw in enumerate(fh, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.strip():
                yield n, raw


def iter_bounded_lines(path: Path, max_bytes: int, *, expected: str = "a .jsonl file") \
        -> Iterator[tuple[int, bytes, int]]:
    """:func:`iter_lines` for a file grace did not write: ``(line number, raw line, its length in bytes)``, reading
    at most ``max_bytes`` of any line. A longer line is yielded cut to its first ``max_bytes`` bytes with its whole
    length (``length > max_bytes`` says it is cut); the rest of it is skipped, never held, so one 2 GB line costs
    no more memory than the limit."""
    with _open(path, expected) as fh:
        n = 0
        while raw := fh.readline(max_bytes + 1):
            n += 1
            length, ended = len(raw), raw.endswith(b"\n")
            if length > max_bytes and not ended:  # over the limit: count the rest, keep none of it
                while more := fh.readline(1 << 20):
                    length += len(more)
                    if more.endswith(b"\n"):
                        ended = True
                        break
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw, length = raw[3:], length - 3
            if ended:
                length -= 1  # the newline is not part of the line's length
            if length > max_bytes:
                yield n, raw[:max_bytes], length
            elif raw.strip():
                yield n, raw, length


def iter_jsonl(path: Path, *, torn_tail_ok: bool = False, hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)``; blank lines are skipped.

    ``torn_tail_ok`` forgives a last line without its newline that does not
    parse: an append-only file whose writer was killed mid-line; that line was
    never a finished record.
    """
    path = Path(path)
    for n, raw in iter_lines(path):
        if torn_tail_ok and not raw.endswith(b"\n"):  # only the last line can lack its newline
            try:
                yield n, _parse(path, n, raw, hint)
            except GraceError:
                pass
            return
        yield n, _parse(path, n, raw, hint)


def iter_jsonl_spans(path: Path, *, torn_tail_ok: bool = False, hint: str = "") \
        -> Iterator[tuple[int, int, bytes, dict[str, Any]]]:
    """:func:`iter_jsonl` with where each line is: ``(line number, its first byte's offset, raw line, object)``, for a
    reader that keeps a few columns of each row and reads a whole line again only where it needs one (a byte-order
    mark is not part of the first line's span)."""
    path = Path(path)
    with _open(path, "a .jsonl file") as fh:
        pos = 0
        for n, raw in enumerate(fh, 1):
            start, pos = pos, pos + len(raw)
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw, start = raw[3:], start + 3
            if not raw.strip():
                continue
            if torn_tail_ok and not raw.endswith(b"\n"):  # only the last line can lack its newline
                try:
                    yield n, start, raw, _parse(path, n, raw, hint)
                except GraceError:
                    pass
                return
            yield n, start, raw, _parse(path, n, raw, hint)


def _parse(path: Path, n: int, raw: bytes, hint: str) -> dict[str, Any]:
    try:
        data = loads_line(raw)
    except UnicodeDecodeError as exc:
        raise GraceError(f"{where(path, n)}: not UTF-8 text (byte {exc.start + 1} of the line); "
                         f"save the file as UTF-8{hint}") from None
    except json.JSONDecodeError as exc:
        # the standard library's message may end in "starting at" itself ("Unterminated string starting at")
        msg = exc.msg.removesuffix(" at").removesuffix(" starting")
        raise GraceError(f"{where(path, n)}: not valid JSON ({msg} at column {exc.colno}){hint}") from None
    if not isinstance(data, dict):
        raise GraceError(f"{where(path, n)}: expected a JSON object{hint}")
    return data
