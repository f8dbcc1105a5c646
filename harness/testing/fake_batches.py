"""The fake server's batch endpoints: OpenAI's (and Azure's) Batch API, Anthropic's Message Batches and Gemini's
batch mode, in their documented wire formats, so the real SDK clients can submit, poll, cancel, list and collect.

Why a state machine and not canned bodies: what a batch client gets wrong is the
waiting (a batch that is still running, one that expired half done, one being
cancelled), so each batch moves through its API's own states as it is polled:
it ends on its ``polls_to_finish``-th status GET. Its requests are answered only
then, each exactly as the same real-time call would be (the scripted queue, then
the responder, then "OK", cut to the request's output limit), and a reply with
status >= 400 becomes that one request's error inside the batch, in the API's
shape. ``expire_after`` ends the batch after that many answers, the rest reported
expired; a cancelled batch answers nothing more, the rest reported cancelled.
``tear_results``, ``drop_results`` and ``stray_results`` hand back a results file
as a provider's partial outage might: a line cut in half, a line missing, a line
for a request never submitted (Gemini's inline results: missing and stray only).

Where a vendor leaves a detail open the fake picks one and says so here:
a batch over ``max_requests``/``max_bytes`` or with bad lines fails at once
(OpenAI: in the create reply, status "failed"); cancelling an ended batch changes
nothing; Gemini reports an item's error as a google.rpc.Status (gRPC ``code``),
and an expired or cancelled Gemini batch still lists every item, the unanswered
ones with DEADLINE_EXCEEDED (4) or CANCELLED (1).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.parser import BytesParser
from typing import Any, Protocol
from urllib.parse import parse_qs

from harness.testing.api_formats import Reply, error_body, limit_reply, success_body


class FakeAPIServer(Protocol):
    """What a batch reads of the server it belongs to (:class:`harness.testing.fake_api.FakeAPIServer`, which
    imports this module: named here, not imported, so the two files are no circle)."""

    batch: BatchBehaviour
    anthropic_base_url: str

    def _next_reply(self, body: dict[str, Any]) -> Reply: ...

__all__ = ["Answer", "BatchBehaviour", "BatchStore", "FakeBatch", "FakeItem"]

_DAY = 24 * 3600
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # Anthropic's rule for custom_id
_GRPC = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 499: 1, 500: 13, 501: 12, 503: 14, 504: 4}
_GEMINI_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."


@dataclass
class BatchBehaviour:
    """How the fake's batches behave; read when a batch is created, so a change affects only later batches."""

    polls_to_finish: int = 1  # the batch ends on its n-th status GET after creation (0: ended already in the create reply)
    expire_after: int | None = None  # the batch EXPIRES after answering this many of its requests; the rest expire
    max_requests: int | None = None  # reject (OpenAI: status "failed"; Anthropic/Gemini: HTTP 400) a bigger batch
    max_bytes: int | None = None  # the same, for the input's size in bytes (OpenAI: the file; others: the POST body)
    tear_results: tuple[int, ...] = ()  # the result lines of these requests (by input index) are cut in half
    drop_results: tuple[int, ...] = ()  # ... are left out of the results
    stray_results: int = 0  # results are added for this many custom_ids never submitted ("stray-0", ...)


@dataclass
class FakeItem:
    custom_id: str  # Gemini: the item's metadata "key", else f"{batch name}#{index}"
    body: dict[str, Any]  # the request as the real-time API would get it
    metadata: dict[str, Any] | None = None  # Gemini's per-item metadata, echoed in its response
    outcome: str = "pending"  # pending | succeeded | errored | expired | canceled
    reply: Reply | None = None
    result: dict[str, Any] | None = None  # the success body, or the error body for an errored item


@dataclass
class FakeBatch:
    id: str  # OpenAI "batch_…", Anthropic "msgbatch_…", Gemini "batches/…"
    api: str  # "openai" | "anthropic" | "google"
    status: str  # in the API's own words: "in_progress", "ended", "BATCH_STATE_RUNNING", ...
    items: list[FakeItem]
    behaviour: BatchBehaviour
    created_at: float = field(default_factory=time.time)
    polls: int = 0  # status GETs so far
    times: dict[str, float] = field(default_factory=dict)  # when it reached each state (in_progress, ended, ...)
    info: dict[str, Any] = field(default_factory=dict)  # what the create call said (endpoint, file, model, metadata)
    errors: list[dict[str, Any]] = field(default_factory=list)  # OpenAI validation errors of a failed batch
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def custom_ids(self) -> list[str]:
        return [item.custom_id for item in self.items]

    @property
    def counts(self) -> Counter[str]:
        """Items per outcome: pending, succeeded, errored, expired, canceled."""
        return Counter(item.outcome for item in self.items)

    @property
    def ended(self) -> bool:
        return "ended" in self.times


@dataclass
class FakeFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def wire(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.data), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed", "expires_at": None,
                "status_details": None}


@dataclass
class Answer:
    status: int
    body: Any  # JSON-able, or bytes sent as they are
    content_type: str = "application/json"


Handler = Callable[["BatchStore", "FakeAPIServer", "re.Match[str]", "_Call"], Answer]


@dataclass
class _Call:
    method: str
    query: dict[str, list[str]]
    content_type: str
    raw: bytes
    google: bool  # sent by the google-genai client (its x-goog-api-client / x-goog-api-key header)

    def json(self) -> dict[str, Any]:
        try:
            body = json.loads(self.raw) if self.raw else {}
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}

    def arg(self, name: str, default: str | None = None) -> str | None:
        return self.query.get(name, [default])[0]


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)


def _form_fields(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body's fields, name -> (filename, bytes), parsed by the stdlib's email parser."""
    message = BytesParser(policy=policy.HTTP).parsebytes(b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if message.is_multipart():
        for part in message.iter_parts():  # type: ignore[attr-defined]
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str):
                fields[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


def _jsonl(lines: Sequence[dict[str, Any] | str]) -> bytes:
    """JSON lines; a str is a line written as it is (a torn one)."""
    return b"".join((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n" for line in lines)


def _damage(lines: list[dict[str, Any]], b: BatchBehaviour, stray: Callable[[dict[str, Any], str], dict[str, Any]],
            *, indices: list[int] | None = None, tear: bool = True, strays: bool = True) -> list[dict[str, Any] | str]:
    """The result lines as a faulty provider hands them back: ``drop_results`` left out, ``tear_results`` cut in
    half (a str, no longer JSON), and ``stray_results`` copies of the first line renamed by ``stray``."""
    out: list[dict[str, Any] | str] = []
    for index, line in zip(indices or range(len(lines)), lines, strict=True):
        if index in b.drop_results:
            continue
        text = json.dumps(line)
        out.append(text[: len(text) // 2] if tear and index in b.tear_results else line)
    if lines and strays:
        out += [stray(lines[0], f"stray-{n}") for n in range(b.stray_results)]
    return out


def _renamed(line: dict[str, Any], custom_id: str) -> dict[str, Any]:
    return {**line, "custom_id": custom_id}


def _openai_error(status: int, message: str) -> Answer:
    return Answer(status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})


def _anthropic_error(status: int, message: str) -> Answer:
    return Answer(status, error_body("anthropic", Reply.error(status, message)))


def _google_error(status: int, message: str) -> Answer:
    return Answer(status, error_body("google", Reply.error(status, message)))


class BatchStore:
    """Files and batches of one server, behind one lock (the server answers each connection in its own thread)."""

    def __init__(self) -> None:
        self.batches: dict[str, FakeBatch] = {}
        self.submitted: Counter[str] = Counter()
        self.calls: list[tuple[str, str]] = []
        self.files: dict[str, FakeFile] = {}
        self._lock = threading.RLock()

    def clear(self) -> None:
        with self._lock:
            self.batches.clear()
            self.submitted.clear()
            self.calls.clear()
            self.files.clear()

    def handle(self, owner: FakeAPIServer, method: str, path: str, query: str, headers: Mapping[str, str],
               raw: bytes) -> Answer | None:
        """The answer to a batch or file endpoint call, or None when ``path`` is none of them.

        Gemini's API version "v1" (google-genai's default) puts its batches where OpenAI's are
        (``GET /v1/batches[/{id}]``), so those routes go by the client: google-genai names itself in headers.
        """
        lower = {k.lower(): v for k, v in headers.items()}
        call = _Call(method, parse_qs(query), lower.get("content-type", ""), raw,
                     google="x-goog-api-client" in lower or "x-goog-api-key" in lower)
        for verb, pattern, handler, client in _ROUTES:
            match = pattern.match(path)
            if match is not None and verb == method and client in ("any", "google" if call.google else "other"):
                with self._lock:
                    self.calls.append((method, path))
                    return handler(self, owner, match, call)
        return None

    # --- the state machine, shared by the three APIs ------------------------------
    def _admit(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
        self.batches[batch.id] = batch
        self.submitted.update(batch.custom_ids)
        if batch.behaviour.polls_to_finish <= 0:
            self._finish(owner, batch)

    def _poll(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
        """One status GET: a cancelled batch ends, a running one ends on its ``polls_to_finish``-th."""
        if batch.ended:
            return
        batch.polls += 1
        batch.times.setdefault("in_progress", time.time())
        if "cancelling" in batch.times or batch.polls >= batch.behaviour.polls_to_finish:
            self._finish(owner, batch)
        elif batch.api == "openai":
            batch.status = "in_progress"
        elif batch.api == "google":
            batch.status = "BATCH_STATE_RUNNING"

    def _finish(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
        """Answer the items (unless cancelled), in input order, as the same real-time calls would be."""
        cancelled = "cancelling" in batch.times
        limit = batch.behaviour.expire_after
        answered = 0
        for item in batch.items:
            if cancelled:
                item.outcome = "canceled"
            elif limit is not None and answered >= limit:
                item.outcome = "expired"
            else:
                item.reply = limit_reply(owner._next_reply(item.body), item.body, batch.api)
                item.outcome = "errored" if item.reply.status >= 400 else "succeeded"
                item.result = _item_result(batch, item)
                answered += 1
        now = time.time()
        batch.times.setdefault("in_progress", now)
        batch.times["ended"] = now
        expired = any(item.outcome == "expired" for item in batch.items)
        if batch.api == "openai":
            batch.status = "cancelled" if cancelled else "expired" if expired else "completed"
            self._openai_files(batch)
        elif batch.api == "anthropic":
            batch.status = "ended"
        else:
            batch.status = ("BATCH_STATE_CANCELLED" if cancelled else "BATCH_STATE_EXPIRED" if expired
                            else "BATCH_STATE_SUCCEEDED")

    def _cancel(self, batch: FakeBatch) -> None:
        if batch.ended or "cancelling" in batch.times:
            return  # cancelling an ended batch changes nothing
        batch.times["cancelling"] = time.time()
        batch.status = {"openai": "cancelling", "anthropic": "canceling"}.get(batch.api, batch.status)

    def _batch(self, batch_id: str, api: str) -> FakeBatch | None:
        batch = self.batches.get(batch_id)
        return batch if batch is not None and batch.api == api else None

    def _newest_first(self, api: str) -> list[FakeBatch]:
        return [b for b in reversed(self.batches.values()) if b.api == api]

    # --- OpenAI (and Azure OpenAI): files + batches -------------------------------
    def _openai_files(self, batch: FakeBatch) -> None:
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        out_at: list[int] = []
        err_at: list[int] = []
        for index, item in enumerate(batch.items):
            line: dict[str, Any] = {"id": _new_id("batch_req_"), "custom_id": item.custom_id, "response": None,
                                    "error": None}
            if item.outcome in ("succeeded", "errored"):
                assert item.reply is not None
                line["response"] = {"status_code": item.reply.status, "request_id": _new_id("req_"),
                                    "body": item.result}
            else:
                code = "batch_expired" if item.outcome == "expired" else "batch_cancelled"
                message = ("This request could not be executed before the completion window expired."
                           if item.outcome == "expired" else "This request was not executed because the batch was cancelled.")
                line["error"] = {"code": code, "message": message}
            (out if item.outcome == "succeeded" else err).append(line)
            (out_at if item.outcome == "succeeded" else err_at).append(index)
        b = batch.behaviour  # stray lines go to the output file, or to the error file when nothing was answered
        if out:
            data = _jsonl(_damage(out, b, _renamed, indices=out_at))
            batch.output_file_id = self._file(f"{batch.id}_output.jsonl", "batch_output", data).id
        if err:
            data = _jsonl(_damage(err, b, _renamed, indices=err_at, strays=not out))
            batch.error_file_id = self._file(f"{batch.id}_error.jsonl", "batch_output", data).id

    def _file(self, filename: str, purpose: str, data: bytes) -> FakeFile:
        file = FakeFile(_new_id("file-"), filename, purpose, data)
        self.files[file.id] = file
        return file

    def _openai_upload(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        fields = _form_fields(call.content_type, call.raw)
        if "file" not in fields:
            return _openai_error(400, "'file' is a required property (multipart/form-data)")
        filename, data = fields["file"]
        purpose = fields.get("purpose", (None, b"batch"))[1].decode()
        return Answer(200, self._file(filename or "upload.jsonl", purpose, data).wire())

    def _openai_file(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        file = self.files.get(m["id"])
        if file is None:
            return _openai_error(404, f"No such File object: {m['id']}")
        if call.method == "DELETE":
            del self.files[file.id]
            return Answer(200, {"id": file.id, "object": "file", "deleted": True})
        if m["content"]:
            return Answer(200, file.data, "application/octet-stream")
        return Answer(200, file.wire())

    def _openai_create(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        body = call.json()
        file = self.files.get(str(body.get("input_file_id")))
        if file is None:
            return _openai_error(400, f"No such File object: {body.get('input_file_id')}")
        endpoint = str(body.get("endpoint") or "")
        batch = FakeBatch(_new_id("batch_"), "openai", "validating", [], owner.batch,
                          info={"endpoint": endpoint, "input_file_id": file.id,
                                "completion_window": body.get("completion_window") or "24h",
                                "metadata": body.get("metadata")})
        batch.items, batch.errors = _openai_lines(file.data, endpoint, batch.behaviour)
        if batch.errors:
            batch.items, batch.status = [], "failed"
            batch.times["failed"] = batch.times["ended"] = time.time()
            self.batches[batch.id] = batch
        else:
            self._admit(owner, batch)
        return Answer(200, _openai_batch(batch))

    def _openai_get(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batch = self._batch(m["id"], "openai")
        if batch is None:
            return _openai_error(404, f"No batch found with id '{m['id']}'.")
        if m["cancel"]:
            self._cancel(batch)
        else:
            self._poll(owner, batch)
        return Answer(200, _openai_batch(batch))

    def _openai_list(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batches = self._newest_first("openai")
        after = call.arg("after")
        if after is not None:
            ids = [b.id for b in batches]
            batches = batches[ids.index(after) + 1:] if after in ids else []
        limit = int(call.arg("limit", "20") or 20)
        page = batches[:limit]
        return Answer(200, {"object": "list", "data": [_openai_batch(b) for b in page],
                            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None,
                            "has_more": len(batches) > limit})

    # --- Anthropic Message Batches ------------------------------------------------
    def _anthropic_create(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        requests = call.json().get("requests")
        behaviour = owner.batch
        if not isinstance(requests, list) or not requests:
            return _anthropic_error(400, "requests: Field required (a non-empty list)")
        seen: set[str] = set()
        items = []
        for i, request in enumerate(requests):
            custom_id = request.get("custom_id") if isinstance(request, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                return _anthropic_error(400, f"requests.{i}.custom_id: String should match pattern "
                                             "'^[a-zA-Z0-9_-]{1,64}$'")
            if custom_id in seen:
                return _anthropic_error(400, f"Duplicate custom_id in requests: {custom_id!r}; custom_id must be unique "
                                             "within a batch.")
            if not isinstance(request.get("params"), dict):
                return _anthropic_error(400, f"requests.{i}.params: Field required")
            seen.add(custom_id)
            items.append(FakeItem(custom_id, request["params"]))
        if behaviour.max_requests is not None and len(items) > behaviour.max_requests:
            return _anthropic_error(400, f"A batch may hold at most {behaviour.max_requests} requests; got {len(items)}.")
        if behaviour.max_bytes is not None and len(call.raw) > behaviour.max_bytes:
            return _anthropic_error(400, f"A batch may be at most {behaviour.max_bytes} bytes; got {len(call.raw)}.")
        batch = FakeBatch(_new_id("msgbatch_"), "anthropic", "in_progress", items, behaviour)
        self._admit(owner, batch)
        return Answer(200, _anthropic_batch(batch, owner))

    def _anthropic_get(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batch = self._batch(m["id"], "anthropic")
        if batch is None:
            return _anthropic_error(404, f"Message batch {m['id']} not found.")
        action = m["action"]
        if action == "cancel":
            self._cancel(batch)
        elif action == "results":
            if not batch.ended:
                return _anthropic_error(400, f"Message batch {batch.id} has not ended; its results are not ready.")
            lines = _damage([_anthropic_result(item) for item in batch.items], batch.behaviour, _renamed)
            return Answer(200, _jsonl(lines), "application/binary")
        else:
            self._poll(owner, batch)
        return Answer(200, _anthropic_batch(batch, owner))

    def _anthropic_list(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batches = self._newest_first("anthropic")
        ids = [b.id for b in batches]
        after, before = call.arg("after_id"), call.arg("before_id")
        if after is not None:
            batches = batches[ids.index(after) + 1:] if after in ids else []
        elif before is not None:
            batches = batches[:ids.index(before)] if before in ids else []
        limit = int(call.arg("limit", "20") or 20)
        page = batches[-limit:] if before is not None and after is None else batches[:limit]
        return Answer(200, {"data": [_anthropic_batch(b, owner) for b in page], "has_more": len(batches) > limit,
                            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None})

    # --- Gemini batch mode (the Gemini Developer API; Vertex AI's batch jobs are not faked) ---------------
    def _google_create(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batch_spec = call.json().get("batch")
        batch_spec = batch_spec if isinstance(batch_spec, dict) else {}
        source = batch_spec.get("inputConfig") or {}
        requests = (source.get("requests") or {}).get("requests") if isinstance(source, dict) else None
        behaviour = owner.batch
        if not isinstance(requests, list) or not requests:
            return _google_error(400, "batch.input_config: inlined requests are required (file input is not faked)")
        name = "batches/" + secrets.token_hex(10)
        items = []
        for i, request in enumerate(requests):
            if not isinstance(request, dict) or not isinstance(request.get("request"), dict):
                return _google_error(400, f"batch.input_config.requests.requests[{i}].request: required")
            metadata = request.get("metadata") if isinstance(request.get("metadata"), dict) else None
            key = str(metadata["key"]) if metadata and "key" in metadata else f"{name}#{i}"
            items.append(FakeItem(key, request["request"], metadata))
        if behaviour.max_requests is not None and len(items) > behaviour.max_requests:
            return _google_error(400, f"A batch may hold at most {behaviour.max_requests} requests; got {len(items)}.")
        if behaviour.max_bytes is not None and len(call.raw) > behaviour.max_bytes:
            return _google_error(400, f"A batch may be at most {behaviour.max_bytes} bytes; got {len(call.raw)}.")
        batch = FakeBatch(name, "google", "BATCH_STATE_PENDING", items, behaviour,
                          info={"model": f"models/{m['model']}", "displayName": batch_spec.get("displayName")})
        self._admit(owner, batch)
        return Answer(200, _google_batch(batch))

    def _google_get(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batch = self._batch("batches/" + m["id"], "google")
        if batch is None:
            return _google_error(404, f"Batch batches/{m['id']} not found.")
        if call.method == "DELETE":
            del self.batches[batch.id]
            return Answer(200, {})
        if m["cancel"]:
            if not batch.ended:  # Gemini has no "cancelling" state: the batch is cancelled at once
                self._cancel(batch)
                self._finish(owner, batch)
            return Answer(200, {})  # google.protobuf.Empty
        self._poll(owner, batch)
        return Answer(200, _google_batch(batch))

    def _google_list(self, owner: FakeAPIServer, m: re.Match[str], call: _Call) -> Answer:
        batches = self._newest_first("google")
        start = int(call.arg("pageToken", "0") or 0)
        size = int(call.arg("pageSize", "50") or 50)
        page: dict[str, Any] = {"operations": [_google_batch(b) for b in batches[start:start + size]]}
        if start + size < len(batches):
            page["nextPageToken"] = str(start + size)
        return Answer(200, page)


def _openai_lines(data: bytes, endpoint: str, behaviour: BatchBehaviour) -> tuple[list[FakeItem], list[dict[str, Any]]]:
    """The input file's requests, or the errors that fail the batch (the fake's codes, one per bad line)."""
    errors: list[dict[str, Any]] = []

    def fail(code: str, message: str, line: int | None = None, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "line": line, "param": param})

    if behaviour.max_bytes is not None and len(data) > behaviour.max_bytes:
        fail("file_too_large", f"The input file is {len(data)} bytes; at most {behaviour.max_bytes} are allowed.")
    items: list[FakeItem] = []
    seen: set[str] = set()
    for n, text in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            line = None
        if not isinstance(line, dict):
            fail("invalid_json_line", "This line is not parseable as valid JSON.", n)
            continue
        custom_id, url, body = line.get("custom_id"), line.get("url"), line.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            fail("missing_required_parameter", "custom_id is required.", n, "custom_id")
        elif custom_id in seen:
            fail("duplicate_custom_id", "The custom_id for this request is a duplicate of another request. The "
                 "custom_id parameter must be unique for each request in a batch.", n, "custom_id")
        elif url != endpoint:
            fail("mismatched_endpoint", f"The url {url!r} of this request does not match the batch endpoint "
                 f"{endpoint!r}.", n, "url")
        elif str(line.get("method", "POST")).upper() != "POST" or not isinstance(body, dict):
            fail("invalid_request", "Each request needs method POST and a JSON object body.", n, "body")
        else:
            seen.add(custom_id)
            items.append(FakeItem(custom_id, body))
    if not items and not errors:
        fail("empty_file", "The input file holds no requests.")
    if behaviour.max_requests is not None and len(items) > behaviour.max_requests:
        fail("too_many_requests", f"The batch has {len(items)} requests; at most {behaviour.max_requests} are allowed.")
    return items, errors


def _item_result(batch: FakeBatch, item: FakeItem) -> dict[str, Any]:
    """An answered item's body: the real-time success body, or the real-time error body."""
    assert item.reply is not None
    if batch.api == "openai":
        api, path = "openai", str(batch.info.get("endpoint") or "/v1/chat/completions")
    elif batch.api == "anthropic":
        api, path = "anthropic", "/v1/messages"
    else:
        api, path = "google", f"/v1beta/{batch.info['model']}:generateContent"
    if item.reply.status >= 400:
        return error_body(api, item.reply)
    body = {k: v for k, v in item.body.items() if not (api == "google" and k == "model")}  # modelVersion from path
    return success_body(api, path, body, item.reply)


def _openai_batch(batch: FakeBatch) -> dict[str, Any]:
    t, counts = batch.times, batch.counts
    done = [item.result for item in batch.items if item.outcome == "succeeded" and item.result]
    usage_in = sum(r.get("usage", {}).get("prompt_tokens", 0) for r in done)
    usage_out = sum(r.get("usage", {}).get("completion_tokens", 0) for r in done)
    model = next((item.body.get("model") for item in batch.items if item.body.get("model")), None)
    return {
        "id": batch.id, "object": "batch", "endpoint": batch.info.get("endpoint"), "model": model,
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "input_file_id": batch.info.get("input_file_id"), "completion_window": batch.info.get("completion_window"),
        "status": batch.status, "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
        "created_at": int(batch.created_at), "in_progress_at": _int(t.get("in_progress")),
        "expires_at": int(batch.created_at) + _DAY,
        "finalizing_at": _int(t.get("ended")) if batch.status in ("completed", "expired") else None,
        "completed_at": _int(t.get("ended")) if batch.status == "completed" else None,
        "failed_at": _int(t.get("failed")), "expired_at": _int(t.get("ended")) if batch.status == "expired" else None,
        "cancelling_at": _int(t.get("cancelling")),
        "cancelled_at": _int(t.get("ended")) if batch.status == "cancelled" else None,
        "request_counts": {"total": len(batch.items), "completed": counts["succeeded"], "failed": counts["errored"]},
        "usage": {"input_tokens": usage_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": usage_out,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": usage_in + usage_out},
        "metadata": batch.info.get("metadata"),
    }


def _anthropic_batch(batch: FakeBatch, owner: FakeAPIServer) -> dict[str, Any]:
    counts = batch.counts
    return {
        "id": batch.id, "type": "message_batch", "processing_status": batch.status,
        "request_counts": {"processing": counts["pending"], "succeeded": counts["succeeded"],
                           "errored": counts["errored"], "canceled": counts["canceled"], "expired": counts["expired"]},
        "ended_at": _iso(batch.times.get("ended")), "created_at": _iso(batch.created_at),
        "expires_at": _iso(batch.created_at + _DAY), "archived_at": None,
        "cancel_initiated_at": _iso(batch.times.get("cancelling")),
        "results_url": f"{owner.anthropic_base_url}/v1/messages/batches/{batch.id}/results" if batch.ended else None,
    }


def _anthropic_result(item: FakeItem) -> dict[str, Any]:
    result: dict[str, Any] = {"type": item.outcome}
    if item.outcome == "succeeded":
        result["message"] = item.result
    elif item.outcome == "errored":
        result["error"] = item.result
    return {"custom_id": item.custom_id, "result": result}


def _google_item(item: FakeItem) -> dict[str, Any]:
    """One inlined response: the GenerateContentResponse, or a google.rpc.Status for an item that got none."""
    out: dict[str, Any] = {}
    if item.outcome == "succeeded":
        out["response"] = item.result
    elif item.outcome == "errored":
        assert item.reply is not None
        out["error"] = {"code": _GRPC.get(item.reply.status, 13 if item.reply.status >= 500 else 3),
                        "message": item.reply.message}
    elif item.outcome == "expired":
        out["error"] = {"code": 4, "message": "The batch expired before this request was processed."}
    else:
        out["error"] = {"code": 1, "message": "The batch was cancelled before this request was processed."}
    if item.metadata is not None:
        out["metadata"] = item.metadata
    return out


def _google_batch(batch: FakeBatch) -> dict[str, Any]:
    """A long-running Operation whose metadata is the GenerateContentBatch (what the SDK reads) and, when done,
    whose response is its output."""
    counts = batch.counts
    stats = {"requestCount": str(len(batch.items)), "successfulRequestCount": str(counts["succeeded"]),
             "failedRequestCount": str(len(batch.items) - counts["succeeded"] - counts["pending"]),
             "pendingRequestCount": str(counts["pending"])}
    updated = max([batch.created_at, *batch.times.values()])
    meta: dict[str, Any] = {"@type": _GEMINI_TYPE + "GenerateContentBatch", "name": batch.id,
                            "model": batch.info["model"], "createTime": _iso(batch.created_at),
                            "updateTime": _iso(updated), "batchStats": stats, "state": batch.status}
    if batch.info.get("displayName"):
        meta["displayName"] = batch.info["displayName"]
    operation: dict[str, Any] = {"name": batch.id, "metadata": meta}
    if batch.ended:
        answers = _damage([_google_item(item) for item in batch.items], batch.behaviour,
                          lambda line, key: {**line, "metadata": {"key": key}}, tear=False)
        output = {"inlinedResponses": {"inlinedResponses": answers}}
        meta["endTime"] = _iso(batch.times["ended"])
        meta["output"] = output
        operation["done"] = True
        operation["response"] = {"@type": _GEMINI_TYPE + "GenerateContentBatchOutput", **output}
    return operation


_V1 = r"^/(?:v1|openai)"  # OpenAI's /v1, and Azure OpenAI's /openai (with ?api-version=)
_GEMINI = r"^/v1(?:beta|alpha)?"
_ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = [  # method, path, handler, client ("google", "other")
    ("POST", re.compile(_V1 + r"/files$"), BatchStore._openai_upload, "any"),
    ("GET", re.compile(_V1 + r"/files/(?P<id>[^/]+)(?P<content>/content)?$"), BatchStore._openai_file, "any"),
    ("DELETE", re.compile(_V1 + r"/files/(?P<id>[^/]+)(?P<content>)$"), BatchStore._openai_file, "any"),
    ("POST", re.compile(_V1 + r"/batches$"), BatchStore._openai_create, "any"),
    ("GET", re.compile(_V1 + r"/batches$"), BatchStore._openai_list, "other"),
    ("GET", re.compile(_V1 + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), BatchStore._openai_get, "other"),
    ("POST", re.compile(_V1 + r"/batches/(?P<id>[^/:]+)(?P<cancel>/cancel)$"), BatchStore._openai_get, "any"),
    ("POST", re.compile(r"^/v1/messages/batches$"), BatchStore._anthropic_create, "any"),
    ("GET", re.compile(r"^/v1/messages/batches$"), BatchStore._anthropic_list, "any"),
    ("GET", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)(?:/(?P<action>results))?$"), BatchStore._anthropic_get,
     "any"),
    ("POST", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/(?P<action>cancel)$"), BatchStore._anthropic_get, "any"),
    ("POST", re.compile(_GEMINI + r"/models/(?P<model>[^/:]+):batchGenerateContent$"), BatchStore._google_create, "any"),
    ("GET", re.compile(_GEMINI + r"/batches$"), BatchStore._google_list, "google"),
    ("GET", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), BatchStore._google_get, "google"),
    ("DELETE", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), BatchStore._google_get, "google"),
    ("POST", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>:cancel)$"), BatchStore._google_get, "any"),
]
