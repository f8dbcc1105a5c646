"""Typed, versioned records of the spot-check's files.

``spotcheck/judgements.jsonl`` holds one line per segment judgement, appended
and flushed as each is made, so an interrupted spot-check resumes where it
stopped; ``spotcheck.json`` is the summary the report reads;
``calibration.json`` is the judge-versus-human comparison. The review CSV's
columns are fixed here too, because the annotation app writes the same file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.privacy.redactor import RedactionRecord
from harness.rundir.records import CallError

JUDGEMENTS_SCHEMA_VERSION = 1
SPOTCHECK_SCHEMA_VERSION = 1
CALIBRATION_SCHEMA_VERSION = 1
META_EVAL_SCHEMA_VERSION = 1

# the human-labels CSV (and spotcheck_review.csv, its pre-filled form): one row per segment
REVIEW_COLUMNS = ("model", "question_id", "repeat", "segment_index", "citation", "segment_text",
                  "supported", "note", "reviewer")
REQUIRED_REVIEW_COLUMNS = ("model", "question_id", "repeat", "segment_index", "supported")

Source = Literal["judge", "quote", "missing_article"]
Pass = Literal["cited", "uncited"]


class JudgementRecord(BaseModel):
    """One judgement of one segment of one answer, by one judge, in one judge repeat."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_version: int = JUDGEMENTS_SCHEMA_VERSION
    model: str  # the answering model
    question_id: str
    repeat: int  # the answer's repeat in the run
    segment_index: int
    judge_repeat: int = 0
    pass_: Pass = Field(alias="pass")
    citations: list[str]
    segment_text: str
    claim: str
    answer_hash: str  # of the answer text: a changed answer is judged again
    context_hash: str | None = None  # pass 2: of the supported segments it was judged against
    source: Source  # who decided: the judge, the quote check, or a cited ID missing from the KB
    supported: bool | None  # None: not judged (the call failed, or the reply had no verdict)
    explanation: str = ""
    missing_quotes: list[str] = Field(default_factory=list)
    parse_error: str | None = None
    judge: str
    judge_provider: str
    judge_model: str
    template: str
    template_hash: str
    prompt_hash: str | None = None
    response: str | None = None  # the judge's raw reply
    finish_reason: str | None = None  # "length"/"max_tokens"/"MAX_TOKENS": the judge's reply was cut off
    retry: bool = False  # asked again with the stricter instruction, the first reply having no readable verdict
    cached: bool = False
    attempts: int = 0
    latency_ms: float | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: CallError | None = None
    created_at: str | None = None

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class JudgeBlock(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    model: str  # what the report prints
    provider: str
    kind: Literal["llm", "lexical", "scripted"]
    label: str
    template: str
    template_hash: str
    params: dict[str, Any] = Field(default_factory=dict)  # temperature, max_tokens: part of every call's cache key
    max_tokens: int | None = None  # the judge's output limit per call (--max-tokens, default 1024)
    options: dict[str, Any] = Field(default_factory=dict)  # provider options, e.g. json_mode (--json-mode)
    timeout_s: float | None = None  # --timeout; None: the provider's default
    base_url: str | None = None  # --base-url
    repeats: int = 1
    calibrated: bool = False
    kappa: float | None = None
    precision_unsupported: float | None = None
    recall_unsupported: float | None = None
    n: int | None = None  # human-labelled segments (claims) behind the calibration
    kappa_multiclass: float | None = None  # claims: over supported / partial / unsupported
    kappa_per_class: dict[str, float | None] | None = None  # claims: each class against the other two


class ModelSpot(BaseModel):
    model_config = ConfigDict(extra="allow")

    hits: int  # correct-citation answers in the run (truncated ones included)
    n: int  # answers checked (complete: every segment judged)
    n_incomplete: int  # sampled answers left out: a failed judge call or an unreadable verdict
    n_segments: int
    n_unsupported_segments: float  # mean over judge repeats
    accuracy: float | None
    correct_answer_rate: float | None
    groundedness: float | None
    groundedness_ci95: list[float] | None
    hallucination_rate: float | None
    hallucination_rate_ci95: list[float] | None
    hallucination_risk: float | None
    hallucination_risk_ci95: list[float] | None
    groundedness_per_repeat: list[float | None] = Field(default_factory=list)
    groundedness_spread: float | None = None  # max - min over judge repeats
    quote_failures: int = 0
    truncated_skipped: int = 0  # hits not checked: the answer was cut off by max_tokens
    n_verdicts: int = 0  # judge replies to this model's segments (all judge repeats; failed calls apart)
    n_unreadable: int = 0  # ... of which held no readable verdict, even asked again
    n_failed_calls: int = 0
    n_retried: int = 0  # verdicts asked again with the stricter instruction
    n_retry_recovered: int = 0  # ... that then gave a readable verdict
    groundedness_n: int = 0  # the n behind each figure (checked answers)
    hallucination_rate_n: int = 0
    hallucination_risk_n: int = 0
    ci_min_answers: int = 10  # no CI below this many checked answers (metrics.MIN_ANSWERS_FOR_CI)
    ci_note: str | None = None  # why there is no CI, when there is none
    display: dict[str, str] = Field(default_factory=dict)  # each rate as printed, with its n
    # --mode claims: faithfulness = supported claims / claims (groundedness over claims), partial share
    faithfulness: float | None = None
    faithfulness_ci95: list[float] | None = None
    faithfulness_n: int | None = None
    n_claims: int | None = None
    n_partial_claims: float | None = None  # mean over judge repeats
    partial_rate: float | None = None
    partial_rate_ci95: list[float] | None = None
    n_extraction_failed: int | None = None  # answers whose claims could not be read, even asked twice
    # cited share of the retrieved articles that hold the answer (any mode); n: answers shown one
    coverage: float | None = None
    coverage_ci95: list[float] | None = None
    coverage_n: int | None = None
    coverage_display: str | None = None
    # --quality: GroUSE-style grades (mean 1-5 of relevancy, completeness, faithfulness; share of useful refusals),
    # each with its n and CI (harness.spotcheck.quality.quality_figures)
    quality: dict[str, Any] | None = None


class SpotcheckFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = SPOTCHECK_SCHEMA_VERSION
    created_at: str
    grace_version: str
    run: dict[str, Any]
    judge: JudgeBlock
    mode: Literal["claims", "segments"] = "segments"  # files written before claims existed are segments
    scope: Literal["hits", "answered", "all"] = "hits"
    quality: dict[str, Any] | None = None  # --quality: its template and file
    sample: dict[str, Any]
    seed: int
    bootstrap_samples: int
    models: dict[str, ModelSpot]
    variance: dict[str, Any]
    judge_calls: dict[str, Any]
    judgements: dict[str, Any]
    review_csv: str | None = None
    redaction: RedactionRecord | None = None  # --redact-pii: counts per type of what the judge was not shown
    min_answers_for_ci: int = 10  # metrics.MIN_ANSWERS_FOR_CI
    risk_formula: str
    notes: str
    warnings: list[str] = Field(default_factory=list)


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = CALIBRATION_SCHEMA_VERSION
    created_at: str
    human_csv: dict[str, Any]
    judge: str
    template_hash: str
    n: int
    n_unmatched: int
    n_stale: int
    agreement: float | None
    kappa: float | None
    precision_unsupported: float | None
    recall_unsupported: float | None
    confusion: dict[str, int]  # positive class = unsupported: tp, fp, fn, tn
    disagreements: list[dict[str, Any]]
    mode: Literal["claims", "segments"] = "segments"
    # claims: kappa over supported / partial / unsupported, and per class (that class against the other two)
    kappa_multiclass: float | None = None
    kappa_per_class: dict[str, dict[str, Any]] | None = None
    confusion_classes: dict[str, dict[str, int]] | None = None  # human class -> judge class -> count
