"""The boundary around user code: a ``python:`` system's function and a plugin's import run where they cannot end,
hang or alter grace.

Why a process and not a thread: a function that calls ``sys.exit()``, raises ``KeyboardInterrupt``, calls
``os._exit``, crashes the interpreter, forks, or never returns would take grace with it if it ran in grace's own
process (a thread cannot be stopped, and it keeps the interpreter from exiting). So a ``python:`` system runs in
a worker process grace owns (:mod:`harness.providers.user_code_worker`), one per model, started before the first
call and kept for the run (the pipeline's imports and indexes load once):

* requests and answers cross as JSON lines over pipes, so the function gets copies: whatever it does to the
  articles or messages it is shown, grace's own objects (shared by every model of the run) are untouched;
* an answer is checked on the worker's side and again on grace's (types, finite numbers, text any file can
  hold: a lone surrogate becomes U+FFFD); a wrong one is an error row naming the field;
* ``sys.exit()``, ``KeyboardInterrupt`` or any other exception from the function is an error row; a worker
  that ends anyway (``os._exit``, a signal, a crash) fails the calls it held with an error row saying how it
  ended, and the next call starts a new one;
* a call that takes longer than the model's timeout is a ``timeout`` row: its worker is killed (with every
  process it started) and the next call starts a new one;
* the worker runs in a process group of its own, with its own stdout and stderr (forwarded to grace's stderr
  line by line): a process it forks can neither answer in its place nor keep grace's output open, and the
  whole group is killed when the run ends, so grace exits as soon as the run is written.

A plugin's import goes through :func:`probe_import` first: the module is imported in a short-lived process
under a time limit, so one that exits or hangs at import is reported as broken instead of stopping
``grace providers`` or ``grace run``.

What it costs: each request and answer is copied through a pipe (0.1 to 0.2 ms of CPU per call, grace's side
and the worker's together; the requests queued in one turn of the event loop go in one write), and one
process per ``python:`` model starts once per run (Python and the pipeline's imports); figures from
``benchmarks/perf/bench_python_system.py`` in docs/measurements.md.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import orjson

from harness.providers.base import ProviderError

# How long a worker may take to import the pipeline before its first call (models and indexes load here).
START_TIMEOUT_S = 300.0
# How long a plugin's import may take (GRACE_PLUGIN_IMPORT_TIMEOUT overrides, in seconds).
PLUGIN_IMPORT_TIMEOUT_S = 60.0
_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding the harness package
_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from harness.providers.user_code_worker import main; main()")
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()
_KINDS = {"rate_limit", "server", "timeout", "connection", "bad_response", "auth", "bad_request", "invalid_request",
          "context_length", "unknown_model", "other"}


def how_it_ended(returncode: int) -> str:
    """``exit code 7`` or ``killed by signal SIGSEGV``: what a user can search for."""
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _kill_group(pid: int) -> None:
    """SIGKILL the worker's process group: the worker and every process it forked that stayed in the group."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


@atexit.register
def _kill_all() -> None:
    """Nothing a pipeline started outlives grace, even when a run ends without closing its providers."""
    for worker in list(_LIVE):
        worker.kill("grace exited")


class Worker:
    """One worker process: its pipes, the calls it holds, and how they are settled.

    The pipes are non-blocking and served by the event loop itself (``add_reader``): a request is one
    ``write``, the answers that have arrived are read and settled in one go, and no thread hop sits on a call's
    path; the event loop never waits on a pipe, so a worker that stops reading cannot stall it. Two daemon
    threads per worker: one forwards the worker's output, one waits for the process to end and fails the
    calls it held.
    """

    def __init__(self, init: dict[str, Any], label: str):
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, _ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        _LIVE.add(self)
        self.calls: dict[int, asyncio.Future[dict[str, Any]]] = {}  # touched in the event loop's thread only
        self.loop: asyncio.AbstractEventLoop | None = None
        self.hello: dict[str, Any] | None = None
        self.started = threading.Event()
        self.ended: str | None = None  # how the process ended, once it has
        self.why_killed: str | None = None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self._rbuf, self._wbuf, self._flushing = b"", bytearray(), False
        try:
            self.proc.stdin.write(orjson.dumps(init) + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # ended at once: _wait says how
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        for target in (self._forward, self._wait):
            threading.Thread(target=target, name=f"grace-user-code-{target.__name__}", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.ended is None and self.why_killed is None

    def wait_started(self, timeout_s: float) -> bool:
        """Before any event loop: read until the worker's greeting (or its end); False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.started.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self._out], [], [], min(left, 0.05))
            if ready:
                self._drain()
        return True

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serve the pipes from this event loop (each ``asyncio.run`` has its own)."""
        if self.loop is not loop:
            self.loop = loop
            if self.alive:
                loop.add_reader(self._out, self._drain)
                if self._wbuf:
                    loop.add_writer(self._in, self._flush)

    def send(self, frame: bytes) -> None:
        """Queue a request; what is queued in one turn of the event loop goes in one write (a write to a pipe
        wakes the worker: one per batch, not one per call)."""
        self._wbuf += frame
        if not self._flushing and self.loop is not None:
            self._flushing = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flushing = False
        if not self._wbuf:
            return
        try:
            n = os.write(self._in, self._wbuf)
        except BlockingIOError:
            n = 0
        except (OSError, ValueError):
            n = len(self._wbuf)  # the worker is gone: _wait fails the calls, saying how
        del self._wbuf[:n]
        if self.loop is not None and not self.loop.is_closed():
            if self._wbuf:
                self.loop.add_writer(self._in, self._flush)
            else:
                self.loop.remove_writer(self._in)

    def _drain(self) -> None:
        """Every answer that has arrived, settled at once."""
        try:
            data = os.read(self._out, 1 << 20)
        except BlockingIOError:
            return
        except (OSError, ValueError):
            data = b""
        if not data:  # the worker and everything it forked closed the pipe
            if self.loop is not None and not self.loop.is_closed():
                self.loop.remove_reader(self._out)
            return
        *lines, self._rbuf = (self._rbuf + data).split(b"\n")
        for line in lines:
            try:
                frame = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(frame, dict):
                continue
            if "hello" in frame:
                self.hello = frame["hello"] if isinstance(frame["hello"], dict) else {"error": "an unreadable greeting"}
                self.started.set()
            else:
                self._settle(frame)

    def _forward(self) -> None:
        """The pipeline's prints and logging, on grace's stderr as they come."""
        err = sys.stderr
        for line in self.proc.stderr:
            try:
                err.write(line.decode("utf-8", "replace"))
                err.flush()
            except (OSError, ValueError):
                pass

    def _wait(self) -> None:
        returncode = self.proc.wait()
        self.ended = how_it_ended(returncode)
        _kill_group(self.proc.pid)  # what it forked goes with it
        self.started.set()
        loop = self.loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._fail_all)
            except RuntimeError:
                pass  # the loop has closed: nobody waits for these calls any more

    def _settle(self, frame: dict[str, Any]) -> None:
        fut = self.calls.pop(frame.get("id"), None)  # type: ignore[arg-type]
        if fut is not None and not fut.done():
            fut.set_result(frame)

    def _fail_all(self) -> None:
        why = self.why_killed or f"its worker process ended ({self.ended}) while answering"
        calls, self.calls = self.calls, {}
        for fut in calls.values():
            if not fut.done():
                fut.set_exception(ProviderError("other", f"{self.label}: {why}; a new worker is started for the "
                                                "next call", retryable=True))

    def _hang_up(self) -> None:
        """Stop serving the pipes and close grace's end of the requests (the worker reads its end)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self._out)
            loop.remove_writer(self._in)
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass

    def kill(self, why: str) -> None:
        if self.why_killed is None:
            self.why_killed = why
        _kill_group(self.proc.pid)
        self._hang_up()

    async def close(self, wait_s: float = 2.0) -> None:
        """Let the worker end on its own (its input closes), then kill whatever is left of its group."""
        self._hang_up()
        deadline = time.monotonic() + wait_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        self.kill("the run ended")


class UserCode:
    """A user's function behind the boundary: :meth:`start` before any call, :meth:`call` per request.

    ``init`` says what the worker imports (see :mod:`harness.providers.user_code_worker`); ``label`` is how
    error rows name the system (``python:my_rag.py:answer``).
    """

    def __init__(self, init: dict[str, Any], label: str):
        self.init, self.label = init, label
        self.worker: Worker | None = None
        self._ids = itertools.count(1)
        self._starting: asyncio.Lock | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Start the worker and wait until the function is imported; the worker's greeting, or its refusal
        (``{"error": ...}``: a missing function, an import that failed, exited or took too long)."""
        worker = self.worker = Worker(self.init, self.label)
        if not worker.wait_started(timeout_s):
            worker.kill("its import took too long")
            return {"error": f"{self.label}: importing it did not finish within {timeout_s:g}s"}
        return self._greeting(worker)

    def _greeting(self, worker: Worker) -> dict[str, Any]:
        if worker.hello is not None:
            return worker.hello
        return {"error": f"{self.label}: its worker process ended ({worker.ended}) while importing it"}

    async def _ready_worker(self) -> Worker:
        worker = self.worker
        if worker is not None and worker.alive:
            return worker
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            worker = self.worker
            if worker is None or not worker.alive:
                worker = self.worker = Worker(self.init, self.label)
                worker.attach(asyncio.get_running_loop())
                deadline = time.monotonic() + START_TIMEOUT_S
                while not worker.started.is_set():
                    if time.monotonic() > deadline:
                        worker.kill("its import took too long")
                        raise ProviderError("other", f"{self.label}: restarting it, its import did not finish "
                                            f"within {START_TIMEOUT_S:g}s", retryable=False)
                    await asyncio.sleep(0.01)
                hello = self._greeting(worker)
                if "error" in hello:
                    raise ProviderError("other", str(hello["error"]), retryable=False)
            return worker

    async def call(self, request: Any, timeout_s: float) -> dict[str, Any]:
        """One request (anything orjson writes: dataclasses, dicts, lists) -> the worker's answer frame
        (``{"ok": {...}}`` or ``{"err": {...}}``); a hang past ``timeout_s`` or a dead worker raises ProviderError."""
        worker = await self._ready_worker()
        loop = asyncio.get_running_loop()
        worker.attach(loop)
        n = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = loop.create_future()
        worker.calls[n] = fut
        worker.send(orjson.dumps({"id": n, "req": request}) + b"\n")
        if not worker.alive:  # it ended before the request was queued: nobody else will fail this call
            worker._fail_all()
        timer = loop.call_later(timeout_s, _expire, fut)  # lighter than asyncio.wait_for, paid on every call
        try:
            return await fut
        except TimeoutError:
            worker.kill(f"another call did not answer within {timeout_s:g}s and its worker was stopped")
            worker._fail_all()
            raise ProviderError("timeout", f"no answer within {timeout_s:g}s ({self.label} was stopped and a new "
                                "worker is started for the next call)", retryable=True) from None
        finally:
            timer.cancel()
            worker.calls.pop(n, None)

    async def aclose(self) -> None:
        if self.worker is not None:
            await self.worker.close()
            self.worker = None

    def kill(self) -> None:
        if self.worker is not None:
            self.worker.kill("grace stopped it")
            self.worker = None


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def error_of(frame: dict[str, Any], label: str) -> ProviderError:
    """The worker's error frame as the ProviderError an error row records (nothing in it is trusted)."""
    err = frame.get("err") if isinstance(frame.get("err"), dict) else {}
    kind = err.get("kind") if err.get("kind") in _KINDS else "other"
    message = err.get("message")
    message = message if isinstance(message, str) and message else f"{label} failed without a message"
    retry_after = err.get("retry_after")
    status = err.get("status")
    return ProviderError(kind, message[:2000], retryable=err.get("retryable") is True,
                         retry_after=float(retry_after) if isinstance(retry_after, int | float)
                         and not isinstance(retry_after, bool) and 0 <= retry_after < 86_400 else None,
                         status=status if isinstance(status, int) and not isinstance(status, bool) else None)


# --- plugins ------------------------------------------------------------------------------------------------------

_PROBE = r"""
import json, os, sys
out = os.fdopen(os.dup(1), "w")
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)
sys.path[:] = json.loads(sys.argv[1])
module, attr = sys.argv[2], sys.argv[3]
try:
    import importlib
    obj = importlib.import_module(module)
    for part in [p for p in attr.split(".") if p]:
        obj = getattr(obj, part)
    said = ""
except SystemExit as exc:
    said = f"it called sys.exit({exc.code!r}) at import"
except BaseException as exc:
    said = f"{type(exc).__name__}: {exc}"
out.write(json.dumps({"error": said}) + "\n")
out.flush()
os._exit(0)
"""


def plugin_import_timeout() -> float:
    raw = os.environ.get("GRACE_PLUGIN_IMPORT_TIMEOUT", "")
    try:
        value = float(raw)
    except ValueError:
        return PLUGIN_IMPORT_TIMEOUT_S
    return value if value > 0 else PLUGIN_IMPORT_TIMEOUT_S


class ImportProbe:
    """Import ``module`` (and look ``attr`` up) in a process of its own, under a time limit; started at once,
    so several plugins are probed side by side. :meth:`result` is ``""`` when the import worked, else what went
    wrong (an exception, a ``sys.exit``, a process that ended or hung)."""

    def __init__(self, module: str, attr: str):
        self.proc = subprocess.Popen([sys.executable, "-c", _PROBE, orjson.dumps(sys.path).decode(), module, attr],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, close_fds=True)
        self.t0 = time.monotonic()

    def result(self, timeout_s: float | None = None) -> str:
        limit = plugin_import_timeout() if timeout_s is None else timeout_s
        try:
            out, _ = self.proc.communicate(timeout=max(0.0, limit - (time.monotonic() - self.t0)))
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.communicate()
            return (f"its import did not finish within {limit:g}s (it hangs at import; GRACE_PLUGIN_IMPORT_TIMEOUT "
                    "sets the limit)")
        finally:
            _kill_group(self.proc.pid)
        try:
            said = orjson.loads(out.splitlines()[-1])["error"] if out.strip() else None
        except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
            said = None
        if not isinstance(said, str):
            return f"its import ended the process ({how_it_ended(self.proc.returncode)})"
        return said
