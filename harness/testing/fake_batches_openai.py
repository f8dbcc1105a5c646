"""The fake server's OpenAI (and Azure OpenAI) Batch API: files uploaded, a batch created from one, polled, cancelled,
listed, its output and error files collected, in the documented wire format (the shared state machine:
:mod:`harness.testing.fake_batch_state`)."""

from __future__ import annotations

import json
import re
import time
from email import policy
from email.parser import BytesParser
from typing import Any

from harness.testing.fake_batch_state import (
    DAY,
    Answer,
    BatchBehaviour,
    BatchState,
    Call,
    FakeAPIServer,
    FakeBatch,
    FakeItem,
    Handler,
    epoch,
    new_id,
)


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


def _openai_error(status: int, message: str) -> Answer:
    return Answer(status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})


def upload(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    fields = _form_fields(call.content_type, call.raw)
    if "file" not in fields:
        return _openai_error(400, "'file' is a required property (multipart/form-data)")
    filename, data = fields["file"]
    purpose = fields.get("purpose", (None, b"batch"))[1].decode()
    return Answer(200, store.add_file(filename or "upload.jsonl", purpose, data).wire())

def file(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    file = store.files.get(m["id"])
    if file is None:
        return _openai_error(404, f"No such File object: {m['id']}")
    if call.method == "DELETE":
        del store.files[file.id]
        return Answer(200, {"id": file.id, "object": "file", "deleted": True})
    if m["content"]:
        return Answer(200, file.data, "application/octet-stream")
    return Answer(200, file.wire())

def create(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    body = call.json()
    file = store.files.get(str(body.get("input_file_id")))
    if file is None:
        return _openai_error(400, f"No such File object: {body.get('input_file_id')}")
    endpoint = str(body.get("endpoint") or "")
    batch = FakeBatch(new_id("batch_"), "openai", "validating", [], owner.batch,
                      info={"endpoint": endpoint, "input_file_id": file.id,
                            "completion_window": body.get("completion_window") or "24h",
                            "metadata": body.get("metadata")})
    batch.items, batch.errors = _openai_lines(file.data, endpoint, batch.behaviour)
    if batch.errors:
        batch.items, batch.status = [], "failed"
        batch.times["failed"] = batch.times["ended"] = time.time()
        store.batches[batch.id] = batch
    else:
        store.admit(owner, batch)
    return Answer(200, _openai_batch(batch))

def get(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batch = store.batch(m["id"], "openai")
    if batch is None:
        return _openai_error(404, f"No batch found with id '{m['id']}'.")
    if m["cancel"]:
        store.cancel(batch)
    else:
        store.poll(owner, batch)
    return Answer(200, _openai_batch(batch))

def list_batches(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batches = store.newest_first("openai")
    after = call.arg("after")
    if after is not None:
        ids = [b.id for b in batches]
        batches = batches[ids.index(after) + 1:] if after in ids else []
    limit = int(call.arg("limit", "20") or 20)
    page = batches[:limit]
    return Answer(200, {"object": "list", "data": [_openai_batch(b) for b in page],
                        "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None,
                        "has_more": len(batches) > limit})


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
        "created_at": int(batch.created_at), "in_progress_at": epoch(t.get("in_progress")),
        "expires_at": int(batch.created_at) + DAY,
        "finalizing_at": epoch(t.get("ended")) if batch.status in ("completed", "expired") else None,
        "completed_at": epoch(t.get("ended")) if batch.status == "completed" else None,
        "failed_at": epoch(t.get("failed")), "expired_at": epoch(t.get("ended")) if batch.status == "expired" else None,
        "cancelling_at": epoch(t.get("cancelling")),
        "cancelled_at": epoch(t.get("ended")) if batch.status == "cancelled" else None,
        "request_counts": {"total": len(batch.items), "completed": counts["succeeded"], "failed": counts["errored"]},
        "usage": {"input_tokens": usage_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": usage_out,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": usage_in + usage_out},
        "metadata": batch.info.get("metadata"),
    }


_V1 = r"^/(?:v1|openai)"  # OpenAI's /v1, and Azure OpenAI's /openai (with ?api-version=)
ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = [  # method, path, handler, client ("google", "other", "any")
    ("POST", re.compile(_V1 + r"/files$"), upload, "any"),
    ("GET", re.compile(_V1 + r"/files/(?P<id>[^/]+)(?P<content>/content)?$"), file, "any"),
    ("DELETE", re.compile(_V1 + r"/files/(?P<id>[^/]+)(?P<content>)$"), file, "any"),
    ("POST", re.compile(_V1 + r"/batches$"), create, "any"),
    ("GET", re.compile(_V1 + r"/batches$"), list_batches, "other"),
    ("GET", re.compile(_V1 + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), get, "other"),
    ("POST", re.compile(_V1 + r"/batches/(?P<id>[^/:]+)(?P<cancel>/cancel)$"), get, "any"),
]
