"""Client-side rate limiting and retry backoff."""

from __future__ import annotations

import asyncio
import time

from harness.runner.limits import RateLimiter, backoff_delay


def test_backoff_honours_retry_after_and_grows_exponentially_within_the_cap():
    assert backoff_delay(1, 7.5) == 7.5
    assert backoff_delay(3, 10_000) == 600.0  # a silly Retry-After is capped at 10 minutes
    for attempt in range(1, 8):
        d = backoff_delay(attempt, None, base=1.0, cap=30.0)
        top = min(30.0, 2 ** (attempt - 1))
        assert top * 0.5 <= d <= top  # full jitter within [half, all] of the exponential step


def test_requests_per_minute_limit_makes_the_next_call_wait():
    async def go() -> tuple[float, float]:
        lim = RateLimiter(rpm=60)
        t0 = time.monotonic()
        for _ in range(60):  # the bucket starts full: a minute's worth goes at once
            await lim.acquire()
        burst = time.monotonic() - t0
        await lim.acquire()  # the 61st waits for one token to refill (1 s at 60/min)
        return burst, time.monotonic() - t0

    burst, total = asyncio.run(go())
    assert burst < 0.5 and total >= 0.9


def test_unlimited_limiter_never_waits():
    async def go() -> None:
        lim = RateLimiter()
        for _ in range(1000):
            await lim.acquire(10_000)

    asyncio.run(go())
