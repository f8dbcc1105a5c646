"""An append-only JSONL of typed records where the last line of an ``id`` is its state: the curation page's change
requests (``curation_review.jsonl``) and its model proposals (``curation_proposals.jsonl``).

Each line is appended, flushed and fsynced before the page is told, so a restart or a
kill loses nothing acknowledged. A line cut off by a kill (the last one, without its
newline) never took effect: it is dropped when the log is next opened (under the KB's
one-writer lock), so the next line appended starts whole. Anything else unreadable is a
clear error naming the line, never silently skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from harness.core.errors import GraceError, where

R = TypeVar("R", bound=BaseModel)


class EventLog(Generic[R]):
    """The records of ``path`` (``model`` each, keyed by their ``id``), read once and appended to."""

    def __init__(self, path: Path, model: type[R], *, what: str, max_line: int):
        self.path, self.model, self.what, self.max_line = Path(path), model, what, max_line
        self.records: dict[int, R] = {}
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        whole = 0  # bytes of finished lines
        with self.path.open("rb") as fh:
            for n, raw in enumerate(fh, 1):
                if len(raw) > self.max_line:
                    raise GraceError(f"{where(self.path, n)}: a line of {len(raw):,} bytes; {self.what} is at most "
                                     f"{self.max_line:,}: restore the file from a backup")
                if not raw.endswith(b"\n"):  # cut off by a kill before the page was told: it never happened
                    break
                whole += len(raw)
                if not raw.strip():
                    continue
                try:
                    rec = self.model.model_validate(json.loads(raw))
                except (ValueError, ValidationError) as exc:
                    raise GraceError(f"{where(self.path, n)}: not {self.what} grace wrote "
                                     f"({str(exc).splitlines()[0]}); restore the file or delete the line") from None
                self.records[rec.id] = rec  # type: ignore[attr-defined]
        if whole < self.path.stat().st_size:  # drop the torn tail, so the next line appended starts whole
            with self.path.open("r+b") as fh:
                fh.truncate(whole)

    def append(self, rec: R) -> R:
        line = rec.model_dump_json() + "\n"
        if len(line.encode()) > self.max_line:  # never write a line the next start would refuse to read
            raise GraceError(f"{self.what} of {len(line.encode()):,} bytes is over the {self.max_line:,} a line of "
                             f"{self.path.name} holds; not saved")
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.records[rec.id] = rec  # type: ignore[attr-defined]
        return rec
