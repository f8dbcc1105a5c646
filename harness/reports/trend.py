"""A model's accuracy across runs: the figures (:class:`Trend`), its chart (SVG) and, with the ``png`` extra, a PNG.

Teams re-run the same gold set every week; "is the new model worse?" is a question
about a series, not about one run. A trend takes the runs of one gold set (the same
``report.json`` gold hash: a question-by-question comparison means nothing across
gold sets, the rule of ``grace compare``), puts them in time order (``run.json``'s
``started_at``, else the report's ``created_at``) and gives, per model, its accuracy
with the report's 95% CI in each run, on every question or on one gold category.

Between two consecutive runs of the same model a change is *significant* by the
rule of ``grace compare`` (:func:`harness.scoring.run_comparison.compare_sides`,
reused, not re-implemented): McNemar's exact test on the questions that flipped,
p < 0.05, one comparison at a time. It needs the two runs' per-question hits, so a
:class:`TrendSource` hands them over lazily: the viewer from its index, ``grace
report --trend`` from ``scores.jsonl``.

Used by the viewer's Trends page (:mod:`harness.viewer.trend`) and ``grace report
--trend`` (:mod:`harness.workflows.trend`): one computation, one chart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from harness.core.errors import GraceError
from harness.reports.leaderboard import ci, number
from harness.reports.svg import (
    GRID,
    INK,
    Scale,
    document,
    esc,
    fmt,
    legend,
    line,
    text,
    text_width,
    truncate,
    wrap,
)
from harness.run_folder.report import ModelReport, Report
from harness.scoring.run_comparison import RunHits, compare_sides
from harness.stats.wilson import wilson_interval

TREND_SCHEMA_VERSION = 1
Metric = Literal["accuracy", "strict_accuracy", "citation_f1", "citation_precision", "citation_recall"]
METRICS: dict[str, str] = {"accuracy": "accuracy", "strict_accuracy": "strict accuracy", "citation_f1": "citation F1",
                           "citation_precision": "citation precision", "citation_recall": "citation recall"}
# the figures of report.json's models[].citations a trend can follow: those of the models read as references
CITATION_METRICS = {"citation_f1": "f1", "citation_precision": "precision", "citation_recall": "recall"}
CITATION_NOTE = ("A citation figure has no change test here: compare two runs with grace compare (a paired "
                 "permutation test on citation F1).")


def metrics_for(reports: list[Report | None]) -> dict[str, str]:
    """The metrics a trend of these runs offers: the citation figures only when some model has them."""
    cited = any(m.citations is not None for r in reports if r is not None for m in r.models.values())
    return {k: v for k, v in METRICS.items() if cited or k not in CITATION_METRICS}
RULE = ("A mark: the model's change from its previous run in this trend is significant by grace compare's rule "
        "(McNemar's exact test on the questions that flipped, p < 0.05; each pair of runs tested on its own, so about "
        "1 in 20 pairs with no real change is marked by chance).")
# Tableau 10: told apart by most colour-blind readers; a model keeps its colour whatever the filter
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
DROP, RISE = "#b71c1c", "#1b5e20"
PNG_EXTRA = "pip install 'grace-eval[png]'"


@dataclass
class TrendSource:
    """One run as the trend reads it. ``hits(strict)`` gives its per-question hits (None: not available, e.g. its
    index failed); ``categories()`` each question's gold category. Both are called only when needed."""

    id: str
    path: Path
    report: Report | None
    when: str | None  # ISO 8601: run.json's started_at, else the report's created_at
    hits: Callable[[bool], RunHits | None]
    categories: Callable[[], dict[str, str]]
    damaged: str | None = None  # why its report.json could not be read (then ``report`` is None): not "not scored"


class TrendChange(BaseModel):
    """A model's change from its previous run in the trend: ``grace compare``'s figures for that pair."""

    since: str  # the previous run's ID
    n_questions: int  # questions both runs answered: what the test is over
    delta: float  # accuracy on those questions, this run minus the previous one
    delta_ci: list[float] | None  # paired bootstrap 95% CI of delta (the report's seed and samples)
    mcnemar_p: float  # exact, on the improved and regressed counts
    significant: bool  # mcnemar_p < 0.05, as grace compare says
    direction: Literal["improved", "regressed", "none"]  # of a significant change; none when not significant
    improved: int  # questions not correct before, correct now
    regressed: int  # questions correct before, not correct now


class TrendPoint(BaseModel):
    """One model in one run."""

    run: str  # the run's ID
    when: str | None  # when the run started (ISO 8601)
    n: int  # responses behind the figure
    n_questions: int  # distinct questions behind it
    value: float | None  # the metric (accuracy or strict accuracy), on every question or on the category's
    # its 95% CI, the report's: accuracy's the Wilson score interval over the questions (a citation figure's, a mean,
    # a bootstrap's); None with --bootstrap 0
    ci95: list[float] | None
    # grace run --sample: the gold set's questions the run drew the ones it asked from (n_questions "of" these);
    # None: the run asked every gold question
    sample_of: int | None = None
    change: TrendChange | None = None  # against the model's previous point; None for its first, or not testable
    note: str | None = None  # why there is no change test, when there is a previous point


class TrendSeries(BaseModel):
    model: str  # the model's name as the runs give it
    color: str  # its line's colour in the chart
    points: list[TrendPoint]  # in time order; runs the model is not in have no point


class TrendRun(BaseModel):
    id: str  # the run's ID (its folder's name, made unique)
    path: str  # the run folder
    when: str | None  # when it started (ISO 8601)


class GoldGroup(BaseModel):
    hash: str  # the gold set's hash (report.json gold.hash)
    path: str | None  # its file, as the newest run recorded it
    runs: list[str]  # run IDs scored against it, in time order


class LeftOut(BaseModel):
    run: str  # the run's ID
    path: str  # the run folder
    reason: str  # why it is not in the trend


class Trend(BaseModel):
    """A model's accuracy across the runs of one gold set: what ``grace report --trend --format json`` writes."""

    schema_version: int = TREND_SCHEMA_VERSION  # version of this format
    gold_hash: str  # the gold set the runs were scored against
    gold_path: str | None  # its file, as the newest run recorded it
    metric: Metric  # accuracy | strict_accuracy
    category: str | None  # the gold category shown; None: every question
    runs: list[TrendRun]  # the trend's runs, in time order
    models: list[str]  # every model of these runs (whatever the model filter), newest run's ranking first
    categories: list[str]  # the gold file's categories (empty: it has no category column)
    series: list[TrendSeries]  # one per model shown
    groups: list[GoldGroup]  # every gold set found, this one included, most runs first: the others' runs are left out
    left_out: list[LeftOut] = Field(default_factory=list)  # runs not in this trend, each with why
    rule: str = RULE  # what a mark means
    notes: list[str] = Field(default_factory=list)  # what to know before reading the figures

    def changes(self) -> list[tuple[str, TrendPoint]]:
        """(model, point) for every significant change."""
        return [(s.model, p) for s in self.series for p in s.points if p.change and p.change.significant]


def _time(when: str | None) -> datetime:
    if when:
        try:
            t = datetime.fromisoformat(when)
            return t if t.tzinfo else t.replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime.max.replace(tzinfo=UTC)


def short_time(when: str | None) -> str:
    """``2025-06-01 09:30`` (UTC) from an ISO time; the text as given when it is not one."""
    t = _time(when)
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if t.year < 9999 else (when or "?")


def group_runs(sources: list[TrendSource]) -> tuple[dict[str, list[TrendSource]], list[LeftOut]]:
    """The scored runs by gold hash, each group in time order; and the runs with no accuracy to follow."""
    groups: dict[str, list[TrendSource]] = {}
    left: list[LeftOut] = []
    for s in sources:
        r = s.report
        if r is None and s.damaged:  # every damaged report is named, each with its problem; none stops the trend
            left.append(LeftOut(run=s.id, path=str(s.path), reason=f"damaged report.json, not read: {s.damaged}"))
        elif r is None:
            left.append(LeftOut(run=s.id, path=str(s.path), reason="not scored yet (no report.json)"))
        elif r.unlabelled is not None:
            left.append(LeftOut(run=s.id, path=str(s.path), reason="unlabelled (imported logs without gold): no "
                                "accuracy to follow"))
        else:
            groups.setdefault(r.gold.hash, []).append(s)
    for runs in groups.values():
        runs.sort(key=lambda s: (_time(s.when), s.id))
    return groups, left


def pick_group(groups: dict[str, list[TrendSource]], gold: str | None) -> str:
    """The gold hash asked for (a prefix will do), else the one with the most runs (then the newest)."""
    if not groups:
        raise GraceError("no scored run to follow: a trend needs runs with a readable report.json (grace score them "
                         "first)")
    if gold:
        found = [h for h in groups if h.startswith(gold)]
        if len(found) != 1:
            known = "; ".join(f"{h} ({_gold_path(runs) or 'in memory'}, {len(runs)} run(s))"
                              for h, runs in groups.items())
            raise GraceError(f"gold set {gold!r}: {'no' if not found else 'more than one'} gold set of these runs has "
                             f"that hash; they are {known}")
        return found[0]
    return _by_size(groups)[0]


def _by_size(groups: dict[str, list[TrendSource]]) -> list[str]:
    """The gold hashes, the one with most runs first (then the one run latest)."""
    return sorted(groups, key=lambda h: (len(groups[h]), _time(groups[h][-1].when), h), reverse=True)


def _gold_path(runs: list[TrendSource]) -> str | None:
    return runs[-1].report.gold.path if runs and runs[-1].report else None


def build_trend(sources: list[TrendSource], *, gold: str | None = None, metric: str = "accuracy",
                category: str | None = None, models: list[str] | None = None) -> Trend:
    """The trend of the runs of one gold set (``gold``: a hash or its prefix; default the set with most runs)."""
    if metric not in METRICS:
        raise GraceError(f"metric {metric!r}: the trend follows {' or '.join(METRICS)}")
    if metric in CITATION_METRICS and category:
        raise GraceError(f"{METRICS[metric]} is not kept per gold category (report.json has it per model): follow it "
                         "on every question (no --category)")
    groups, left = group_runs(sources)
    chosen = pick_group(groups, gold)
    runs = groups[chosen]
    for h, other in groups.items():
        if h != chosen:
            left += [LeftOut(run=s.id, path=str(s.path), reason=f"scored against another gold set "
                             f"({_gold_path(other) or 'in memory'}, hash {h[:12]})") for s in other]
    reports = [s.report for s in runs if s.report is not None]
    all_models = list(dict.fromkeys([m.model for r in reversed(reports) for m in r.ranked()]))
    categories = list(dict.fromkeys(c for r in reports for c in r.categories or []))
    if category and category not in categories:
        raise GraceError(f"category {category!r}: the runs' gold set has "
                         + (f"the categories {', '.join(categories)}" if categories else "no category column"))
    shown = models or all_models
    unknown = [m for m in shown if m not in all_models]
    if unknown:
        raise GraceError(f"model {unknown[0]!r} is in none of these runs; they have {', '.join(all_models)}")
    ctx = _Context(runs, metric == "strict_accuracy", category, CITATION_METRICS.get(metric))
    series = [TrendSeries(model=m, color=PALETTE[all_models.index(m) % len(PALETTE)],
                          points=[p for s in runs if (p := ctx.point(s, m)) is not None]) for m in shown]
    ctx.add_changes(series)
    return Trend(gold_hash=chosen, gold_path=_gold_path(runs), metric=metric, category=category or None,
                 runs=[TrendRun(id=s.id, path=str(s.path), when=s.when) for s in runs], models=all_models,
                 categories=categories, series=series,
                 groups=[GoldGroup(hash=h, path=_gold_path(groups[h]), runs=[s.id for s in groups[h]])
                         for h in _by_size(groups)],
                 left_out=left, notes=ctx.notes + ([CITATION_NOTE] if metric in CITATION_METRICS else []))


class _Context:
    """What one trend reads from its runs: hits on first use, once per run."""

    def __init__(self, runs: list[TrendSource], strict: bool, category: str | None, citation: str | None = None):
        self.runs, self.strict, self.category = {s.id: s for s in runs}, strict, category
        self.citation = citation  # the CitationScores figure followed (f1, precision, recall); None: accuracy
        self._hits: dict[str, RunHits | None] = {}
        self._cats: dict[str, dict[str, str]] = {}
        self.notes: list[str] = []

    def hits(self, s: TrendSource) -> RunHits | None:
        if s.id not in self._hits:
            h = s.hits(self.strict)
            self._hits[s.id] = _only(h, self.in_category(s)) if h is not None and self.category else h
        return self._hits[s.id]

    def in_category(self, s: TrendSource) -> set[str]:
        if s.id not in self._cats:
            self._cats[s.id] = s.categories()
        return {q for q, c in self._cats[s.id].items() if c == self.category}

    def point(self, s: TrendSource, model: str) -> TrendPoint | None:
        m: ModelReport | None = s.report.models.get(model) if s.report else None
        if m is None:
            return None
        base = {"run": s.id, "when": s.when, "sample_of": s.report.sample.of if s.report.sample else None}
        if self.citation is not None:  # a model read as references; a GRACE model has no point
            c = m.citations
            if c is None:
                return None
            return TrendPoint(**base, n=c.n_citing if self.citation == "precision" else c.n_answers,
                              n_questions=m.n_questions, value=number(getattr(c, self.citation)),
                              ci95=list(b) if (b := ci(getattr(c, f"{self.citation}_ci95"))) else None)
        if not self.category:
            value, bounds = ((m.strict_accuracy, m.strict_accuracy_ci95) if self.strict
                             else (m.accuracy, m.accuracy_ci95))
            return TrendPoint(**base, n=m.n, n_questions=m.n_questions, value=number(value),
                              ci95=list(b) if (b := ci(bounds)) else None)
        if not self.strict:
            c = (m.categories or {}).get(self.category)
            if c is None:
                return None
            return TrendPoint(**base, n=c.n, n_questions=c.n_questions, value=number(c.accuracy),
                              ci95=list(b) if (b := ci(c.accuracy_ci95)) else None)
        # strict accuracy on one category: not in report.json; from the hits, as the report computes a category's
        hits = self.hits(s)
        if hits is None or model not in hits.hits:
            return None
        asked, got = hits.asked[model], hits.hits[model]
        keep = asked > 0
        if not keep.any():
            return None
        value = round(float(got[keep].sum() / asked[keep].sum()), 6)
        interval = wilson_interval(value, int(keep.sum())) if s.report and s.report.bootstrap_samples > 0 else None
        return TrendPoint(**base, n=int(asked[keep].sum()), n_questions=int(keep.sum()), value=value, ci95=interval)

    def add_changes(self, series: list[TrendSeries]) -> None:
        """Each point's change from the model's previous point, one ``compare_sides`` call per pair of runs."""
        if self.citation is not None:  # McNemar tests hits: not a citation figure's change (see CITATION_NOTE)
            return
        pairs: dict[tuple[str, str], list[TrendPoint]] = {}
        names: dict[int, str] = {}
        for s in series:
            for prev, cur in zip(s.points, s.points[1:], strict=False):
                pairs.setdefault((prev.run, cur.run), []).append(cur)
                names[id(cur)] = s.model
        for (a, b), points in pairs.items():
            ha, hb = self.hits(self.runs[a]), self.hits(self.runs[b])
            usable = [p for p in points if ha is not None and hb is not None and names[id(p)] in ha.hits
                      and names[id(p)] in hb.hits]
            for p in points:
                if p not in usable:
                    p.note = f"no test against {a}: its or this run's answers per question are not available"
            if not usable:
                continue
            report = self.runs[b].report or self.runs[a].report
            seed, samples = (report.seed, report.bootstrap_samples) if report else (0, 2000)
            rows = compare_sides([(ha, names[id(p)], hb, names[id(p)], names[id(p)]) for p in usable], seed, samples)
            for p, c in zip(usable, rows, strict=True):
                if c.n_questions == 0:
                    p.note = f"no question answered in both {a} and this run"
                    continue
                direction = ("improved" if c.delta > 0 else "regressed") if c.significant else "none"
                p.change = TrendChange(since=a, n_questions=c.n_questions, delta=c.delta, delta_ci=c.delta_ci,
                                       mcnemar_p=c.mcnemar_p, significant=c.significant, direction=direction,
                                       improved=len(c.improved), regressed=len(c.regressed))


def _only(hits: RunHits, keep: set[str]) -> RunHits:
    """``hits`` on the questions in ``keep`` only (a category's)."""
    idx = np.asarray([i for i, q in enumerate(hits.questions) if q in keep], dtype=np.int64)
    return RunHits(hits.path, [hits.questions[i] for i in idx], [hits.labels[i] for i in idx],
                   {m: h[idx] for m, h in hits.hits.items()}, {m: a[idx] for m, a in hits.asked.items()},
                   {m: {k: (s[idx], n[idx]) for k, (s, n) in f.items()} for m, f in hits.citations.items()})


# -- the chart ---------------------------------------------------------------------------------------------------

PLOT_H = 260.0
NAME_LIMIT = 28
RUN_LABEL = 10.5  # px, the runs' labels under the axis
SLANT_X, SLANT_Y = math.cos(math.radians(35)), math.sin(math.radians(35))  # a slanted label's reach across and down
ASCENT, DESCENT = 0.76, 0.24  # em above and below the baseline (DejaVu Sans), which the slant turns outward too
SUBTITLE = ("95% CI bars; ▼ ▲ a significant drop or rise since the model's previous run (McNemar exact, "
            "p < 0.05)")


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _y_range(series: list[TrendSeries]) -> tuple[float, float]:
    values = [v for s in series for p in s.points for v in ([p.value] + (p.ci95 or [])) if v is not None]
    lo = max(0.0, math.floor(min(values) * 10 - 0.2) / 10)
    hi = min(1.0, math.ceil(max(values) * 10 + 0.2) / 10)
    if hi - lo < 0.2:
        lo, hi = max(0.0, hi - 0.2), max(hi, 0.2)
    return lo, hi


def trend_chart(trend: Trend) -> str | None:
    """The trend as an SVG chart: a line per model through its runs, the 95% CIs as bars, a triangle on each
    significant change (down: a drop, up: a rise). None when no model has a figure in any run."""
    series = [s for s in trend.series if any(p.value is not None for p in s.points)]
    if not series:
        return None
    order = {r.id: i for i, r in enumerate(trend.runs)}
    n = len(trend.runs)
    labels = _run_labels(trend.runs)
    step = max(42.0, min(96.0, 720.0 / max(n, 1)))
    plot_w = max(480.0, step * n)
    step = plot_w / max(n, 1)
    # each run's label slants down to the left (-35 degrees) from its tick: room for the first ones on the left,
    # for the longest below (text_width: an upper bound, so no font draws past the edge)
    run_w = {r.id: text_width(labels[r.id], RUN_LABEL) for r in trend.runs}
    reach = max((SLANT_X * run_w[r.id] + SLANT_Y * ASCENT * RUN_LABEL - step * (order[r.id] + 0.5)
                 for r in trend.runs),
                default=0.0)
    left, right = max(58.0, reach + 4), 24.0
    width = left + plot_w + right
    what = METRICS[trend.metric]
    heading = f"{what.capitalize()} across runs" + (f" · category {trend.category}" if trend.category else "")
    heading += f" · gold {trend.gold_path or 'in memory'} ({trend.gold_hash[:12]})"
    # the heading and the key to the marks wrap within the chart, never past its edge
    room = width - left - 6
    body = [text(left, 18 + 16 * i, part, size=13, weight="600", hover=heading)
            for i, part in enumerate(wrap(heading, 13, room, 3, bold=True))]
    y = 18 + 16 * (len(body) - 1) + 15
    for part in wrap(SUBTITLE, 11, room, 3):
        body.append(text(left, y, part, size=11, fill="#555"))
        y += 14
    items = [(truncate(s.model, NAME_LIMIT), s.color) for s in series]
    key, key_h = legend(items, left, y + 11, plot_w, wide=True)
    top = y + 11 + key_h + 6
    bottom = top + PLOT_H
    lo, hi = _y_range(series)
    ys = Scale(lo, hi, bottom, top)
    body.append(key)
    for t in ys.ticks(5):
        body += [line(left, ys(t), left + plot_w, ys(t), GRID),
                 text(left - 6, ys(t) + 4, f"{t:.0%}", anchor="end", size=11, fill="#555")]
    body += [line(left, bottom, left + plot_w, bottom, "#888"), line(left, top, left, bottom, "#888")]
    for r in trend.runs:
        x = left + step * (order[r.id] + 0.5)
        body += [line(x, bottom, x, bottom + 4, "#888"),
                 text(x, bottom + 14, labels[r.id], anchor="end", size=RUN_LABEL, fill="#444",
                      hover=f"{r.id} · started {short_time(r.when)} UTC",
                      extra=f' transform="rotate(-35 {fmt(x)} {fmt(bottom + 14)})"')]
    height = bottom + 14 + SLANT_Y * max(run_w.values(), default=0.0) + SLANT_X * DESCENT * RUN_LABEL + 6
    spread = min(6.0, step / (len(series) + 2))
    for k, s in enumerate(series):
        dx = (k - (len(series) - 1) / 2) * spread
        placed = [(left + step * (order[p.run] + 0.5) + dx, p) for p in s.points if p.value is not None]
        # a run without the model is stepped over: the line joins the runs the changes compare
        d = " ".join(f"{'L' if i else 'M'}{fmt(x)} {fmt(ys(p.value))}" for i, (x, p) in enumerate(placed))
        body.append(f'<path class="trend-line" data-model="{esc(s.model)}" d="{d}" fill="none" '
                    f'stroke="{s.color}" stroke-width="2" stroke-linejoin="round"/>')
        for x, p in placed:
            tip = f"{s.model} · {p.run} ({short_time(p.when)}): {what} {_pct(p.value)}"
            if p.ci95:
                tip += f", 95% CI {_pct(p.ci95[0])}–{_pct(p.ci95[1])}"
                body.append(line(x, ys(p.ci95[0]), x, ys(p.ci95[1]), s.color, 1.2, ' opacity="0.75"'))
            tip += f", {p.n_questions} questions" + (f" of {p.sample_of} (a sample)" if p.sample_of else "")
            if p.change:
                c = p.change
                tip += (f"; since {c.since}: {c.delta * 100:+.1f} pp, {c.regressed} regressed, {c.improved} improved, "
                        f"McNemar p = {c.mcnemar_p:.4g}" + (" (significant)" if c.significant else ""))
            body.append(f'<circle class="trend-point" data-model="{esc(s.model)}" data-run="{esc(p.run)}" '
                        f'cx="{fmt(x)}" cy="{fmt(ys(p.value))}" r="3.5" fill="{s.color}" stroke="white" '
                        f'stroke-width="1"><title>{esc(tip)}</title></circle>')
            if p.change and p.change.significant:
                body.append(_mark(x, ys(p.value), s.model, p, tip))
    return document(width, height, body, heading, "trend")


def _run_labels(runs: list[TrendRun]) -> dict[str, str]:
    """An axis label per run: its ID and its day (``Mar 08``; the year when the runs span several, the time when
    two start on one day)."""
    times = {r.id: _time(r.when) for r in runs}
    known = [t for t in times.values() if t.year < 9999]
    day = "%Y-%m-%d" if len({t.year for t in known}) > 1 else "%b %d"
    days = [t.strftime(day) for t in known]
    if len(set(days)) < len(days):
        day += " %H:%M"
    return {r.id: truncate(r.id, 18) + (f" · {times[r.id].strftime(day)}" if times[r.id].year < 9999 else "")
            for r in runs}


def _mark(x: float, y: float, model: str, p: TrendPoint, tip: str) -> str:
    down = p.change is not None and p.change.direction == "regressed"
    tip_y = y + 9 if down else y - 9
    d = (f"M{fmt(x - 6)} {fmt(tip_y - 5)} L{fmt(x + 6)} {fmt(tip_y - 5)} L{fmt(x)} {fmt(tip_y + 5)} Z" if down else
         f"M{fmt(x - 6)} {fmt(tip_y + 5)} L{fmt(x + 6)} {fmt(tip_y + 5)} L{fmt(x)} {fmt(tip_y - 5)} Z")
    return (f'<path class="trend-change" data-change="{"regressed" if down else "improved"}" '
            f'data-model="{esc(model)}" data-run="{esc(p.run)}" d="{d}" fill="{DROP if down else RISE}" '
            f'stroke="{INK}" stroke-width="0.8"><title>{esc(tip)}</title></path>')


def svg_to_png(svg: str, scale: float = 2.0) -> bytes:
    """The chart as PNG, through vl-convert (resvg compiled into one wheel: no browser, no system library; text in
    the machine's sans-serif font); the optional ``png`` extra."""
    try:
        import vl_convert
    except ImportError:
        raise GraceError(f"PNG output needs the png extra: {PNG_EXTRA} (or write SVG: --format svg)") from None
    return bytes(vl_convert.svg_to_png(svg, scale=scale))
