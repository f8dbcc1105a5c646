"""An OpenAI-compatible fake server on aiohttp, in a process of its own: for measuring grace at hundreds of connections.

Why another server beside :class:`~harness.testing.fake_api.FakeAPIServer`: that one runs a thread per
connection inside the test's own process, which is what the SDK tests need (scripted replies, recorded requests)
but at 500 connections its threads, and the GIL it shares with grace, would be what is measured. This one is an
asyncio server in a child process: a thousand requests sleeping their latency cost it almost nothing, so the figures
are grace's. It answers ``POST .../chat/completions`` in the Chat Completions wire format (the answer cites the
first ``[ID: x]`` of the prompt, as :func:`~harness.testing.api_formats.cite_first_id` does; a request with tools
is answered by the scripted searching model its name says, :class:`~harness.testing.tool_agents.ToolAgents`) and ``POST
.../bot/answer`` like a small bot, after ``latency`` seconds; ``GET /stats`` says how many it answered. With ``slots``, it works on that many at once and queues the rest, as a GPU
server does with its batch: three of them are a model's three replicas.

Usage::

    with AioFakeServer(latency=0.5) as srv:          # starts python -m harness.testing.aio_api
        spec = ModelSpec("openai", "m", base_url=srv.openai_base_url, api_key="k")
        ...
        srv.kill()                                    # dies mid-run (a replica lost), as kill -9 would
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
from typing import Any

from harness.testing.api_formats import Reply, bot_answer, cite_first_id, limit_reply, success_body
from harness.testing.tool_agents import ToolAgents


def _handlers(latency: float, counts: dict[str, int], slots: int = 0) -> Any:
    from aiohttp import web

    gate = asyncio.Semaphore(slots) if slots > 0 else None

    async def work() -> None:
        """The latency; with ``slots``, at most that many at once and the rest queue (a GPU server's batch)."""
        if gate is None:
            await asyncio.sleep(latency)
            return
        async with gate:
            await asyncio.sleep(latency)

    async def chat(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        counts["requests"] += 1
        await work()
        # a request with tools: one of the scripted models that search (its name says which)
        reply = limit_reply(ToolAgents()(body) if body.get("tools") else Reply.ok(cite_first_id(body)), body)
        counts["answered"] += 1
        return web.json_response(success_body("openai", request.path, body, reply))

    async def bot(request: web.Request) -> web.Response:
        body = await request.json()
        counts["requests"] += 1
        await work()
        reply = bot_answer(body)
        counts["answered"] += 1
        return web.json_response(success_body("bot", request.path, body, reply))

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(counts)

    return chat, bot, stats


async def serve(port: int, latency: float, slots: int = 0) -> None:
    from aiohttp import web

    counts = {"requests": 0, "answered": 0}
    chat, bot, stats = _handlers(latency, counts, slots)
    app = web.Application(client_max_size=16 << 20)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    app.router.add_post("/bot/answer", bot)
    app.router.add_get("/stats", stats)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096, reuse_address=True)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(bound, flush=True)  # the parent reads the port from the first line
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


class AioFakeServer:
    """``python -m harness.testing.aio_api`` as a child process, on 127.0.0.1 and a free port."""

    def __init__(self, *, latency: float = 0.0, slots: int = 0):
        self.latency, self.slots = latency, slots
        self._proc: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> AioFakeServer:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._proc = subprocess.Popen([sys.executable, "-m", "harness.testing.aio_api", "--latency", str(self.latency),
                                       "--slots", str(self.slots)],
                                      stdout=subprocess.PIPE, text=True, env=env)
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the aiohttp fake server did not start (it said {line!r}); is aiohttp installed?")
        self.port = int(line)
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def kill(self) -> None:
        """Die at once, as ``kill -9`` would: connections in flight are reset, new ones refused."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()

    def stats(self) -> dict[str, int]:
        import urllib.request

        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=5) as resp:  # noqa: S310 - our own child
            return json.loads(resp.read())

    def cpu_seconds(self) -> float | None:
        """The server's own CPU seconds so far (Linux /proc), to show it was not the limit."""
        try:
            with open(f"/proc/{self.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def bot_url(self) -> str:
        return self.base_url + "/bot/answer"

    def __enter__(self) -> AioFakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--slots", type=int, default=0, help="requests worked on at once, the rest queue (0: no limit)")
    args = ap.parse_args(argv)
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.port, args.latency, args.slots))


if __name__ == "__main__":
    main()
