"""One writer per labels file, and no debris from a writer that was killed.

Two servers saving the same CSV would each rewrite it whole and silently undo
the other's labels, so the second one is refused. A server killed mid-save
leaves only its temp file (the rename never happened, the real file is intact),
which the next start removes.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.core.locks import FileLock


class SingleWriter:
    def __init__(self, out: Path, who: str):
        self.out, self.who = out, who
        self._lock = FileLock(out.parent / f".{out.name}.lock", f"{out}: another {who} is already writing this file",
                              "close it first or choose another --out")

    def acquire(self) -> None:
        self._lock.acquire()

    def remove_stale_temp_files(self, older_than_s: float = 60) -> None:
        cutoff = time.time() - older_than_s
        for tmp in self.out.parent.glob(f".{self.out.name}.*"):
            if tmp.suffix != ".lock" and tmp.stat().st_mtime < cutoff:
                tmp.unlink(missing_ok=True)

    def release(self) -> None:
        self._lock.release()
