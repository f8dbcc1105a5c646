"""Writing files so that a crash, a kill or a full disk never leaves a broken one.

Whole files are written to a temp file and renamed over the old one; append-only
JSONL files are flushed per line and repaired on open: a half-written last line
(the writer died mid-line) is moved to a side file, never appended onto.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from harness.core.errors import GraceError, where
from harness.core.secrets import mask

log = logging.getLogger("grace")

_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def cache_dir() -> Path:
    """Where grace keeps what it can rebuild (the response cache, the viewer's index, unpacked models):
    ``$GRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/grace`` or ``~/.cache/grace``."""
    if os.environ.get("GRACE_CACHE_DIR"):
        return Path(os.environ["GRACE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "grace"


def disk_error(path: Path | str, exc: OSError) -> GraceError:
    """An OSError while writing, as a message that names the file and the fix."""
    if exc.errno in _DISK_ERRNOS:
        return GraceError(f"{path}: disk full ({exc.strerror}); free some space and run the same command "
                          "again: finished answers are kept in the cache and the folder is left consistent")
    return GraceError(f"{path}: cannot write ({exc.strerror or exc})")


def atomic_write_text(path: Path, text: str) -> None:
    """Write-then-rename so a crash never leaves a half-written file behind.

    The file gets the mode ``open(path, "w")`` would give it: an existing file's
    own, else 0666 less the umask (a report a teammate can open, not 0600).
    """
    path = Path(path)
    text = mask(text)  # a key a server or bot echoed is never written (harness.core.secrets)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as fh:
        fh.write(text)


@contextmanager
def atomic_writer(path: Path) -> Iterator[TextIO]:
    """A text file to write in pieces that replaces ``path`` only once whole (flushed, fsynced, renamed): for a
    writer too large to hold as one string (a million-row rewrite). On any failure the temp file is removed and
    ``path`` is left as it was; a full disk is a :func:`disk_error`. The caller masks what it writes."""
    try:
        tmp = temp_path_for(path)
    except OSError as exc:
        raise disk_error(path, exc) from None
    try:
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise disk_error(path, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def temp_path_for(path: Path) -> Path:
    """A new empty temp file beside ``path``, to be renamed over it; :func:`remove_temp_files` knows it as debris.

    Created as ``open()`` creates a file (0666 less the umask; ``tempfile.mkstemp``
    makes 0600, which the rename would hand on), or with the mode of the ``path`` it replaces.
    """
    path = Path(path)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        except OSError:
            pass  # no file to replace: the umask's mode stands
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(path.parent))


def remove_temp_files(folder: Path, names: list[str]) -> list[Path]:
    """Delete the temp files a killed writer of ``names`` left in ``folder``; only while holding their lock."""
    removed = []
    for name in names:
        for tmp in Path(folder).glob(f".{name}.*"):
            if tmp.suffix == ".lock":
                continue
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                pass
    return removed


def repair_torn_tail(path: Path, side_file: Path) -> str | None:
    """Make ``path`` end with a whole line before anything is appended to it.

    A last line without its newline that is a complete JSON value just gets its
    newline; one that does not parse (a writer killed mid-line, a full disk) is
    moved to ``side_file`` and cut off. Returns a notice when something was moved.
    """
    if not path.is_file():
        return None
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        start = max(0, size - (1 << 16))
        while True:  # find the start of the last line, reading backwards in blocks
            fh.seek(start)
            block = fh.read(size - start)
            cut = block.rfind(b"\n")
            if cut >= 0 or start == 0:
                cut = start + cut + 1 if cut >= 0 else 0
                break
            start = max(0, start - (1 << 16))
        fh.seek(cut)
        tail = fh.read()
        try:
            json.loads(tail.decode("utf-8"))
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
            return None
        except (UnicodeDecodeError, json.JSONDecodeError):
            pass
        with side_file.open("ab") as side:
            side.write(tail + b"\n")
        fh.truncate(cut)
    return (f"{path}: its last line was cut off mid-write (a crash or full disk); moved it to {side_file.name} "
            "and will ask that call again")


class JsonlAppender:
    """Append-only, flushed per line: what is written survives the process dying on the next line.

    Opening repairs a torn last line first, so an interrupted file is never
    appended onto (which would join two records into one unreadable line).
    """

    def __init__(self, path: Path, side_file: Path | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        notice = repair_torn_tail(self.path, side_file or self.path.with_name(self.path.stem + ".torn.jsonl"))
        if notice:
            log.warning(notice)
        try:
            self.fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise disk_error(self.path, exc) from None
        self._last_sync = time.monotonic()

    def write(self, row: dict[str, Any]) -> None:
        self._put(mask(json.dumps(row, ensure_ascii=False)) + "\n")

    def _put(self, text: str) -> None:
        """Write whole lines and flush them to the OS; fsync at most once a second (a crash of grace loses
        nothing flushed; a crash of the machine, at most the last second)."""
        try:
            self.fh.write(text)
            self.fh.flush()
            if time.monotonic() - self._last_sync > 1.0:
                os.fsync(self.fh.fileno())
                self._last_sync = time.monotonic()
        except OSError as exc:
            raise disk_error(self.path, exc) from None

    def close(self) -> None:
        try:
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except OSError:
            pass  # the write that failed already raised; a torn tail is repaired on the next open
        finally:
            try:
                self.fh.close()
            except OSError:
                pass


class TickAppender(JsonlAppender):
    """:class:`JsonlAppender` for rows finished inside an asyncio event loop: the rows finished in one turn of the
    loop go to the file in one write, made before the loop next waits for anything (a ``call_soon`` callback).

    A row is held only while the loop is running the code that just finished it (the engine's workers let the
    loop write before they send their next call, and :meth:`check` raises a failed write to them first), so a
    kill -9 loses no more than a kill one line earlier would: what was in flight. A write per row would make a
    million system calls of a leaderboard-sized run. Outside a running loop, or past ``max_rows`` rows, a row is
    written at once; ``close`` writes what is held.
    """

    def __init__(self, path: Path, side_file: Path | None = None, max_rows: int = 1000):
        super().__init__(path, side_file)
        self._held: list[str] = []
        self._max_rows = max_rows
        self._due = False
        self._failed: GraceError | None = None  # a write made from the loop failed: raised to the next writer

    def write(self, row: dict[str, Any]) -> None:
        self.check()
        self._held.append(json.dumps(row, ensure_ascii=False))
        if len(self._held) >= self._max_rows:
            self.flush()
        elif not self._due:
            aio = sys.modules.get("asyncio")  # not imported: no loop can be running
            try:
                loop = aio.get_running_loop() if aio is not None else None
            except RuntimeError:
                loop = None
            if loop is None:
                self.flush()
            else:
                loop.call_soon(self._flush_from_loop)
                self._due = True

    def check(self) -> None:
        """Raise the error of a write made from the loop, if one failed (a full disk): before another call is made."""
        if self._failed is not None:
            raise self._failed

    def _flush_from_loop(self) -> None:
        """As a loop callback, where an exception would only be logged: kept, and raised to the next writer."""
        try:
            self.flush()
        except GraceError as exc:
            self._failed = exc

    def flush(self) -> None:
        self._due = False
        if not self._held or self.fh.closed:
            return
        text, self._held = mask("\n".join(self._held)) + "\n", []
        self._put(text)

    def close(self) -> None:
        try:
            self.flush()
            self.check()
        finally:
            super().close()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _formula_like(value: str) -> bool:
    """Starts like a formula once any leading quotes are set aside (``=1``, ``'=1``, ``''+1``)."""
    return value.lstrip("'").startswith(_FORMULA_START)


def spreadsheet_safe(value: Any) -> Any:
    """OWASP's CSV-injection advice: a cell that a spreadsheet would run as a formula is prefixed with ``'``.

    A value that already starts with quotes before a formula character gets one
    more, so :func:`spreadsheet_unsafe` gives back exactly what was written.
    """
    if isinstance(value, str) and _formula_like(value):
        return "'" + value
    return value


def spreadsheet_unsafe(value: str | None) -> str | None:
    """The exact reverse of :func:`spreadsheet_safe`, for grace reading back a CSV it wrote."""
    if value and value.startswith("'") and _formula_like(value[1:]):
        return value[1:]
    return value


def read_text_checked(path: Path) -> str:
    """The whole file as text, refusing bytes that would otherwise pass as data.

    Checked up front, on the raw bytes, so the message can name the physical line:
    a file saved in a legacy encoding (cp1252, UTF-16) fails half-way through
    ``csv`` with a bare ``UnicodeDecodeError``, and a NUL byte (often a UTF-16 file,
    or binary pasted into a cell) would otherwise become part of a question sent to a model.
    """
    if not path.exists():
        raise GraceError(f"{path}: file not found")
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, expected a text file")
    return decode_checked(path, path.read_bytes())


def decode_checked(path: Path, raw: bytes) -> str:
    """:func:`read_text_checked` on bytes already read (a caller that also hashes them reads the file once)."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # the BOM Excel's "CSV UTF-8" writes

    def line_of(offset: int) -> int:
        return raw.count(b"\n", 0, offset) + 1

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GraceError(f"{where(path, line_of(exc.start))}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
                         "save the file as UTF-8 (in a spreadsheet: CSV UTF-8)") from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise GraceError(f"{where(path, line_of(nul))}: contains a NUL byte (\\x00); remove it, "
                         "or if the file is UTF-16, save it as UTF-8")
    return text


def csv_text(columns: list[str], rows: Iterable[dict[str, Any]]) -> str:
    """A whole CSV file as text, every cell spreadsheet-safe: the one way grace renders a CSV a person may open."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    return buf.getvalue()
