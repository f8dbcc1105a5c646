"""The model proposals ``grace kb curate`` was asked for, kept on disk (``KB/curation_proposals.jsonl``).

A proposal costs a model call and a person's reading; one asked for but not yet accepted
or rejected used to live only in the app's memory and was lost with a restart. Each is
now one line, written (through :class:`~harness.kb_curate.event_log.EventLog`: flushed,
fsynced, a line torn by a kill dropped) before the page sees it, and a line again when
it is accepted or rejected (the last line of a proposal is its state). This module is the
file's one reader and writer; its name is :class:`kb_builder.kb_dir.KbDir`'s.

Each proposal keeps the hash of every article it changes as the proposer saw them
(``base``, the hash :func:`~harness.kb_curate.change_requests.article_hash` gives). An
edit made since (by hand, another proposal accepted, a rebuild) makes it stale: the page
shows it as stale, with what changed, and accepting it is refused, since applying it
would undo the later edit.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.core.clock import now as _now
from harness.core.errors import GraceError
from harness.kb_curate.change_requests import StaleChange, article_hash
from harness.kb_curate.event_log import EventLog
from harness.kb_curate.proposals import Proposal
from kb_builder.kb_dir import KbDir

MAX_LINE = 1 << 22  # a merge proposal carries two articles' text (the app takes 200,000 characters each)


class StoredProposal(BaseModel):
    """One line of ``KB/curation_proposals.jsonl``: a model's proposal and, later, what became of it."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    id: int = Field(description="The proposal's number, from 1, in the order asked for.")
    status: Literal["open", "accepted", "rejected"] = Field(
        "open", description="open: waiting for a person; accepted (applied, or in a team sent for review); rejected.")
    proposal: dict[str, Any] = Field(
        description="The proposal as the proposer made it: kind, articles, title, text, keep, at, titles, reason, "
                    "model, cost_usd, cached, error (set: the reply was unusable).")
    base: dict[str, str] = Field(description="Each article it changes: the hash of its title and text when asked.")
    paragraphs: list[str] = Field(default_factory=list, description="A split: the article's paragraphs when asked.")
    finding: str = Field("", description="The worklist finding it was asked for (kind:IDS), if any.")
    asked_by: str = Field("", description="Who asked for it.")
    asked_at: str = Field(description="When, ISO 8601 UTC.")
    decided_at: str = Field("", description="When it was accepted or rejected, ISO 8601 UTC.")


class ProposalStore:
    """Every proposal of a KB: read at start, appended to as the page asks, accepts and rejects."""

    def __init__(self, kb_dir: str | Path):
        self.log = EventLog(KbDir(kb_dir).proposals, StoredProposal, what="a stored proposal", max_line=MAX_LINE)
        self.path = self.log.path
        self._lock = threading.Lock()

    def add(self, proposal: Proposal, kb: Any, *, paragraphs: list[str] | None = None, finding: str = "",
            asked_by: str = "") -> Proposal:
        """File ``proposal`` under the next number, with the hashes of its articles in ``kb`` now."""
        with self._lock:
            proposal.id = max(self.log.records, default=0) + 1
            base = {i: article_hash(kb.by_id[i].title, kb.by_id[i].text) for i in proposal.articles if i in kb.by_id}

            def record() -> StoredProposal:
                return StoredProposal(id=proposal.id, status=proposal.status, proposal=proposal.model_dump(), base=base,
                                      paragraphs=paragraphs or [], finding=finding, asked_by=asked_by, asked_at=_now())

            try:
                self.log.append(record())
            except GraceError as exc:  # a reply too long to keep is a rejected proposal, as any unusable reply
                proposal.title, proposal.text, proposal.titles = None, None, []
                proposal.error = f"the proposal is too long to keep ({exc})"
                self.log.append(record())
            return proposal

    def get(self, n: int) -> Proposal | None:
        rec = self.log.records.get(n)
        return None if rec is None else Proposal.model_validate({**rec.proposal, "id": rec.id, "status": rec.status})

    def paragraphs(self, n: int) -> list[str] | None:
        rec = self.log.records.get(n)
        return rec.paragraphs or None if rec is not None else None

    def open(self) -> list[Proposal]:
        return [p for p in (self.get(n) for n in self.log.records) if p is not None and p.status == "open"]

    def decide(self, n: int, status: str) -> None:
        with self._lock:
            rec = self.log.records[n]
            self.log.append(rec.model_copy(update={"status": status, "decided_at": _now()}))

    def stale(self, n: int, kb: Any) -> str | None:
        """Why proposal ``n`` no longer fits the KB (an article gone or edited since it was asked for), or None."""
        rec = self.log.records.get(n)
        if rec is None:
            return None
        for aid in rec.proposal.get("articles") or []:
            art = kb.by_id.get(aid)
            if art is None:
                return f"article {aid} is no longer in the KB (merged, split or retired since)"
            if aid in rec.base and article_hash(art.title, art.text) != rec.base[aid]:
                return f"article {aid} was edited since the proposal was made"
        return None

    def check_fresh(self, n: int, kb: Any) -> None:
        why = self.stale(n, kb)
        if why:
            raise StaleChange(f"proposal {n} is stale: {why}; applying it would undo that edit. Reject it and ask "
                              "for a new one on the current text")


