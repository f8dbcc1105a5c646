"""A team's curation under review (``grace kb curate --reviewers``): changes proposed, approved or rejected.

In team mode a curator's action (a new title or text, a split, a merge, a pair marked
distinct, a model's proposal accepted) does not change the KB: it becomes a
:class:`ChangeRequest`, pending until a reviewer approves it (then it is applied through
the curation overlay and enters ``KB/curation.jsonl`` as any action does) or rejects it
(kept, with the reason). Requests live in ``KB/curation_review.jsonl``, one line per
event (proposed, approved, rejected), through :class:`~harness.kb_curate.event_log.EventLog`:
on disk before the page is told, the last line of a request its state, a line cut off
by a kill dropped.

Each request keeps the hash of every article it touches as the curator saw it
(``base``): a reviewer approving a request whose articles changed since (another
request approved first, an edit by hand) is refused, since applying it would undo work
nobody reviewed against it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from harness.core.clock import now as _now
from harness.kb_curate.event_log import EventLog
from harness.web import Rejected
from harness.web.credentials import Credentials
from harness.web.decisions import StaleDecision, decide
from kb_builder.kb_dir import REVIEW, KbDir

T = TypeVar("T")
GONE = "gone"  # an article's hash when it is no longer in the KB
FILE = REVIEW  # KB/curation_review.jsonl: its name is spelled in kb_builder.kb_dir
ACTIONS = ("title", "text", "split", "merge", "distinct", "accept")
MAX_LINE = 1 << 21  # a request carries at most an article's text (the app takes 200,000 characters)


StaleChange = StaleDecision  # approving a change whose articles changed since it was proposed (409)


class ChangeRejected(Rejected):
    """A review request the queue refuses: no such change, already decided, no reason given (400)."""


class NotYourRole(ChangeRejected):
    """A curator approving, rejecting or undoing; a reviewer approving their own change (403)."""

    status = HTTPStatus.FORBIDDEN


class ChangeRequest(BaseModel):
    """One line of ``KB/curation_review.jsonl``: a curator's change and, once reviewed, the decision."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    id: int = Field(description="The change's number, from 1, in the order proposed.")
    action: Literal["title", "text", "split", "merge", "distinct", "accept"] = Field(
        description="What it does: the curation page's action of the same name (accept: a model's proposal).")
    body: dict[str, Any] = Field(description="The action as the curator sent it (accept: the proposal as accepted).")
    articles: list[str] = Field(description="The articles it touches.")
    base: dict[str, str] = Field(description="Each touched article's hash of title and text when it was proposed.")
    summary: str = Field(description="One line saying what it does, for the reviewer's list.")
    author: str = Field(description="The curator who proposed it.")
    proposed_at: str = Field(description="When, ISO 8601 UTC.")
    status: Literal["pending", "approved", "rejected"] = Field("pending", description="Where review stands.")
    reviewer: str = Field("", description="Who approved or rejected it.")
    reviewed_at: str = Field("", description="When, ISO 8601 UTC.")
    reason: str = Field("", description="Why it was rejected (or a reviewer's note on an approval).")


def article_hash(title: str, text: str) -> str:
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:16]


class ReviewQueue:
    """Every change request of a KB, read once at start and appended to as people propose and review."""

    def __init__(self, kb_dir: str | Path):
        self.log = EventLog(KbDir(kb_dir).curation_review, ChangeRequest, what="a change request", max_line=MAX_LINE)
        self.path = self.log.path
        self.requests: dict[int, ChangeRequest] = self.log.records
        self._lock = threading.Lock()
        self.credentials = Credentials(KbDir(kb_dir).curation_keys)  # who is who: each named person's key, hashed
        self._deciding = threading.RLock()  # one decision at a time, made on the state it was seen in

    def _append(self, rec: ChangeRequest) -> None:
        self.log.append(rec)

    def propose(self, action: str, body: dict, *, articles: list[str], base: dict[str, str], summary: str,
                author: str) -> ChangeRequest:
        with self._lock:
            rec = ChangeRequest(id=max(self.requests, default=0) + 1, action=action, body=body, articles=articles,
                                base=base, summary=summary, author=author, proposed_at=_now())
            self._append(rec)
            return rec

    def reconciled(self, rec: ChangeRequest, reviewer: str) -> ChangeRequest:
        """Record approved a change whose edit the KB already holds (a kill came between the edit and this line)."""
        with self._lock:
            done = rec.model_copy(update={"status": "approved", "reviewer": reviewer, "reviewed_at": _now()})
            self._append(done)
            return done

    def get(self, n: int) -> ChangeRequest:
        rec = self.requests.get(n)
        if rec is None:
            raise ChangeRejected(f"no change {n}: the list holds {', '.join(map(str, self.requests)) or 'none'}")
        return rec

    def state(self, n: int, hashes: dict[str, str] | None = None) -> dict[str, str]:
        """What a decision on change ``n`` is made on: its status, and (``hashes``: approving) its articles."""
        rec = self.get(n)
        return {"@status": rec.status if rec.status == "pending" else f"{rec.status} by {rec.reviewer}",
                **{f"article {a}": h for a, h in (hashes or {}).items()}}

    def decide(self, n: int, status: str, reviewer: str, reason: str = "", *,
               now: Callable[[], dict[str, str]] | None = None,
               apply: Callable[[ChangeRequest], T] | None = None) -> tuple[ChangeRequest, T | None]:
        """Approve or reject change ``n``, through :func:`harness.web.decisions.decide` (the one decision with a
        stale check of every team app): made on the change pending as proposed (``now``: the hash of each article
        it touches now, which must be as the curator saw them: ``GONE`` for one no longer in the KB), else refused (409) with what changed. ``apply``
        (approving) changes the KB, then the decision is written (a kill between: reconciled at the next start)."""
        rec = self.get(n)
        seen = {"@status": "pending", **{f"article {a}": h for a, h in (rec.base if now is not None else {}).items()}}
        out: list[Any] = [None]

        def record() -> ChangeRequest:
            if apply is not None:
                out[0] = apply(rec)
            with self._lock:
                done = rec.model_copy(update={"status": status, "reviewer": reviewer, "reviewed_at": _now(),
                                              "reason": reason})
                self._append(done)
                return done

        def say(_seen: dict[str, str], state: dict[str, str]) -> str:
            if state["@status"] != "pending":
                return f"change {n} is already {state['@status']}"
            changed = [k.removeprefix("article ") for k in rec.base if seen.get(f"article {k}") != state.get(
                f"article {k}")]
            what = ", ".join(f"article {a} {'is gone' if state.get(f'article {a}') == GONE else 'changed'}"
                             for a in changed)
            return (f"change {n} is stale: {what} since {rec.author} proposed it ({rec.proposed_at}); reject it with "
                    "the reason, and propose it again on the current text if it is still wanted")

        done = decide(self._deciding, f"change {n}", seen, lambda: self.state(n, now() if now is not None else None),
                      record, say)
        return done, out[0]

    def all(self) -> list[ChangeRequest]:
        """Pending first (oldest first), then the decided (newest first)."""
        recs = list(self.requests.values())
        return [r for r in recs if r.status == "pending"] + sorted(
            (r for r in recs if r.status != "pending"), key=lambda r: (r.reviewed_at, r.id), reverse=True)
