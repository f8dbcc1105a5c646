"""``report.json``: its one typed description (:class:`Report`), its reader and its writer.

The scorer builds a :class:`Report`; ``grace report`` (terminal, ``leaderboard.md``,
``report.html``), ``grace gate``, ``grace score``'s summary and the Python API
(``grace.load_run(...).leaderboard``) all read the same object back through
:func:`read_report`, so a figure has one name and one type everywhere, and
adding one is a field here, not a ``.get`` in every reader.

The scorer builds the report as these models from the start (never a dict
validated at the end), and every block forbids unknown keys and checks values
assigned to it: a misspelt key in the code that builds a report is an error, not
a figure that silently reads back as null. Reading is lenient on unknown keys
only (a newer grace's extra field is dropped with a warning naming it, see
:mod:`harness.run_folder.strict`). The per-model block (:class:`ModelReport`) is
typed field by field because every leaderboard reads it. Fields added after
schema 1 default to None, so an older report still reads (and shows a dash). The
spot-check block's per-model figures are a declared subset of ``spotcheck.json``'s
:class:`~harness.run_folder.spotcheck.ModelSpot` (one description of each figure);
its judge block stays a plain dict, a copy of ``spotcheck.json``'s. A report from
a newer grace (a higher ``schema_version``) is refused with a message, never
half-read.

The field order of each model is the key order of the file (pydantic dumps
fields in declaration order), so reordering fields changes ``report.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.run_folder.spotcheck import ModelSpot, SpotcheckFile
from harness.run_folder.strict import read_json_object, validate_known

REPORT_SCHEMA_VERSION = 2  # 2: outcome unshown_citation, unshown_citation_rate and truncated per model


class _Block(BaseModel):
    """Strict when built: an unknown key is an error, and so is a value of the wrong type assigned later."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ClassScores(_Block):
    precision: float
    recall: float
    f1: float
    support: int


class Refusal(_Block):
    should_refuse_did: float | None  # share of must-refuse questions refused
    should_answer_did: float | None  # share of answerable questions answered
    calibration: float | None  # the mean of the two


class Confusion(_Block):
    labels: list[str]
    matrix: list[list[int]]  # rows = true label, columns = predicted label


class Retrieval(_Block):
    k: int
    recall_at_k: float | None
    n_retrieved: int
    n_missed: int
    accuracy_when_retrieved: float | None
    accuracy_when_missed: float | None


class RepeatStats(_Block):
    n_repeats: int
    question_agreement: float | None
    accuracy_per_repeat: list[float]
    accuracy_std: float


class Cost(_Block):
    total_usd: float | None
    per_1k_questions_usd: float | None
    input_tokens: int
    output_tokens: int


class Truncation(_Block):
    n: int  # answers whose finish_reason says the output limit cut them off
    share: float
    no_citation: int  # of those, answers cut off before any citation or refusal
    max_tokens: int | None  # the limit they were asked with (params.max_tokens), when recorded


class Latency(_Block):
    p50_ms: float | None
    p95_ms: float | None


class JsonMode(_Block):
    used: str  # json_object | prompt: how JSON was asked for when the server rejected the answer's schema
    reason: str  # e.g. "server rejected json_schema: HTTP 500: ..."


class ModelReport(_Block):
    """One ranked model's figures: what every leaderboard (terminal, Markdown, HTML, the API) shows.

    ``model`` is the model's name, the key of ``Report.models``: filled in when
    the report is read, never written (the file keys the block by it already).
    """

    rank: int
    significance_group: str  # compact letters: models sharing a letter are not significantly different
    n: int  # responses scored
    n_questions: int  # distinct gold questions answered
    repeats: int
    accuracy: float
    accuracy_ci95: list[float] | None  # [low, high], 95% bootstrap over questions; None with --bootstrap 0
    strict_accuracy: float
    strict_accuracy_ci95: list[float] | None
    outcomes: dict[str, int]
    strict_outcomes: dict[str, int]
    invalid_citation_rate: float
    unshown_citation_rate: float | None = None  # cited a KB article not shown to the model (schema 2)
    # answers (of those long enough to tell) not in the question's language; None: none could be told
    other_language_rate: float | None = None
    error_count: int
    truncated: Truncation | None = None  # schema 2
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
    model: str = Field("", exclude=True)

    @property
    def ci_low(self) -> float | None:
        return self.accuracy_ci95[0] if self.accuracy_ci95 else None

    @property
    def ci_high(self) -> float | None:
        return self.accuracy_ci95[1] if self.accuracy_ci95 else None

    def record(self) -> dict[str, Any]:
        """Every scalar figure as one flat dict (a DataFrame row): typed blocks flattened as ``block_field``
        (``refusal_calibration``, ``cost_total_usd``, ``latency_p50_ms``), CIs as ``ci_low``/``ci_high``
        (``strict_ci_low``, ...); per-class scores, outcome counts and the confusion matrix left out."""
        out: dict[str, Any] = {"model": self.model}
        for name in _SCALARS:
            if name.endswith("_ci95"):  # accuracy_ci95 -> ci_low, strict_accuracy_ci95 -> strict_ci_low
                stem = name.removesuffix("_ci95").removesuffix("accuracy").rstrip("_")
                prefix = f"{stem}_" if stem else ""
                out[f"{prefix}ci_low"], out[f"{prefix}ci_high"] = getattr(self, name) or (None, None)
            elif name in _BLOCKS:
                block = getattr(self, name)
                out.update({f"{name}_{field}": getattr(block, field, None) for field in _BLOCKS[name]})
            else:
                out[name] = getattr(self, name)
        return out


def _members(annotation: Any) -> tuple[Any, ...]:
    """``X | None`` -> ``(X, NoneType)``; anything else -> ``(annotation,)``."""
    return get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)


def _is_scalar(annotation: Any) -> bool:
    return all(t in (int, float, str, bool, type(None)) for t in _members(annotation))


def _block_type(annotation: Any) -> type[BaseModel] | None:
    return next((t for t in _members(annotation) if isinstance(t, type) and issubclass(t, BaseModel)), None)


# what ModelReport.record() flattens, worked out once from the fields' types
_BLOCKS = {name: fields for name, field in ModelReport.model_fields.items()
           if (t := _block_type(field.annotation)) is not None
           and (fields := [k for k, f in t.model_fields.items() if _is_scalar(f.annotation)])}
_SCALARS = [name for name, f in ModelReport.model_fields.items()
            if name != "model" and (name in _BLOCKS or name.endswith("_ci95") or _is_scalar(f.annotation))]


class FailedModel(_Block):
    n: int
    error_count: int
    reason: str


class Pair(_Block):
    a: str
    b: str
    n: int
    a_only: int  # questions only a got right (majority of repeats)
    b_only: int
    p_value: float  # McNemar exact
    p_adjusted: float  # Holm-corrected
    significant: bool


class GoldInfo(_Block):
    path: str | None  # None: questions passed in memory
    hash: str
    n_questions: int
    n_must_refuse: int


class KbInfo(_Block):
    path: str
    hash: str
    n_articles: int


class ResponsesInfo(_Block):
    path: str
    n: int


class LabelSuspect(_Block):
    """One gold label most models contradict (``harness.scoring.label_audit.Suspect``)."""

    question_id: str  # several, joined by ";", for a near_duplicates row
    question: str
    gold: str
    suggested: str
    agree: int
    gold_votes: int
    voters: int
    kind: str
    check: str
    reason: str


class LabelSuspects(_Block):
    n: int
    by_kind: dict[str, int]
    top: list[LabelSuspect]  # the first few; 'grace annotations audit' lists them all


# the per-model spot-check figures the report carries, in the report's key order: each typed once, in ModelSpot
SPOT_FIGURES = (
    "hits", "n", "n_segments", "groundedness", "groundedness_ci95", "hallucination_rate", "hallucination_rate_ci95",
    "hallucination_risk", "hallucination_risk_ci95", "groundedness_spread", "groundedness_n", "hallucination_rate_n",
    "hallucination_risk_n", "ci_note", "display", "n_incomplete", "n_verdicts", "n_unreadable", "n_failed_calls",
    "truncated_skipped", "n_claims", "faithfulness", "faithfulness_ci95", "partial_rate", "partial_rate_ci95",
    "n_extraction_failed", "coverage", "coverage_ci95", "coverage_n", "quality",
)

SpotcheckModel: type[_Block] = create_model(  # ModelSpot's fields, each optional (null in an older report)
    "SpotcheckModel", __base__=_Block, __module__=__name__,
    __doc__="One model's spot-check figures in the report: ``SPOT_FIGURES`` of ``spotcheck.json``'s ModelSpot.",
    **{name: (ModelSpot.model_fields[name].annotation | None, None) for name in SPOT_FIGURES},
)


class SpotcheckBlock(_Block):
    """``report.json["spotcheck"]``: a compact copy of ``spotcheck.json``, written by ``grace spotcheck run``."""

    schema_version: int | None = None
    path: str | None = None
    created_at: str | None = None
    judge: dict[str, Any] = Field(default_factory=dict)  # spotcheck.json's judge: model, calibrated, kappa, ...
    sample: dict[str, Any] | None = None
    repeats: int | None = None
    max_judge_spread: float | None = None  # the judge's run-to-run spread of groundedness
    min_answers_for_ci: int | None = None
    models: dict[str, SpotcheckModel] = Field(default_factory=dict)
    notes: str | None = None
    mode: str | None = None  # claims | segments (None: a block written before claims existed, i.e. segments)
    scope: str | None = None  # hits | answered | all
    redaction: dict[str, Any] | None = None  # --redact-pii: what the judge was not shown, counted per type

    @classmethod
    def from_spotcheck(cls, spot: SpotcheckFile) -> SpotcheckBlock:
        """The block for ``spotcheck.json``'s content: what ``grace spotcheck run`` puts in the report, and what
        re-scoring a folder carries over (both here, so the scorer need not import the spot-check)."""
        from harness.run_folder import SPOTCHECK

        return cls(
            schema_version=spot.schema_version,
            path=SPOTCHECK,
            created_at=spot.created_at,
            judge=spot.judge.model_dump(mode="json"),
            sample={"per_model": spot.sample.get("per_model"), "seed": spot.seed,
                    "strategy": spot.sample.get("strategy")},
            repeats=spot.variance.get("repeats"),
            max_judge_spread=spot.variance.get("max_spread"),
            min_answers_for_ci=spot.min_answers_for_ci,
            models={m: SpotcheckModel(**{k: getattr(v, k) for k in SPOT_FIGURES}) for m, v in spot.models.items()},
            notes=spot.notes,
            mode=spot.mode,
            scope=spot.scope,
            redaction=spot.redaction.model_dump(mode="json") if spot.redaction is not None else None,
        )


class Report(_Block):
    """The whole of ``report.json``."""

    schema_version: int = REPORT_SCHEMA_VERSION
    created_at: str
    grace_version: str
    gold: GoldInfo
    kb: KbInfo
    responses: ResponsesInfo
    seed: int
    bootstrap_samples: int
    leaderboard: list[str]  # ranked models, best first
    models: dict[str, ModelReport]
    pairwise: list[Pair]
    spotcheck: SpotcheckBlock | None = None
    warnings: list[str] = Field(default_factory=list)
    failed_models: dict[str, FailedModel] = Field(default_factory=dict)  # every call failed: listed, never ranked
    label_suspects: LabelSuspects | None = None  # gold labels the models contradict (harness.scoring.label_audit)

    @model_validator(mode="after")
    def _name_models(self) -> Report:
        for name, m in self.models.items():
            m.model = name
        return self

    def ranked(self) -> list[ModelReport]:
        """The models in leaderboard order; a model missing from the list goes last, not lost."""
        order = [name for name in dict.fromkeys(self.leaderboard) if name in self.models]
        return [self.models[name] for name in order + [m for m in self.models if m not in order]]


def read_report(path: Path) -> Report:
    return read_report_data(path)[0]


def read_report_data(path: Path) -> tuple[Report, dict[str, Any]]:
    """The typed report and the JSON it was read from: where a check must know a figure as written (``"0.5"``
    and ``true`` are read as numbers by the typed model; ``grace gate`` refuses them)."""
    data = read_json_object(path, missing="not found; run 'grace score' on this folder first",
                            redo="re-run 'grace score'")
    if not isinstance(data.get("models"), dict):
        raise GraceError(f"{path}: not a grace report (no 'models' object); re-run 'grace score'")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > REPORT_SCHEMA_VERSION:
        raise GraceError(
            f"{path}: report schema_version {version!r} is not one this grace reads "
            f"(<= {REPORT_SCHEMA_VERSION}); upgrade grace or re-run 'grace score'"
        )
    try:
        return validate_known(Report, data, path, field_name), data
    except ValidationError as exc:
        raise GraceError(f"{path}: {_first_problem(exc)}; re-run 'grace score'") from None


_KEYED = {"models", "failed_models", "per_class", "by_kind", "outcomes", "strict_outcomes", "extraction_rules",
          "display"}  # dict fields: what follows them in an error's location is a key, shown as ['key']


def field_name(parts: list[Any] | tuple[Any, ...]) -> str:
    """A place in the report as messages name it: ("models", "gpt", "accuracy") -> models['gpt'].accuracy."""
    text = ""
    for i, p in enumerate(parts):
        keyed = isinstance(p, int) or (i > 0 and parts[i - 1] in _KEYED)
        text += f"[{p!r}]" if keyed else (f".{p}" if text else str(p))
    return text


def _first_problem(exc: ValidationError) -> str:
    """"models['gpt'] has no accuracy", "models['gpt'].n: Input should be a valid integer (it is "x")" (and how
    many more)."""
    errors = exc.errors(include_url=False)
    loc = list(errors[0]["loc"])
    if errors[0]["type"] == "missing":
        text = f"{field_name(loc[:-1]) or 'the report'} has no {loc[-1]}"
    else:
        text = f"{field_name(loc)}: {errors[0]['msg']} (it is {as_written(errors[0].get('input'))})"
    more = len(errors) - 1
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def as_written(value: Any) -> str:
    """A value as the file has it (null, "high", NaN), cut short: what an error message says was found."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def report_json(report: Report) -> str:
    """Indented for people and diffs, but each confusion-matrix row on one line.

    Plain ``indent`` would put each of a 500x500 matrix's numbers on its own
    line (and json's fast C encoder does not indent), so the matrices are
    swapped for placeholders, indented, then written back compactly.
    """
    data = report.model_dump(mode="json")
    rows: dict[str, str] = {}
    for m in data["models"].values():
        key = f"@@confusion-{len(rows)}@@"
        rows[key] = "[" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in m["confusion"]["matrix"]) + "]"
        m["confusion"]["matrix"] = key
    text = json.dumps(data, indent=1, ensure_ascii=False)
    for key, value in rows.items():
        text = text.replace(json.dumps(key), value, 1)
    return text + "\n"


def write_report(path: Path, report: Report) -> None:
    atomic_write_text(path, report_json(report))
