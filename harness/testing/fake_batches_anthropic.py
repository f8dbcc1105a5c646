"""The fake server's Anthropic Message Batches: a batch created, polled, cancelled, listed and its results
collected, in the documented wire format (the shared state machine: :mod:`harness.testing.fake_batch_state`)."""

from __future__ import annotations

import re
from typing import Any

from harness.testing.api_formats import Reply, error_body
from harness.testing.fake_batch_state import (
    DAY,
    Answer,
    BatchState,
    Call,
    FakeAPIServer,
    FakeBatch,
    FakeItem,
    Handler,
    damage,
    iso,
    jsonl,
    new_id,
    renamed,
)

_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # Anthropic's rule for custom_id


def _anthropic_error(status: int, message: str) -> Answer:
    return Answer(status, error_body("anthropic", Reply.error(status, message)))


def create(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
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
    batch = FakeBatch(new_id("msgbatch_"), "anthropic", "in_progress", items, behaviour)
    store.admit(owner, batch)
    return Answer(200, _anthropic_batch(batch, owner))

def get(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batch = store.batch(m["id"], "anthropic")
    if batch is None:
        return _anthropic_error(404, f"Message batch {m['id']} not found.")
    action = m["action"]
    if action == "cancel":
        store.cancel(batch)
    elif action == "results":
        if not batch.ended:
            return _anthropic_error(400, f"Message batch {batch.id} has not ended; its results are not ready.")
        lines = damage([_anthropic_result(item) for item in batch.items], batch.behaviour, renamed)
        return Answer(200, jsonl(lines), "application/binary")
    else:
        store.poll(owner, batch)
    return Answer(200, _anthropic_batch(batch, owner))

def list_batches(store: BatchState, owner: FakeAPIServer, m: re.Match[str], call: Call) -> Answer:
    batches = store.newest_first("anthropic")
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


def _anthropic_batch(batch: FakeBatch, owner: FakeAPIServer) -> dict[str, Any]:
    counts = batch.counts
    return {
        "id": batch.id, "type": "message_batch", "processing_status": batch.status,
        "request_counts": {"processing": counts["pending"], "succeeded": counts["succeeded"],
                           "errored": counts["errored"], "canceled": counts["canceled"], "expired": counts["expired"]},
        "ended_at": iso(batch.times.get("ended")), "created_at": iso(batch.created_at),
        "expires_at": iso(batch.created_at + DAY), "archived_at": None,
        "cancel_initiated_at": iso(batch.times.get("cancelling")),
        "results_url": f"{owner.anthropic_base_url}/v1/messages/batches/{batch.id}/results" if batch.ended else None,
    }


def _anthropic_result(item: FakeItem) -> dict[str, Any]:
    result: dict[str, Any] = {"type": item.outcome}
    if item.outcome == "succeeded":
        result["message"] = item.result
    elif item.outcome == "errored":
        result["error"] = item.result
    return {"custom_id": item.custom_id, "result": result}


ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = [  # method, path, handler, client ("google", "other", "any")
    ("POST", re.compile(r"^/v1/messages/batches$"), create, "any"),
    ("GET", re.compile(r"^/v1/messages/batches$"), list_batches, "any"),
    ("GET", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)(?:/(?P<action>results))?$"), get,
     "any"),
    ("POST", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/(?P<action>cancel)$"), get, "any"),
]
