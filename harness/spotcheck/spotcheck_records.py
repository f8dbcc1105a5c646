"""Typed, versioned records of the spot-check's files.

``spotcheck/judgements.jsonl`` holds one line per segment judgement, appended
and flushed as each is made, so an interrupted spot-check resumes where it
stopped; ``spotcheck.json`` is the summary the report reads (its model,
:class:`SpotcheckFile`, with its reader and writer, lives with the run folder:
:mod:`harness.run_folder.spotcheck`, re-exported here);
``calibration.json`` is the judge-versus-human comparison. The review CSV's
columns are fixed here too, because the annotation app writes the same file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.run_folder.run_records import CallError
from harness.run_folder.spotcheck import (
    SPOTCHECK_SCHEMA_VERSION,
    JudgeBlock,
    ModelSpot,
    SpotcheckFile,
    read_spotcheck,
    write_spotcheck,
)

JUDGEMENTS_SCHEMA_VERSION = 1
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


__all__ = [
    "CALIBRATION_SCHEMA_VERSION", "JUDGEMENTS_SCHEMA_VERSION", "META_EVAL_SCHEMA_VERSION", "REQUIRED_REVIEW_COLUMNS",
    "REVIEW_COLUMNS", "SPOTCHECK_SCHEMA_VERSION", "CalibrationFile", "JudgeBlock", "JudgementRecord", "ModelSpot",
    "SpotcheckFile", "read_spotcheck", "write_spotcheck",
]
