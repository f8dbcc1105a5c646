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

from kb_builder.errors import GraceError, where


def iter_jsonl(path: Path, *, torn_tail_ok: bool = False, hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)``; blank lines are skipped.

    ``torn_tail_ok`` forgives a last line without its newline that does not
    parse: an append-only file whose writer was killed mid-line; that line was
    never a finished record.
    """
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            if torn_tail_ok and not raw.endswith("\n"):  # only the last line can lack its newline
                try:
                    yield n, _parse(path, n, raw, hint)
                except GraceError:
                    pass
                return
            yield n, _parse(path, n, raw, hint)


def _parse(path: Path, n: int, raw: str, hint: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise GraceError(f"{where(path, n)}: not valid JSON ({exc.msg} at column {exc.colno}){hint}") from None
    if not isinstance(data, dict):
        raise GraceError(f"{where(path, n)}: expected a JSON object{hint}")
    return data
