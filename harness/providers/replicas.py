"""One model served by several endpoints (replicas): calls spread by outstanding requests, a dead replica dropped.

Teams serve one open model on several GPUs or hosts, each with its own endpoint (``base_url = ["http://a/v1",
"http://b/v1"]`` in the leaderboard TOML). :class:`Replicas` is the model's provider for the engine: one provider
per replica behind it (the same class, the same spec but for ``base_url``), each call sent to the live replica with
the fewest calls in flight, so a slower replica gets fewer.

A replica is dropped, and the run says so naming it, when it fails the way the engine's breakers stop a whole
model (:mod:`harness.core.breakers`): ``BREAKER_AFTER`` connection failures in a row, or ``TIMEOUT_BREAKER_AFTER``
timeouts in a row while another replica answers. Until the last one, its failures are the replica's, not the
model's: a call that could not connect goes at once to another live replica (nothing reached a model, nothing was
paid), and one that timed out while another replica answers comes back to the engine as a retryable ``server``
error, so the model's own breakers (and its one-call-at-a-time fallback) see only what every replica does. The last
live replica is never dropped: its failures go to the engine as they are, and stop the model as they would stop a
model with one endpoint.

The cache key does not depend on which replica answered: it names the model's first ``base_url``
(:meth:`endpoint`), so adding a replica at the end of the list keeps every cached answer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from harness.core.breakers import BREAKER_AFTER, TIMEOUT_BREAKER_AFTER
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, RunContext

log = logging.getLogger("grace")


@dataclass
class Replica:
    url: str
    provider: Provider
    outstanding: int = 0
    answered: int = 0
    connection_failures_in_a_row: int = 0
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
            except ProviderError as exc:
                if not self._failed(member, exc, started):
                    raise
                if exc.kind == "connection":
                    if any(m not in tried for m in self.live()):
                        continue  # nothing reached a model: another replica, at once
                    raise  # every live replica refused this call: the model's failure, for its breaker
                raise ProviderError("server", f"replica {member.url}: {exc.message}", retryable=True,
                                    retry_after=exc.retry_after, status=exc.status) from exc
            finally:
                member.outstanding -= 1
            member.answered += 1
            member.connection_failures_in_a_row = member.timeouts_in_a_row = 0
            member.last_answer = time.monotonic()
            return completion

    def _failed(self, member: Replica, exc: ProviderError, started: float) -> bool:
        """Count a failure against its replica, dropping the replica at its breaker; True when the failure is the
        replica's alone (another replica is live, and for a timeout, has answered since this call was sent), so
        the model's own breakers should not see it as it is."""
        others = [m for m in self.live() if m is not member]
        if exc.kind == "connection":
            member.connection_failures_in_a_row += 1
            if member.connection_failures_in_a_row >= BREAKER_AFTER and others and member.dropped is None:
                self._drop(member, f"{member.connection_failures_in_a_row} connection failures in a row "
                                   f"({exc.message[:200]})")
            return bool(others)
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
