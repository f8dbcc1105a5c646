"""The leaderboard columns: one spec, rendered by the terminal, ``leaderboard.md`` and ``report.html``.

One definition keeps the three views identical: a reader comparing the
terminal table with ``leaderboard.md`` or the page never finds two numbers for
the same thing. Adding a column is one :class:`Column` here (its header, its
cell from the typed :class:`~harness.run_folder.report.ModelReport`, its legend
line, how early a narrow terminal may leave it out, and whether a run shows it
at all); the renderers take it from :func:`columns_for` (:data:`COLUMNS` less
the columns the run has no figure for, such as the forbidden-citation rate of a
KB that restricts no article). The per-category table (:func:`category_table`)
is shared the same way. Missing values (a model with no price, no
latency, no must-refuse questions) are shown as an en dash, never as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.run_folder.report import ModelReport, Report

DASH = "–"


def number(value: Any) -> float | None:
    """A finite float, or None for null, NaN and non-numbers (JSON from other tools is not trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def pct(value: Any, digits: int = 1) -> str:
    v = number(value)
    return DASH if v is None else f"{100 * v:.{digits}f}%"


def ci(pair: Any) -> tuple[float, float] | None:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        lo, hi = number(pair[0]), number(pair[1])
        if lo is not None and hi is not None:
            return lo, hi
    return None


def pct_ci(value: Any, pair: Any) -> str:
    if number(value) is None:
        return DASH
    bounds = ci(pair)
    if bounds is None:
        return pct(value)
    return f"{pct(value)} [{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]"


def usd(value: Any) -> str:
    v = number(value)
    if v is None:
        return DASH
    if v == 0:
        return "$0"
    return f"${v:,.2f}" if v >= 0.1 else f"${v:.2g}"


def millis(value: Any) -> str:
    v = number(value)
    if v is None:
        return DASH
    return f"{v:.0f} ms" if v < 1000 else f"{v / 1000:.2f} s"


def duration(value: Any) -> str:
    """Seconds as a reader says them: ``45 s``, ``12.5 min``, ``3.2 h``; a dash for none."""
    v = number(value)
    if v is None:
        return DASH
    return f"{v:.0f} s" if v < 90 else f"{v / 60:.1f} min" if v < 5400 else f"{v / 3600:.1f} h"


def count(value: Any) -> str:
    v = number(value)
    return DASH if v is None else f"{int(v):,}"


@dataclass(frozen=True)
class Column:
    """One column of a table of models, the same in every view."""

    key: str
    header: str
    cell: Callable[[ModelReport], str]
    numeric: bool = True  # right-aligned; a non-numeric cell is user text (escaped in Markdown)
    legend: str | None = None  # its line under the table in leaderboard.md and report.html
    drop: int = 0  # a terminal too narrow for the table leaves out the highest first; 0: always shown
    when: Callable[[list[ModelReport]], bool] | None = None  # shown only for runs where this holds (None: always)


def _self_hosted(models: list[ModelReport]) -> bool:
    return any(m.serving is not None and m.serving.self_hosted for m in models)


def _cost(m: ModelReport) -> str:
    """USD per 1,000 questions by tokens; a self-hosted model priced per server-hour: by its servers' time."""
    by_tokens = number(m.cost.per_1k_questions_usd)
    if by_tokens is None and m.serving is not None and m.serving.cost_per_1k_questions_usd is not None:
        return f"{usd(m.serving.cost_per_1k_questions_usd)} (server-h)"
    return usd(by_tokens)


def _ppi_shown(models: list[ModelReport]) -> bool:
    return any(m.ppi is not None for m in models)


def citations_shown(models: list[ModelReport]) -> bool:
    """Some model's citations are read as references or scored several per answer (report.json ``citations``):
    only then do the citation columns appear, so a run of GRACE prompts shows the table it always showed."""
    return any(m.citations is not None for m in models)


def scoring_mode(m: ModelReport) -> str:
    """How the model's citations were read and scored: ``multi, references``; a GRACE model: ``single, IDs``."""
    c = m.citations
    return "single, IDs" if c is None else f"{c.scoring}, {'IDs' if c.reads == 'ids' else c.reads}"


def _cit(figure: str) -> Callable[[ModelReport], str]:
    """A citation figure with its 95% CI, a dash for a model with none (a GRACE model: see its accuracy)."""
    def cell(m: ModelReport) -> str:
        c = m.citations
        return DASH if c is None else pct_ci(getattr(c, figure), getattr(c, f"{figure}_ci95", None))
    return cell


def _page_cell(m: ModelReport) -> str:
    """``41.0% / 62.1%``: page-level citation precision and recall; a dash for a GRACE model."""
    c = m.citations
    return DASH if c is None else f"{pct(c.page_precision)} / {pct(c.page_recall)}"


def unmapped_cell(m: ModelReport) -> str:
    """``3 of 40`` references that resolved to no KB article; a dash for a GRACE model."""
    c = m.citations
    return DASH if c is None else f"{c.n_unmapped:,} of {c.n_citations:,}"


def _rank(m: ModelReport) -> str:
    """The prediction-powered rank in a prediction-powered report (its order), else the rank (None: unlabelled)."""
    if m.ppi is not None:
        return str(m.ppi.rank)
    return DASH if m.rank is None else str(m.rank)


def _ppi_labels(m: ModelReport) -> str:
    p = m.ppi
    if p is None:
        return DASH
    gained = number(p.labels_gained)
    return labels_cell(p) + ("" if gained is None else f" (≈{p.n_human + gained:,.0f})")


def labels_cell(p: Any) -> str:
    """A model's questions by label, in the report's three counts: ``30 + 44 (+16 with no label)`` (human-labelled
    + machine-labelled, and those with no usable machine label, scored as a miss); an older report: ``30 + 60``."""
    if p.n_no_label is None:
        return f"{p.n_human:,} + {p.n_machine:,}"
    return f"{p.n_human:,} + {p.n_machine - p.n_no_label:,}" + (f" (+{p.n_no_label:,} with no label)"
                                                                  if p.n_no_label else "")


COLUMNS: list[Column] = [
    Column("rank", "Rank", _rank),
    Column("model", "Model", lambda m: m.model, numeric=False),
    Column("ppi_accuracy", "PPI acc. ± 95% CI",
           lambda m: DASH if m.ppi is None else pct_ci(m.ppi.accuracy.value, m.ppi.accuracy.ci95),
           legend="PPI acc.: prediction-powered accuracy (PPI++) over every question: the accuracy against the machine "
           "labels, corrected by their error on the human-labelled questions; its 95% interval is valid with machine "
           "labels of any quality (power-tuned, so no wider than the human labels' alone), when the human-labelled "
           "questions are a random draw ('grace annotations sample').", when=_ppi_shown),
    Column("ppi_labels", "Labels (human + machine)", _ppi_labels, drop=8,
           legend="Labels: the questions the model answered with a human label + with a machine label (+ those with "
           "no usable machine label, judged a miss); (≈N): the human labels the human-only interval would need to be "
           "as narrow as the PPI one.", when=_ppi_shown),
    Column("accuracy", "Accuracy ± 95% CI", lambda m: pct_ci(m.accuracy, m.accuracy_ci95),
           legend="Accuracy: share of responses that cite the expected article, or refuse when the question must be "
           "refused (lenient extraction); the interval is the 95% Wilson score interval over the questions (honest at 0% "
           "and 100% too, where it is not a point)."),
    Column("strict", "Strict acc.", lambda m: pct(m.strict_accuracy), drop=3,
           legend="Strict acc.: the same with strict citation extraction only; a large gap means the model's citation "
           "format is sloppy."),
    Column("calibration", "Refusal calib.", lambda m: pct(m.refusal.calibration), drop=1,
           legend="Refusal calib.: the mean of the share of must-refuse questions refused and the share of answerable "
           "questions answered; 100% means the model refuses exactly the questions the KB cannot answer."),
    Column("ppi_calibration", "PPI calib.",
           lambda m: DASH if m.ppi is None or m.ppi.refusal_calibration is None
           else pct_ci(m.ppi.refusal_calibration.value, m.ppi.refusal_calibration.ci95), drop=1,
           legend="PPI calib.: the refusal calibration, prediction-powered the same way (must-refuse from the human "
           "label where there is one, the machine label elsewhere, corrected).", when=_ppi_shown),
    Column("invalid", "Invalid cit.", lambda m: pct(m.invalid_citation_rate), drop=2,
           legend="Invalid cit.: share of responses citing an article ID that does not exist."),
    Column("unshown", "Unshown cit.", lambda m: pct(m.unshown_citation_rate), drop=4,
           legend="Unshown cit.: share of responses citing a KB article that was not among the articles shown to the "
           "model (it cannot have read the answer there); a miss, whatever the article."),
    Column("forbidden", "Forbidden cit.", lambda m: pct(m.forbidden_citation_rate),
           legend="Forbidden cit.: share of responses citing an article the user who asked may not see (its audience "
           "has none of their groups): a leak, counted as a miss even when the article answers the question.",
           when=lambda models: any(m.forbidden_citation_rate is not None for m in models)),
    Column("own_recall", "Own retrieval", lambda m: _own_recall(m), drop=7,
           legend="Own retrieval: for a system that retrieves for itself (python:, http:, imported logs) and says what it "
           "retrieved, the share of answerable questions whose expected article it retrieved (recall@k, k: the most "
           "IDs it returned); its unshown citations are judged against what it retrieved.",
           when=lambda models: any(m.retrieval_source == "system" for m in models)),
    Column("cit_scoring", "Citations", scoring_mode, numeric=False,
           legend="Citations: how the model's citations were read and scored. single, IDs: one GRACE article ID per "
           "answer (accuracy says it all); multi, references: the system's own references (paths, URLs, titles, "
           "quotes, footnotes), each resolved to KB articles, several per answer. For such a model, accuracy is its "
           "hit rate (an acceptable article among those cited) plus correct refusals.", when=citations_shown),
    Column("cit_precision", "Cit. precision ± 95% CI", _cit("precision"), drop=9,
           legend="Cit. precision: per answer that cites, the share of its citations that answer the question (that "
           "resolve to an article of the gold's acceptable set; one resolving to several articles is right when one of "
           "them is), an unmapped reference counting as a miss; the mean over those answers, with a 95% bootstrap CI "
           "over questions.", when=citations_shown),
    Column("cit_recall", "Cit. recall ± 95% CI", _cit("recall"), drop=9,
           legend="Cit. recall: per answerable question, 1 when it cites an acceptable article (the gold's articles "
           "are alternatives), or where the gold says citations_needed = all, the share of them it cites; the mean, "
           "with a 95% bootstrap CI.", when=citations_shown),
    Column("cit_f1", "Cit. F1 ± 95% CI", _cit("f1"),
           legend="Cit. F1: the mean per-answer F1 of citation precision and recall, with a 95% bootstrap CI.",
           when=citations_shown),
    Column("cit_hit", "Hit rate ± 95% CI", _cit("hit_rate"), drop=13,
           legend="Hit rate: answerable questions whose answer cites at least one acceptable article, with a 95% Wilson "
           "score interval.",
           when=citations_shown),
    Column("cit_page", "Page prec. / recall", _page_cell, drop=14,
           legend="Page prec. / recall: citation precision and recall with every article read as the document it was "
           "built from (a citation of the right page, or a neighbouring section of it, is right).",
           when=citations_shown),
    Column("cit_unmapped", "Unmapped", unmapped_cell, drop=10,
           legend="Unmapped: the references that resolved to no KB article, of all the references cited (each "
           "counts against precision; none is read as an ID it merely looks like).", when=citations_shown),
    Column("cit_correct", "Cit. correct", lambda m: DASH if m.citations is None else pct(m.citations.cit_correct),
           drop=11, legend="Cit. correct: per answer, the share of its citations that exist (resolve to an article), "
           "are reachable by the asker and are supported (a quoted span found in the article; a spot-check where one "
           "ran); the mean over answers that cite.", when=citations_shown),
    Column("cit_coverage", "Coverage", lambda m: DASH if m.citations is None else pct(m.citations.coverage), drop=12,
           legend="Coverage: per answer, the retrieved articles it cites over those retrieved (|cited ∩ retrieved| / "
           "|retrieved|); the mean over answers whose retrieval is known.", when=citations_shown),
    Column("cost", "Cost / 1k Q", lambda m: _cost(m), drop=5,
           legend="Cost / 1k Q: USD per 1,000 questions (a self-hosted model with a price per server-hour: its "
           "servers' time at that price, marked server-h); p50 latency: the median time the model took per call, the time a "
           "call waited for its turn (in grace, or in its server's queue) left out where it can be told."),
    Column("latency", "p50 latency", lambda m: millis(m.latency.p50_ms), drop=6),
    Column("time_1k", "Time / 1k Q", lambda m: DASH if m.serving is None else duration(m.serving.time_per_1k_questions_s),
           drop=6, legend="Time / 1k Q: how long 1,000 questions kept the model's endpoint busy, at the concurrency "
           "it ran at (its servers' time, what a self-hosted model is billed in).", when=_self_hosted),
    Column("ppi_group", "PPI sig.", lambda m: DASH if m.ppi is None else (m.ppi.significance_group or DASH),
           numeric=False, legend="PPI sig.: the same letters from prediction-powered tests of each pair's difference in "
           "accuracy over every question (normal, alpha 0.05, Holm-corrected).", when=_ppi_shown),
    Column("group", "Sig.", lambda m: m.significance_group or DASH, numeric=False,
           legend="Sig.: models sharing a letter are not significantly different (paired McNemar exact test, alpha "
           "0.05, Holm-corrected)."),
]

LEGEND = [c.legend for c in COLUMNS if c.legend]


def _own_recall(m: ModelReport) -> str:
    r = m.retrieval
    if m.retrieval_source != "system" or r is None or r.recall_at_k is None:
        return DASH
    return f"{pct(r.recall_at_k)} (k={r.k})"


def ppi_note(report: Report) -> str | None:
    """What a prediction-powered report's figures rest on, in one sentence every view shows above its table."""
    p = report.ppi
    if p is None:
        return None
    agree = "" if p.agreement is None else f"; they agree with {p.agreement:.0%} of the human labels"
    none = (f" ({p.unlabelled} question(s) have no usable machine label: an answer there counts as a miss under it)"
            if p.unlabelled else "")
    drawn = ("drawn by 'grace annotations sample'" + (f", stratified by {p.draw.stratified_by}" if p.draw.stratified_by
                                                      else "")) if p.draw.matches else "not checked as a random draw"
    rows = "" if p.rows is None else f" ({p.rows:,} rows)"
    return (f"the PPI columns are estimated over all {p.questions:,} questions{rows} from {p.human_labels:,} human labels "
            f"({drawn}) and {p.machine_labels:,} machine labels ({p.machine_path}, by {p.machine_source}){none}{agree}. "
            f"Models are ranked by PPI accuracy; the other columns are over the {p.human_labels:,} human-labelled "
            "questions only" + ("" if p.human_rows is None else f" ({p.human_rows:,} rows)") + ".")


def run_size(report: Report) -> str | None:
    """What a prediction-powered run scored, in questions and rows, for the headers that would otherwise give the
    human-labelled part alone as the run (``report.gold`` and ``report.responses`` count only those); None otherwise."""
    p = report.ppi
    if p is None:
        return None
    rows = "" if p.rows is None else f"; {p.rows:,} rows ({p.human_rows:,} on the human-labelled questions)"
    return (f"{p.questions:,} questions: {p.human_labels:,} human-labelled, {p.machine_labels:,} machine-labelled, "
            f"{p.unlabelled:,} with no usable machine label{rows}")


def asked_text(report: Report) -> str:
    """The questions a run's figures are over, for every view's heading: ``90 questions``; a ``grace run --sample``
    run's ``30 of 90 questions, sampled with seed 0 by category``, so no interval is read as the whole gold set's."""
    if report.sample is not None:
        return report.sample.describe()
    return f"{report.gold.n_questions} questions"


PPI_TITLE = "Prediction-powered (PPI++)"


def columns_for(models: list[ModelReport], columns: list[Column] = COLUMNS) -> list[Column]:
    """The columns a run shows: those without a condition, and those whose condition its models meet."""
    return [c for c in columns if c.when is None or c.when(models)]


def legend_for(columns: list[Column]) -> list[str]:
    return [c.legend for c in columns if c.legend]


CATEGORY_LEGEND = ("Accuracy per category: as the leaderboard's accuracy, over the questions of one category of the "
                   "gold file (its category column), with a 95% Wilson score interval over those questions (valid on "
                   "a few questions, where a bootstrap would collapse to a point); a category of few questions has a "
                   "wide interval, so compare categories with care. Questions: the category's questions the models "
                   "answered.")


def category_table(categories: list[str] | None, models: list[ModelReport]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): one row per gold category, one accuracy [95% CI] column per model; no rows without
    categories. Category and model names are user text: the renderer escapes them."""
    if not categories:
        return [], []
    headers = ["Category", "Questions", *(m.model for m in models)]
    rows = []
    for cat in categories:
        slices = [(m.categories or {}).get(cat) for m in models]
        asked = max((s.n_questions for s in slices if s is not None), default=0)
        rows.append([cat, count(asked), *(DASH if s is None else pct_ci(s.accuracy, s.accuracy_ci95) for s in slices)])
    return headers, rows


@dataclass
class Row:
    model: str
    cells: dict[str, str]
    errors: int
    n: int


def leaderboard_rows(models: list[ModelReport], columns: list[Column] = COLUMNS) -> list[Row]:
    return [Row(model=m.model, cells={c.key: c.cell(m) for c in columns}, errors=m.error_count, n=m.n)
            for m in models]


def errors_text(n: int) -> str:
    return f"{n} error" + ("" if n == 1 else "s")


def error_note(rows: list[Row]) -> str | None:
    """Errors are counted as misses; a final report should have none, so say so loudly."""
    failing = [f"{r.model}: {r.errors} of {r.n}" for r in rows if r.errors]
    if not failing:
        return None
    return (
        "Failed calls are counted as wrong answers (" + "; ".join(failing) + "). "
        "Run the same 'grace run' again to retry them, then re-score."
    )


def _share_of(m: ModelReport, outcome: str) -> str:
    return pct(m.outcomes.get(outcome, 0) / m.n) if m.n else DASH


def _cut_off(m: ModelReport) -> str:
    t = m.truncated
    return DASH if t is None else f"{pct(t.share)} ({count(t.n)})"


def _limit(m: ModelReport) -> str:
    t = m.truncated
    return DASH if t is None or t.max_tokens is None else f"{t.max_tokens:,}"


def json_mode_text(m: ModelReport) -> str:
    """'json_object (server rejected json_schema)', or a dash when the schema was used or JSON was not asked for."""
    jm = m.json_mode
    if jm is None or not jm.used:
        return DASH
    reason = jm.reason.partition(":")[0]
    return f"{jm.used} ({reason})" if reason else jm.used


# Per-model answer-format details (leaderboard.md and the page's details): the outcome shares that say
# how answers broke, and how many the output limit cut off.
DETAIL_COLUMNS: list[Column] = [
    Column("model", "Model", lambda m: m.model, numeric=False),
    Column("n", "Responses", lambda m: count(m.n)),
    Column("no_citation", "No citation", lambda m: _share_of(m, "no_citation")),
    Column("invalid", "Invalid cit.", lambda m: pct(m.invalid_citation_rate)),
    Column("unshown", "Unshown cit.", lambda m: pct(m.unshown_citation_rate)),
    Column("other_language", "Other language", lambda m: pct(m.other_language_rate)),
    Column("truncated", "Cut off by max_tokens", _cut_off),
    Column("truncated_no_citation", "Cut off before citing",
           lambda m: DASH if m.truncated is None else count(m.truncated.no_citation)),
    Column("max_tokens", "max_tokens", _limit),
    Column("json_mode", "JSON mode", json_mode_text),
    Column("queued", "Queued p50", lambda m: millis(m.latency.queued_p50_ms)),
    Column("served", "Concurrency (server slots)", lambda m: _served(m)),
    Column("tokens_per_s", "Answer tok/s", lambda m: DASH if m.serving is None else _rate(m.serving.output_tokens_per_s)),
    Column("server_time", "Server time", lambda m: DASH if m.serving is None else duration(m.serving.server_s)),
]

def _served(m: ModelReport) -> str:
    """``8 (1, measured)``: calls sent at once, and what its server works on at once, said or measured."""
    s = m.serving
    if s is None or s.concurrency is None:
        return DASH
    return f"{s.concurrency}" + ("" if s.server_slots is None else f" ({s.server_slots}, {s.slots_from})")


def _rate(value: Any) -> str:
    v = number(value)
    return DASH if v is None else f"{v:,.1f}"


DETAIL_LEGEND = (
    "Other language: share of answers (of those long enough to tell) written in another language than the "
    "question's, which is the KB's; the citation scores do not count it. "
    "Cut off by max_tokens: answers whose finish_reason says the output limit stopped them (\"length\", "
    "\"max_tokens\" or \"MAX_TOKENS\"); Cut off before citing: those of them with no citation or refusal in what "
    "was written, scored no_citation (or answered_unanswerable) only because they were cut short; max_tokens: the "
    "limit they were asked with; JSON mode: how JSON was asked for when the server rejected the answer's "
    "schema (json_object, or the prompt alone). Queued p50: the median time a call waited for its turn, in grace "
    "and in its server's queue (left out of its latency); Concurrency (server slots): the calls sent at once, and "
    "how many its server works on at once (as it says, or measured); Answer tok/s: answer tokens written per second "
    "its endpoint was busy; Server time: the seconds its calls kept its servers busy, every server counted."
)


def truncation_notes(models: list[ModelReport]) -> list[str]:
    """One warning per model whose answers the output limit cut off: results that say more about max_tokens."""
    notes = []
    for m in models:
        t = m.truncated
        if t is None or not t.n or not m.n:
            continue
        by = f"max_tokens ({t.max_tokens:,})" if t.max_tokens is not None else "the output limit (max_tokens)"
        before = f", {t.no_citation} of them before any citation" if t.no_citation else ""
        notes.append(f"{m.model}: {t.n} of {m.n} answers ({t.n / m.n:.0%}) were cut off by {by} before finishing"
                     f"{before}; raise --max-tokens")
    return notes


def _counts(counts: dict[str, int]) -> str:
    """``source 12, title 3, unmapped 2``: a per-way or per-problem count, largest first (keys are grace's own)."""
    shown = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v:,}" for k, v in shown) or DASH


def _quotes(m: ModelReport) -> str:
    c = m.citations
    if c is None or not c.quotes_checked:
        return DASH
    return f"{c.quotes_missing:,} of {c.quotes_checked:,} not found"


# Per-model citation details of the models read as references (leaderboard.md's and the page's Citations section):
# what the precision and recall are over, how the references resolved, quotes, marker problems.
CITATION_COLUMNS: list[Column] = [
    Column("model", "Model", lambda m: m.model, numeric=False),
    Column("cit_scoring", "Citations", scoring_mode, numeric=False),
    Column("answers", "Answers", lambda m: count(m.citations.n_answers)),
    Column("citing", "Citing", lambda m: count(m.citations.n_citing)),
    Column("references", "References", lambda m: count(m.citations.n_citations)),
    Column("cit_unmapped", "Unmapped", unmapped_cell),
    Column("page_precision", "Page precision ± 95% CI", _cit("page_precision")),
    Column("page_recall", "Page recall ± 95% CI", _cit("page_recall")),
    Column("by_how", "Resolved by", lambda m: _counts(m.citations.by_how), numeric=False),
    Column("quotes", "Quotes", _quotes),
    Column("marker_problems", "Marker problems", lambda m: _counts(m.citations.marker_problems), numeric=False),
]

CITATION_LEGEND = (
    "Answers: responses to answerable questions (what recall, F1 and the hit rate are over); Citing: those citing at "
    "least one reference (what precision, Cit. correct and coverage are over); References: the references cited, "
    "each counted once per answer. Page precision and recall: the same figures with every article read as the "
    "document it was built from (a citation of the right page, or of a neighbouring section of it, is right). A "
    "citation resolving to several articles (a page, a chunk spanning two sections) counts once in precision, right "
    "when one of them answers; recall follows the gold's citations_needed (any: one acceptable article cited is 1; "
    "all: the share of the listed articles cited). Resolved by: how each reference was mapped onto KB articles (id: a KB ID; "
    "mapping: your mapping file; rewrite: a rewrite rule; source, source+heading, title: the KB's own records; "
    "quote: the quoted text found in an article; unmapped: none). Quotes: quoted spans not found in the article they "
    "cite. Marker problems: answers whose markers or source list could not be read cleanly (a marker with no source, "
    "a listed source never cited, ...). Models read as GRACE IDs are not listed: their accuracy is their figure."
)


def citation_models(models: list[ModelReport]) -> list[ModelReport]:
    """The models with citation figures, in leaderboard order."""
    return [m for m in models if m.citations is not None]


CITATION_PAIRS_LEGEND = ("Citation F1 tests: every two models scored several citations per answer, compared on the "
                         "questions both answered by the mean per-question citation F1 (a paired sign-flip permutation "
                         "test, Holm-corrected over these pairs, alpha 0.05).")


def citation_pairs(report: Report) -> list[list[str]]:
    """report.json's ``citation_pairwise`` (the scorer's paired tests of citation F1 between multi-citation models),
    one row each: A, B, n, F1 A, F1 B, p, p (Holm), significant; [] when the report has none (a report from before
    the scorer wrote them reads the same)."""
    pairs = getattr(report, "citation_pairwise", None) or []
    return [[p.a, p.b, count(p.n), pct(p.f1_a), pct(p.f1_b), f"{p.p_value:.3g}", f"{p.p_adjusted:.3g}",
             "yes" if p.significant else "no"] for p in pairs]


CITATION_PAIR_HEADERS = ["Model A", "Model B", "Paired n", "Cit. F1 A", "Cit. F1 B", "p (permutation)", "p (Holm)",
                         "Significant"]
