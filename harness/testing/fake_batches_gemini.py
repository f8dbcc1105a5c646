"""The fake server's Gemini batch mode (the Gemini Developer API; Vertex AI's batch jobs are not faked): inline
requests, a long-running operation polled, cancelled, listed, in the documented wire format (the shared state
machine: :mod:`harness.testing.fake_batch_state`)."""

from __future__ import annotations

import re
import secrets
from typing import Any

from harness.testing.api_formats import Reply, error_body
from harness.testing.fake_batch_state import (
    Answer,
    BatchState,
    Call,
    FakeAPIServer,
    FakeBatch,
    FakeItem,
    Handler,
    damage,
    iso,
)

_GRPC = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 499: 1, 500: 13, 501: 12, 503: 14, 504: 4}
_GEMINI_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."


def _google_error(status: int, message: str) -> Answer:
    return Answer(status, error_body("google", Reply.error(status, message)))


def create(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
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
    store.admit(owner, batch)
    return Answer(200, _google_batch(batch))

def get(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batch = store.batch("batches/" + m["id"], "google")
    if batch is None:
        return _google_error(404, f"Batch batches/{m['id']} not found.")
    if call.method == "DELETE":
        del store.batches[batch.id]
        return Answer(200, {})
    if m["cancel"]:
        if not batch.ended:  # Gemini has no "cancelling" state: the batch is cancelled at once
            store.cancel(batch)
            store.finish(owner, batch)
        return Answer(200, {})  # google.protobuf.Empty
    store.poll(owner, batch)
    return Answer(200, _google_batch(batch))

def list_batches(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batches = store.newest_first("google")
    start = int(call.arg("pageToken", "0") or 0)
    size = int(call.arg("pageSize", "50") or 50)
    page: dict[str, Any] = {"operations": [_google_batch(b) for b in batches[start:start + size]]}
    if start + size < len(batches):
        page["nextPageToken"] = str(start + size)
    return Answer(200, page)


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
                            "model": batch.info["model"], "createTime": iso(batch.created_at),
                            "updateTime": iso(updated), "batchStats": stats, "state": batch.status}
    if batch.info.get("displayName"):
        meta["displayName"] = batch.info["displayName"]
    operation: dict[str, Any] = {"name": batch.id, "metadata": meta}
    if batch.ended:
        answers = damage([_google_item(item) for item in batch.items], batch.behaviour,
                          lambda line, key: {**line, "metadata": {"key": key}}, tear=False)
        output = {"inlinedResponses": {"inlinedResponses": answers}}
        meta["endTime"] = iso(batch.times["ended"])
        meta["output"] = output
        operation["done"] = True
        operation["response"] = {"@type": _GEMINI_TYPE + "GenerateContentBatchOutput", **output}
    return operation


_GEMINI = r"^/v1(?:beta|alpha)?"
ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = [  # method, path, handler, client ("google", "other", "any")
    ("POST", re.compile(_GEMINI + r"/models/(?P<model>[^/:]+):batchGenerateContent$"), create, "any"),
    ("GET", re.compile(_GEMINI + r"/batches$"), list_batches, "google"),
    ("GET", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), get, "google"),
    ("DELETE", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>)$"), get, "google"),
    ("POST", re.compile(_GEMINI + r"/batches/(?P<id>[^/:]+)(?P<cancel>:cancel)$"), get, "any"),
]
