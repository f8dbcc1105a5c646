"""An agent loop a system ran itself, as a response row's ``tool_loop``: from an audit log's ``tool_calls``
(grace import-logs) or a ``python:`` system's answer. The funnel (harness.scoring.funnel) reads it like the loop
grace runs for a model that searches: how many calls, and what they returned."""

from __future__ import annotations

import json
from typing import Any

from harness.run_folder.run_records import ToolCallRecord, ToolLoopRecord, ToolTurn

MAX_CALLS = 100  # calls of one answer kept in its row (all are counted)
MAX_IDS = 1000  # IDs of one call kept


def logged_loop(calls: int | list[Any], retrieved: list[str] | None) -> ToolLoopRecord:
    """``calls``: a count, or each call (an object with its name, arguments or query, and the IDs it returned);
    ``retrieved``: what the system says it retrieved besides. Its retrieved set is both, first return first."""
    listed = calls if isinstance(calls, list) else []
    turn = ToolTurn(calls=[logged_call(c) for c in listed[:MAX_CALLS]])
    returned = [i for c in turn.calls for i in c.returned]
    return ToolLoopRecord(turns=[turn] if listed else [], max_tool_calls=None,
                          retrieved=list(dict.fromkeys([*returned, *(retrieved or [])])),
                          tool_calls=len(listed) if isinstance(calls, list) else int(calls))


def logged_call(call: Any) -> ToolCallRecord:
    """One call as a system or a log wrote it: an object (``name`` or ``tool``; ``arguments``, ``args``, ``query`` or
    ``input``; ``returned``, ``retrieved_uids``, ``retrieved_ids`` or ``results``, IDs or objects with an ``id``), or
    any other value, kept as its JSON text."""
    if not isinstance(call, dict):
        text = json.dumps(call, default=str)
        return ToolCallRecord(name="", arguments=text[:2000], size=len(text))
    args = next((call[k] for k in ("arguments", "args", "query", "input") if k in call), None)
    text = args if isinstance(args, str) else json.dumps(args, default=str)
    returned = next((call[k] for k in ("returned", "retrieved_uids", "retrieved_ids", "results") if k in call), None)
    ids = [str(i.get("id") if isinstance(i, dict) else i) for i in returned] if isinstance(returned, list) else []
    return ToolCallRecord(name=str(call.get("name") or call.get("tool") or "")[:200], arguments=text[:2000],
                          size=len(text), returned=ids[:MAX_IDS])
