"""``spotcheck.json``: the spot-check's summary, one typed model read and written through this module.

``grace spotcheck run`` writes it (:func:`write_spotcheck`); re-scoring a folder
(the report keeps the last spot-check), ``grace spotcheck calibrate`` and the
report block (:class:`harness.run_folder.report.SpotcheckBlock`) read it back with
:func:`read_spotcheck`, as the same :class:`SpotcheckFile`. Each model's
figures are declared once, in :class:`ModelSpot`; the report's per-model block
is a declared subset of those fields (``report.SPOT_FIGURES``), not a second
description. Written strictly (an unknown key is an error); read leniently on
unknown keys only (:mod:`harness.run_folder.strict`). It lives with the run folder
so that the scorer and the reports read it without importing the spot-check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.run_folder.run_records import RedactionRecord
from harness.run_folder.strict import read_json_object, validate_known

SPOTCHECK_SCHEMA_VERSION = 1
_STRICT = ConfigDict(extra="forbid", validate_assignment=True)


class JudgeBlock(BaseModel):
    """Who judged: ``spotcheck.json["judge"]``, copied into the report's spot-check block."""

    model_config = _STRICT

    name: str  # the judge's display name (default provider:model)
    model: str  # what the report prints
    provider: str  # the judge's provider: PROVIDER of --judge PROVIDER:MODEL
    # llm (a model), lexical (offline word overlap) or scripted (tests and rehearsals)
    kind: Literal["llm", "lexical", "scripted"]
    label: str  # how the report names the kind of judge, e.g. "LLM judge"
    template: str  # the judge prompt template's name
    template_hash: str  # 16 hex digits of the SHA-256 of the judge template file
    params: dict[str, Any] = Field(default_factory=dict)  # temperature, max_tokens: part of every call's cache key
    max_tokens: int | None = None  # the judge's output limit per call (--max-tokens, default 1024)
    options: dict[str, Any] = Field(default_factory=dict)  # provider options, e.g. json_mode (--json-mode)
    timeout_s: float | None = None  # --timeout; None: the provider's default
    base_url: str | None = None  # --base-url
    repeats: int = 1  # times the judge judged each segment (--repeats)
    calibrated: bool = False  # true once 'grace spotcheck calibrate' compared this judge and template with human labels
    # Cohen's kappa of the judge against the human labels, on "unsupported"; null: not calibrated
    kappa: float | None = None
    precision_unsupported: float | None = None  # share of the judge's "unsupported" verdicts the humans agree with
    recall_unsupported: float | None = None  # share of the human-found unsupported segments the judge also found
    n: int | None = None  # human-labelled segments (claims) behind the calibration
    kappa_multiclass: float | None = None  # claims: over supported / partial / unsupported
    kappa_per_class: dict[str, float | None] | None = None  # claims: each class against the other two
    # the calibration file (calibration.json) once 'grace spotcheck calibrate' ran; absent from the file until then
    calibration: str | None = Field(None, exclude_if=lambda v: v is None)


class CitationSupport(BaseModel):
    """One model's claim-level citation support (``spotcheck.json["models"][name]["citation_support"]``): each
    cited sentence of its checked answers judged against every article the answer cites (issue 39; present only
    for a model whose run.json reads several citations or its own references). Pooled over sentences (precision:
    over citations); CIs bootstrap over answers, null below ci_min_answers."""

    model_config = _STRICT

    # answers checked: at least one cited sentence, each judged against every article the answer cites
    n: int
    n_incomplete: int  # sampled answers left out: a failed judge call or an unreadable reply
    n_sentences: int  # cited sentences in the checked answers
    n_own: int  # sentences supported by one of their own citations
    n_other: int  # sentences supported only by another article the answer cites (misattributed)
    n_none: int  # sentences supported by none of the articles the answer cites
    n_citations: int  # citations of those sentences (a sentence's distinct references)
    n_supporting_citations: int  # citations whose article supports their sentence
    n_unresolved_citations: int  # citations whose reference maps to no KB article: counted as not supporting
    support_recall: float | None  # n_own / n_sentences (ALCE's citation recall)
    support_recall_ci95: list[float] | None  # [low, high], 95% bootstrap over checked answers
    citation_precision: float | None  # n_supporting_citations / n_citations (ALCE's citation precision)
    citation_precision_ci95: list[float] | None  # [low, high], 95% bootstrap over checked answers
    misattributed_rate: float | None  # n_other / n_sentences
    misattributed_rate_ci95: list[float] | None  # [low, high], 95% bootstrap over checked answers
    unsupported_rate: float | None  # n_none / n_sentences
    unsupported_rate_ci95: list[float] | None  # [low, high], 95% bootstrap over checked answers
    # Cohen's kappa over own / other / none of this judge and template on the multi-citation meta-eval cases
    judge_kappa: float | None
    judge_kappa_n: int  # sentences of the meta-eval cases behind judge_kappa
    ci_note: str | None = None  # why there is no CI, when there is none
    display: dict[str, str] = Field(default_factory=dict)  # each rate as printed, with its interval and n


class CitationCheck(BaseModel):
    """How the claim-level citation support was checked (``spotcheck.json["citation_support"]``; present only when
    a model of the run reads several citations or its own references)."""

    model_config = _STRICT

    models: list[str]  # the models checked this way
    template: str  # the claims template whose verification prompt asks "does this article support each sentence"
    template_hash: str  # 16 hex digits of the SHA-256 of that template file
    path: str  # the per-sentence records (labels, citation statuses, verdicts), relative to the run folder
    n_rows: int  # rows in that file
    # the judge on the multi-citation meta-eval cases (harness/spotcheck/citation_cases.jsonl): cases, n, agreement,
    # kappa (over own / other / none), kappa_per_label, per_label counts, confusion, failures
    meta_eval: dict[str, Any]
    method: str  # what the labels and figures mean, in sentences


class ModelSpot(BaseModel):
    """One answering model's spot-check figures (``spotcheck.json["models"][name]``)."""

    model_config = _STRICT

    hits: int  # correct-citation answers in the run (truncated ones included)
    n: int  # answers checked (complete: every segment judged)
    n_incomplete: int  # sampled answers left out: a failed judge call or an unreadable verdict
    n_segments: int  # segments (claims, in --mode claims) in the checked answers
    n_unsupported_segments: float  # mean over judge repeats
    accuracy: float | None  # the model's accuracy in the run: correct and correct_refusal over its scored responses
    correct_answer_rate: float | None  # share of its scored responses that cite the right article (outcome correct)
    groundedness: float | None  # supported segments / segments over the checked answers (mean over judge repeats)
    groundedness_ci95: list[float] | None  # [low, high], 95% bootstrap over checked answers; null below ci_min_answers
    hallucination_rate: float | None  # share of checked answers with at least one unsupported segment (claim)
    # [low, high], 95% bootstrap over checked answers; null below ci_min_answers
    hallucination_rate_ci95: list[float] | None
    # 1 - (correct_refusal_rate + correct_answer_rate x (1 - hallucination_rate)); null: scope not hits
    hallucination_risk: float | None
    hallucination_risk_ci95: list[float] | None  # [low, high], 95% bootstrap; null below ci_min_answers
    # groundedness by each judge repeat, in order
    groundedness_per_repeat: list[float | None] = Field(default_factory=list)
    groundedness_spread: float | None = None  # max - min over judge repeats
    quote_failures: int = 0  # segments found unsupported without the judge: a quote not verbatim in the cited article
    truncated_skipped: int = 0  # hits not checked: the answer was cut off by max_tokens
    n_verdicts: int = 0  # judge replies to this model's segments (all judge repeats; failed calls apart)
    n_unreadable: int = 0  # ... of which held no readable verdict, even asked again
    n_failed_calls: int = 0  # judge calls that failed, even after retries
    n_retried: int = 0  # verdicts asked again with the stricter instruction
    n_retry_recovered: int = 0  # ... that then gave a readable verdict
    groundedness_n: int = 0  # the n behind each figure (checked answers)
    hallucination_rate_n: int = 0  # the n behind hallucination_rate: checked answers
    hallucination_risk_n: int = 0  # the n behind hallucination_risk: checked answers (responses when none was correct)
    ci_min_answers: int = 10  # no CI below this many checked answers (metrics.MIN_ANSWERS_FOR_CI)
    ci_note: str | None = None  # why there is no CI, when there is none
    display: dict[str, str] = Field(default_factory=dict)  # each rate as printed, with its n
    # --mode claims: faithfulness = supported claims / claims (groundedness over claims), partial share
    faithfulness: float | None = None
    # [low, high], 95% bootstrap over checked answers; null below ci_min_answers
    faithfulness_ci95: list[float] | None = None
    faithfulness_n: int | None = None  # the n behind faithfulness: checked answers
    n_claims: int | None = None  # claims in the checked answers (segments, in --mode segments)
    n_partial_claims: float | None = None  # mean over judge repeats
    partial_rate: float | None = None  # claims judged partial / claims (mean over judge repeats)
    # [low, high], 95% bootstrap over checked answers; null below ci_min_answers
    partial_rate_ci95: list[float] | None = None
    n_extraction_failed: int | None = None  # answers whose claims could not be read, even asked twice
    # cited share of the retrieved articles that hold the answer (any mode); n: answers shown one
    coverage: float | None = None
    # [low, high], 95% bootstrap over the answers shown a gold article; null below ci_min_answers
    coverage_ci95: list[float] | None = None
    coverage_n: int | None = None  # answers shown at least one gold article: the n behind coverage
    coverage_display: str | None = None  # coverage as printed, with its interval and n
    # --quality: GroUSE-style grades (mean 1-5 of relevancy, completeness, faithfulness; share of useful refusals),
    # each with its n and CI (harness.spotcheck.quality.quality_figures)
    quality: dict[str, Any] | None = None
    # several citations per answer (run.json models[].citations): claim-level citation support; absent otherwise
    citation_support: CitationSupport | None = Field(None, exclude_if=lambda v: v is None)


class SpotcheckFile(BaseModel):
    """The whole of ``spotcheck.json``."""

    model_config = _STRICT

    schema_version: int = SPOTCHECK_SCHEMA_VERSION  # version of spotcheck.json's format
    created_at: str  # when the spot-check ran: ISO 8601, UTC, to the second
    grace_version: str  # the grace that ran it
    run: dict[str, Any]  # the run checked: path, scores, responses, and the KB's path and hash
    judge: JudgeBlock  # the judge and, once calibrated, how far it agrees with people
    mode: Literal["claims", "segments"] = "segments"  # files written before claims existed are segments
    # answers checked: hits (correct citations), answered (every non-refusal) or all (refusals too)
    scope: Literal["hits", "answered", "all"] = "hits"
    quality: dict[str, Any] | None = None  # --quality: its template and file
    # how answers were sampled: per_model (null: all), seed, strategy, and per model what was chosen
    sample: dict[str, Any]
    seed: int  # random seed of the sample and the bootstrap
    bootstrap_samples: int  # bootstrap resamples behind each confidence interval (0: no intervals)
    models: dict[str, ModelSpot]  # each answering model's figures, by name
    # the judge's run-to-run spread over judge repeats, per model, and model differences within it
    variance: dict[str, Any]
    # judge calls: made, cached, failed, cost_usd, tokens, reused from the file, decided without judge
    judge_calls: dict[str, Any]
    # the file of judgements (path, relative to the run folder), its rows, and the judge pass's cost (USD)
    judgements: dict[str, Any]
    # the CSV to label by hand for 'grace spotcheck calibrate', pre-filled, in the run folder
    review_csv: str | None = None
    redaction: RedactionRecord | None = None  # --redact-pii: counts per type of what the judge was not shown
    min_answers_for_ci: int = 10  # metrics.MIN_ANSWERS_FOR_CI
    risk_formula: str  # how hallucination_risk is computed, in words
    notes: str  # what the figures mean and how far to trust them, in sentences
    warnings: list[str] = Field(default_factory=list)  # what to know before reading the figures, in sentences
    # claim-level citation support of the models citing several sources: how it was checked; absent otherwise
    citation_support: CitationCheck | None = Field(None, exclude_if=lambda v: v is None)




def spotcheck_json(spot: SpotcheckFile) -> str:
    """The file's text: indented, non-ASCII kept (json.dumps, as the file has always been written)."""
    return json.dumps(spot.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def write_spotcheck(path: Path, spot: SpotcheckFile) -> None:
    atomic_write_text(path, spotcheck_json(spot))


def _place(loc: Any) -> str:
    return ".".join(str(p) for p in loc)


def read_spotcheck(path: Path) -> SpotcheckFile:
    """The typed ``spotcheck.json``; a ``GraceError`` naming the file and the first problem otherwise."""
    data = read_json_object(path, missing="file not found; give the spotcheck.json written by 'grace spotcheck run'",
                            redo="run 'grace spotcheck run' again")
    if not isinstance(data.get("judge"), dict):
        raise GraceError(f"{path}: not a spotcheck.json (no judge block)")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SPOTCHECK_SCHEMA_VERSION:
        raise GraceError(f"{path}: spotcheck schema_version {version!r} is not one this grace reads "
                         f"(<= {SPOTCHECK_SCHEMA_VERSION}); upgrade grace or run 'grace spotcheck run' again")
    try:
        return validate_known(SpotcheckFile, data, path, _place)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        problem = f"has no {_place(e['loc'])}" if e["type"] == "missing" else f"{_place(e['loc'])}: {e['msg']}"
        raise GraceError(f"{path}: {problem}; run 'grace spotcheck run' again") from None
