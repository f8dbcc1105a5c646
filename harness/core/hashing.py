"""Hashes that identify what produced a record: files, texts, and canonical JSON.

Every fingerprint and cache key is SHA-256 over canonical JSON (sorted keys, no
spaces, numbers normalised), so the same request spelled two ways (``0`` and
``0.0``, a base URL with and without its trailing ``/``) is one key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any


def text_hash(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def file_hash(path: str | Path, size: int | None = None) -> str:
    """The file's content hash; ``size``: of its first ``size`` bytes only (what it held when its size was read).

    Read into one reused 1 MB buffer: a fresh block a read held the last one until the new one was made, so hashing
    a big file cost 2 MB at its peak (the peak of scoring a run, which hashes its responses file)."""
    h = hashlib.sha256()
    left = -1 if size is None else size
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with Path(path).open("rb", buffering=0) as fh:
        while left:
            got = fh.readinto(view if left < 0 else view[:min(left, len(buf))])
            if not got:
                break
            h.update(view[:got])
            left -= got if left > 0 else 0
    return h.hexdigest()[:16]


class FileHashInThread:
    """:func:`file_hash` of a file as it is now (its size read at once), computed in a thread from :meth:`start`
    while the caller reads the same file for its own purpose; :meth:`result` waits for it.

    ``grace score`` reads a million-row responses file in worker processes while this hashes it in the parent,
    on what would otherwise be idle time, instead of in a separate pass before them (hashlib and file reads let go
    of the interpreter lock, so the thread does not slow the caller's own work)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.size: int | None = self.path.stat().st_size
        except OSError:
            self.size = None
        self._digest: str | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and self.size is not None:
            self._thread = threading.Thread(target=self._hash, name="grace-file-hash", daemon=True)
            self._thread.start()

    def _hash(self) -> None:
        try:
            self._digest = file_hash(self.path, self.size)
        except OSError:
            self._digest = None

    def result(self) -> tuple[str | None, int | None]:
        """(the content hash, the size), or (None, None) when the file could not be read."""
        if self.size is None:
            return None, None
        if self._thread is None:
            self._hash()
        else:
            self._thread.join()
        return (self._digest, self.size) if self._digest is not None else (None, None)


def normalise(value: Any) -> Any:
    """Numbers by value, not spelling: ``0``, ``0.0`` and ``False`` stay apart only where they differ in kind.

    Every call's cache key and row go through this (the messages, the params: about twenty values a call), so the
    plain JSON types are tested by exact type first, before the ``isinstance`` chain subclasses need: in a profile of
    the engine at 500 calls in flight the chain was the largest single item of grace's own CPU per call."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): normalise(v) for k, v in value.items()}
    if kind is list:
        return [normalise(v) for v in value]
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return value


def normalise_url(url: str | None) -> str | None:
    """``HTTP://Host:8000/v1/`` and ``http://host:8000/v1`` name one endpoint."""
    if not url:
        return None
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        user, at, host = host.rpartition("@")  # a user name (or its ${VAR}) keeps its case: only the host has none
        url = f"{scheme.lower()}://{user}{at}{host.lower()}{slash}{path}"
    return url.rstrip("/")


def canonical_json(fields: Any) -> str:
    return json.dumps(normalise(fields), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_hash(fields: Any, length: int | None = None) -> str:
    digest = hashlib.sha256(canonical_json(fields).encode("utf-8")).hexdigest()
    return digest[:length] if length else digest
