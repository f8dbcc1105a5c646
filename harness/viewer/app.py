"""``grace view``'s JSON API: runs, leaderboard, questions grid, one question, a comparison, trends. Read-only.

A :class:`harness.web.WebApp` served by grace's one server core (Host check,
CSP, headers, static files). Runs are named by their IDs (:func:`run_ids`), never
by a path from the request: nothing outside the run folders given on the command
line (and their recorded KB and gold files) is ever read. Every string that
comes from a run (questions, answers, article text, model names) leaves as JSON
data; the page puts it into text nodes. Plots are SVG the report's own plot code
escaped, sent as images (``<img>`` cannot run script).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.reports.leaderboard import (
    CATEGORY_LEGEND,
    CITATION_PAIR_HEADERS,
    CITATION_PAIRS_LEGEND,
    PPI_TITLE,
    category_table,
    citation_pairs,
    citations_shown,
    columns_for,
    error_note,
    leaderboard_rows,
    legend_for,
    ppi_note,
    truncation_notes,
)
from harness.reports.page import CAPTIONS
from harness.viewer.grid import Grid, GridQuery
from harness.viewer.question import judgements, question_page
from harness.viewer.runs import Indexer, ViewRun
from harness.viewer.trend import Trends
from harness.web import Raw, Rejected

STATIC = Path(__file__).parent / "static"
PLOTS = ("accuracy", "pareto", "outcomes", "retrieval")
CITATION_PLOT = "citations"  # only for a run with a model read as references (a GRACE run's page is as it was)
CITATION_CAPTION = ("Citation precision (right) against recall (up) per model read as references, with 95% "
                    "bootstrap intervals; dashed curves join points of equal F1.")


def plots_for(report: Any) -> tuple[str, ...]:
    """The plots of a run's leaderboard: :data:`PLOTS`, and the citation plot when some model has citation figures."""
    return PLOTS + ((CITATION_PLOT,) if report is not None and citations_shown(report.ranked()) else ())
MAX_LISTED = 500  # improved / regressed question IDs sent to the Compare page per direction


def _citation_hits(run: ViewRun, qids: list[str]) -> dict[str, Any]:
    """The per-question citation figures (``RunHits.citations``) of the run's models read as references, in the
    index's question order, for the Compare page's citation F1; {} (and no read) for a run with none."""
    report = run.report
    models = [m for m, r in report.models.items() if r.citations is not None] if report is not None else []
    if not models:
        return {}
    import numpy as np

    from harness.scoring.run_comparison import read_hits

    read = read_hits(run.path, models)
    at = read.index()
    pos = np.asarray([at.get(q, -1) for q in qids], dtype=np.int64)
    found = pos >= 0
    return {m: {k: (np.where(found, s[pos], 0.0), np.where(found, n[pos], 0)) for k, (s, n) in figures.items()}
            for m, figures in read.citations.items()}


def _one(query: dict[str, list[str]], name: str, default: str = "") -> str:
    return (query.get(name) or [default])[0]


class ViewApp:
    name = "grace view"
    page = "view.html"
    static = STATIC
    post_paths: tuple[str, ...] = ()

    def __init__(self, runs: list[ViewRun], indexer: Indexer, annotate_port: int = 8766):
        self.runs = {r.id: r for r in runs}
        self.order = [r.id for r in runs]
        self.indexer = indexer
        self.annotate_port = annotate_port
        self._grids: dict[tuple, Grid] = {}
        self._lock = threading.Lock()
        self.trends = Trends(self)

    # -- routes ------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> dict | Raw | None:
        routes = {
            "/api/runs": lambda: self.runs_page(),
            "/api/leaderboard": lambda: self.leaderboard(_one(query, "run")),
            "/api/plot": lambda: self.plot(_one(query, "run"), _one(query, "name")),
            "/api/questions": lambda: self.questions(query),
            "/api/question": lambda: self.question(_one(query, "runs"), _one(query, "id")),
            "/api/compare": lambda: self.compare(_one(query, "a"), _one(query, "b"), _one(query, "ma"),
                                                 _one(query, "mb")),
            "/api/trend": lambda: self.trends.page(query),
            "/api/trend-plot": lambda: self.trend_plot(query),
        }
        route = routes.get(path)
        return route() if route else None

    def post(self, path: str, body: Any) -> dict | None:
        return None  # read-only: nothing to change

    # -- pages -------------------------------------------------------------------------------------

    def run(self, rid: str) -> ViewRun:
        run = self.runs.get(rid)
        if run is None:
            raise Rejected(f"no run {rid!r} here; the runs are {', '.join(self.order)}")
        self.indexer.check(run)
        return run

    def runs_page(self) -> dict[str, Any]:
        for run in self.runs.values():
            self.indexer.check(run)
        return {"runs": [self.runs[r].summary() for r in self.order]}

    def leaderboard(self, rid: str) -> dict[str, Any]:
        run = self.run(rid or self.order[0])
        report = run.report
        if report is None:
            raise Rejected(run.problem or f"{run.path}: no report.json yet; score the run first (grace score)")
        ranked = report.ranked()
        columns = columns_for(ranked)
        rows = leaderboard_rows(ranked, columns)
        spot = report.spotcheck
        ppi = ppi_note(report)
        headers, by_category = category_table(report.categories, ranked)
        return {
            "run": run.id,
            "columns": [{"key": c.key, "header": c.header, "numeric": c.numeric} for c in columns],
            "rows": [{"model": r.model, "cells": r.cells, "errors": r.errors, "n": r.n} for r in rows],
            "legend": legend_for(columns),
            # accuracy [95% CI] per gold category (rows) and model; None when the gold file has no categories
            "categories": {"headers": headers, "rows": by_category, "legend": CATEGORY_LEGEND} if by_category else None,
            "notes": [n for n in (run.folder.report_out_of_date(report), ppi and f"{PPI_TITLE}: {ppi}", error_note(rows),
                                  *truncation_notes(ranked)) if n]
            + list(report.warnings),
            "failed": {name: f.reason for name, f in report.failed_models.items()},
            "pairwise": [{"a": p.a, "b": p.b, "n": p.n, "a_only": p.a_only, "b_only": p.b_only, "p": p.p_value,
                          "p_adjusted": p.p_adjusted, "significant": p.significant} for p in report.pairwise],
            "spotcheck": {m: (v.display or {}) for m, v in spot.models.items()} if spot else None,
            # the scorer's paired tests of citation F1 between multi-citation models (rows as leaderboard.md's);
            # only in a run that has them
            **({"citation_pairwise": {"headers": CITATION_PAIR_HEADERS, "rows": pairs, "legend": CITATION_PAIRS_LEGEND}}
               if (pairs := citation_pairs(report)) else {}),
            "plots": [{"name": name, "caption": CAPTIONS.get(name, CITATION_CAPTION if name == CITATION_PLOT else "")}
                      for name in plots_for(report)],
            "suspects": report.label_suspects.n if report.label_suspects else 0,
            "summary": run.summary(),
        }

    def plot(self, rid: str, name: str) -> Raw:
        from harness.reports import plots

        run = self.run(rid)
        if run.report is None:
            raise Rejected(run.problem or "no report.json yet")
        if name not in plots_for(run.report):
            raise Rejected(f"no plot {name!r}; plots are {', '.join(plots_for(run.report))}")
        if name not in run.plots:
            models = run.report.ranked()
            svg = {"accuracy": lambda: plots.accuracy_chart(models), "pareto": lambda: plots.pareto_chart(models)[0],
                   "outcomes": lambda: plots.outcome_chart(models),
                   "retrieval": lambda: plots.retrieval_chart(models),
                   CITATION_PLOT: lambda: plots.citation_chart(models)}[name]()
            missing = {"pareto": "No accuracy-vs-cost plot: no model has a known cost above $0.",
                       "retrieval": "No retrieval plot: the questions were not asked with retrieved articles."}
            run.plots[name] = (svg or _empty_svg(missing.get(name, f"No {name} plot for this run."))).encode("utf-8")
        return Raw(run.plots[name], "image/svg+xml")

    def trend_plot(self, query: dict[str, list[str]]) -> Raw:
        svg = self.trends.plot(query) or _empty_svg("No figure to draw for these runs.")
        return Raw(svg.encode("utf-8"), "image/svg+xml")

    def picked(self, ids: str) -> list[ViewRun]:
        names = [r for r in ids.split(",") if r] or self.order[:1]
        if len(set(names)) != len(names):
            raise Rejected("a run is picked twice")
        return [self.run(r) for r in names]

    def waiting(self, runs: list[ViewRun]) -> dict[str, Any] | None:
        """What to show instead of a grid while an index is built, or why there will be none."""
        for run in runs:
            if run.index is None:
                return {"waiting": {"run": run.id, "state": run.state, "progress": round(run.progress, 3),
                                    "phase": run.phase, "problem": run.problem}}
        return None

    def grid(self, runs: list[ViewRun]) -> Grid:
        key = tuple((r.id, id(r.index), id(r.report)) for r in runs)  # the report orders the columns
        current = {(r.id, id(r.index), id(r.report)) for r in self.runs.values()}
        with self._lock:
            for old in [k for k in self._grids if not set(k) <= current]:  # a run was indexed again
                del self._grids[old]
            grid = self._grids.get(key)
            if grid is None:
                if len(self._grids) > 8:
                    self._grids.clear()
                grid = self._grids[key] = Grid([(r.id, r.index) for r in runs],
                                               [r.report.leaderboard if r.report else [] for r in runs])
        return grid

    def questions(self, query: dict[str, list[str]]) -> dict[str, Any]:
        q = GridQuery.parse(query)
        runs = self.picked(",".join(q.runs))
        self._same_gold(runs)
        waiting = self.waiting(runs)
        if waiting:
            return waiting
        grid = self.grid(runs)
        out = grid.page(q, grid.search_rows(q.q))
        out["runs"] = [r.id for r in runs]
        out["notices"] = ([f"{r.id}: its files changed; showing the last index while a new one is built"
                           for r in runs if r.stale]
                          + [f"{r.id} is being written now ({writer}): showing what is on file"
                             for r in runs if (writer := r.folder.writer())]
                          + [f"{r.id}: its responses.jsonl changed since it was scored: answers on file are not "
                             "scored yet, and the grid shows the scored ones (grace score the run, then reload)"
                             for r in runs if not r.folder.writer() and r.folder.scores_behind()]
                          + [f"{r.id}: {note}" for r in runs for note in r.index.notes])
        return out

    def question(self, ids: str, qid: str) -> dict[str, Any]:
        if not qid:
            raise Rejected("which question? add id=QUESTION_ID")
        runs = self.picked(ids)
        self._same_gold(runs, "be shown on one question page", " Or open the question in each run alone ("
                        + ", ".join(f"runs={r.id}" for r in runs) + ").")
        waiting = self.waiting(runs)
        if waiting:
            return waiting
        for run in runs:
            if run.spot is None:
                run.spot = judgements(run.path)
        return question_page([(r.id, r.index, r.spot) for r in runs], qid, self.annotate_command(runs[0], qid))

    def annotate_command(self, run: ViewRun, qid: str) -> dict[str, Any] | None:
        """``grace annotate`` on just this question, the run's models' citations as suggestions, to fix its gold."""
        r = run.report
        if r is None or not r.gold.path:
            return None
        port = self.annotate_port
        argv = ["grace", "annotate", r.kb.path, "--from-gold", r.gold.path, "--run", str(run.path), "--question", qid,
                "--port", str(port)]
        return {"argv": argv, "url": f"http://127.0.0.1:{port}/"}

    def compare(self, a: str, b: str, ma: str, mb: str) -> dict[str, Any]:
        from harness.run_folder.run_settings import run_differences
        from harness.scoring.run_comparison import RunHits, check_same_gold, compare_sides, progress_note

        if not a or not b:
            raise Rejected("pick run A and run B (the same run twice compares two of its models)")
        ra, rb = self.run(a), self.run(b)
        if ra is rb and not (ma and mb):
            raise Rejected("one run: pick the two models to compare")
        waiting = self.waiting([ra, rb])
        if waiting:
            return waiting
        check_same_gold(ra.path, rb.path, ra.report, rb.report)
        hits = {}
        for run in {r.id: r for r in (ra, rb)}.values():
            ix = run.index
            hits[run.id] = RunHits(run.path, ix.qids, ix.gold,
                                   {m: ix.arrays["hits"][:, i].astype(float) for i, m in enumerate(ix.models)},
                                   {m: ix.arrays["asked"][:, i].astype(int) for i, m in enumerate(ix.models)},
                                   _citation_hits(run, ix.qids))
        ha, hb = hits[ra.id], hits[rb.id]
        if ma or mb:
            names = [(ma or mb, mb or ma)]
        else:
            names = [(m, m) for m in hb.hits if m in ha.hits]
        for x, y in names:
            if x not in ha.hits:
                raise Rejected(f"no model {x!r} in {ra.id}; it has {', '.join(ha.hits)}")
            if y not in hb.hits:
                raise Rejected(f"no model {y!r} in {rb.id}; it has {', '.join(hb.hits)}")
        if not names:
            raise Rejected(f"no model is in both {ra.id} and {rb.id}: pick one model on each side")
        base = rb.report or ra.report
        seed, bootstrap = (base.seed, base.bootstrap_samples) if base else (0, 2000)
        rows = compare_sides([(ha, x, hb, y, x if x == y else f"{x} vs {y}") for x, y in names], seed, bootstrap)
        titles = {**ra.index.titles, **rb.index.titles}
        out = []
        for m in rows:
            data = m.model_dump()
            for key in ("improved", "regressed"):
                data[f"n_{key}"] = len(data[key])
                data[key] = data[key][:MAX_LISTED]
            data["articles"] = [{**x, "title": titles.get(x["article"], "")} for x in data["articles"]
                                if x["improved"] or x["regressed"] or x["delta"]][:200]
            out.append(data)
        sides = [(ra, "run A")] if ra is rb else [(ra, "run A"), (rb, "run B")]
        notices = [n for r, side in sides if (n := progress_note(r.path, f"{side} ({r.id})", r.report,
                                                                 "reload this page"))]
        # every setting the two sides were asked or scored with differently, as grace compare names them
        info_a = ra.folder.read_run_info()
        info_b = info_a if ra is rb else rb.folder.read_run_info()
        differs = run_differences(info_a, ra.report, info_b, rb.report, names)
        return {"a": ra.id, "b": rb.id, "models": out, "seed": seed, "bootstrap": bootstrap,
                "models_a": ra.index.models, "models_b": rb.index.models, "notices": notices,
                "differences": [{**d.model_dump(), "text": d.text()} for d in differs]}

    def _same_gold(self, runs: list[ViewRun], what: str = "share a grid", then: str = "") -> None:
        """The one rule of ``grace compare`` (:func:`~harness.scoring.run_comparison.check_same_gold`): runs scored on
        different gold sets are never shown as one (the grid, a question, Compare)."""
        from harness.scoring.run_comparison import check_same_gold

        for other in runs[1:]:
            try:
                check_same_gold(runs[0].path, other.path, runs[0].report, other.report)
            except GraceError as exc:
                raise Rejected(f"{runs[0].id} and {other.id} cannot {what}: {exc}.{then}") from None


def _empty_svg(text: str) -> str:
    from html import escape

    return ('<svg xmlns="http://www.w3.org/2000/svg" width="420" height="40" font-family="sans-serif" '
            f'font-size="13"><text x="8" y="24" fill="#5f6b76">{escape(text)}</text></svg>')
