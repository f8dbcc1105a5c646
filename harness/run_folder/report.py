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
import math
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.run_folder.run_records import SampleDraw
from harness.run_folder.spotcheck import ModelSpot, SpotcheckFile
from harness.run_folder.strict import read_json_object, validate_known

# 2: outcome unshown_citation, unshown_citation_rate and truncated per model; 3: latency is the model's own time
# per call (its queue apart: queued_p50_ms), and a self-hosted model's serving figures
REPORT_SCHEMA_VERSION = 3


def _share(value: float) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError("not a fraction between 0 and 1")
    return value


def _count(value: int) -> int:
    if value < 0:
        raise ValueError("not a count (0 or more)")
    return value


def _amount(value: float) -> float:
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError("not a finite number of 0 or more")
    return value


def _interval(value: list[float]) -> list[float]:
    """``[low, high]`` of a share: two numbers, 0 <= low <= high <= 1 (a reversed or impossible CI is damage)."""
    if not (len(value) == 2 and all(math.isfinite(v) for v in value) and 0.0 <= value[0] <= value[1] <= 1.0):
        raise ValueError("not [low, high] with 0 <= low <= high <= 1")
    return value


# Figures are checked where report.json is read (and as the scorer builds it): a share outside 0..1 (an accuracy of
# 7.5 plotted as 750%), a negative count, NaN, or a reversed interval is a damaged file, named, never plotted.
Rate = Annotated[float, AfterValidator(_share)]  # a share, 0 to 1
Count = Annotated[int, AfterValidator(_count)]  # a number of things, 0 or more
Amount = Annotated[float, AfterValidator(_amount)]  # money, time, a spread: 0 or more (not NaN, not infinite)
Interval = Annotated[list[float], AfterValidator(_interval)]  # [low, high] of a share


class _Block(BaseModel):
    """Strict when built: an unknown key is an error, and so is a value of the wrong type assigned later."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ClassScores(_Block):
    precision: Rate  # of the responses that gave this label, the share whose true label it is
    recall: Rate  # of the responses whose true label it is, the share that gave it
    f1: Rate  # harmonic mean of precision and recall
    support: Count  # responses whose true label is this one


class Refusal(_Block):
    should_refuse_did: Rate | None  # share of must-refuse questions refused
    should_answer_did: Rate | None  # share of answerable questions answered
    calibration: Rate | None  # the mean of the two


class Confusion(_Block):
    labels: list[str]  # the matrix's labels, rows and columns alike: articles cited or expected, then REFUSE, then none
    matrix: list[list[int]]  # rows = true label, columns = predicted label


class Retrieval(_Block):
    k: Count  # the most articles shown to the model for one question
    recall_at_k: Rate | None  # share of answerable responses whose shown articles include an expected one
    n_retrieved: Count  # answerable responses shown an expected article
    n_missed: Count  # answerable responses shown none of the expected articles
    accuracy_when_retrieved: Rate | None  # accuracy of the responses shown an expected article
    # accuracy of the responses shown none of them
    accuracy_when_missed: Rate | None


class RepeatStats(_Block):
    n_repeats: Count  # distinct repeats scored
    # mean share of a question's repeats giving its most common answer (questions asked 2+ times)
    question_agreement: Rate | None
    accuracy_per_repeat: list[Rate]  # the accuracy of each repeat, in repeat order
    accuracy_std: Amount  # standard deviation of those accuracies (sample, n - 1)


class Cost(_Block):
    # sum of the responses' costs, USD (cache hits at what they would cost); null: no cost known
    total_usd: Amount | None
    per_1k_questions_usd: Amount | None  # mean cost of a response with a known cost, times 1,000, USD
    input_tokens: Count  # prompt tokens over the responses that report them
    output_tokens: Count  # answer tokens over the responses that report them


class Truncation(_Block):
    n: Count  # answers whose finish_reason says the output limit cut them off
    share: Rate  # n over the responses scored
    no_citation: Count  # of those, answers cut off before any citation or refusal
    max_tokens: int | None  # the limit they were asked with (params.max_tokens), when recorded


class Latency(_Block):
    """The model's time per call: from when its server started on the call to the answer, the time the call waited
    in a queue (grace's in-flight limit, the server's slots) left out where it can be told (the response rows'
    ``service_ms``), else from sending to the answer. A report of schema 2 or older: always from sending."""

    p50_ms: Amount | None  # median of the model's time per call, milliseconds; null: no response reports one
    p95_ms: Amount | None  # 95th percentile of it, milliseconds
    # median time a call waited in a queue, in grace and in the server's, milliseconds; null: not recorded (schema 3)
    queued_p50_ms: Amount | None = None
    queued_p95_ms: Amount | None = None  # 95th percentile of that wait, milliseconds


class Serving(_Block):
    """What a model's questions took of its endpoint's time, over every command that asked it on the folder
    (run.json ``attempts``): for a self-hosted model, what it is billed in (its servers' hours), not tokens."""

    self_hosted: bool  # its endpoint is on this machine or network, or it has a price per server-hour
    calls: Count  # calls its endpoint answered (not from the cache)
    busy_s: Amount  # seconds from each command's first call sent to its last call back, summed over the commands
    servers: Count  # its servers: its replicas (base_url = [...]), else 1
    server_s: Amount  # busy_s times its servers: the server time its calls took
    time_per_1k_questions_s: Amount  # busy_s per answered call, times 1,000, at the concurrency it ran at
    output_tokens_per_s: Amount | None  # answer tokens written per second busy; null: the endpoint counted none
    concurrency: Count | None  # calls sent at once at most (the last command that asked it)
    server_slots: Count | None  # requests its server works on at once (the last command): said or measured
    slots_from: str | None  # props (the server said) | measured | server timings
    price_server_hour: Amount | None  # USD per hour of one server (run.json models[].price_server_hour)
    cost_usd: Amount | None  # server_s at that price; null: no price
    cost_per_1k_questions_usd: Amount | None  # cost_usd per answered call, times 1,000


class CategoryScore(_Block):
    """One model's accuracy on the questions of one gold category (as the overall accuracy), with a Wilson CI."""

    n: Count  # responses scored
    n_questions: Count  # distinct questions of the category answered
    accuracy: Rate | None  # share of the category's responses that are correct or correct_refusal
    # [low, high], the 95% Wilson score interval over the category's questions (valid for a few questions, where a
    # bootstrap collapses to a point); None with --bootstrap 0
    accuracy_ci95: Interval | None

    @model_validator(mode="after")
    def _in_its_interval(self) -> CategoryScore:
        """Wilson's interval always holds the share it is of: one that does not is not this figure's."""
        ci = self.accuracy_ci95
        if ci is not None and self.accuracy is not None and not ci[0] <= self.accuracy <= ci[1]:
            raise ValueError(f"accuracy {self.accuracy} is outside its interval {ci}")
        return self


class Permissions(_Block):
    """``report.json["permissions"]``: what the permission check (outcome forbidden_citation) covered; written only
    when the KB gives some article an ``audience``."""

    restricted_articles: Count  # articles with an audience (the others everyone may see)
    checked: Count  # responses whose asker's groups were known (the row's user_groups, else the gold 'groups')
    unchecked: Count  # responses with no groups known: their citations were not checked


class JsonMode(_Block):
    used: str  # json_object_schema | json_object | prompt: how JSON was asked for when the server rejected the answer's schema
    reason: str  # e.g. "server rejected json_schema: HTTP 500: ..."


class PpiFigure(_Block):
    """One prediction-powered figure (PPI++) beside the human-only figure it improves on."""

    value: float | None  # the prediction-powered estimate over every question; null when it cannot be computed
    ci95: list[float] | None  # [low, high], its 95% interval (normal, from human and machine labels)
    human_only: float | None  # the same figure from the human labels alone
    human_only_ci95: list[float] | None  # [low, high], the human-only 95% normal interval, over the same questions
    # the weight PPI++ gave the machine labels, 0 to 1: 0 ignores them (the human-only interval), 1 is plain PPI
    lam: float | None
    # human labels the human-only interval would need to be as narrow as the prediction-powered one
    effective_labels: float | None


class ModelPpi(_Block):
    """One model's prediction-powered figures (``report.json["models"][name]["ppi"]``): written only when the run
    was scored with machine labels (``--machine-gold``); see ``Report.ppi``."""

    rank: int  # rank by the prediction-powered accuracy (Report.ppi.leaderboard order)
    significance_group: str  # compact letters from the prediction-powered pairwise tests (Report.ppi.pairwise)
    n_human: int  # human-labelled questions the model answered
    n_machine: int  # other questions it answered, each with a machine label or none (a miss under no label)
    # of those n_machine questions, the ones with no usable machine label; null in a report written before it was
    n_no_label: int | None = None
    accuracy: PpiFigure  # prediction-powered accuracy over every question answered
    machine_accuracy: float | None  # accuracy against the machine labels alone, over every question (uncorrected)
    labels_gained: float | None  # effective_labels of the accuracy minus the human labels it used
    refusal_calibration: PpiFigure | None  # prediction-powered refusal calibration; null: no must-refuse label


class CitationScores(_Block):
    """A model's citation figures when its citations are read as references or scored several per answer (issue 39).

    Per answer: citation precision (the share of its citations that answer the question: a citation resolving to
    several articles is right when one of them is in the gold's acceptable set; an unmapped one a miss), recall (by
    the question's ``citations_needed``: "any", the default, 1 when an acceptable article is cited; "all", the
    acceptable articles cited over those listed), F1, ``hit`` (an acceptable article cited; "all": every one), the
    same precision and recall at page level (each article read as its source document), ``rule`` (these rules in
    words), ``cit_correct`` (the share of its citations
    that exist, are reachable by the asker and, where a quote or a spot-check says, are supported) and ``coverage``
    (|cited and retrieved| / |retrieved|). Means over the answerable questions a model answered with a citation
    (precision) or over all answerable questions (recall, F1, hit), each with a 95% interval over questions (the
    hit rate, a share, Wilson's; the means, a bootstrap's); cit_correct and coverage need no label, so they are means over every answer that cites (coverage:
    that also says what was retrieved).
    """

    scoring: str  # single | multi (run.json's models[].citations.scoring)
    reads: str  # ids | references
    n_answers: Count  # responses to answerable questions (the denominator of recall, F1 and hit)
    n_citing: Count  # of those, responses citing at least one reference (the denominator of precision)
    n_citations: Count  # citations made, over all responses (a reference counted once per answer)
    n_unmapped: Count  # of those, references that resolved to no KB article
    by_how: dict[str, Count]  # citations per way they resolved (kb_builder.references.HOW, and "unmapped")
    precision: Rate | None  # mean over citing answers of the share of citations resolving to an acceptable article
    precision_ci95: Interval | None  # [low, high], 95% bootstrap over questions; None with --bootstrap 0
    recall: Rate | None  # mean citation recall over answers (any of: acceptable article cited; all of: share cited)
    recall_ci95: Interval | None  # [low, high], 95% bootstrap over questions
    f1: Rate | None  # mean per-answer F1 of citation precision and recall
    f1_ci95: Interval | None  # [low, high], 95% bootstrap over questions
    hit_rate: Rate | None  # answers citing an acceptable article (all of: every one), over n_answers
    hit_rate_ci95: Interval | None  # [low, high], the 95% Wilson score interval over the questions
    cit_correct: Rate | None  # mean over citing answers of the share of citations that exist, are reachable, supported
    coverage: Rate | None  # mean over citing answers with known retrieval of |cited and retrieved| / |retrieved|
    # precision with every article read as its source document (a page URL, a chunk of the right page, a
    # neighbouring section count as right): the mean over the same answers as precision
    page_precision: Rate | None = None
    page_precision_ci95: Interval | None = None  # [low, high], 95% bootstrap over questions
    page_recall: Rate | None = None  # recall with every article read as its source document, over n_answers
    page_recall_ci95: Interval | None = None  # [low, high], 95% bootstrap over questions
    # how a citation resolving to several articles and a gold listing several are counted, in words
    # (harness.scoring.citation_reading.SET_RULE); empty in a report written before it was stated
    rule: str = ""
    quotes_checked: Count = 0  # quoted spans checked against the article they cite (no model needed)
    quotes_missing: Count = 0  # of those, quotes not found in that article
    marker_problems: dict[str, Count] = Field(default_factory=dict)  # harness.scoring.markers.PROBLEMS code -> answers
    # citations with a named problem of the reference (kb_builder.references.WARNINGS: ambiguous-anchor,
    # page-too-large, ambiguous-text, no-positions) -> how many; each also a line of report.warnings
    reference_warnings: dict[str, Count] = Field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The figures as flat ``citation_*`` columns (``ModelReport.record``, every export's metrics): each CI as
        ``citation_<figure>_ci_low``/``_ci_high``; the per-way and per-problem counts left out."""
        out: dict[str, Any] = {"citation_scoring": self.scoring, "citation_reads": self.reads}
        for name in ("n_answers", "n_citing", "n_citations", "n_unmapped", "precision", "recall", "f1", "hit_rate",
                     "cit_correct", "coverage", "page_precision", "page_recall", "quotes_checked", "quotes_missing"):
            out[name if name == "cit_correct" else f"citation_{name}"] = getattr(self, name)
            bounds = getattr(self, f"{name}_ci95", None)
            if f"{name}_ci95" in CitationScores.model_fields:
                out[f"citation_{name}_ci_low"], out[f"citation_{name}_ci_high"] = bounds or (None, None)
        return out


class ModelReport(_Block):
    """One ranked model's figures: what every leaderboard (terminal, Markdown, HTML, the API) shows.

    ``model`` is the model's name, the key of ``Report.models``: filled in when
    the report is read, never written (the file keys the block by it already).
    """

    rank: int | None  # None: an unlabelled run (imported logs without gold) ranks nothing
    significance_group: str  # compact letters: models sharing a letter are not significantly different
    n: Count  # responses scored
    n_questions: Count  # distinct gold questions answered
    repeats: Count  # distinct repeats scored (--repeats)
    accuracy: Rate | None  # None: an unlabelled run (Report.unlabelled says which figures are absent and why)
    # [low, high], the 95% Wilson score interval over the questions answered (never a point at 0% or 100%); None
    # with --bootstrap 0
    accuracy_ci95: Interval | None
    strict_accuracy: Rate | None  # accuracy when responses are read strictly (the prompt's exact format only)
    # [low, high], the 95% Wilson score interval of strict_accuracy over the questions; None with --bootstrap 0
    strict_accuracy_ci95: Interval | None
    outcomes: dict[str, Count]  # responses per outcome, read leniently
    strict_outcomes: dict[str, Count]  # responses per outcome, read strictly
    invalid_citation_rate: Rate  # share of responses citing an ID that is not in the KB
    unshown_citation_rate: Rate | None = None  # cited a KB article not shown to the model (schema 2)
    # cited an article the asker may not see (its audience has none of their groups), over every response; written
    # only when some of this model's responses were checked (the KB gives articles an audience, the asker's groups
    # are known): see Report.permissions
    forbidden_citation_rate: Rate | None = Field(None, exclude_if=lambda v: v is None)
    # answers (of those long enough to tell) not in the question's language; None: none could be told
    other_language_rate: Rate | None = None
    error_count: Count  # responses whose call failed (outcome error), scored as misses
    truncated: Truncation | None = None  # schema 2
    extraction_rules: dict[str, int]  # how many responses each lenient rule read
    per_class: dict[str, ClassScores]  # precision, recall, F1 and support per label: each article ID, and REFUSE
    macro_precision: Rate | None  # mean of per_class precision; null in an unlabelled run
    macro_recall: Rate | None  # mean of per_class recall; null in an unlabelled run
    macro_f1: Rate | None  # mean of per_class F1; null in an unlabelled run
    weighted_precision: Rate | None  # per_class precision averaged weighted by support; null in an unlabelled run
    weighted_recall: Rate | None  # per_class recall averaged weighted by support; null in an unlabelled run
    weighted_f1: Rate | None  # per_class F1 averaged weighted by support; null in an unlabelled run
    refusal: Refusal  # how often the model refuses when it should, and answers when it should
    confusion: Confusion  # true label against the label the response gave, counted over responses
    # accuracy by whether an expected article was shown; null: unknown what was shown, or unlabelled
    retrieval: Retrieval | None
    # "system": the retrieval figures are the system's own (rows with system_retrieved: python:, http:, imported logs),
    # not grace's retriever's; written only then
    retrieval_source: str | None = Field(None, exclude_if=lambda v: v is None)
    repeat_stats: RepeatStats | None  # agreement across repeats; null with a single repeat
    cost: Cost  # tokens and cost over the model's responses
    latency: Latency  # latency percentiles over the model's responses
    json_mode: JsonMode | None = None  # set only when the endpoint made grace fall back from json_schema
    # share of the answered calls (failed calls aside) that refused; written only in an unlabelled run, where it
    # stands in for the refusal calibration (which needs to know which questions must be refused)
    refusal_rate: Rate | None = Field(None, exclude_if=lambda v: v is None)
    # accuracy per gold category (the gold file's category column), in the gold file's order; written only when the
    # gold file has that column
    categories: dict[str, CategoryScore] | None = Field(None, exclude_if=lambda v: v is None)
    # prediction-powered figures from human and machine labels; written only with --machine-gold (Report.ppi)
    ppi: ModelPpi | None = Field(None, exclude_if=lambda v: v is None)
    # citation precision/recall/F1, coverage... for a model read as references or scored several per answer (issue 39)
    citations: CitationScores | None = Field(None, exclude_if=lambda v: v is None)
    # what its questions took of its endpoint's time (run.json); written only for a model whose calls grace timed
    serving: Serving | None = Field(None, exclude_if=lambda v: v is None)
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
        if self.ppi is not None:  # only in a prediction-powered run: an ordinary run's records keep their columns
            acc = self.ppi.accuracy
            out.update({"ppi_rank": self.ppi.rank, "ppi_accuracy": acc.value,
                        "ppi_ci_low": acc.ci95[0] if acc.ci95 else None, "ppi_ci_high": acc.ci95[1] if acc.ci95 else None,
                        "ppi_n_human": self.ppi.n_human, "ppi_n_machine": self.ppi.n_machine,
                        "ppi_labels_gained": self.ppi.labels_gained})
        if self.citations is not None:  # only for a model read as references: a GRACE model's record keeps its columns
            out.update(self.citations.record())
        return out


def _members(annotation: Any) -> tuple[Any, ...]:
    """``X | None`` -> ``(X, NoneType)``; anything else -> ``(annotation,)``; ``Rate`` (an ``Annotated`` float)
    counts as its float."""
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return tuple(get_args(t)[0] if get_origin(t) is Annotated else t for t in members)


def _is_scalar(annotation: Any) -> bool:
    return all(t in (int, float, str, bool, type(None)) for t in _members(annotation))


def _block_type(annotation: Any) -> type[BaseModel] | None:
    return next((t for t in _members(annotation) if isinstance(t, type) and issubclass(t, BaseModel)), None)


# what ModelReport.record() flattens, worked out once from the fields' types (ppi and citations: by hand, only when
# present, so a report without them gives the records it always gave)
_BY_HAND = ("model", "ppi", "citations")
_BLOCKS = {name: fields for name, field in ModelReport.model_fields.items()
           if name not in _BY_HAND and (t := _block_type(field.annotation)) is not None
           and (fields := [k for k, f in t.model_fields.items() if _is_scalar(f.annotation)])}
_SCALARS = [name for name, f in ModelReport.model_fields.items()
            if name not in _BY_HAND and (name in _BLOCKS or name.endswith("_ci95") or _is_scalar(f.annotation))]


class FailedModel(_Block):
    n: Count  # responses scored (every one a failed call)
    error_count: Count  # of those, failed calls (all of them)
    reason: str  # what happened and what to do


class Pair(_Block):
    a: str  # the model ranked higher
    b: str  # the model ranked lower
    n: Count  # questions both models answered: what the test is over
    a_only: Count  # questions only a got right (majority of repeats)
    b_only: Count  # questions only b got right (majority of repeats)
    p_value: Rate  # McNemar exact
    p_adjusted: Rate  # Holm-corrected
    significant: bool  # true when p_adjusted < 0.05


class CitationPair(_Block):
    """Two models scored several citations per answer, compared on per-question citation F1 (``citation_pairwise``)."""

    a: str  # the model ranked higher (leaderboard order)
    b: str  # the model ranked lower
    n: Count  # answerable questions both models answered: what the test is over
    f1_a: Rate  # a's mean per-question citation F1 over those questions
    f1_b: Rate  # b's, over the same questions
    # two-sided paired sign-flip permutation test of the mean per-question F1 difference (as many random sign flips,
    # seeded, as the report's bootstrap_samples; 1 when the two never differ)
    p_value: Rate
    p_adjusted: Rate  # Holm-corrected over the citation pairs
    significant: bool  # true when p_adjusted < 0.05


class GoldInfo(_Block):
    path: str | None  # None: questions passed in memory
    hash: str  # 16 hex digits of the SHA-256 of the gold file's bytes (in memory: of the questions' labels)
    n_questions: Count  # gold questions
    n_must_refuse: Count  # of those, questions that must be refused


class KbInfo(_Block):
    path: str  # the KB folder scored against
    hash: str  # the KB's content hash (manifest.json kb_hash)
    n_articles: Count  # articles in the KB


class ResponsesInfo(_Block):
    path: str  # the responses file scored
    n: int  # responses scored: the last line per model, question and repeat
    # 16 hex digits of the SHA-256 of the responses file's bytes as scored: whether the answers on file are still the
    # ones the figures count is judged by it, not by file times (which a copy of the folder changes); null: not recorded
    sha256: str | None = None
    size: int | None = None  # the responses file's size in bytes as scored; null: not recorded


class LabelSuspect(_Block):
    """One gold label most models contradict (``harness.scoring.label_audit.Suspect``)."""

    question_id: str  # several, joined by ";", for a near_duplicates row
    question: str  # the question's text (empty for a near_duplicates row)
    gold: str  # the gold label: "17", "17;18" or "REFUSE"
    suggested: str  # what the models say instead (an article ID, REFUSE, or the two swapped IDs)
    agree: int  # models behind the suggestion
    gold_votes: int  # models citing a gold article (or refusing a must_refuse question)
    voters: int  # models that gave a vote: one cited KB article, or a refusal (their most common answer over repeats)
    kind: str  # the rule that flagged it: other_article, refuse_answered, all_refuse or near_duplicates
    check: str  # what the reviewer should look at
    reason: str  # why the label is suspect, in a sentence


class LabelSuspects(_Block):
    """The labels the run's independent models contradict: written only when at least two models that are not
    grace's retrieval baselines voted (baselines cite the same retriever's top article: one opinion, not several)."""

    n: int  # gold labels flagged, in all
    by_kind: dict[str, int]  # how many of them each rule flagged
    top: list[LabelSuspect]  # the first few; 'grace annotations audit' lists them all
    models: list[str] = Field(default_factory=list)  # the models whose votes counted (empty in an older report)


# the per-model spot-check figures the report carries, in the report's key order: each typed once, in ModelSpot
SPOT_FIGURES = (
    "hits", "n", "n_segments", "groundedness", "groundedness_ci95", "hallucination_rate", "hallucination_rate_ci95",
    "hallucination_risk", "hallucination_risk_ci95", "groundedness_spread", "groundedness_n", "hallucination_rate_n",
    "hallucination_risk_n", "ci_note", "display", "n_incomplete", "n_verdicts", "n_unreadable", "n_failed_calls",
    "truncated_skipped", "n_claims", "faithfulness", "faithfulness_ci95", "partial_rate", "partial_rate_ci95",
    "n_extraction_failed", "coverage", "coverage_ci95", "coverage_n", "quality", "citation_support",
)
_ABSENT_WHEN_NONE = {"citation_support"}  # issue 39's figures: no key at all in a report of GRACE prompts

SpotcheckModel: type[_Block] = create_model(  # ModelSpot's fields, each optional (null in an older report)
    "SpotcheckModel", __base__=_Block, __module__=__name__,
    __doc__="One model's spot-check figures in the report: ``SPOT_FIGURES`` of ``spotcheck.json``'s ModelSpot.",
    **{name: (ModelSpot.model_fields[name].annotation | None,
              Field(None, exclude_if=lambda v: v is None) if name in _ABSENT_WHEN_NONE else None)
       for name in SPOT_FIGURES},
)


class SpotcheckBlock(_Block):
    """``report.json["spotcheck"]``: a compact copy of ``spotcheck.json``, written by ``grace spotcheck run``."""

    schema_version: int | None = None  # spotcheck.json's format version
    path: str | None = None  # the spot-check's file in the run folder: spotcheck.json
    created_at: str | None = None  # when the spot-check ran: ISO 8601, UTC, to the second
    judge: dict[str, Any] = Field(default_factory=dict)  # spotcheck.json's judge: model, calibrated, kappa, ...
    # how answers were sampled: per_model (answers per model; null: all), seed, strategy
    sample: dict[str, Any] | None = None
    repeats: int | None = None  # times the judge judged each segment (--repeats)
    max_judge_spread: float | None = None  # the judge's run-to-run spread of groundedness
    min_answers_for_ci: int | None = None  # checked answers below which no confidence interval is given
    models: dict[str, SpotcheckModel] = Field(default_factory=dict)  # each answering model's spot-check figures
    notes: str | None = None  # what the figures mean and how far to trust them, in sentences
    mode: str | None = None  # claims | segments (None: a block written before claims existed, i.e. segments)
    scope: str | None = None  # hits | answered | all
    redaction: dict[str, Any] | None = None  # --redact-pii: what the judge was not shown, counted per type

    @classmethod
    def from_spotcheck(cls, spot: SpotcheckFile) -> SpotcheckBlock:
        """The block for ``spotcheck.json``'s content: what ``grace spotcheck run`` puts in the report, and what
        re-scoring a folder carries over (both here, so the scorer need not import the spot-check)."""
        from harness.run_folder.file_names import SPOTCHECK

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


class PpiPair(_Block):
    """Two models' difference in accuracy, prediction-powered, on the questions both answered."""

    a: str  # the model ranked higher (prediction-powered accuracy)
    b: str  # the model ranked lower
    n_human: int  # human-labelled questions both answered
    n_machine: int  # other questions both answered
    difference: float | None  # a's accuracy minus b's, prediction-powered
    ci95: list[float] | None  # [low, high], the difference's 95% interval
    lam: float | None  # PPI++'s weight on the machine labels for this difference
    p_value: float  # two-sided, of no difference (normal, from the same estimate)
    p_adjusted: float  # Holm-corrected over every pair
    significant: bool  # true when p_adjusted < 0.05


class PpiDraw(_Block):
    """Was the human-labelled subset drawn at random by ``grace annotations sample``? What the check found."""

    path: str | None  # the draw record found (SUBSET.draw.json beside the gold or machine-label file); null: none
    matches: bool  # the human-labelled questions are exactly the drawn ones
    stratified_by: str | None  # the column the draw was stratified by, when its strata weigh the estimate
    drawn: int  # questions the record says were drawn (0: no record)
    labelled_not_drawn: int  # human-labelled questions the draw did not pick
    drawn_not_labelled: int  # drawn questions with no human label (skipped ones bias the estimate if not at random)


class PredictionPowered(_Block):
    """``report.json["ppi"]``: the run was scored with machine labels beside a human-labelled subset
    (``grace score --gold HUMAN --machine-gold MACHINE``), and each model's accuracy, refusal calibration and the
    differences between models are prediction-powered (PPI++). Written only then; every other figure of the report
    is over the human-labelled questions alone."""

    method: str  # how the figures were computed, in a sentence
    questions: int  # every question scored: the human-labelled ones and the others
    human_labels: int  # questions with a human label (the --gold file)
    machine_labels: int  # questions without a human label that have a machine label
    unlabelled: int  # questions with neither (no usable machine suggestion): each model's answer counts as a miss there
    # the rows (answers, each repeat one) scored over every question; null in a report written before it was
    rows: int | None = None
    human_rows: int | None = None  # of those, the rows on human-labelled questions: what responses.n counts
    machine_path: str  # the machine-label file (--machine-gold)
    machine_hash: str  # 16 hex digits of the SHA-256 of its bytes
    machine_format: str  # suggestions ('grace annotations suggest') or gold (a gold-format CSV)
    machine_source: str  # who made the machine labels (the suggestions' source column, or the file)
    # share of the human-labelled questions whose machine label agrees with the human one (same article or refusal)
    agreement: float | None
    draw: PpiDraw  # whether the human subset was drawn at random (grace annotations sample)
    leaderboard: list[str]  # models by prediction-powered accuracy, best first: the order every view shows
    pairwise: list[PpiPair]  # the prediction-powered difference of every pair of models, in that order


class Unlabelled(_Block):
    """``report.json["unlabelled"]``: the run's questions carry no label (``grace import-logs`` without gold), so
    the figures that need one are absent (null), never a silent 0."""

    absent: list[str]  # the figures left out, as report.json names them
    reason: str  # why they are absent, and how to score the questions


# the figures of a model that an unlabelled run leaves null (Report.unlabelled), and a labelled one never does
_NEED_A_LABEL = ("rank", "accuracy", "strict_accuracy", "macro_precision", "macro_recall", "macro_f1",
                 "weighted_precision", "weighted_recall", "weighted_f1")


class FunnelShare(_Block):
    """A share of a model's answers in the retrieval funnel: ``k`` of ``n``, with its 95% Wilson interval."""

    k: int  # answers counted
    n: int  # answers it is a share of
    rate: float | None  # k / n; null when n is 0
    ci: list[float] | None  # 95% Wilson interval; null when n is 0


class SearchFunnel(_Block):
    """``report.json["funnel"][model]``: what a model found, what it cited of it, and what its loop cost
    (harness.scoring.funnel). A model shown the top k is in it too, its "search" the top k, with no tool calls."""

    searches: bool  # true: the model searched the KB itself; false: it was shown the top k
    answers: int  # answered rows (each repeat one), failed calls left out
    errors: int  # failed calls
    tool_calls_mean: float | None  # tool calls per answer
    tool_calls_p95: float | None  # the 95th percentile of tool calls per answer (nearest rank)
    turns_mean: float | None  # model calls per answer
    gold_found: FunnelShare  # of answerable answers: a gold article was returned by a search (or in the top k)
    cited_given_found: FunnelShare  # of those found: the answer cites a gold article
    found_not_cited: FunnelShare  # of answerable answers: a gold article was returned and not cited
    cited_unseen: FunnelShare  # of answers citing a KB article: one of them no search returned
    # mean over answers that retrieved anything of |cited ∩ retrieved| / |retrieved|, with a bootstrap 95% interval
    coverage: float | None
    coverage_ci: list[float] | None  # bootstrap 95% interval of coverage; null without answers or --bootstrap 0
    coverage_n: int  # answers whose searches returned anything (coverage's denominator)
    loop_outcomes: dict[str, FunnelShare]  # of answers: how each loop ended (hit_cap, unknown_tool, ... completed)
    cost_usd: float | None  # every turn of every answer; null when the model has no price
    cost_per_answer_usd: float | None  # cost_usd over answers, USD; null when the model has no price
    latency_ms_mean: float | None  # every turn of an answer, summed
    latency_ms_p95: float | None  # nearest rank
    input_tokens_mean: float | None  # every turn of an answer, summed
    output_tokens_mean: float | None  # answer tokens per answer, every turn summed


class NativeCitations(_Block):
    """``report.json["native_citations"][model]``: the spans an API cited natively, checked against their articles
    (harness.scoring.spans)."""

    answers: int  # answered rows with native citations asked for
    spans: int  # spans cited over those answers
    found: int  # spans whose text is in the article they name
    at_offsets: int  # of those, exactly at the character offsets the API gave
    answers_with_unfound_span: int  # answers citing a span its article does not hold
    found_rate: float | None  # found / spans; null without spans
    found_ci: list[float] | None  # 95% Wilson interval of found_rate, over spans


class Report(_Block):
    """The whole of ``report.json``."""

    # version of report.json's format; a grace refuses a report newer than it reads
    schema_version: int = REPORT_SCHEMA_VERSION
    created_at: str  # when the report was written: ISO 8601, UTC, to the second
    grace_version: str  # the grace that scored the run
    gold: GoldInfo  # the gold set scored against
    kb: KbInfo  # the KB scored against
    responses: ResponsesInfo  # the responses scored
    seed: int  # random seed of the bootstrap confidence intervals
    bootstrap_samples: Count  # bootstrap resamples behind each confidence interval (0: no intervals)
    leaderboard: list[str]  # ranked models, best first
    models: dict[str, ModelReport]  # each ranked model's figures, by name, in leaderboard order
    pairwise: list[Pair]  # McNemar's test for every pair of ranked models, in leaderboard order
    # paired tests of citation F1 between every two ranked models scored several citations per answer
    # (CitationSettings.scoring == "multi"), in leaderboard order; written only when there are two or more
    citation_pairwise: list[CitationPair] | None = Field(None, exclude_if=lambda v: v is None)
    spotcheck: SpotcheckBlock | None = None  # the last spot-check's figures (grace spotcheck run); null until one ran
    warnings: list[str] = Field(default_factory=list)  # what to know before reading the figures, in sentences
    failed_models: dict[str, FailedModel] = Field(default_factory=dict)  # every call failed: listed, never ranked
    label_suspects: LabelSuspects | None = None  # gold labels the models contradict (harness.scoring.label_audit)
    unlabelled: Unlabelled | None = Field(None, exclude_if=lambda v: v is None)  # written only for unlabelled runs
    # the KB restricts articles (forbidden_citation): how many responses were checked; absent otherwise
    permissions: Permissions | None = Field(None, exclude_if=lambda v: v is None)
    # the gold file's categories, in its order (each model's ``categories``); absent when it has no category column
    categories: list[str] | None = Field(None, exclude_if=lambda v: v is None)
    # prediction-powered figures from a human subset and machine labels (--machine-gold); absent otherwise
    ppi: PredictionPowered | None = Field(None, exclude_if=lambda v: v is None)
    # grace run --sample N: the run asked a seeded draw of the gold set (gold.n_questions), and every figure is over
    # those questions; absent: the questions asked were the gold set's
    sample: SampleDraw | None = Field(None, exclude_if=lambda v: v is None)
    # 16 hex digits of the SHA-256 of the folder's run.json when scored: which grace run these figures are of (a
    # later run with another gold file that stopped before scoring makes them stale); absent: no run.json
    run_json_hash: str | None = Field(None, exclude_if=lambda v: v is None)
    # the retrieval funnel of each model, when a model of the run searched the KB itself; absent otherwise
    funnel: dict[str, SearchFunnel] | None = Field(None, exclude_if=lambda v: v is None)
    # each model's native citations checked (options.native_citations); absent when no model asked for them
    native_citations: dict[str, NativeCitations] | None = Field(None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _name_models(self) -> Report:
        for name, m in self.models.items():
            m.model = name
        return self

    @model_validator(mode="after")
    def _labelled_figures_are_there(self) -> Report:
        """Only an unlabelled run leaves accuracy and its kin null; in a labelled one a null is a damaged file."""
        if self.unlabelled is None:
            for name, m in self.models.items():
                null = [f for f in _NEED_A_LABEL if getattr(m, f) is None]
                if null:
                    raise ValueError(f"models[{name!r}].{null[0]}: null in a report of labelled questions"
                                     + (f" (and {', '.join(null[1:])})" if null[1:] else ""))
        return self

    def ranked(self) -> list[ModelReport]:
        """The models in leaderboard order (a prediction-powered report's: by PPI accuracy); a model missing from the
        list goes last, not lost."""
        board = self.ppi.leaderboard if self.ppi is not None else self.leaderboard
        order = [name for name in dict.fromkeys(board) if name in self.models]
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
          "display", "categories"}  # dict fields: what follows them in an error's location is a key, shown as ['key']


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
    elif errors[0]["type"] == "value_error" and not loc:  # a rule across fields: its message names them
        text = str(errors[0]["ctx"]["error"]) if "error" in errors[0].get("ctx", {}) else errors[0]["msg"]
    elif errors[0]["type"] == "value_error" and "error" in errors[0].get("ctx", {}):  # a figure out of its range
        text = f"{field_name(loc)} is {as_written(errors[0].get('input'))}, {errors[0]['ctx']['error']}"
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
