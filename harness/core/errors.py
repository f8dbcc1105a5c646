"""User-facing errors, and the one exit-code rule of every ``grace`` command.

- 0: the work was done. Partial failures (some calls failed) still exit 0, with
  the count printed last.
- 1: a model, labeler, generator, reranker or judge produced no usable answer
  at all (:class:`WorkFailed`), or a named threshold failed (``grace gate``,
  ``kb lint --strict``, ``annotations validate``).
- 2: bad input (:class:`GraceError`): a bad CSV row, a missing file, a missing
  API key, an output that would overwrite an input.

The CLI prints the message and exits with the code, without a traceback;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class GraceError(Exception):
    """An input problem the user can fix; the message says what and where."""

    exit_code = 2


class WorkFailed(GraceError):
    """Every call of one model, labeler, generator, reranker or judge failed or was unusable: nothing to show.

    A CI job must not pass on a run with no answers, so this exits 1 where a
    partial failure exits 0; what was written (error rows, a file of failures)
    stays, and the same command asks the failed calls again.
    """

    exit_code = 1


def where(path: object, line: int | None = None) -> str:
    """Format ``path:line`` for error messages, so every message points at the same place style."""
    return f"{path}:{line}" if line is not None else str(path)
