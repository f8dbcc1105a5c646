"""``batches.jsonl``: the run folder's record of batches sent to providers' batch APIs.

A batch costs money the moment the provider accepts it and answers up to a day
later, usually to another process. So the folder records, append-only and
synced to disk at each step:

``submitting``  before the submit call: grace's label for the batch, the model and
                every request's custom ID (its cache key), in order;
``submitted``   after it: the provider's batch ID;
``unsubmitted`` the submit call failed and no batch was found under the label;
``collected``   its results are in the cache and in ``responses.jsonl``.

A batch with ``submitting`` but no ID (the process died during the submit
call) is looked up at the provider by its label before anything is sent again,
so no request is ever paid for twice. Reading folds the events into one
:class:`BatchEntry` per label; a torn last line (a kill mid-write) is skipped,
as the event it would have recorded is repeated by the next run.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where
from harness.core.files import disk_error, repair_torn_tail
from harness.core.secrets import mask

BATCHES_SCHEMA_VERSION = 1


@dataclass
class BatchEntry:
    label: str  # grace's name for the batch: unique per folder, stored with the batch where the API allows
    model: str  # the model's display name in the run
    provider: str  # the model's provider: PROVIDER of --model PROVIDER:MODEL
    custom_ids: list[str]  # each request's custom ID (its cache key), in the order sent
    submitted_at: float  # epoch seconds of the submit call
    batch_id: str | None = None  # the provider's ID for the batch; null until the submit call returned one
    collected: dict[str, Any] | None = None  # when its results were written: state and counts
    unsubmitted: str | None = None  # why the submit call failed

    @property
    def open(self) -> bool:
        """Submitted (or maybe submitted) and not collected yet: its requests must not be sent again."""
        return self.collected is None and self.unsubmitted is None


@dataclass
class BatchLedger:
    """The one reader and writer of ``batches.jsonl``; used under the folder's lock."""

    path: Path
    entries: dict[str, BatchEntry] = field(default_factory=dict)
    _repaired: bool = False

    @classmethod
    def read(cls, path: Path) -> BatchLedger:
        ledger = cls(Path(path))
        if not ledger.path.exists():
            return ledger
        with ledger.path.open("rb") as fh:
            lines = fh.read().split(b"\n")
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                if n == len(lines):  # a torn last line: the kill came mid-write
                    continue
                raise GraceError(f"{where(ledger.path, n)}: not valid JSON; this file records batches already "
                                 "paid for, so fix the line by hand rather than deleting the file") from None
            ledger._apply(event, n)
        return ledger

    def _apply(self, event: dict[str, Any], n: int) -> None:
        kind, label = event.get("event"), event.get("label")
        if kind == "submitting":
            self.entries[label] = BatchEntry(label, event["model"], event["provider"], list(event["custom_ids"]),
                                             float(event["at"]))
            return
        entry = self.entries.get(label)
        if entry is None:
            raise GraceError(f"{where(self.path, n)}: event {kind!r} for batch {label!r}, which was never submitted")
        if kind == "submitted":
            entry.batch_id, entry.unsubmitted = event["batch_id"], None
        elif kind == "unsubmitted":
            entry.unsubmitted = event.get("why") or "not submitted"
        elif kind == "collected":
            entry.collected = {k: v for k, v in event.items() if k not in ("event", "label")}

    def _append(self, event: dict[str, Any]) -> None:
        """One line, flushed and synced before returning: the next step may spend money."""
        event = {"schema_version": BATCHES_SCHEMA_VERSION, **event, "at": event.get("at", time.time())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._repaired:  # never append onto a line a killed process left half-written
            repair_torn_tail(self.path, self.path.with_name(self.path.stem + ".torn.jsonl"))
            self._repaired = True
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(mask(json.dumps(event, ensure_ascii=False)) + "\n")  # a batch API's error may quote the key
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise disk_error(self.path, exc) from None
        self._apply(event, 0)

    def submitting(self, label: str, model: str, provider: str, custom_ids: list[str]) -> BatchEntry:
        self._append({"event": "submitting", "label": label, "model": model, "provider": provider,
                      "custom_ids": custom_ids})
        return self.entries[label]

    def submitted(self, label: str, batch_id: str) -> None:
        self._append({"event": "submitted", "label": label, "batch_id": batch_id})

    def unsubmitted(self, label: str, why: str) -> None:
        self._append({"event": "unsubmitted", "label": label, "why": why})

    def collected(self, label: str, **summary: Any) -> None:
        self._append({"event": "collected", "label": label, **summary})

    def open_entries(self, model: str | None = None) -> list[BatchEntry]:
        return [e for e in self.entries.values() if e.open and (model is None or e.model == model)]
