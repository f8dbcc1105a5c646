"""One model served by several endpoints (replicas): calls spread by outstanding requests, a dead replica dropped.

Teams serve one open model on several GPUs or hosts, each with its own endpoint (``base_url = ["http://a/v1",
"http://b/v1"]`` in the leaderboard TOML). :class:`Replicas` is the model's provider for the engine: one provider
per replica behind it (the same class, the same spec but for ``base_url``), each call sent to the live replica with
the fewest calls in flight, so a slower replica gets fewer.

A replica is judged by its answers, not only by its connections, and dropped (the run says so, naming it, and
run.json records why) when it fails the way the engine's breakers stop a whole model (:mod:`harness.providers.breakers`):
``BREAKER_AFTER`` failed calls in a row, connection failures or replies that are no answer (a 5xx, a body that is
not the API's JSON, a proxy's HTML page) while another replica answers, or ``TIMEOUT_BREAKER_AFTER`` timeouts in a
row while another replica answers. Until then its failures are the replica's, not the model's: a call that could
not connect, or got no answer it could read, goes at once to another live replica not yet tried for it, and one
that timed out while another replica answers comes back to the engine as a retryable ``server`` error, so the
model's own breakers (its one-call-at-a-time fallback, its stop after failures before any answer) see only what
every replica does. Until another replica has answered, an answer that is no answer may be the model's everywhere
(a template every server rejects): it goes to the engine as it is, retried as with one endpoint, and when every
replica fails the same way no replica is dropped and the model fails as it would on one endpoint. The last live
replica is never dropped: its failures go to the engine as they are, and stop the model as they would stop a model
with one endpoint.

The cache key does not depend on which replica answered: it names the model's first ``base_url``
(:meth:`endpoint`), so adding a replica at the end of the list keeps every cached answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, RunContext
from harness.providers.breakers import BREAKER_AFTER, TIMEOUT_BREAKER_AFTER

log = logging.getLogger("grace")

# Failures that say a replica gives no answer, whatever the question: nothing reached a model (connection), or what
# came back is no answer (a 5xx, a reply that is not the API's JSON: a proxy's or a login page, garbage). A 429, a
# refused request or a prompt too long are the same on every replica, and go to the engine as they are.
REPLICA_FAULTS = {"connection": "connection failures", "server": "server errors", "bad_response": "unreadable replies",
                  "other": "failed calls"}


@dataclass
class Replica:
    url: str
    provider: Provider
    outstanding: int = 0
    answered: int = 0
    # failed calls in a row (no answer between): connection failures and replies that are no answer, by kind, and
    # when the first of them was sent (another replica's answer after it says the failures are this replica's)
    failures_in_a_row: Counter[str] = field(default_factory=Counter)
    failing_since: float = 0.0
    timeouts_in_a_row: int = 0
    last_answer: float = 0.0  # time.monotonic() of its last answer
    dropped: str | None = None  # why it was dropped; None: live


class Replicas(Provider):
    """A model with several ``base_url`` s: the engine sees one provider; calls go to the replicas."""

    provider_name = "replicas"
    batch_api = None  # a batch goes to one endpoint: the config refuses batch with replicas

    def __init__(self, spec: ModelSpec, make: Any):
        # no Provider.__init__: each replica's provider remembers its own secrets and URL
        self.spec = spec
        self.members = [Replica(url, make(replace(spec, base_url=url, replicas=[]))) for url in spec.replicas]
        first = self.members[0].provider
        self.needs_network = first.needs_network
        self.shows_articles = first.shows_articles
        self._turn = 0

    # --- what the engine reads ---------------------------------------------------------------------------------
    @classmethod
    def endpoint(cls, spec: ModelSpec) -> str | None:
        return spec.replicas[0] if spec.replicas else spec.base_url

    @property
    def timeout_s(self) -> float:  # type: ignore[override]
        return self.members[0].provider.timeout_s

    def check_ready(self) -> None:
        for m in self.members:
            m.provider.check_ready()

    def prepare_run(self, context: RunContext) -> None:
        for m in self.members:
            m.provider.prepare_run(context)

    async def parallel_slots(self) -> int | None:
        """The replicas' slots added up, when every one says; else None."""
        total = 0
        for m in self.members:
            slots = await m.provider.parallel_slots()
            if slots is None:
                return None
            total += slots
        return total

    def learned(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for m in self.members:
            found = found or m.provider.learned()
        return {**found, "replicas": [{"url": m.url, "answered": m.answered, "dropped": m.dropped}
                                      for m in self.members]}

    async def aclose(self) -> None:
        for m in self.members:
            await m.provider.aclose()

    # --- the calls ---------------------------------------------------------------------------------------------
    def live(self) -> list[Replica]:
        return [m for m in self.members if m.dropped is None]

    def _pick(self, tried: list[Replica]) -> Replica | None:
        """The live replica with the fewest calls in flight (ties taken in turn), not yet tried for this call."""
        live = [m for m in self.live() if m not in tried]
        if not live:
            return None
        self._turn += 1
        start = self._turn % len(live)
        return min(live[start:] + live[:start], key=lambda m: m.outstanding)

    async def complete(self, request: Request) -> Completion:
        tried: list[Replica] = []
        while True:
            member = self._pick(tried)
            assert member is not None  # the last live replica is never dropped, and a loop goes on only to an untried one
            tried.append(member)
            member.outstanding += 1
            started = time.monotonic()
            try:
                completion = await member.provider.complete(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - as the engine does: an SDK's own error is a failed call
                error = ProviderError.of(exc)
                if not self._failed(member, error, started):
                    raise
                if error.kind in REPLICA_FAULTS:
                    if any(m not in tried for m in self.live()):
                        continue  # no answer from this one: another live replica, at once
                    raise  # every live replica failed this call: the model's failure, for its own breakers
                raise ProviderError("server", f"replica {member.url}: {error.message}", retryable=True,
                                    retry_after=error.retry_after, status=error.status) from exc
            finally:
                member.outstanding -= 1
            member.answered += 1
            member.failures_in_a_row.clear()
            member.timeouts_in_a_row = 0
            member.last_answer = time.monotonic()
            return completion

    def _failed(self, member: Replica, exc: ProviderError, started: float) -> bool:
        """Count a failure against its replica, dropping the replica at its breaker; True when the failure is the
        replica's alone (another replica is live, and for a timeout, has answered since this call was sent), so
        the model's own breakers should not see it as it is."""
        others = [m for m in self.live() if m is not member]
        if exc.kind in REPLICA_FAULTS:
            streak = member.failures_in_a_row
            if not streak:
                member.failing_since = started
            streak[exc.kind] += 1
            # a refused connection is the replica's whatever the others do; an answer that is no answer, only when
            # another replica answered since this one began failing (else the model may fail the same everywhere)
            peers_answer = any(m.last_answer > member.failing_since for m in others)
            if (streak.total() >= BREAKER_AFTER and others and (peers_answer or set(streak) == {"connection"})
                    and member.dropped is None):
                self._drop(member, f"{_streak(streak)} in a row ({exc.message[:200]})")
            return bool(others) and (peers_answer or exc.kind == "connection")
        if exc.kind == "timeout":
            peers_answer = any(m.last_answer > started for m in others)
            member.timeouts_in_a_row += 1
            if member.timeouts_in_a_row >= TIMEOUT_BREAKER_AFTER and peers_answer and member.dropped is None:
                self._drop(member, f"{member.timeouts_in_a_row} timeouts in a row while the other replicas answered "
                                   f"({exc.message[:200]})")
            return peers_answer
        return False

    def _drop(self, member: Replica, why: str) -> None:
        member.dropped = why
        live = self.live()
        log.warning(f"{self.spec.name}: replica {member.url} dropped after {why}; going on with {len(live)} of "
                    f"{len(self.members)} replicas ({', '.join(m.url for m in live)})")


def _streak(streak: Counter[str]) -> str:
    """``8 connection failures``, or for a mix, ``8 failed calls (5 server errors, 3 unreadable replies)``."""
    if len(streak) == 1:
        return f"{streak.total()} {REPLICA_FAULTS[next(iter(streak))]}"
    parts = ", ".join(f"{n} {REPLICA_FAULTS[kind]}" for kind, n in streak.most_common())
    return f"{streak.total()} failed calls ({parts})"
