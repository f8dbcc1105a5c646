"""The worker side of the boundary (:mod:`harness.providers.user_code`): the process a ``python:`` system runs in.

grace starts it with ``python -c`` and talks to it over its stdin and stdout, one JSON object per line. The
first line says what to import (``init``: the model, the file or module, the function, grace's ``sys.path``);
the worker answers ``{"hello": {...}}`` once the function is loaded, or ``{"hello": {"error": ...}}`` when it
cannot be (grace then refuses the model before any call). Each later line is a request
``{"id": N, "req": {...}}``; each answer is ``{"id": N, "ok": {...}}`` or ``{"id": N, "err": {...}}``, written
when the function returns, in any order.

Why the pipes are moved first: the function may print. Its stdout and stderr are the worker's stderr, which
grace forwards; the protocol has file descriptors of its own that the function never sees as ``sys.stdout``.
A sync function runs in a thread pool (a blocking client never holds up the other calls), an async one as a
task on the worker's event loop, which also reads the requests (no thread hop). Whatever it raises,
``SystemExit`` and ``KeyboardInterrupt`` included, is an error answer; a process it forked never answers in
the worker's place (it leaves at once when it returns here).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

_PID = os.getpid()


def _text(value: Any) -> Any:
    """Lone surrogates (half an emoji, undecodable bytes) replaced by U+FFFD, so any file can hold the text."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, dict):
        return {k: _text(v) for k, v in value.items()}
    return value


class Channel:
    """The protocol's end in the worker: frames written whole, from any thread."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lock = threading.Lock()

        self.batch: list[bytes] = []

    @staticmethod
    def encode(frame: dict[str, Any]) -> bytes:
        if os.getpid() != _PID:  # a process the function forked: it must not answer in the worker's place
            os._exit(0)
        try:
            return orjson.dumps(frame) + b"\n"
        except TypeError:  # a lone surrogate
            return orjson.dumps(_text(frame)) + b"\n"

    def send(self, frame: dict[str, Any]) -> None:
        self.write(self.encode(frame))

    def write(self, data: bytes) -> None:
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]

    def queue(self, frame: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
        """From the event loop: the answers finished in one turn of it go in one write."""
        if not self.batch:
            loop.call_soon(self.flush)
        self.batch.append(self.encode(frame))

    def flush(self) -> None:
        data, self.batch = b"".join(self.batch), []
        self.write(data)


def _said(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}) while answering; a system returns its answer or raises an exception"
    if isinstance(exc, KeyboardInterrupt):
        return "raised KeyboardInterrupt while answering"
    return f"{type(exc).__name__}: {exc}"


def main() -> None:
    ipc_in = os.fdopen(os.dup(0), "rb", buffering=0)  # unbuffered: the requests after the first line are read raw
    channel = Channel(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # the function's prints go to stderr, which grace forwards
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    init = orjson.loads(ipc_in.readline())
    sys.path[:] = init["sys_path"]

    from harness.core.errors import GraceError
    from harness.prompts import RetrievedArticle
    from harness.providers.base import ProviderError
    from harness.providers.python_system import SystemRequest, Target, from_exception, load_function, plain

    model, label = init["model"], f"python:{init['model']}"
    target = Target(init["source"], init["function"], init.get("version"), init.get("path") and __import__(
        "pathlib").Path(init["path"]))
    try:
        fn = load_function(target, model)
    except GraceError as exc:
        channel.send({"hello": {"error": str(exc)}})
        os._exit(0)
    except SystemExit as exc:
        channel.send({"hello": {"error": f"{label}: importing {target.source} called sys.exit({exc.code!r})"}})
        os._exit(0)
    except BaseException as exc:  # KeyboardInterrupt, GeneratorExit...: still the user's import
        channel.send({"hello": {"error": f"{label}: importing {target.source} failed: {type(exc).__name__}: {exc}"}})
        os._exit(0)
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="grace-system")

    def error(exc: BaseException) -> dict[str, Any]:
        err = from_exception(exc) if isinstance(exc, Exception) else ProviderError(
            "other", f"{label} {_said(exc)}", retryable=False)
        return {"kind": err.kind, "message": err.message, "retryable": bool(err.retryable),
                "retry_after": err.retry_after, "status": err.status}

    def reply(n: int, value: Any) -> dict[str, Any]:
        try:
            return {"id": n, "ok": plain(value, model)}
        except ProviderError as exc:
            return {"id": n, "err": error(exc)}

    async def awaited(value: Any) -> Any:
        return await value

    def call_sync(n: int, request: SystemRequest) -> None:
        try:
            value = fn(request)
            if inspect.isawaitable(value):  # a sync wrapper (functools.partial...) around an async function
                value = asyncio.run_coroutine_threadsafe(awaited(value), loop).result()
            frame = reply(n, value)
        except BaseException as exc:  # noqa: BLE001 (the user's exit or interrupt is an error row, not the end)
            frame = {"id": n, "err": error(exc)}
        channel.send(frame)

    async def call_async(n: int, request: SystemRequest) -> None:
        try:
            frame = reply(n, await fn(request))
        except BaseException as exc:  # noqa: BLE001
            frame = {"id": n, "err": error(exc)}
        channel.queue(frame, loop)

    tasks: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references
    pending = [b""]

    def readable() -> None:
        """Every request that has arrived, started at once: an async one as a task on this loop (no thread hop),
        a sync one in the pool."""
        try:
            data = os.read(in_fd, 1 << 20)
        except BlockingIOError:
            return
        if not data:  # grace closed the pipe (the run is over, or grace was killed)
            loop.stop()
            return
        *lines, pending[0] = (pending[0] + data).split(b"\n")
        for line in lines:
            msg = orjson.loads(line)
            req = msg["req"]
            request = SystemRequest(
                question_id=req["question_id"], question=req["question"],
                articles=[RetrievedArticle(a["id"], a["title"], a["text"], a["score"]) for a in req["articles"]],
                messages=req["messages"], k=req["k"], language=req["language"], repeat=req["repeat"])
            if is_async:
                task = loop.create_task(call_async(msg["id"], request))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            else:
                pool.submit(call_sync, msg["id"], request)

    channel.send({"hello": {"async": is_async}})
    in_fd = ipc_in.fileno()
    os.set_blocking(in_fd, False)
    loop.add_reader(in_fd, readable)
    try:
        loop.run_forever()
    finally:  # the input closed, or a task of the function's own raised SystemExit / KeyboardInterrupt
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            os.killpg(0, signal.SIGKILL)  # this worker's group: itself and whatever the function forked
        finally:
            os._exit(0)
