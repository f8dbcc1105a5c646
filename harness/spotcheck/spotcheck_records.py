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
CITATION_SUPPORT_SCHEMA_VERSION = 1

# the human-labels CSV (and spotcheck_review.csv, its pre-filled form): one row per segment
REVIEW_COLUMNS = ("model", "question_id", "repeat", "segment_index", "citation", "segment_text",
                  "supported", "note", "reviewer")
REQUIRED_REVIEW_COLUMNS = ("model", "question_id", "repeat", "segment_index", "supported")

Source = Literal["judge", "quote", "missing_article"]
Pass = Literal["cited", "uncited"]


class JudgementRecord(BaseModel):
    """One judgement of one segment of one answer, by one judge, in one judge repeat."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_version: int = JUDGEMENTS_SCHEMA_VERSION  # version of the line's format
    model: str  # the answering model
    question_id: str  # the gold question the answer is to
    repeat: int  # the answer's repeat in the run
    segment_index: int  # the segment's place in the answer, from 0
    judge_repeat: int = 0  # which judging of the segment this is, from 0 (--repeats)
    # cited (pass 1: against its cited articles) or uncited (pass 2: against the supported segments)
    pass_: Pass = Field(alias="pass")
    citations: list[str]  # the article IDs of the citation that closes the segment; empty when it is uncited
    segment_text: str  # the segment as the model wrote it, citation marker included
    claim: str  # what the judge checks: the segment without markers, bullets and emphasis
    answer_hash: str  # of the answer text: a changed answer is judged again
    context_hash: str | None = None  # pass 2: of the supported segments it was judged against
    source: Source  # who decided: the judge, the quote check, or a cited ID missing from the KB
    supported: bool | None  # None: not judged (the call failed, or the reply had no verdict)
    explanation: str = ""  # why it is (un)supported, as the judge or the check said it
    # quoted passages of the segment not found verbatim in the cited article
    missing_quotes: list[str] = Field(default_factory=list)
    parse_error: str | None = None  # why the judge's reply held no readable verdict; null when it did
    judge: str  # the judge's display name
    judge_provider: str  # the judge's provider
    judge_model: str  # the judge's model name at its provider
    template: str  # the judge prompt template's name
    template_hash: str  # 16 hex digits of the SHA-256 of the judge template file
    prompt_hash: str | None = None  # 16 hex digits of the SHA-256 of the messages sent; null when no judge was asked
    response: str | None = None  # the judge's raw reply
    finish_reason: str | None = None  # "length"/"max_tokens"/"MAX_TOKENS": the judge's reply was cut off
    retry: bool = False  # asked again with the stricter instruction, the first reply having no readable verdict
    cached: bool = False  # true when the verdict came from grace's response cache
    attempts: int = 0  # judge call attempts (0: from the cache, or decided without the judge)
    latency_ms: float | None = None  # the judge call's latency, milliseconds
    cost_usd: float | None = None  # the judge call's cost, USD; null when unknown
    input_tokens: int | None = None  # the judge call's prompt tokens
    output_tokens: int | None = None  # the judge call's reply tokens
    error: CallError | None = None  # why the judge call failed; null when it answered
    created_at: str | None = None  # when the line was written: ISO 8601, UTC, to the second

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class CitationSentenceRecord(BaseModel):
    """One cited sentence of a multi-citation answer and its support (``spotcheck/citation_support.jsonl``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = CITATION_SUPPORT_SCHEMA_VERSION  # version of the line's format
    kind: Literal["citation_sentence"] = "citation_sentence"  # what the line is
    model: str  # the answering model
    question_id: str  # the gold question the answer is to
    repeat: int  # the answer's repeat in the run
    answer_hash: str  # of the answer text: 16 hex digits of SHA-256
    judge: str  # the judge's display name
    template_hash: str  # the claims template's hash (its verification prompt asked the question)
    sentence_index: int  # the sentence's place among the answer's cited sentences, from 0
    sentence: str  # the sentence without its citation markers: what the judge checked
    # own (a citation of its own supports it), other (only another article the answer cites does), none;
    # null when a judge call for the answer failed or stayed unreadable
    label: Literal["own", "other", "none"] | None
    # its citations: reference (as the answer gave it), articles (KB IDs it resolves to; empty: unresolved), how,
    # note, status (supports | does_not_support | unresolved; null when the answer is not fully judged)
    citations: list[dict[str, Any]]
    supported_by: list[str]  # the articles the answer cites that the judge found support the sentence
    # per article the answer cites: the judge's verdict (supported | partial | unsupported), explanation and evidence
    # on this sentence; null when that call failed or stayed unreadable
    verdicts: dict[str, dict[str, Any] | None]
    error: str | None = None  # why the answer is not fully judged


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = CALIBRATION_SCHEMA_VERSION  # version of calibration.json's format
    created_at: str  # when it was written: ISO 8601, UTC, to the second
    human_csv: dict[str, Any]  # the human labels: path, hash (16 hex digits of SHA-256), labelled_rows, reviewers
    judge: str  # the judge's display name
    template_hash: str  # the judge template's hash (spotcheck.json judge.template_hash)
    n: int  # labelled segments (claims) matched with a judge verdict: what the figures are over
    n_unmatched: int  # labelled rows with no judge verdict for their segment
    n_stale: int  # labelled rows whose segment text has changed since: left out
    agreement: float | None  # share of those where judge and human agree (claims: over all three classes)
    kappa: float | None  # Cohen's kappa of judge and human on "unsupported"; null when chance agreement is total
    precision_unsupported: float | None  # of the judge's "unsupported" verdicts, the share the human agrees with
    recall_unsupported: float | None  # of the human's "unsupported" labels, the share the judge found
    confusion: dict[str, int]  # positive class = unsupported: tp, fp, fn, tn
    # each segment they disagree on: its text, both verdicts, the judge's explanation, the note
    disagreements: list[dict[str, Any]]
    mode: Literal["claims", "segments"] = "segments"  # what was judged: segments, or claims (--mode claims)
    # claims: kappa over supported / partial / unsupported, and per class (that class against the other two)
    kappa_multiclass: float | None = None
    # claims: per class (against the other two) its kappa and counts: human, judge, both
    kappa_per_class: dict[str, dict[str, Any]] | None = None
    confusion_classes: dict[str, dict[str, int]] | None = None  # human class -> judge class -> count


__all__ = [
    "CALIBRATION_SCHEMA_VERSION", "CITATION_SUPPORT_SCHEMA_VERSION", "JUDGEMENTS_SCHEMA_VERSION", "META_EVAL_SCHEMA_VERSION", "REQUIRED_REVIEW_COLUMNS",
    "REVIEW_COLUMNS", "SPOTCHECK_SCHEMA_VERSION", "CalibrationFile", "CitationSentenceRecord", "JudgeBlock", "JudgementRecord", "ModelSpot",
    "SpotcheckFile", "read_spotcheck", "write_spotcheck",
]
