"""A local server that answers like the OpenAI, Anthropic and Gemini HTTP APIs.

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
one every call gets ``Reply.ok("OK")``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "str | Reply"]

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_ID_RE = re.compile(r"\[ID:\s*([^\]\s]+)\s*\]")


@dataclass
class Reply:
    """One scripted answer. Build with the class methods; fields are the raw knobs."""

    status: int = 200
    text: str = "OK"
    input_tokens: int | None = None  # default: a word count of the prompt
    output_tokens: int | None = None  # default: a word count of the reply
    finish_reason: str | None = None  # default: the API's own "normal stop" value
    delay: float = 0.0  # seconds, on top of the server's fixed latency
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None  # sent verbatim (malformed replies)
    message: str = ""  # error message for non-2xx replies
    retry_delay_in_body: float | None = None  # Gemini-style google.rpc.RetryInfo

    @classmethod
    def ok(cls, text: str = "OK", *, input_tokens: int | None = None, output_tokens: int | None = None,
           finish_reason: str | None = None, delay: float = 0.0) -> Reply:
        return cls(text=text, input_tokens=input_tokens, output_tokens=output_tokens,
                   finish_reason=finish_reason, delay=delay)

    @classmethod
    def rate_limit(cls, retry_after: float | str | None = 1, *, ms: float | None = None, header: bool = True) -> Reply:
        """429. ``retry_after`` in seconds or an HTTP date; ``header=False`` puts it only in a Gemini body."""
        headers: dict[str, str] = {}
        if header and retry_after is not None:
            headers["retry-after"] = str(retry_after)
        if ms is not None:
            headers["retry-after-ms"] = str(ms)
        body_delay = float(retry_after) if isinstance(retry_after, (int, float)) else None
        return cls(status=429, headers=headers, message="rate limit exceeded", retry_delay_in_body=body_delay)

    @classmethod
    def error(cls, status: int = 500, message: str = "", *, retry_after: float | None = None) -> Reply:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        return cls(status=status, headers=headers, message=message or f"fake error {status}")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls(status=401, message="invalid api key")

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose JSON body is cut off mid-object."""
        return cls(raw_body=b'{"id": "broken", "choices": [{"index": 0, "message": {"role": "assis')

    @classmethod
    def slow(cls, seconds: float, text: str = "OK") -> Reply:
        return cls(text=text, delay=seconds)


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None if the body was empty or not JSON
    api: str  # "openai" | "openai-embeddings" | "anthropic" | "google" | "unknown"


def prompt_text(body: Any) -> str:
    """All prompt text in a request body of any of the three APIs, in order."""
    if not isinstance(body, dict):
        return ""
    chunks: list[str] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    add(part.get("text") if "text" in part else part.get("content"))
                else:
                    add(part)
        elif isinstance(content, dict):
            add(content.get("parts") if "parts" in content else content.get("text"))

    add(body.get("system"))
    add(body.get("systemInstruction"))
    for message in body.get("messages") or []:
        add(message.get("content") if isinstance(message, dict) else None)
    for content in body.get("contents") or []:
        add(content)
    add(body.get("input"))
    return "\n".join(chunks)


def cite_first_id(body: dict[str, Any]) -> str:
    """A responder for benchmarks: answer from the first ``[ID: x]`` in the prompt, or refuse."""
    match = _ID_RE.search(prompt_text(body))
    if match is None:
        return "I don't have enough information to answer this question."
    return f"According to the article, this is answered there. [ID: {match.group(1)}]"


def _words(text: str) -> int:
    return max(1, len(text.split()))


def _embedding(text: str, dims: int) -> list[float]:
    """Hashed bag of words: deterministic, and texts sharing words come out similar."""
    vec = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vec[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._send(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        api = _route(path)
        owner = self.server.owner
        owner._record(RecordedRequest("POST", path, query, {k.lower(): v for k, v in self.headers.items()}, body, api))
        reply = owner._next_reply(body if isinstance(body, dict) else {})
        wait = owner.latency + reply.delay
        if wait > 0 and owner._stopping.wait(wait):
            return  # server shutting down: drop the reply
        if api == "unknown":
            self._send(404, {"error": {"message": f"no route for POST {path}"}})
            return
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, reply.headers)
        elif reply.status >= 400:
            self._send(reply.status, _error_body(api, reply), reply.headers)
        else:
            self._send(reply.status, _success_body(api, path, body if isinstance(body, dict) else {}, reply), reply.headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout); nothing to tell it


def _route(path: str) -> str:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/embeddings"):
        return "openai-embeddings"
    if path.endswith("/messages"):
        return "anthropic"
    if re.search(r"/models/[^/]+:generateContent$", path):
        return "google"
    return "unknown"


def _success_body(api: str, path: str, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt = prompt_text(body)
    tokens_in = reply.input_tokens if reply.input_tokens is not None else _words(prompt)
    tokens_out = reply.output_tokens if reply.output_tokens is not None else _words(reply.text)
    model = body.get("model") or path.rsplit("/", 1)[-1].split(":")[0]
    if api == "openai":
        return {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                         "finish_reason": reply.finish_reason or "stop", "logprobs": None}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
        }
    if api == "openai-embeddings":
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dims = int(body.get("dimensions") or 64)
        return {
            "object": "list", "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": _embedding(str(t), dims)} for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": tokens_in, "total_tokens": tokens_in},
        }
    if api == "anthropic":
        return {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": reply.finish_reason or "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": reply.text}]},
                        "finishReason": reply.finish_reason or "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out,
                          "totalTokenCount": tokens_in + tokens_out},
        "modelVersion": model,
    }


def _error_body(api: str, reply: Reply) -> dict[str, Any]:
    if api == "anthropic":
        kind = _ANTHROPIC_TYPES.get(reply.status, "api_error" if reply.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": reply.message}}
    if api == "google":
        error: dict[str, Any] = {"code": reply.status, "message": reply.message,
                                 "status": _GOOGLE_STATUS.get(reply.status, "UNKNOWN")}
        if reply.retry_delay_in_body is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                 "retryDelay": f"{reply.retry_delay_in_body:g}s"}]
        return {"error": error}
    code = "rate_limit_exceeded" if reply.status == 429 else ("invalid_api_key" if reply.status == 401 else None)
    return {"error": {"message": reply.message, "type": "fake_error", "param": None, "code": code}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler still sleeping never blocks shutdown
    request_queue_size = 256  # listen backlog: a burst of new connections is accepted, not refused
    owner: "FakeAPIServer"


class FakeAPIServer:
    """The server, on 127.0.0.1 and a free port, in a background thread."""

    def __init__(self, *, latency: float = 0.0, responder: Responder | None = None):
        self.latency = latency
        self.responder = responder
        self.requests: list[RecordedRequest] = []
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
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def google_base_url(self) -> str:
        return self.base_url

    # --- script and record ---------------------------------------------------------
    def enqueue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(Reply.ok(r) if isinstance(r, str) else r for r in replies)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()

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
