"""Response cache in SQLite, shared by every run of a user.

The key is SHA-256 over canonical JSON of what determines an answer (provider,
model, endpoint, messages, generation parameters, template hash, KB hash, repeat
index) and nothing else: timeouts or concurrency never change a key. Rows are
plain JSON, inspectable with the ``sqlite3`` shell; never pickle.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from harness.core.hashing import json_hash


def default_cache_dir() -> Path:
    if os.environ.get("GRACE_CACHE_DIR"):
        return Path(os.environ["GRACE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "grace"


def cache_key(fields: dict[str, Any]) -> str:
    return json_hash(fields)


class ResponseCache:
    def __init__(self, path: Path | None = None):
        self.path = path or default_cache_dir() / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
            "created_at REAL NOT NULL, completion TEXT NOT NULL)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT completion FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def contains(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def put(self, key: str, model: str, completion: dict[str, Any]) -> None:
        # committed at once (autocommit): a paid-for answer survives a crash on the next line
        self.db.execute(
            "INSERT OR REPLACE INTO responses (key, model, created_at, completion) VALUES (?, ?, ?, ?)",
            (key, model, time.time(), json.dumps(completion, ensure_ascii=False)),
        )

    def close(self) -> None:
        self.db.close()
