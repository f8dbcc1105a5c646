"""Typed, versioned records for the scorer's files (``scores.jsonl``, ``report.json``).

The report writers and ``grace gate`` read these files, possibly from an older
grace; ``schema_version`` lets them refuse a newer file with a clear message.
The per-line model documents the contract and checks it in tests; the hot path
builds the same dicts directly, since validating a million rows with pydantic
would cost more than scoring them. The report is validated once, before writing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.rundir.report import REPORT_SCHEMA_VERSION, SCORES_SCHEMA_VERSION

Outcome = Literal[
    "correct", "correct_refusal", "false_refusal", "invalid_citation", "unshown_citation", "answered_unanswerable",
    "no_citation", "multiple_citations", "wrong_citation", "error",
]
Rule = Literal["json", "inline", "lenient", "none"]


class ScoreLine(BaseModel):
    """One line of ``scores.jsonl``: one response, read strictly and leniently."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCORES_SCHEMA_VERSION
    question_id: str
    model: str
    repeat: int
    cited_ids: list[str]
    refused: bool
    outcome: Outcome
    extraction: Rule
    strict_cited_ids: list[str]
    strict_refused: bool
    strict_outcome: Outcome
    must_refuse: bool
    expected_citations: list[str]
    retrieved_ids: list[str] | None
    expected_retrieved: bool | None
    cost_usd: float | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    truncated: bool = False  # the response's finish_reason says the output limit (max_tokens) cut it off


class ClassScores(BaseModel):
    precision: float
    recall: float
    f1: float
    support: int


class Refusal(BaseModel):
    should_refuse_did: float | None
    should_answer_did: float | None
    calibration: float | None


class Confusion(BaseModel):
    labels: list[str]
    matrix: list[list[int]]  # rows = true label, columns = predicted label


class Retrieval(BaseModel):
    k: int
    recall_at_k: float | None
    n_retrieved: int
    n_missed: int
    accuracy_when_retrieved: float | None
    accuracy_when_missed: float | None


class RepeatStats(BaseModel):
    n_repeats: int
    question_agreement: float | None
    accuracy_per_repeat: list[float]
    accuracy_std: float


class Cost(BaseModel):
    total_usd: float | None
    per_1k_questions_usd: float | None
    input_tokens: int
    output_tokens: int


class Truncation(BaseModel):
    n: int  # answers whose finish_reason says the output limit cut them off
    share: float
    no_citation: int  # of those, answers cut off before any citation or refusal
    max_tokens: int | None  # the limit they were asked with (params.max_tokens), when recorded


class Latency(BaseModel):
    p50_ms: float | None
    p95_ms: float | None


class JsonMode(BaseModel):
    used: str  # json_object | prompt: how JSON was asked for when the server rejected the answer's schema
    reason: str  # e.g. "server rejected json_schema: HTTP 500: ..."


class ModelReport(BaseModel):
    rank: int
    significance_group: str
    n: int
    n_questions: int
    repeats: int
    accuracy: float
    accuracy_ci95: list[float] | None
    strict_accuracy: float
    strict_accuracy_ci95: list[float] | None
    outcomes: dict[str, int]
    strict_outcomes: dict[str, int]
    invalid_citation_rate: float
    unshown_citation_rate: float  # cited a KB article that was not among those shown to the model
    error_count: int
    truncated: Truncation
    extraction_rules: dict[str, int]  # how many responses each lenient rule read
    per_class: dict[str, ClassScores]
    macro_precision: float
    macro_recall: float
    macro_f1: float
    weighted_precision: float
    weighted_recall: float
    weighted_f1: float
    refusal: Refusal
    confusion: Confusion
    retrieval: Retrieval | None
    repeat_stats: RepeatStats | None
    cost: Cost
    latency: Latency
    json_mode: JsonMode | None = None  # set only when the endpoint made grace fall back from json_schema


class FailedModel(BaseModel):
    n: int
    error_count: int
    reason: str


class Pair(BaseModel):
    a: str
    b: str
    n: int
    a_only: int
    b_only: int
    p_value: float
    p_adjusted: float
    significant: bool


class Report(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = REPORT_SCHEMA_VERSION
    created_at: str
    grace_version: str
    gold: dict
    kb: dict
    responses: dict
    seed: int
    bootstrap_samples: int
    leaderboard: list[str]
    models: dict[str, ModelReport]
    pairwise: list[Pair]
    spotcheck: dict | None = None
    warnings: list[str] = Field(default_factory=list)
    failed_models: dict[str, FailedModel] = Field(default_factory=dict)  # every call failed: listed, never ranked
    label_suspects: dict | None = None  # gold labels the models contradict (harness.scoring.label_audit)
