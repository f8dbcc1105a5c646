"""Typed records of a run: one ``ResponseRecord`` per line of ``responses.jsonl``, and ``run.json``.

The response line is a contract (the scorer and users' own tools read it): it
carries the raw text plus everything needed to audit it later: what was
retrieved, which prompt (hash), tokens, cost, latency, whether it came from the
cache, and the error if the call failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.core.jsonl import iter_jsonl

RESPONSES_SCHEMA_VERSION = 1


class CallError(BaseModel):
    kind: str
    message: str
    attempts: int
    status: int | None = None


class ResponseRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = RESPONSES_SCHEMA_VERSION
    question_id: str
    model: str
    repeat: int = 0
    response: str | None = None
    retrieved_ids: list[str] = Field(default_factory=list)
    retrieval_scores: list[float] = Field(default_factory=list)
    prompt_hash: str | None = None
    template_hash: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    cached: bool = False
    error: CallError | None = None
    finish_reason: str | None = None
    attempts: int = 0
    created_at: str | None = None


class RunInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    grace_version: str
    started_at: str
    finished_at: str | None = None
    status: str = "running"  # running | finished | interrupted
    kb: dict[str, Any]
    gold: dict[str, Any]
    templates: dict[str, str]  # name -> sha256
    config: dict[str, Any]
    models: list[dict[str, Any]]
    counts: dict[str, Any] = Field(default_factory=dict)


def read_response_lines(path: Path) -> list[dict[str, Any]]:
    """Raw response dicts, naming the line of anything that is not a JSON object.

    A half-written last line (the process was killed mid-write) is dropped with
    no error: it was never a finished response, and the next run redoes it.
    """
    if not path.exists():
        return []
    return [row for _, row in iter_jsonl(path, torn_tail_ok=True, hint="; fix or delete the line")]


def latest_rows(rows: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The last row per (model, question_id, repeat): a retried call supersedes its error row."""
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in rows:
        out[(str(r.get("model")), str(r.get("question_id")), int(r.get("repeat") or 0))] = r
    return out
