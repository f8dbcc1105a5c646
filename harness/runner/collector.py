"""Python's cycle collector during many calls in flight: run it less often.

Why: at hundreds of calls in flight every call's request, response and SDK objects live across several
collections of the youngest generation, so they are scanned again and again and promoted, and the older
generations (which hold the SDK's and the KB's objects) are collected often too: the event loop stops for each.
Measured with benchmarks/perf/bench_concurrency.py (5,000 calls, 500 in flight, the openai SDK on aiohttp):
about 1,000 collections during the calls, 5 with the youngest generation's threshold at 20,000 allocations
instead of 700; the engine alone (a provider that only sleeps 0.5 s, 500 in flight) went from 6.3-6.8 s to 5.5 s
for 5,000 calls (ideal 5 s; with asyncio.timeout and normalise's fast path, same round). Grace's CPU per call
moved less than the shared machine's noise. Nothing is kept longer than a few thousand allocations more, and
reference counting frees everything without cycles at once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 20_000  # allocations between collections of the youngest generation (Python's default: 700)


@contextmanager
def fewer_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """The youngest generation's threshold raised to at least ``young`` for the block, the older ones as they are;
    restored after. A threshold of 0 (automatic collection switched off by the user) is left alone."""
    before = gc.get_threshold()
    if before[0] == 0 or before[0] >= young:
        yield
        return
    gc.set_threshold(young, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
