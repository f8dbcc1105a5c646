"""Response cache in SQLite, shared by every run of a user.

The key is SHA-256 over canonical JSON of what determines an answer (provider,
model, endpoint, messages, generation parameters, template hash, KB hash, repeat
index) and nothing else: timeouts or concurrency never change a key. Rows are
plain JSON, inspectable with the ``sqlite3`` shell; never pickle. A secret the
answer echoed (a bot that repeats its token) is masked before the row is stored
(:mod:`harness.core.secrets`), since the cache is shared by every run.

The cache only saves money; every answer is also written to its run folder. So
no cache problem may stop a run: a damaged file found on open is moved aside
and a fresh cache started; damage, a full disk or a locked file found later
turn lookups into misses and saves into no-ops, with one warning per process
that names the file and the fix (``grace cache check`` / ``grace cache clear``).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.files import cache_dir
from harness.core.hashing import json_hash
from harness.core.secrets import mask

log = logging.getLogger("grace")

CACHE_FILE = "responses.sqlite"
SIDE_SUFFIXES = ("-wal", "-shm")  # SQLite's write-ahead log and its index: part of the database, moved with it
DAMAGED_INFIX = ".damaged-"

_SCHEMA = ("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
           "created_at REAL NOT NULL, completion TEXT NOT NULL)")
_FIX = "run `grace cache check` to see what is wrong, or `grace cache clear` to start a fresh cache"

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def default_cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def cache_key(fields: dict[str, Any]) -> str:
    return json_hash(fields)


def side_files(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in SIDE_SUFFIXES]


def damaged_copies(path: Path) -> list[Path]:
    """Files an earlier open moved aside, so ``grace cache check``/``clear`` can show and remove them."""
    return sorted(path.parent.glob(f"{path.name}{DAMAGED_INFIX}*")) if path.parent.is_dir() else []


def _problem(exc: sqlite3.Error) -> str | None:
    """Sort an SQLite error into what the cache does about it; ``None`` is a bug in grace, re-raised.

    Exact types on purpose: ProgrammingError and friends subclass DatabaseError
    but mean misuse (a closed connection, a bad parameter), not a bad file.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    if type(exc) is sqlite3.DatabaseError or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return "damaged"
    if type(exc) is sqlite3.OperationalError:
        return "full" if name == "SQLITE_FULL" or "disk is full" in str(exc) else "unusable"
    return None


def _warn_once(path: Path, kind: str, message: str) -> None:
    """One notice per file and kind per process: a thousand failed lookups are one problem, not a thousand."""
    with _warned_lock:
        if (str(path), kind) in _warned:
            return
        _warned.add((str(path), kind))
    log.warning(message)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _reader_uri(path: Path) -> str:
    """A read-only URI that never creates a file.

    ``mode=ro`` on a WAL database creates ``-wal``/``-shm`` beside it and leaves
    them (a read-only connection cannot delete them). They exist only while a
    writer has the file open or after a crash; otherwise ``immutable=1`` reads
    the main file alone, creating nothing and taking no locks.
    """
    live = all(p.exists() for p in side_files(path))
    return path.resolve().as_uri() + ("?mode=ro" if live else "?immutable=1")


def _has_table(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'responses'").fetchone() is not None


class ResponseCache:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_cache_path()
        self.readonly = False
        self.db: sqlite3.Connection | None = None
        self._off = False  # set once the file proved damaged: no more lookups or saves this run
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._give_up(f"cannot create its folder ({exc.strerror or exc})")
            return
        self.db = self._open()

    @classmethod
    def open_for_reading(cls, path: Path | None = None) -> ResponseCache | None:
        """For the dry run: count what is cached without creating, moving or changing any file.

        Returns ``None`` when there is no cache yet (silently) or when it cannot
        be read (with a warning): the dry run then counts every call as uncached.
        """
        path = Path(path) if path else default_cache_path()
        if not path.exists():
            return None
        db = None
        try:
            db = sqlite3.connect(_reader_uri(path), uri=True, check_same_thread=False, timeout=5)
            if not _has_table(db):  # an empty file or a cache no run has written to yet
                db.close()
                return None
            db.execute("SELECT key, completion FROM responses LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            what = _problem(exc)
            if what is None:
                raise
            then = ("the next `grace run` moves it aside and starts a fresh one"
                    if what == "damaged" else "`grace cache check` shows what is wrong")
            log.warning(f"{path}: cannot read the response cache ({exc}); the dry run counts every call as not "
                        f"cached; {then}")
            return None
        cache = cls.__new__(cls)
        cache.path, cache.readonly, cache.db, cache._off = path, True, db, False
        return cache

    def holds_model(self, models: list[str]) -> bool:
        """Whether any answer on file came from one of ``models`` (display names): False says every call of theirs
        goes out. A scan of the table, for a guess made off the critical path (:func:`any_cached`)."""
        if not self._usable() or not models:
            return False
        marks = ", ".join("?" * len(models))
        try:
            return self.db.execute(f"SELECT 1 FROM responses WHERE model IN ({marks}) LIMIT 1",
                                   models).fetchone() is not None
        except sqlite3.Error:
            return False  # the run's own opening of the cache says what is wrong

    def _open(self) -> sqlite3.Connection | None:
        for _ in range(3):  # a retry only when another process replaced the file while we looked at it
            seen = _identity(self.path)
            try:
                db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            except sqlite3.Error as exc:
                if _problem(exc) is None:
                    raise
                self._give_up(str(exc))
                return None
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(_SCHEMA)
                db.execute("SELECT key, completion FROM responses LIMIT 1").fetchall()  # reads the table's root page
                return db
            except sqlite3.Error as exc:
                what = _problem(exc)
                if what is None:
                    db.close()
                    raise
                if what != "damaged":
                    db.close()
                    self._give_up(str(exc))
                    return None
                # Moved before closing: on close SQLite deletes side files it finds useless or checkpoints a
                # bad WAL into the main file; moved first, the damaged copy keeps all three as they were.
                if _identity(self.path) != seen:
                    db.close()
                    continue  # another grace moved or replaced it meanwhile: open what is there now
                moved_to = self._move_aside(exc)
                db.close()
                if moved_to is None:
                    return None  # could not move it; _move_aside has said why
        self._give_up("it keeps changing while grace opens it")
        return None

    def _move_aside(self, exc: sqlite3.Error) -> Path | None:
        """Keep the damaged file (someone may want to recover it) but out of the way of a fresh cache."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = self.path.with_name(f"{self.path.name}{DAMAGED_INFIX}{stamp}")
        n = 1
        while dest.exists() or any(p.exists() for p in side_files(dest)):
            n += 1
            dest = self.path.with_name(f"{self.path.name}{DAMAGED_INFIX}{stamp}-{n}")
        try:
            for src, dst in zip([self.path, *side_files(self.path)], [dest, *side_files(dest)], strict=True):
                if src.exists():
                    os.rename(src, dst)
        except OSError as err:
            self._give_up(f"it is damaged ({exc}) and could not be moved aside ({err.strerror or err})")
            return None
        log.warning(f"{self.path}: the response cache was damaged ({exc}); moved it to {dest} and started a fresh "
                    "one. Nothing was lost from your run folders: answers already on file there are kept; only "
                    "answers that came from the old cache will be asked (and paid for) again.")
        return dest

    def _give_up(self, reason: str) -> None:
        self._off = True
        _warn_once(self.path, "unusable", f"{self.path}: cannot use the response cache ({reason}); this run goes on "
                   "without it (answers are still written to the run folder, but none are looked up or saved in "
                   f"the cache); {_FIX}, or point GRACE_CACHE_DIR at a writable folder")

    def _trouble(self, exc: sqlite3.Error) -> None:
        what = _problem(exc)
        if what is None:
            raise exc
        if what == "damaged":
            self._off = True
            _warn_once(self.path, "damaged", f"{self.path}: the response cache is damaged ({exc}); this run goes on "
                       "without it: answers are still written to the run folder, but are no longer looked up or "
                       f"saved in the cache; {_FIX}")
        elif what == "full":
            _warn_once(self.path, "full", f"{self.path}: disk full ({exc}); new answers are not saved in the response "
                       "cache, but the run goes on and writes every answer to its run folder; free some space so "
                       "later runs can reuse them")
        else:
            _warn_once(self.path, "error", f"{self.path}: a response cache lookup or save failed ({exc}); it counts "
                       f"as not cached and the run goes on; {_FIX}")

    def _usable(self) -> bool:
        return self.db is not None and not self._off

    def get(self, key: str) -> dict[str, Any] | None:
        if not self._usable():
            return None
        try:
            row = self.db.execute("SELECT completion FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._trouble(exc)
            return None
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, dict):  # a row edited by hand: ask again, and the next put replaces it
            _warn_once(self.path, "bad-row", f"{self.path}: a cached answer is not valid JSON (key {key}); it is "
                       "asked again and replaced")
            return None
        return value

    def contains(self, key: str) -> bool:
        if not self._usable():
            return False
        try:
            return self.db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None
        except sqlite3.Error as exc:
            self._trouble(exc)
            return False

    def put(self, key: str, model: str, completion: dict[str, Any]) -> None:
        if self.readonly:
            raise RuntimeError(f"{self.path} was opened for reading only")
        if not self._usable():
            return
        # committed at once (autocommit): a paid-for answer survives a crash on the next line
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO responses (key, model, created_at, completion) VALUES (?, ?, ?, ?)",
                (key, mask(model), time.time(), mask(json.dumps(completion, ensure_ascii=False))),
            )
        except sqlite3.Error as exc:
            self._trouble(exc)

    def close(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass  # nothing left to save: every put was committed when it was made
            self.db = None


@dataclass
class CacheHealth:
    """What ``grace cache check`` reports; read without changing or creating any file."""

    path: Path
    exists: bool
    size_bytes: int = 0
    wal_bytes: int = 0
    rows: int | None = None
    problems: list[str] = field(default_factory=list)
    damaged_copies: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_cache(path: Path | None = None, max_problems: int = 20) -> CacheHealth:
    """Row count and ``PRAGMA integrity_check`` of the cache file, for the user deciding whether to clear it."""
    path = Path(path) if path else default_cache_path()
    health = CacheHealth(path, exists=path.is_file(), damaged_copies=damaged_copies(path))
    if not health.exists:
        if path.exists():
            health.problems.append("not a file")
        return health
    health.size_bytes = path.stat().st_size
    wal = side_files(path)[0]
    health.wal_bytes = wal.stat().st_size if wal.exists() else 0
    try:
        db = sqlite3.connect(_reader_uri(path), uri=True, timeout=5)
    except sqlite3.Error as exc:
        health.problems.append(str(exc))
        return health
    try:
        if _has_table(db):
            health.rows = db.execute("SELECT count(*) FROM responses").fetchone()[0]
        else:
            health.rows = 0
        result = [row[0] for row in db.execute(f"PRAGMA integrity_check({int(max_problems)})")]
        if result != ["ok"]:
            health.problems += result
    except sqlite3.Error as exc:
        health.problems.append(str(exc))
    finally:
        db.close()
    return health


def any_cached(models: list[str], path: Path | None = None) -> bool:
    """Whether the cache may answer some call of ``models``: it holds an answer of one of them. Read only: no file
    is created, moved or changed (a run about to start opens it for writing itself)."""
    cache = ResponseCache.open_for_reading(path)
    if cache is None:
        return False
    try:
        return cache.holds_model(models)
    finally:
        cache.close()
