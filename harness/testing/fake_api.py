"""A local server that answers like the OpenAI, Anthropic, Gemini (and Vertex AI) and Bedrock Converse HTTP APIs.

Why a real server rather than mocks: the providers are thin wrappers over the
vendors' SDKs, and what can go wrong lives in the SDKs' handling of the wire
(status codes, headers, timeouts, bodies that do not parse). Pointing the real
SDK at this server exercises all of it offline. The perf benchmark uses it the
same way, with a fixed latency, so it has to serve dozens of connections at
once: one thread per connection, a deep listen backlog.

Usage::

    with FakeAPIServer() as srv:
        srv.enqueue(Reply.rate_limit(retry_after=3), Reply.ok("Paris [ID: 4]"))
        spec = ModelSpec("openai", "gpt-x", base_url=srv.openai_base_url, api_key="k")
        ...
        assert srv.requests[0].body["model"] == "gpt-x"

Replies are taken from the queue in order, whatever the endpoint; once it is
empty, ``responder(body)`` answers (a ``str`` or a :class:`Reply`), and without
one every call gets ``Reply.ok("OK")``. Every API honours the request's output
limit (``max_tokens`` and its aliases): a longer reply is cut to that many words
and ends with the API's "length" finish reason, as real servers do.

``FakeAPIServer(local=LocalServer())`` behaves like a self-hosted llama.cpp
server on a small machine: it works on ``slots`` requests at a time and queues
the rest (a client that gave up while queued is counted in ``dropped``, as
llama.cpp logs "disconnected before llm invoked"), rejects ``response_format``
``json_schema`` with HTTP 500 and a validation error as llama-cpp-python's
server does, and, with ``props=True``, answers ``GET /props`` and ``/slots`` like
the C++ ``llama-server``. ``latency`` is then each request's service time, spent
holding its slot: ``FakeAPIServer(latency=0.5, local=LocalServer(slots=1))``
serves one request at a time in 0.5 s and the others queue, as llama-cpp-python's
server does (and ``served`` lists each request's time in its queue and in its
slot). With ``timings=True`` each answer carries llama-server's ``timings``
(``prompt_ms`` and ``predicted_ms``: the time in its slot, queue left out).

``srv.hang = True`` (or ``FakeAPIServer(hang=True)``) makes it a server that
accepts every connection and reads every request, then never answers (a stuck
server, or a port held by something that is not one): each request waits until
the server stops, and is counted in ``hung``; model calls are still recorded in
``requests``. Setting it back to False answers the requests that come after.

``POST /bot/answer`` (``srv.bot_url``) is a deployed bot for ``http:`` systems: it
answers from the same queue and responder, a ``Reply.json(...)`` in any shape
(``api_formats.bot_answer`` answers like a small RAG bot from the articles it is
sent), and the same 429 with ``Retry-After``, 5xx, slow and ``Reply.not_json()``
replies as the model APIs; ``Reply.large(size)`` is a reply of ``size`` bytes,
generated while it is sent.

``srv.die()`` makes it a server that crashed: what is in flight is cut off, new connections are refused (one
replica of a model lost mid-run).

Servers that leak or move: ``Reply.echo_key(401)`` (or 500) quotes the request's
key or token in its error message, as careless servers do, and
``Reply.echo_key(200)`` is a bot that answers with its own token;
``Reply.redirect(url)`` sends a 307 to ``url`` (a second ``FakeAPIServer`` is
another origin, and its ``requests`` record the headers it was sent).

The three vendors' batch APIs (OpenAI's and Azure's files + batches, Anthropic's
Message Batches, Gemini's batch mode) are answered by :mod:`harness.testing.fake_batches`,
tuned with ``batch=BatchBehaviour(...)`` (or ``srv.batch``). Their calls go to
``batch_calls``, not ``requests``; each batched request is answered like the
real-time call it stands for, from the same queue and responder.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.testing.api_formats import (
    Reply,
    bot_answer,
    cite_first_id,
    echoed,
    error_body,
    error_headers,
    limit_reply,
    model_in_path,
    prompt_text,
    rejected_json_schema,
    route,
    success_body,
)
from harness.testing.fake_batches import BatchBehaviour, BatchStore, FakeBatch

__all__ = ["BatchBehaviour", "FakeAPIServer", "FakeBatch", "LocalServer", "RecordedRequest", "Reply", "bot_answer",
           "cite_first_id", "prompt_text"]

Responder = Callable[[dict[str, Any]], "str | Reply"]


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None if the body was empty or not JSON
    api: str  # "openai" | "openai-embeddings" | "anthropic" | "google" | "bedrock" | "unknown"


@dataclass
class LocalServer:
    """How a self-hosted llama.cpp server differs from a hosted API (see the module docstring)."""

    slots: int = 1  # requests worked on at once; the others wait their turn
    props: bool = False  # answer GET /props and /slots (llama-server does; llama-cpp-python's server does not)
    reject_json_schema: bool = True
    seconds_per_word: float = 0.0  # generation time on top of the server's latency, per word of the reply
    timings: bool = False  # answers carry llama-server's "timings" (prompt_ms + predicted_ms: the time in a slot)
    _gate: threading.Semaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gate = threading.Semaphore(self.slots)


def _client_gone(sock: socket.socket) -> bool:
    """The client closed the connection (its timeout) while the request waited: readable with no data."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    disable_nagle_algorithm = True  # headers and body go out as two writes; no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _hang(self) -> bool:
        """Hang mode: keep the request unanswered until the server stops; True when it was kept."""
        owner = self.server.owner
        if not owner.hang:
            return False
        with owner._lock:
            owner.hung += 1
        owner._stopping.wait()
        self.close_connection = True
        return True

    def _batch_call(self, method: str, raw: bytes = b"") -> bool:
        """Answer a batch or file endpoint (fake_batches); False when the path is none of them."""
        owner = self.server.owner
        path, _, query = self.path.partition("?")
        answer = owner._batch_store.handle(owner, method, path, query, dict(self.headers.items()), raw)
        if answer is not None:
            self._send(answer.status, answer.body, content_type=answer.content_type)
        return answer is not None

    def do_GET(self) -> None:  # noqa: N802
        if self._hang() or self._batch_call("GET"):
            return
        owner = self.server.owner
        path = self.path.partition("?")[0]
        owner.gets.append(path)  # kept apart from .requests, which tests count as model calls
        local = owner.local
        if local is not None and local.props and path == "/props":
            self._send(200, {"total_slots": local.slots, "model_path": "/models/fake.gguf",
                             "default_generation_settings": {"n_ctx": 4096}})
        elif local is not None and local.props and path == "/slots":
            self._send(200, [{"id": i, "n_ctx": 4096, "is_processing": False} for i in range(local.slots)])
        else:
            self._send(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_DELETE(self) -> None:  # noqa: N802
        if self._hang():
            return
        if not self._batch_call("DELETE"):
            self._send(404, {"error": {"message": f"no route for DELETE {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.server.owner.down:  # died: a connection kept alive from before is cut, nothing answered
            self.close_connection = True
            return
        if self.server.owner.hang and route(self.path.partition("?")[0]) == "unknown":
            self._hang()  # a batch or file endpoint: not a model call, so not recorded
            return
        if self._batch_call("POST", raw):
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        api = route(path)
        owner = self.server.owner
        owner._record(RecordedRequest("POST", path, query, {k.lower(): v for k, v in self.headers.items()}, body, api))
        if self._hang():
            return
        request = body if isinstance(body, dict) else {}
        local = owner.local
        if local is not None and api == "openai" and local.reject_json_schema and rejected_json_schema(request):
            owner.rejected += 1
            self._send(500, rejected_json_schema(request))
            return
        if api in ("google", "bedrock") and "model" not in request:  # named in the path: told to the responder too
            request = {**request, "model": model_in_path(path)}
        reply = limit_reply(owner._next_reply(request), request)
        if reply.echo_credentials:
            reply = echoed(reply, {k.lower(): v for k, v in self.headers.items()}, api)
        timings = None
        if local is not None:
            arrived = time.perf_counter()
            local._gate.acquire()  # one at a time (per slot): the rest queue here, as on a llama.cpp server
            started = time.perf_counter()
            try:
                if _client_gone(self.connection):
                    owner.dropped += 1
                    self.close_connection = True
                    return
                wait = owner.latency + reply.delay + local.seconds_per_word * len(reply.text.split())
                if wait > 0 and owner._stopping.wait(wait):
                    return
            finally:
                local._gate.release()
            served = time.perf_counter() - started
            with owner._lock:
                owner.served.append((started - arrived, served))
            if local.timings:  # a tenth reading the prompt, the rest writing the answer
                timings = {"prompt_n": 100, "prompt_ms": served * 100, "predicted_n": 10, "predicted_ms": served * 900}
        else:
            wait = owner.latency + reply.delay
            if wait > 0 and owner._stopping.wait(wait):
                self.close_connection = True  # server shutting down: drop the reply, and the connection with it
                return
        if api == "unknown":
            self._send(404, {"error": {"message": f"no route for POST {path}"}})
            return
        if reply.size is not None:
            self._send_large(reply.status, reply.size, reply.chunked)
        elif reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, reply.headers, content_type=reply.content_type or "application/json")
        elif reply.status >= 400:
            self._send(reply.status, error_body(api, reply), {**error_headers(api, reply), **reply.headers})
        else:
            answer = success_body(api, path, body if isinstance(body, dict) else {}, reply)
            if timings is not None and api == "openai":
                answer["timings"] = timings
            self._send(reply.status, answer, reply.headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, *,
              content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout); nothing to tell it


    def _send_large(self, status: int, size: int, chunked: bool) -> None:
        """``{"answer": "xxx..."}`` of ``size`` bytes, written a MB at a time (with Content-Length, or chunked)."""
        head, tail = b'{"answer": "', b'"}'
        fill = max(0, size - len(head) - len(tail))
        block = b"x" * (1 << 20)
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            if chunked:
                self.send_header("transfer-encoding", "chunked")
            else:
                self.send_header("content-length", str(len(head) + fill + len(tail)))
            self.end_headers()
            parts = [head, *([block] * (fill // len(block))), block[:fill % len(block)], tail]
            for part in parts:
                if part:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading (over its cap): expected


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler still sleeping never blocks shutdown
    request_queue_size = 256  # listen backlog: a burst of new connections is accepted, not refused
    owner: FakeAPIServer


class FakeAPIServer:
    """The server, on 127.0.0.1 and a free port, in a background thread."""

    def __init__(self, *, latency: float = 0.0, responder: Responder | None = None, local: LocalServer | None = None,
                 batch: BatchBehaviour | None = None, hang: bool = False):
        self.latency = latency
        self.hang = hang  # accept and read every request, answer none (until the server stops)
        self.hung = 0  # requests left unanswered in hang mode
        self.down = False  # died (see die())
        self.responder = responder
        self.local = local
        self.batch = batch or BatchBehaviour()  # read by each batch when it is created
        self._batch_store = BatchStore()
        self.rejected = 0  # requests refused for their response_format (local mode)
        self.dropped = 0  # requests whose client had gone before their turn came (local mode)
        self.served: list[tuple[float, float]] = []  # local mode: each request's seconds in the queue, then in a slot
        self.requests: list[RecordedRequest] = []
        self.gets: list[str] = []  # GET paths asked (/props, /slots)
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> FakeAPIServer:
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def die(self) -> None:
        """Die as a crashed server does: requests in flight are cut off unanswered (their connections closed), and
        so is every later request on a connection kept alive; new connections are refused. Safe to call from a
        responder (a replica that dies mid-run)."""
        self.down = True
        threading.Thread(target=self.stop, name="fake-api-die", daemon=True).start()

    def __enter__(self) -> FakeAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses -----------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeAPIServer is not running; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def bot_url(self) -> str:
        """A deployed bot's endpoint (``http:`` systems): POST JSON, answered from the queue or the responder
        (:func:`bot_answer` answers like a small RAG bot; ``Reply.json(...)`` sends any shape)."""
        return self.base_url + "/bot/answer"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def google_base_url(self) -> str:
        return self.base_url

    @property
    def bedrock_base_url(self) -> str:
        """For ``bedrock-runtime``'s ``endpoint_url``; Vertex AI's path goes to ``google_base_url``."""
        return self.base_url

    # --- script and record ---------------------------------------------------------
    def enqueue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(Reply.ok(r) if isinstance(r, str) else r for r in replies)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
        self._batch_store.clear()

    @property
    def batches(self) -> dict[str, FakeBatch]:
        """Batch id (Gemini: its name, "batches/…") -> its state, in creation order."""
        return self._batch_store.batches

    @property
    def batch_submitted(self) -> Counter[str]:
        """custom_id (Gemini: the item's metadata key, else f"{batch name}#{index}") -> how many accepted batches
        held it. A batch refused outright (HTTP 400, or OpenAI's "failed" at validation) does not count."""
        return self._batch_store.submitted

    @property
    def batch_calls(self) -> list[tuple[str, str]]:
        """(method, path) of every batch and file endpoint call; kept out of ``requests`` (the model calls)."""
        return self._batch_store.calls

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is None:
            return Reply.ok()
        answer = self.responder(body)
        return Reply.ok(answer) if isinstance(answer, str) else answer
