"""Typed records of a run folder: one ``ResponseRecord`` per line of ``responses.jsonl``, and ``run.json``.

The response line is a contract (the scorer and users' own tools read it): it
carries the raw text plus everything needed to audit it later: what was
retrieved, which prompt (hash), tokens, cost, latency, whether it came from the
cache, the error if the call failed, and the ``fingerprint`` of everything that
determined it, so a resumed run can tell a row that still answers today's
question from a stale one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RESPONSES_SCHEMA_VERSION = 2  # 2: fingerprint, question_hash and params on every row
RUN_INFO_SCHEMA_VERSION = 2  # 2: "rows" describes what is on file


class CallError(BaseModel):
    kind: str
    message: str
    attempts: int
    status: int | None = None
    retryable: bool | None = None  # False: the server said the request itself is wrong (asking again cannot help)


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
    fingerprint: str | None = None  # hash of question, retrieved articles, model, params, template, mode, KB, repeat
    question_hash: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    cached: bool = False
    error: CallError | None = None
    finish_reason: str | None = None  # "length" (or max_tokens / MAX_TOKENS): the output limit cut the answer off
    json_mode: str | None = None  # set when the server made us ask for JSON another way than the schema
    batch: str | None = None  # the batch it was answered in (grace's label, see batches.jsonl); None: real time
    attempts: int = 0
    created_at: str | None = None


class RunInfo(BaseModel):
    """``run.json``: what the rows on file were asked with, not only the last command line."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = RUN_INFO_SCHEMA_VERSION
    grace_version: str
    started_at: str
    finished_at: str | None = None
    status: str = "running"  # running | finished | interrupted | failed
    kb: dict[str, Any]
    gold: dict[str, Any]
    templates: dict[str, str]  # name -> sha256
    config: dict[str, Any]
    models: list[dict[str, Any]]
    counts: dict[str, Any] = Field(default_factory=dict)  # this command's calls per model
    rows: dict[str, Any] = Field(default_factory=dict)  # per model: what responses.jsonl holds after this command
    # --redact-pii: what this command's prompts had redacted, counted per type (harness.privacy.RedactionRecord)
    redaction: dict[str, Any] | None = None
