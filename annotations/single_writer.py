"""One writer per labels file, and no debris from a writer that was killed.

Two servers saving the same CSV would each rewrite it whole and silently undo
the other's labels, so the second one is refused. A server killed mid-save
leaves only its temp file (the rename never happened, the real file is intact),
which the next start removes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

from harness.core.errors import GraceError


class SingleWriter:
    def __init__(self, out: Path, who: str):
        self.out, self.who = out, who
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock, single use assumed
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fh = (self.out.parent / f".{self.out.name}.lock").open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise GraceError(f"{self.out}: another {self.who} is already writing this file; "
                             "close it first or choose another --out") from None
        self._fh = fh

    def remove_stale_temp_files(self, older_than_s: float = 60) -> None:
        cutoff = time.time() - older_than_s
        for tmp in self.out.parent.glob(f".{self.out.name}.*"):
            if tmp.suffix != ".lock" and tmp.stat().st_mtime < cutoff:
                tmp.unlink(missing_ok=True)

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
