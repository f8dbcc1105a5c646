"""The model's own time per call, told from the time its calls queued: the clock against a simulated server.

The simulation is a first-come-first-served server with ``slots`` slots and a client that keeps ``workers`` calls
in flight (one while the clock probes), written here apart from grace: it knows each call's true time in a slot,
which the clock only sees from when calls were sent and answered.
"""

from __future__ import annotations

import heapq
import logging
import math
import random
import statistics

import pytest

from harness.runner.server_queue import MIN_SERVICE_S, PROBES, Sent, ServerClock, Timing, service_s


def simulate(slots: int, workers: int, calls: int, service, *, seed: int = 0, net: float = 0.002,
             local: bool = True, reported: bool = False) -> tuple[ServerClock, list[tuple[float, Timing]]]:
    """Run ``calls`` through a FIFO server; returns the clock and, per call, (true seconds in a slot, its timing)."""
    rng = random.Random(seed)
    clock = ServerClock("m", workers, None, local)
    waiting: list[tuple[float, int]] = []
    busy: list[tuple[float, int]] = []
    calls_of: dict[int, dict] = {}
    timings: dict[int, Timing] = {}
    free, now, sent_so_far, in_flight, answered = slots, 0.0, 0, 0, 0

    def send(t: float) -> None:
        nonlocal sent_so_far, in_flight
        i = sent_so_far
        sent_so_far += 1
        calls_of[i] = {"sent": t, "ahead": in_flight, "s": service(rng)}
        in_flight += 1
        heapq.heappush(waiting, (t + net, i))

    def fill(t: float) -> None:
        while in_flight < (1 if clock.probing else workers) and sent_so_far < calls:
            send(t)

    fill(0.0)
    while answered < calls:
        events = ([busy[0][0]] if busy else []) + ([max(now, waiting[0][0])] if waiting and free else [])
        now = min(events)
        while free and waiting and waiting[0][0] <= now:
            _, i = heapq.heappop(waiting)
            heapq.heappush(busy, (now + calls_of[i]["s"], i))
            free -= 1
        while busy and busy[0][0] <= now:
            _, i = heapq.heappop(busy)
            free, in_flight, answered = free + 1, in_flight - 1, answered + 1
            c = calls_of[i]
            back = now + net + answered * 1e-6  # answers that came together are taken one after another, as in a loop
            clock.answered(Sent(c["sent"], back, c["ahead"], c["s"] * 1000 if reported else None),
                           lambda timing, i=i: timings.__setitem__(i, timing))
            fill(back)
    clock.close()
    return clock, [(calls_of[i]["s"], timings[i]) for i in sorted(calls_of)]


def fixed(seconds: float):
    return lambda rng: seconds


@pytest.mark.parametrize("slots", [1, 2, 3, 5, 8])
def test_answers_of_one_length_give_the_slots_and_each_calls_own_time(slots, caplog):
    with caplog.at_level(logging.WARNING, logger="grace"):
        clock, calls = simulate(slots, 8, 60, fixed(0.5))
    assert clock.slots == slots and clock.slots_from == "measured"
    for true, timing in calls:
        assert timing.service_from == "measured"
        assert timing.service_ms == pytest.approx(true * 1000, rel=0.02, abs=5)  # (the network's 2 ms both ways)
    warned = [r.getMessage() for r in caplog.records if "works on about" in r.getMessage()]
    assert warned == ([] if slots == 8 else [warned[0]]) and (slots == 8 or f"about {slots} request(s)" in warned[0])


@pytest.mark.parametrize(("slots", "within", "runs"), [(1, 0.10, 34), (2, 0.10, 28), (4, 0.25, 28)])
def test_answers_of_varied_lengths_give_the_median_time_in_most_runs(slots, within, runs):
    """Answers of different lengths (log-normal, sigma 0.3): over 40 runs, how often the median of the times told is
    within ``within`` of the true median. The slots come from a few probes, so a run whose probes happened to be
    long can take one slot for two (its times are then off by that factor); one slot is the case that holds best.
    (Measured over 100 runs: 1 slot 96 within 10%; 2 slots 81; 4 slots 54 within 10%, 87 within 25%.)"""
    errors = []
    for seed in range(40):
        _, calls = simulate(slots, 8, 60, lambda rng: 0.5 * math.exp(rng.gauss(0, 0.3)), seed=seed)
        told = statistics.median(t.service_ms for _, t in calls) / 1000
        errors.append(abs(told / statistics.median(s for s, _ in calls) - 1))
    assert sum(e <= within for e in errors) >= runs, sorted(errors)


def test_the_servers_own_timings_are_taken_as_they_are_and_still_warn():
    clock, calls = simulate(1, 8, 40, fixed(0.5), reported=True)
    assert {t.service_from for _, t in calls} == {"server"}
    assert all(t.service_ms == pytest.approx(s * 1000) for s, t in calls)
    assert (clock.slots, clock.slots_from) == (1, "server timings")


def test_a_hosted_api_is_not_measured():
    clock, calls = simulate(1, 8, 30, fixed(0.5), local=False)
    assert not clock.probing and clock.slots is None
    assert {t for _, t in calls} == {Timing()}  # told nothing: latency_ms is the figure


def test_slots_the_server_said_leave_nothing_to_measure():
    clock = ServerClock("m", 2, slots=2, local=True)
    written: list[Timing] = []
    assert not clock.probing
    clock.answered(Sent(0.0, 0.7, 1), written.append)
    assert written == [Timing(700.0, "slots")]


def test_answers_too_quick_to_tell_a_queue_from_are_not_measured():
    """A server answering in milliseconds is paced by grace's own time per call, not a queue: no slots are claimed."""
    clock, calls = simulate(1, 8, 40, fixed(MIN_SERVICE_S / 5))
    assert clock.slots is None and {t.service_ms for _, t in calls[PROBES:]} == {None}


def test_a_run_shorter_than_the_measure_decides_on_what_it_has():
    clock, calls = simulate(1, 8, PROBES + 6, fixed(0.5))
    assert clock.slots == 1 and all(t.service_ms == pytest.approx(500, abs=5) for _, t in calls)


def test_with_one_slot_the_call_started_at_the_last_answer_before_its_own_whatever_the_order_sent():
    """Two calls sent together reach a one-slot server in either order; the one answered second started when the
    first was answered, whichever the client counted as ahead of it."""
    departures = [1.0, 2.0]
    assert service_s(Sent(0.0, 2.0, ahead=0), 1, departures) == pytest.approx(1.0)
    assert service_s(Sent(0.0, 2.0, ahead=1), 1, departures) == pytest.approx(1.0)
    assert service_s(Sent(0.0, 1.0, ahead=1), 1, departures) == pytest.approx(1.0)  # first answered: never waited
