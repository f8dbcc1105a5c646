"""Reading JSON Lines files that users may have written or edited by hand.

Every JSONL grace reads (articles, responses, scores, judgements) goes through
:func:`iter_jsonl`, so a bad line always gets the same message: file, line
number, and what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where


def iter_jsonl(path: Path, *, torn_tail_ok: bool = False, hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)``; blank lines are skipped.

    ``torn_tail_ok`` forgives a last line without its newline that does not
    parse: an append-only file whose writer was killed mid-line; that line was
    never a finished record.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise GraceError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise GraceError(f"{path}: is a folder, expected a .jsonl file") from None
    with fh:
        for n, raw in enumerate(fh, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            if torn_tail_ok and not raw.endswith(b"\n"):  # only the last line can lack its newline
                try:
                    yield n, _parse(path, n, raw, hint)
                except GraceError:
                    pass
                return
            yield n, _parse(path, n, raw, hint)


def _parse(path: Path, n: int, raw: bytes, hint: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GraceError(f"{where(path, n)}: not UTF-8 text (byte {exc.start + 1} of the line); "
                         f"save the file as UTF-8{hint}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraceError(f"{where(path, n)}: not valid JSON ({exc.msg} at column {exc.colno}){hint}") from None
    if not isinstance(data, dict):
        raise GraceError(f"{where(path, n)}: expected a JSON object{hint}")
    return data
