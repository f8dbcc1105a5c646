"""What the fake server's three batch APIs share: a batch, its items and files, and the state machine they move through.

The APIs' wire formats and routes are theirs (:mod:`harness.testing.fake_batches_openai`,
:mod:`~harness.testing.fake_batches_anthropic`, :mod:`~harness.testing.fake_batches_gemini`); the server asks
:class:`harness.testing.fake_batches.BatchStore`, which routes a call to them.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from harness.testing.api_formats import Reply, error_body, limit_reply, success_body


class FakeAPIServer(Protocol):
    """What a batch reads of the server it belongs to (:class:`harness.testing.fake_api.FakeAPIServer`, which
    imports this module: named here, not imported, so the two files are no circle)."""

    batch: BatchBehaviour
    anthropic_base_url: str

    def _next_reply(self, body: dict[str, Any]) -> Reply: ...


DAY = 24 * 3600


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


Handler = Callable[["BatchState", "FakeAPIServer", "re.Match[str]", "Call"], Answer]


@dataclass
class Call:
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


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def epoch(t: float | None) -> int | None:
    return None if t is None else int(t)


def jsonl(lines: Sequence[dict[str, Any] | str]) -> bytes:
    """JSON lines; a str is a line written as it is (a torn one)."""
    return b"".join((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n" for line in lines)


def damage(lines: list[dict[str, Any]], b: BatchBehaviour, stray: Callable[[dict[str, Any], str], dict[str, Any]],
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


def renamed(line: dict[str, Any], custom_id: str) -> dict[str, Any]:
    return {**line, "custom_id": custom_id}


class BatchState:
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

    # --- the state machine, shared by the three APIs ------------------------------
    def admit(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
        self.batches[batch.id] = batch
        self.submitted.update(batch.custom_ids)
        if batch.behaviour.polls_to_finish <= 0:
            self.finish(owner, batch)

    def poll(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
        """One status GET: a cancelled batch ends, a running one ends on its ``polls_to_finish``-th."""
        if batch.ended:
            return
        batch.polls += 1
        batch.times.setdefault("in_progress", time.time())
        if "cancelling" in batch.times or batch.polls >= batch.behaviour.polls_to_finish:
            self.finish(owner, batch)
        elif batch.api == "openai":
            batch.status = "in_progress"
        elif batch.api == "google":
            batch.status = "BATCH_STATE_RUNNING"

    def finish(self, owner: FakeAPIServer, batch: FakeBatch) -> None:
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
                item.result = item_result(batch, item)
                answered += 1
        now = time.time()
        batch.times.setdefault("in_progress", now)
        batch.times["ended"] = now
        expired = any(item.outcome == "expired" for item in batch.items)
        if batch.api == "openai":
            batch.status = "cancelled" if cancelled else "expired" if expired else "completed"
            self.openai_result_files(batch)
        elif batch.api == "anthropic":
            batch.status = "ended"
        else:
            batch.status = ("BATCH_STATE_CANCELLED" if cancelled else "BATCH_STATE_EXPIRED" if expired
                            else "BATCH_STATE_SUCCEEDED")

    def cancel(self, batch: FakeBatch) -> None:
        if batch.ended or "cancelling" in batch.times:
            return  # cancelling an ended batch changes nothing
        batch.times["cancelling"] = time.time()
        batch.status = {"openai": "cancelling", "anthropic": "canceling"}.get(batch.api, batch.status)

    def batch(self, batch_id: str, api: str) -> FakeBatch | None:
        batch = self.batches.get(batch_id)
        return batch if batch is not None and batch.api == api else None

    def newest_first(self, api: str) -> list[FakeBatch]:
        return [b for b in reversed(self.batches.values()) if b.api == api]

    # --- OpenAI (and Azure OpenAI): files + batches -------------------------------
    def openai_result_files(self, batch: FakeBatch) -> None:
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        out_at: list[int] = []
        err_at: list[int] = []
        for index, item in enumerate(batch.items):
            line: dict[str, Any] = {"id": new_id("batch_req_"), "custom_id": item.custom_id, "response": None,
                                    "error": None}
            if item.outcome in ("succeeded", "errored"):
                assert item.reply is not None
                line["response"] = {"status_code": item.reply.status, "request_id": new_id("req_"),
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
            data = jsonl(damage(out, b, renamed, indices=out_at))
            batch.output_file_id = self.add_file(f"{batch.id}_output.jsonl", "batch_output", data).id
        if err:
            data = jsonl(damage(err, b, renamed, indices=err_at, strays=not out))
            batch.error_file_id = self.add_file(f"{batch.id}_error.jsonl", "batch_output", data).id

    def add_file(self, filename: str, purpose: str, data: bytes) -> FakeFile:
        file = FakeFile(new_id("file-"), filename, purpose, data)
        self.files[file.id] = file
        return file


def item_result(batch: FakeBatch, item: FakeItem) -> dict[str, Any]:
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
