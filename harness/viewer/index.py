"""The viewer's index of one run: every question x model cell, the answers' places in the file, and a word search.

``grace view`` must answer a filter over a million responses in well under a
second, so it does not read ``scores.jsonl`` per request. One pass over the run
builds a SQLite file (stdlib; inspectable with any SQLite tool, never pickle)
outside the run folder, in grace's cache folder (``RunDir.view_index``; the run
folder stays read-only and keeps its one writer):

- ``arrays``: numpy matrices, one row per question, one column per model: the
  cell's outcome (the most common among its repeats, on the side of the
  majority rule: a cell is correct when more than half of its repeats are, as in
  the report), correct and asked repeats, the cited label, cut off by max_tokens;
  per question whether retrieval missed the gold article. Loaded whole (a few MB
  for 100,000 x 10) and filtered in numpy.
- ``questions`` (with each one's gold category, for the grid's category filter), ``models``, ``labels``, ``articles`` (the KB's text, so a
  question page needs no KB on disk), ``suspects`` (the label audit's rows).
- ``answers``: each response's byte offset and length in ``responses.jsonl``:
  a question page reads its few lines with a seek.
- ``search``: an FTS5 index (contentless, words only) over question and answer text.

The index is keyed by the run's files (size, modification time and a hash of the
first and last 64 KB of ``scores.jsonl`` and ``responses.jsonl``, and
``report.json``'s): when any changes it is rebuilt, never patched.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import GraceError
from harness.core.jsonl import loads_line
from harness.run_folder.run_dir import RunDir
from harness.run_folder.scores import read_score_at

INDEX_SCHEMA_VERSION = 2  # 2: each question's gold category
NONE_LABEL = 0  # label code of an answer that names no single KB article (no vote)
REFUSE_LABEL = 1
_EDGE = 64 * 1024

Progress = Callable[[str, float], None]


def source_key(run: Path) -> str:
    """What the index was built from: a new key (any file changed) means a rebuild."""
    folder = RunDir(run)
    parts: dict[str, Any] = {"schema": INDEX_SCHEMA_VERSION, "path": str(folder.path.resolve())}
    for name, path in (("scores", folder.scores), ("responses", folder.responses), ("report", folder.report),
                       ("spotcheck", folder.judgements)):
        try:
            st = path.stat()
        except OSError:
            parts[name] = None
            continue
        h = hashlib.sha256()
        if name in ("scores", "responses"):
            with path.open("rb") as fh:
                h.update(fh.read(_EDGE))
                if st.st_size > _EDGE:
                    fh.seek(max(_EDGE, st.st_size - _EDGE))
                    h.update(fh.read(_EDGE))
        parts[name] = [st.st_size, st.st_mtime_ns, h.hexdigest()[:16]]
    return json.dumps(parts, sort_keys=True)


def create_tables(db: sqlite3.Connection) -> None:
    """The index's tables: what :func:`~harness.viewer.build.build_index` writes and :class:`RunIndex` reads."""
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE arrays (name TEXT PRIMARY KEY, dtype TEXT, shape TEXT, data BLOB);
        CREATE TABLE questions (q INTEGER PRIMARY KEY, question_id TEXT, question TEXT, gold TEXT, category TEXT);
        CREATE TABLE models (m INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE labels (code INTEGER PRIMARY KEY, label TEXT);
        CREATE TABLE articles (id TEXT PRIMARY KEY, title TEXT, text TEXT);
        CREATE TABLE suspects (q INTEGER, kind TEXT, suggested TEXT, agree INTEGER, voters INTEGER, check_ TEXT,
                               reason TEXT);
        CREATE TABLE answers (cell INTEGER, repeat INTEGER, s_offset INTEGER, s_length INTEGER, offset INTEGER,
                              length INTEGER, PRIMARY KEY (cell, repeat)) WITHOUT ROWID;
        CREATE VIRTUAL TABLE search USING fts5(body, content='', detail='none',
                                               tokenize='unicode61 remove_diacritics 2');
    """)


class RunIndex:
    """An index opened for reading: its matrices in memory, the rest queried from SQLite when a page needs it."""

    def __init__(self, path: Path):
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self.lock = threading.Lock()  # the server answers requests in threads; one query at a time on this file
        meta = {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}
        if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
            raise GraceError(f"{path}: an index from another grace version; it is rebuilt")
        self.meta = meta
        self.responses = Path(meta["responses"]) if meta.get("responses") else None
        self.scores = RunDir(meta["run"]).scores
        self.source: str = meta["source"]
        self.repeats: int = meta["repeats"]
        self.notes: list[str] = meta.get("notes") or []
        self.arrays = {name: np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape))
                       for name, dtype, shape, data in self.db.execute("SELECT name, dtype, shape, data FROM arrays")}
        rows = self.db.execute("SELECT question_id, question, gold, category FROM questions ORDER BY q").fetchall()
        self.qids = [r[0] for r in rows]
        self.questions = [r[1] for r in rows]
        self.gold = [r[2] for r in rows]
        self.category = [r[3] or "" for r in rows]  # the gold file's category column; "" when it has none
        self.qindex = {q: i for i, q in enumerate(self.qids)}
        self.models = [r[0] for r in self.db.execute("SELECT name FROM models ORDER BY m")]
        self.labels = [r[0] for r in self.db.execute("SELECT label FROM labels ORDER BY code")]
        self.suspect = np.zeros(len(self.qids), dtype=bool)
        for (q,) in self.db.execute("SELECT DISTINCT q FROM suspects"):
            self.suspect[q] = True
        self._titles: dict[str, str] | None = None

    def close(self) -> None:
        self.db.close()

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    @property
    def titles(self) -> dict[str, str]:
        if self._titles is None:
            self._titles = dict(self._rows("SELECT id, title FROM articles"))
        return self._titles

    def search(self, text: str) -> np.ndarray:
        """Question rows whose question or any answer has every word of ``text`` (each a word's start)."""
        words = fts_words(text)
        if not words:
            return np.arange(len(self.qids))
        match = " AND ".join(f'"{w}"*' for w in words)
        with self.lock:
            ids = np.fromiter((r[0] for r in self.db.execute("SELECT rowid FROM search WHERE search MATCH ?",
                                                             (match,))), dtype=np.int64)
        nq, per_q = len(self.qids), len(self.models) * self.repeats
        q = np.where(ids < nq, ids, (ids - nq) // max(per_q, 1))
        return np.unique(q)

    def article(self, article_id: str) -> tuple[str, str] | None:
        rows = self._rows("SELECT title, text FROM articles WHERE id = ?", (article_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def suspects_of(self, q: int) -> list[dict[str, Any]]:
        cols = ("kind", "suggested", "agree", "voters", "check", "reason")
        return [dict(zip(cols, r, strict=True)) for r in self._rows(
            "SELECT kind, suggested, agree, voters, check_, reason FROM suspects WHERE q = ?", (q,))]

    def answers_of(self, q: int) -> dict[tuple[int, int], tuple[dict[str, Any] | None, dict[str, Any] | None]]:
        """Question ``q``'s (scores row, response row) by (model, repeat), read from the run's files by offset.

        A row is None when its file is gone or changed since the index was built (it is rebuilt then)."""
        nm = len(self.models)
        places = self._rows("SELECT cell, repeat, s_offset, s_length, offset, length FROM answers "
                            "WHERE cell >= ? AND cell < ? ORDER BY cell, repeat", (q * nm, (q + 1) * nm))
        qid = self.qids[q]
        out: dict[tuple[int, int], tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
        scores = _open(self.scores)
        responses = _open(self.responses)
        try:
            for cell, rep, s_off, s_len, off, length in places:
                score = read_score_at(scores, s_off, s_len) if scores else None
                row = None
                if responses is not None and off >= 0:
                    responses.seek(off)
                    try:
                        row = loads_line(responses.read(length))
                    except (ValueError, UnicodeDecodeError):
                        row = None
                out[(cell % nm, rep)] = (score if score and str(score.get("question_id")) == qid else None,
                                         row if isinstance(row, dict) and str(row.get("question_id")) == qid else None)
        finally:
            for fh in (scores, responses):
                if fh is not None:
                    fh.close()
        return out


def _open(path: Path | None):
    try:
        return path.open("rb") if path is not None else None
    except OSError:
        return None


def fts_words(text: str) -> list[str]:
    """The words of a search box, as FTS5's unicode61 tokenizer splits them (letters and digits), lower case."""
    import re

    return re.findall(r"[^\W_]+", text.lower())[:12]
