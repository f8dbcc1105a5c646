"""The viewer's Trends page: each model's accuracy across the runs of one gold set, from the runs it serves.

The figures and the chart are :mod:`harness.reports.trend`'s (the ones ``grace
report --trend`` writes); this module hands it the served runs: their reports,
``run.json``'s start times, and the per-question hits from each run's index (as
the Compare page does), so a significant change is found by ``grace compare``'s
own rule. The chart is SVG sent as an image, like the Leaderboard's plots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.reports.trend import (
    METRICS,
    RULE,
    Trend,
    TrendSource,
    build_trend,
    group_runs,
    metrics_for,
    pick_group,
    short_time,
    trend_chart,
)
from harness.scoring.run_comparison import RunHits
from harness.web import Rejected

if TYPE_CHECKING:
    from harness.viewer.runs import ViewRun

PARAMS = ("gold", "metric", "category", "model")


def started_at(run: ViewRun) -> str | None:
    """When the run started: ``run.json``'s ``started_at``, else its report's ``created_at``."""
    info = run.folder.read_run_info() if run.folder.run_info.exists() else None
    return (info.started_at if info else None) or (run.report.created_at if run.report else None)


def source(run: ViewRun, when: str | None) -> TrendSource:

    def hits(strict: bool) -> RunHits | None:
        ix = run.index
        if ix is None:
            return None
        got = ix.arrays["strict_hits" if strict else "hits"]
        return RunHits(run.path, ix.qids, ix.gold, {m: got[:, i].astype(float) for i, m in enumerate(ix.models)},
                       {m: ix.arrays["asked"][:, i].astype(int) for i, m in enumerate(ix.models)})

    def categories() -> dict[str, str]:
        ix = run.index
        return {q: c for q, c in zip(ix.qids, ix.category, strict=True) if c} if ix is not None else {}

    return TrendSource(run.id, run.path, run.report, when, hits, categories, run.report_error)


class Trends:
    """The Trends page's data and chart for one viewer; a trend is computed once per state of its runs."""

    def __init__(self, app: Any):  # the ViewApp (which imports this module): its runs, indexer and waiting()
        self.app = app
        self._cache: dict[tuple, Trend] = {}
        self._when: dict[tuple, str | None] = {}  # (run, its report as read) -> when it started

    def query(self, query: dict[str, list[str]]) -> dict[str, str]:
        return {k: (query.get(k) or [""])[0] for k in PARAMS}

    def trend(self, q: dict[str, str]) -> Trend | dict[str, Any]:
        """The whole trend (every model) for ``q``, or what to show while the runs it needs are indexed."""
        app = self.app
        runs = [app.runs[r] for r in app.order]
        for run in runs:
            app.indexer.check(run)
        sources = [source(r, self.when(r)) for r in runs]
        groups, _ = group_runs(sources)
        if not groups:
            raise Rejected("no scored run here: the Trends page follows runs that have a report.json")
        chosen = pick_group(groups, q["gold"] or None)
        waiting = app.waiting([app.runs[s.id] for s in groups[chosen]
                               if app.runs[s.id].state in ("waiting", "indexing")])
        if waiting:
            return waiting
        key = (chosen, q["metric"] or "accuracy", q["category"],
               tuple((r.id, id(r.report), id(r.index)) for r in runs))
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = build_trend(sources, gold=chosen, metric=key[1], category=q["category"] or None)
        return self._cache[key]

    def when(self, run: ViewRun) -> str | None:
        key = (run.id, run.report_stat)
        if key not in self._when:
            self._when[key] = started_at(run)
        return self._when[key]

    def page(self, query: dict[str, list[str]]) -> dict[str, Any]:
        q = self.query(query)
        got = self.trend(q)
        if not isinstance(got, Trend):
            return got
        return page_data(got, q, metrics_for([self.app.runs[r].report for r in self.app.order]))

    def plot(self, query: dict[str, list[str]]) -> str | None:
        """The chart (SVG) for the page's query; None when no model has a figure."""
        q = self.query(query)
        got = self.trend(q)
        if not isinstance(got, Trend):
            raise Rejected("the runs are still being indexed; reload in a moment")
        return trend_chart(only_model(got, q["model"]))


def only_model(trend: Trend, model: str) -> Trend:
    """The trend with one model's line (the page's model filter); every model when ``model`` is empty."""
    if not model:
        return trend
    if model not in trend.models:
        raise Rejected(f"no model {model!r} in these runs; they have {', '.join(trend.models)}")
    return trend.model_copy(update={"series": [s for s in trend.series if s.model == model]})


def page_data(trend: Trend, q: dict[str, str], metrics: dict[str, str] | None = None) -> dict[str, Any]:
    """What the page shows: the filters' choices, the chart's address (its query), a table of the points with
    the significant changes, and the runs left out. Every string is data; the page puts it in text nodes."""
    shown = only_model(trend, q["model"])
    state = {"gold": trend.gold_hash, "metric": trend.metric, "category": trend.category or "", "model": q["model"]}
    return {
        "trend": shown.model_dump(mode="json"),
        "state": state,
        "metrics": [{"name": k, "label": v} for k, v in (metrics or METRICS).items()],
        "when": {r.id: short_time(r.when) for r in trend.runs},
        "rule": RULE,
    }
