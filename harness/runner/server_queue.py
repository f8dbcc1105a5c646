"""The model's own time per call, told apart from the time the call waited in a queue.

A self-hosted server (llama.cpp, a small vLLM or Ollama) works on a few requests at once and queues the rest. At
``--concurrency 8`` against a one-slot server, a call's time from sending to answer is mostly the answers ahead of
it in the server's queue: the same model and prompts measured p50 12.8 s at concurrency 2 over two one-slot servers
and 76.6 s at concurrency 8 against one. A leaderboard column of that ranks models by how they were queued.

So each call records, beside ``latency_ms`` (sending to answer, the server's queue included), ``queue_ms`` (how long
it waited in grace for its turn: the in-flight limit, the rate limit) and ``service_ms``: the model's own time,
the server's queue left out, with how it was told (``service_from``):

``server``
    the server said it: llama.cpp's ``timings`` (``prompt_ms + predicted_ms``) in its OpenAI-compatible reply.
``slots``
    the server said how many requests it works on at once (llama.cpp's ``/props``) and no more were sent, so
    nothing waited in its queue: the latency is the model's time.
``measured``
    a server on this machine or network that says neither. Its first calls (three, up to ``PROBES`` when their
    times differ) are sent one at a time (the first warms up: the SDK loads, the connection opens), so their
    latency is the model's time with nothing queued; then all are sent, and the rate its answers come back at, times that unqueued time, is how many it
    works on at once (``slots``). Each call's wait in the server's queue is then worked out from the answers that
    came back while it waited, first come, first served: with ``slots`` slots and ``a`` calls already in flight
    when it was sent, it started when the ``a + 1 - slots``-th of them came back.

A hosted API's own queue cannot be told from its model's time, nor can several replicas' (each has its own
queue): ``service_ms`` stays null there unless the server says it, and ``latency_ms`` is the figure. While the slots are measured (the first ``MEASURE_ROUNDS`` answers per call in flight after the
probes), a call's row is held (its answer is in the cache already), then written with its time worked out; a run
that ends first decides on what it has. When the server works on fewer than the calls sent at once, the run says
so once (the other calls only wait in its queue, and time out there first).
"""

from __future__ import annotations

import bisect
import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("grace")

# calls sent one at a time before the others (the first warms up): the model's time with nothing queued. Three when
# the two after the warm-up agree (answers of one length), up to five when they do not
PROBES = 5
AGREE = 1.2  # two probe times within this ratio agree
MEASURE_ROUNDS = 2  # answers per call in flight, after the probes, that the rate of answers is measured over
MEASURE_UP_TO = 64  # more calls in flight than this: a batching server, not one of a few slots; not measured
# an answer quicker than this (with nothing queued) is no model working one call at a time: what paces its answers is
# grace's own time per call, not a queue, so its slots are not measured
MIN_SERVICE_S = 0.1
_KEEP = 4096  # answers' times kept before the ones too old for a call in flight to have waited on are dropped


@dataclass(frozen=True)
class Timing:
    """What a call's row says of its time: the model's own (None: not told) and how it was told."""

    service_ms: float | None = None
    service_from: str | None = None


@dataclass
class Sent:
    """One call as the server saw it: when it was sent and answered (``time.perf_counter``), and how many other
    calls of the model were in flight when it was sent."""

    sent: float
    done: float
    ahead: int
    reported_ms: float | None = None  # the server's own account of its time (llama.cpp's timings)

    @property
    def latency_ms(self) -> float:
        return (self.done - self.sent) * 1000


@dataclass
class ServerClock:
    """One model's answers in order, to tell each call's service time from its wait in the server's queue.

    ``workers``: the calls the engine keeps in flight; ``slots``: what the server said it serves at once (None:
    not said); ``local``: the endpoint is on this machine or network (a hosted API's queue is not measured).
    """

    name: str
    workers: int
    slots: int | None = None
    local: bool = False
    slots_from: str | None = None  # props | measured | server timings: how ``slots`` became known
    _probes: list[float] = field(default_factory=list)  # latencies of the calls sent alone, seconds
    _departures: list[float] = field(default_factory=list)  # answers' times since the probes, in order
    _window: list[Sent] = field(default_factory=list)  # the answers since the probes, while measuring
    _held: list[tuple[Sent, Callable[[Timing], None]]] = field(default_factory=list)
    _longest: float = 0.0  # the longest time from sending to answer so far, seconds
    _told: bool = False  # the server said a call's time (its timings): its slots are worked out from those

    def __post_init__(self) -> None:
        if self.slots is not None:
            self.slots_from = "props"
        self.measuring = self.slots is None and self.local and 2 <= self.workers <= MEASURE_UP_TO

    @property
    def probing(self) -> bool:
        """Calls go one at a time: the first ``PROBES`` answers of a server whose slots are measured (none once it
        says each call's time)."""
        if not self.measuring or self._told or len(self._probes) >= PROBES:
            return False
        times = self._probes[1:]
        return len(times) < 2 or max(times) > AGREE * min(times)

    def answered(self, call: Sent, write: Callable[[Timing], None]) -> Timing | None:
        """Record an answer; ``write`` gets the call's timing now (returned too) or once the slots are decided."""
        self._told = self._told or call.reported_ms is not None  # the server says each call's time: no probes
        if self.probing:
            self._probes.append(call.done - call.sent)
            timing = Timing(round(call.latency_ms, 1), "measured")  # sent alone: nothing queued
            write(timing)
            return timing
        if self.measuring or self.slots_from == "measured":
            self._longest = max(self._longest, call.done - call.sent)
            bisect.insort(self._departures, call.done)
            if len(self._departures) > _KEEP and not self.measuring:  # too old for a call in flight to have waited on
                del self._departures[:bisect.bisect_left(self._departures, call.done - 4 * self._longest - 1)]
        if self.measuring:
            self._window.append(call)
        timing = self._timing(call)
        if timing is None:
            self._held.append((call, write))
        else:
            write(timing)
        if self.measuring and len(self._window) > MEASURE_ROUNDS * self.workers:
            gap = self._departures[-1] - self._departures[-2]
            if self._told or gap > self._reference() / 4 or len(self._window) >= 2 * MEASURE_ROUNDS * self.workers:
                self.decide()  # at the first answer of a round (or at last): the rate over whole rounds
        return timing

    def _reference(self) -> float:
        """The model's time on a call with nothing queued, seconds: the probes' mean (the rate of answers is of the
        mean time, not the median), the warm-up left out."""
        probes = self._probes[1:] or self._probes
        return statistics.fmean(probes) if probes else 0.0

    def _timing(self, call: Sent) -> Timing | None:
        if call.reported_ms is not None:
            return Timing(round(min(call.reported_ms, call.latency_ms), 1), "server")
        if self.slots_from == "props":
            return Timing(round(call.latency_ms, 1), "slots")
        if self.slots_from == "measured":
            assert self.slots is not None
            return Timing(round(service_s(call, self.slots, self._departures) * 1000, 1), "measured")
        return None if self.measuring else Timing()

    def decide(self) -> None:
        """Settle the server's slots on the answers so far, warn when fewer than the calls in flight, and write the
        held rows. Called once the rate is measured, and when the model's calls end."""
        if not self.measuring:
            return
        self.measuring = False
        window = self._window
        reported = [c for c in window if c.reported_ms is not None]
        if reported:  # the server says each call's time: how many it worked on at once is their sum over the span
            span = max(c.done for c in reported) - min(c.sent for c in reported)
            busy = sum(c.reported_ms for c in reported) / 1000  # type: ignore[misc]
            self.slots = max(1, min(self.workers, round(busy / span))) if span > 0 else None
            how = "server timings"
        else:
            self.slots = measured_slots(self._departures, self._reference(), self.workers)
            how = "measured"
        self.slots_from = how if self.slots is not None else None
        if how == "server timings":
            self._departures.clear()
        if self.slots is not None and self.slots < self.workers and len(window) > self.slots:
            waited = sorted(c.latency_ms for c in window)
            log.warning(f"{self.name}: the server works on about {self.slots} request(s) at a time ({how} over "
                        f"{len(window)} answers) while {self.workers} were sent at once: the others waited in its "
                        f"queue (p50 {waited[len(waited) // 2] / 1000:.1f} s from sending to answer). Latency is "
                        f"shown as the model's own time per call, its queue apart; --concurrency {self.slots} (or "
                        f"concurrency = {self.slots} for this model) sends no more than it serves")
        self._window = []
        held, self._held = self._held, []
        for call, write in held:
            write(self._timing(call) or Timing())

    close = decide  # the model's calls are over: decide on what was answered, and write every held row


def measured_slots(departures: list[float], reference: float, workers: int) -> int | None:
    """How many requests the server works on at once: the rate its answers came back at (per second, from the first
    answer to the last) times the model's time on a call with nothing queued; None with too few answers to say, or
    answers too quick to tell a queue from grace's own time per call (below ``MIN_SERVICE_S``)."""
    if len(departures) < 3 or reference < MIN_SERVICE_S or departures[-1] <= departures[0]:
        return None
    rate = (len(departures) - 1) / (departures[-1] - departures[0])
    return max(1, min(workers, round(rate * reference)))


def service_s(call: Sent, slots: int, departures: list[float]) -> float:
    """The call's own time, seconds: from when the server started on it to its answer.

    First come, first served: of the ``call.ahead`` calls in flight when it was sent, ``slots`` could be worked on
    and the rest waited ahead of it, so it started at the ``ahead + 1 - slots``-th answer after it was sent (with
    one slot, exactly at the last answer before its own, whatever order the requests reached the server in)."""
    lo = bisect.bisect_right(departures, call.sent)
    hi = bisect.bisect_left(departures, call.done)  # (its own answer is not one it waited for)
    between = hi - lo
    wait = call.ahead + 1 - slots
    if between == 0 or (wait <= 0 and slots > 1):
        return call.done - call.sent
    start = departures[hi - 1] if slots == 1 else departures[lo + min(wait, between) - 1]
    return call.done - max(call.sent, start)
