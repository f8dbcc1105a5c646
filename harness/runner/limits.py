"""Client-side rate limits (requests and tokens per minute) and retry backoff.

Staying under a provider's published limits avoids 429 storms; when a 429
comes anyway, the runner waits what ``Retry-After`` says, else backs off
exponentially with full jitter so parallel workers do not retry in lockstep.
"""

from __future__ import annotations

import asyncio
import random
import time


class RateLimiter:
    """Token buckets for requests/minute and tokens/minute; ``None`` means unlimited."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        self.rpm, self.tpm = rpm, tpm
        self._lock = asyncio.Lock()
        self._req_tokens = float(rpm or 0)
        self._tok_tokens = float(tpm or 0)
        self._last = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        dt, self._last = now - self._last, now
        if self.rpm:
            self._req_tokens = min(self.rpm, self._req_tokens + dt * self.rpm / 60)
        if self.tpm:
            self._tok_tokens = min(self.tpm, self._tok_tokens + dt * self.tpm / 60)

    async def acquire(self, tokens: int = 0) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while True:
                self._refill()
                need_req = 1 - self._req_tokens if self.rpm else 0
                need_tok = min(tokens, self.tpm) - self._tok_tokens if self.tpm else 0
                if need_req <= 0 and need_tok <= 0:
                    if self.rpm:
                        self._req_tokens -= 1
                    if self.tpm:
                        self._tok_tokens -= min(tokens, self.tpm)
                    return
                wait = max(need_req * 60 / self.rpm if self.rpm else 0, need_tok * 60 / self.tpm if self.tpm else 0)
                await asyncio.sleep(max(wait, 0.001))


def backoff_delay(attempt: int, retry_after: float | None, base: float = 1.0, cap: float = 60.0) -> float:
    """Seconds to wait before attempt ``attempt + 1``; a server's Retry-After wins (capped at 10 min)."""
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, 600.0)
    return random.uniform(0.5, 1.0) * min(cap, base * 2 ** (attempt - 1))
