"""User-facing errors.

A ``GraceError`` is a mistake in the user's input (a bad CSV row, a missing file,
a missing API key). The CLI prints its message and exits non-zero without a
traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class GraceError(Exception):
    """An input problem the user can fix; the message says what and where."""

    exit_code = 2


def where(path: object, line: int | None = None) -> str:
    """Format ``path:line`` for error messages, so every message points at the same place style."""
    return f"{path}:{line}" if line is not None else str(path)
