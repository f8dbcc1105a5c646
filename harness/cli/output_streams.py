"""Standard output and error as a command writes them: a reader that goes away stops the printing, never the work.

``grace run ... | head -1`` closes grace's stdout after one line. Python then
raises ``BrokenPipeError`` at the next print, wherever it happens: Rich's
progress bar turned it into ``SystemExit(1)`` after the answers were appended
and before they were scored, so report.json went on describing the previous
answers (and gold) while ``grace gate`` passed on it. A closed pipe means nobody
reads what grace prints; it says nothing about the run, whose files must end
whole. :func:`pipe_safe_streams` swaps ``sys.stdout`` and ``sys.stderr`` for
:class:`PipeSafeStream` while a command runs: once the reader is gone, further
output goes to the null device and the command finishes its work and exits
with its own code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ESHUTDOWN)


class PipeSafeStream:
    """A text stream whose writes and flushes never raise once its reader has closed the pipe."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.reader_gone = False

    def _gone(self) -> None:
        """Point the stream's descriptor at the null device, so the interpreter's last flush (and any writer that
        holds the descriptor) succeeds too, and print nothing more."""
        self.reader_gone = True
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError):  # no descriptor (an in-memory stream): dropping output is enough
            pass

    def _guard(self, action: Any, *args: Any) -> Any:
        if self.reader_gone:
            return None
        try:
            return action(*args)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or exc.errno in _GONE:
                self._gone()
                return None
            raise

    def write(self, text: str) -> int:
        self._guard(self._stream.write, text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guard(self._stream.flush)

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno, buffer...: the stream's own
        return getattr(self._stream, name)


@contextlib.contextmanager
def pipe_safe_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`PipeSafeStream` for the duration (restored after)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PipeSafeStream(sys.stdout), PipeSafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
