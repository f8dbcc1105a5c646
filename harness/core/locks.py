"""One writer per file or folder, by an OS advisory lock that dies with its process.

Two writers on one run folder lose data silently (one compacts
``responses.jsonl`` by rename while the other keeps appending to the unlinked
file), so the second is refused at once with a message naming the folder and
the process that holds it. The lock is ``flock`` on a small file that also
records who holds it; a killed holder releases it with no clean-up needed.
A run folder's lock is re-entrant within its process: ``grace run`` scores and reports
under the lock it already holds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO

from harness.core.errors import GraceError

_HELD: dict[Path, tuple[IO[str], int]] = {}  # lock file -> (handle, depth) held by this process


def _describe_holder(lock_file: Path) -> str:
    try:
        text = lock_file.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return f" ({text})" if text else ""


def holder(lock_file: Path) -> str | None:
    """Who holds ``lock_file`` now ("pid 12, 'grace run ...', since ..."), read without locking it: a reader that
    took the lock, even for a moment, could make the writer it is looking at fail to start. A holder that was
    killed left its line behind; its process is gone, so it holds nothing."""
    import re

    try:
        text = Path(lock_file).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    m = re.match(r"pid (\d+)", text)
    if not m:
        return None
    try:
        os.kill(int(m.group(1)), 0)
    except ProcessLookupError:
        return None
    except (PermissionError, OverflowError):
        pass  # another user's process: alive
    return text


class FileLock:
    """``with FileLock(lock_file, busy)``: hold it, or raise ``GraceError`` (``busy``, who, the fix)."""

    def __init__(self, lock_file: Path, busy: str, fix: str = "wait for it to finish, or use another folder",
                 *, reentrant: bool = False):
        self.lock_file, self.busy, self.fix = Path(lock_file).absolute(), busy, fix
        self.reentrant = reentrant

    def acquire(self) -> None:
        held = _HELD.get(self.lock_file)
        if held is not None:
            if not self.reentrant:
                raise GraceError(f"{self.busy} (this process); {self.fix}")
            _HELD[self.lock_file] = (held[0], held[1] + 1)
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows has no flock; single use assumed
            return
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        fh = self.lock_file.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise GraceError(f"{self.busy}{_describe_holder(self.lock_file)}; {self.fix}") from None
        fh.seek(0)
        fh.truncate()
        command = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv))[:200]
        fh.write(f"pid {os.getpid()}, '{command}', since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fh.flush()
        _HELD[self.lock_file] = (fh, 1)

    def release(self) -> None:
        held = _HELD.get(self.lock_file)
        if held is None:
            return
        fh, depth = held
        if depth > 1:
            _HELD[self.lock_file] = (fh, depth - 1)
            return
        del _HELD[self.lock_file]
        try:
            fh.seek(0)
            fh.truncate()
        except OSError:
            pass
        fh.close()  # closing the descriptor releases the flock

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
