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


class RedactionRecord(BaseModel):
    """--redact-pii: what was redacted in one command's calls, counts never values (``run.json["redaction"]``,
    ``spotcheck.json["redaction"]``; made by :class:`harness.privacy.Redactor`)."""

    enabled: bool = True
    types: list[str]  # what was looked for
    names: str | None  # what found person names, or None
    names_note: str = ""  # why names were not looked for, when they were not
    prompts: int = 0  # distinct prompts redacted (asked, cached or already on file)
    prompts_with_pii: int = 0
    found: dict[str, int] = Field(default_factory=dict)  # type -> distinct values per prompt, summed over prompts


class CallError(BaseModel):
    kind: str
    message: str
    attempts: int
    status: int | None = None
    retryable: bool | None = None  # False: the server said the request itself is wrong (asking again cannot help)


def _absent_if_none(default: Any = None) -> Any:
    """A field the file holds only once it has a value (as it was written before it was typed)."""
    return Field(default, exclude_if=lambda v: v is None)


class ResponseRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = RESPONSES_SCHEMA_VERSION
    question_id: str
    model: str
    repeat: int = 0
    response: str | None = None
    retrieved_ids: list[str] = Field(default_factory=list)
    retrieval_scores: list[float] = Field(default_factory=list)
    # a system that retrieves for itself (python:, http:, imported logs): the IDs it retrieved, in rank order; None
    # when grace's own retrieval (retrieved_ids) is what the model was shown
    system_retrieved: list[str] | None = _absent_if_none()
    # the citations a system returned as data rather than as [ID: x] in its text; None: read them from the text
    citations: list[str] | None = _absent_if_none()
    # who asked (imported logs) and the groups they belong to (from the log, or the gold question's groups column):
    # a citation of an article whose audience they are not in is a forbidden_citation
    user: str | None = _absent_if_none()
    user_groups: list[str] | None = _absent_if_none()
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


_RUN_BLOCK = ConfigDict(extra="forbid", validate_assignment=True)


class RunKb(BaseModel):
    """``run.json["kb"]``: the KB the rows on file were answered from."""

    model_config = _RUN_BLOCK

    path: str
    kb_hash: str
    articles: int
    embedder: str | None = None


class RunGold(BaseModel):
    """``run.json["gold"]``: the gold set the run asked."""

    model_config = _RUN_BLOCK

    path: str | None
    hash: str
    questions: int
    must_refuse: int


class RetrievedFile(BaseModel):
    """``--retrieved FILE``: the rankings file the run used instead of the KB's retriever."""

    model_config = _RUN_BLOCK

    path: str
    hash: str


class RunConfig(BaseModel):
    """``run.json["config"]``: the run's settings that decide what the rows on file hold."""

    model_config = _RUN_BLOCK

    k: int
    repeats: int
    concurrency: int
    cache: bool
    read_cache: bool
    max_attempts: int
    seed: int
    output_mode: str
    retrieved: RetrievedFile | None = _absent_if_none()  # --retrieved
    rerank: dict[str, Any] | None = _absent_if_none()  # --rerank: the reranker's record (harness.runner.rerank)


class ModelEntry(BaseModel):
    """One model of ``run.json["models"]``: what it was asked with, and what the run learned about its endpoint."""

    model_config = _RUN_BLOCK

    name: str
    provider: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    endpoint: str | None = None
    batch: bool = False
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_batch_per_mtok: list[float] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    # learned (Provider.learned()): the JSON mode a server made grace fall back to, and why; a baseline's fit
    json_mode: str | None = _absent_if_none()
    json_mode_reason: str | None = _absent_if_none()
    calibration: dict[str, Any] | None = _absent_if_none()

    def learned(self) -> dict[str, Any]:
        """What the run learned about the endpoint, as ``Provider.learned()`` gives it."""
        return {k: getattr(self, k) for k in ("json_mode", "json_mode_reason", "calibration")
                if getattr(self, k) is not None}

    def learn(self, values: dict[str, Any]) -> None:
        """Record ``Provider.learned()``; a key this model has no field for is an error, never dropped."""
        for key, value in values.items():
            setattr(self, key, value)


class CallCounts(BaseModel):
    """``run.json["counts"][model]``: this command's calls."""

    model_config = _RUN_BLOCK

    planned: int
    done: int
    cached: int
    errors: int
    not_tried: int
    retries: int
    timeouts: int
    in_flight_limit: int | None = None  # lowered from the worker count by the server's slots or a timeout cluster
    stopped: str | None = None  # why the model was stopped early
    batch_submitted: int | None = _absent_if_none()  # batch mode only
    batch_pending: int | None = _absent_if_none()


class RowCounts(BaseModel):
    """``run.json["rows"][model]``: what responses.jsonl holds for the model after this command."""

    model_config = _RUN_BLOCK

    rows: int = 0
    answered: int = 0
    errors: int = 0
    stale: int = 0  # answers to an earlier text of the question, or to one no longer in the gold set
    params_variants: int = 0


class RunInfo(BaseModel):
    """``run.json``: what the rows on file were asked with, not only the last command line.

    Every block is typed and strict when written (an unknown key, or a value of the wrong type, is an error);
    :meth:`harness.run_folder.RunDir.read_run_info` names the first problem of a file that does not fit.
    """

    model_config = _RUN_BLOCK

    schema_version: int = RUN_INFO_SCHEMA_VERSION
    grace_version: str
    started_at: str
    finished_at: str | None = None
    status: str = "running"  # running | finished | interrupted | failed | waiting for batches
    kb: RunKb
    gold: RunGold
    templates: dict[str, str]  # name -> sha256
    config: RunConfig
    models: list[ModelEntry]
    counts: dict[str, CallCounts] = Field(default_factory=dict)  # this command's calls per model
    rows: dict[str, RowCounts] = Field(default_factory=dict)  # per model: what responses.jsonl holds after this command
    # --redact-pii: what this command's prompts had redacted, counted per type
    redaction: RedactionRecord | None = None
