"""Client-side rate limiting and retry backoff."""

from __future__ import annotations

import asyncio
import time

import pytest

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


def test_unlimited_limiter_never_waits(monkeypatch):
    """No limit: a thousand calls of any size go without one sleep; under a limit the call after the bucket's
    last token sleeps (the planted case, so the check can fail)."""

    class Slept(Exception):
        pass

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        raise Slept

    monkeypatch.setattr("harness.runner.limits.asyncio.sleep", sleep)

    async def go(lim: RateLimiter, calls: int) -> None:
        for _ in range(calls):
            await lim.acquire(10_000)

    asyncio.run(go(RateLimiter(), 1000))
    assert slept == []
    with pytest.raises(Slept):
        asyncio.run(go(RateLimiter(rpm=1), 2))
    assert len(slept) == 1 and slept[0] > 50  # a minute's one token, minus the moment since


# -- the timeout breaker: a server that accepts calls and answers none stops the model -------------------------------
class _Server:
    """Answers like an SDK with a timeout: a hung question raises the timeout error after ``timeout_s``; a server
    with ``slots`` works on that many at once (the rest wait their turn, inside the timeout)."""

    def __init__(self, hung=lambda qid: True, slots: int | None = None, seconds: float = 0.0):
        """``hung(qid)``: whether the call just sent (the last of ``sent``) is never answered."""
        self.hung, self.seconds, self.sent = hung, seconds, []
        self.slots = asyncio.Semaphore(slots) if slots else None


def _plan(server: _Server, n: int, timeout: float = 0.05):
    from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, RequestContext
    from harness.runner.engine import RunPlan

    class Stuck(Provider):
        provider_name = "stuck"

        async def complete(self, request: Request) -> Completion:
            qid = request.context.question_id
            server.sent.append(qid)
            stuck = server.hung(qid)

            async def work() -> Completion:
                if server.slots is not None:
                    async with server.slots:
                        await asyncio.sleep(server.seconds)
                if stuck:
                    await asyncio.Event().wait()
                return Completion("ok [ID: 1]")

            try:
                return await asyncio.wait_for(work(), self.timeout_s)
            except TimeoutError:
                raise ProviderError("timeout", f"request timed out after {self.timeout_s}s", retryable=True) from None

    spec = ModelSpec("openai", "m", base_url="http://127.0.0.1:9/v1", timeout_s=timeout)  # Stuck answers it
    jobs = [Request([{"role": "user", "content": f"q{i}"}], context=RequestContext(f"q{i}", f"q{i}", []))
            for i in range(n)]
    return RunPlan(spec, Stuck(spec), jobs)


def _run(plan, tmp_path, concurrency: int, max_attempts: int = 6) -> list[dict]:
    from harness.core.files import JsonlAppender
    from harness.runner.engine import Engine

    out = JsonlAppender(tmp_path / "rows.jsonl")

    def record(plan, job, request, res):
        return {"q": job.context.question_id, "error": res.error.model_dump() if res.error else None,
                "attempts": res.attempts}

    engine = Engine([plan], lambda spec, job: job, lambda spec, request, job: job.context.question_id, record, out,
                    None, concurrency=concurrency, max_attempts=max_attempts, backoff_base=0.01)
    asyncio.run(engine.run())
    out.fh.close()
    import json

    return [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]


def test_a_server_that_never_answers_stops_the_model_after_its_first_timeouts(tmp_path):
    """Before: timeouts only sent one call at a time; each of 30 calls was tried 6 times (180 timeouts). A working
    server answers the first call of its queue within the timeout, so before any answer every timeout counts."""
    server = _Server()
    plan = _plan(server, 30)
    rows = _run(plan, tmp_path, concurrency=4)
    st = plan.stats
    assert st.aborted.startswith("openai:m: 3 timeouts in a row from http://127.0.0.1:9/v1 (no answer within 0.05s, "
                                 "none answered yet); is the server stuck, or slower than --timeout? Stopping this model")
    # a server on this machine that does not say its slots gets its first calls one at a time (server_queue measures
    # them): three sent, each timing out alone; none sent again
    assert len(server.sent) == 3 and st.timeouts == 3
    assert len(rows) == 30 and all(r["error"] for r in rows)
    assert st.not_tried == 27 == sum(r["error"]["kind"] == "not_tried" for r in rows)
    assert sum(r["attempts"] for r in rows) == len(server.sent)  # every attempt on file is one request sent


def test_a_server_that_answered_and_then_stops_is_stopped_after_three_timeouts_one_at_a_time(tmp_path):
    server = _Server(hung=lambda qid: len(server.sent) > 5)
    plan = _plan(server, 30)
    rows = _run(plan, tmp_path, concurrency=4)
    st = plan.stats
    # four in flight when it stopped answering: their timeouts may be the queue, so one at a time from then on;
    # then three calls sent alone time out, and the model stops
    assert st.aborted.startswith("openai:m: 7 timeouts in a row") and "the last 3 sent one at a time" in st.aborted
    assert len(server.sent) == 12 and st.in_flight_limit == 1
    assert sum(r["error"] is None for r in rows) == 5 and st.not_tried == 30 - 12 + 3


def test_at_one_call_at_a_time_a_stuck_server_costs_three_timeouts(tmp_path):
    """A llama.cpp server that says it has one slot gets one call at a time from the start. Before: six attempts
    per call, each a timeout, for every call of the run."""
    server = _Server()
    plan = _plan(server, 10)
    rows = _run(plan, tmp_path, concurrency=1)
    assert plan.stats.aborted.startswith("openai:m: 3 timeouts in a row")
    assert server.sent == ["q0", "q0", "q1"]  # a call timed out alone twice is given up; the next one's first stops
    assert [r["attempts"] for r in rows[:2]] == [2, 1] and plan.stats.not_tried == 8


def test_one_prompt_that_always_times_out_fails_alone_and_the_model_goes_on(tmp_path):
    server = _Server(hung=lambda qid: qid == "q2")
    plan = _plan(server, 8)
    rows = _run(plan, tmp_path, concurrency=1)
    assert plan.stats.aborted is None  # its two timeouts in a row are one call, not a stuck server
    failed = [r for r in rows if r["error"]]
    assert [(r["q"], r["error"]["kind"], r["attempts"]) for r in failed] == [("q2", "timeout", 2)]  # not 6
    assert len(rows) == 8 and len(server.sent) == 9


def test_timeouts_in_a_servers_queue_send_one_at_a_time_but_do_not_stop_the_model(tmp_path):
    # one slot, 0.02 s per answer, 0.06 s timeout, 8 sent at once: the queued ones time out, never those sent alone
    server = _Server(hung=lambda qid: False, slots=1, seconds=0.02)
    plan = _plan(server, 16, timeout=0.06)
    rows = _run(plan, tmp_path, concurrency=8)
    assert plan.stats.aborted is None and plan.stats.in_flight_limit == 1 and plan.stats.timeouts >= 3
    assert len(rows) == 16 and not any(r["error"] for r in rows)
