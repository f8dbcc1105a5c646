"""``grace view RUN --export DIR``: the viewer as static files, for a CI artifact or an e-mail.

``DIR/index.html`` loads ``assets/`` (the live viewer's own script and styles)
and ``data/export.js``, which sets ``window.GRACE_EXPORT``: the Runs and
Leaderboard pages as the server would answer them, the grid's matrices (the page
filters them itself, with the rules of :mod:`harness.viewer.grid`), the
comparisons of every pair of the run's models, the Trends page (every gold set,
metric and category, each chart an SVG file in ``assets/``), and, in
``data/questions-N.js`` (loaded when a question is opened), every Question page.
``RUN`` may be a folder holding runs (a week of runs, for their trend): then the
Runs, Leaderboard and Trends pages hold them all, and the grid and the questions
are those of the newest. Everything is data
assigned to a variable, loaded by ``<script src>``: a browser reads it from
``file://``, where ``fetch`` is not allowed. The page's Content-Security-Policy
allows scripts and images from its own folder only.

The whole grid is in the page's memory, so an export holds at most
:data:`MAX_ANSWERS` answers (5,000 questions of 10 models); serve a bigger run
with ``grace view``.

The folder may hold other files: ``DIR/.grace-export.json`` (:data:`MANIFEST`)
lists the files the export wrote, with their hashes, and ``--force`` replaces or
removes only those (:class:`harness.core.outputs.OwnedFolder`): a file the user
put there stays, one at a name the export writes (or an export file the user
edited since) is kept as ``NAME.bak``, and a symbolic link out of ``DIR`` is
refused. The files are made in memory first, so a refusal writes nothing.
"""

from __future__ import annotations

import json
import re
import unicodedata
from itertools import permutations
from pathlib import Path
from typing import Any

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.outputs import OwnedFolder, check_output_folder
from harness.core.version import __version__
from harness.run_folder.run_dir import RunDir
from harness.viewer.app import STATIC, ViewApp, plots_for
from harness.viewer.grid import OUTCOME_NAMES, QUESTION_PREVIEW
from harness.web.server import SHARED_STATIC

MAX_ANSWERS = 50_000
CHUNK = 50  # Question pages per data file
EXPORT_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
ASSETS = ("base.css", "common.js", "view.css", "view.js")
WRITES = ("index.html", "assets", "data")
MANIFEST = ".grace-export.json"  # the files the export wrote, with their hashes: all that --force may replace


def _js(name: str, value: Any) -> str:
    """``name = <JSON>;``: JSON is valid JavaScript; ASCII-only, so no line separator can end a string early."""
    return f"{name} = {json.dumps(value, ensure_ascii=True, separators=(',', ':'))};\n"


def search_text(*texts: str) -> str:
    """``" word word ..."``: the words of ``texts`` as the page's search splits them (lower case, accents
    dropped, letters and digits), each once, so ``includes(" " + w)`` finds a word starting with ``w``."""
    words: dict[str, None] = {}
    for text in texts:
        plain = "".join(ch for ch in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(ch))
        words.update(dict.fromkeys(re.findall(r"[^\W_]+", plain)))
    return "".join(f" {w}" for w in words)


def export(run: Path, out: Path, *, force: bool = False, cache_dir: str | Path | None = None) -> Path:
    from harness.viewer import open_viewer

    folder = RunDir(run)
    if not folder.path.is_dir():
        raise GraceError(f"{run}: no such run folder; give the folder 'grace run --out' wrote")
    check_output_folder(out, {"run folder": folder.data_files()}, (*WRITES, MANIFEST), option="--export")
    if out.resolve() == folder.path.resolve() or folder.path.resolve() in out.resolve().parents:
        raise GraceError(f"--export {out} is inside the run folder {run}, which grace view only reads; give a "
                         "folder outside it")
    target = OwnedFolder(out, MANIFEST, written_by="grace view --export", option="--export")
    target.check(WRITES, force)
    app, indexer = open_viewer([run], cache_dir, child=False)
    try:
        indexer.wait()
        view_run = app.runs[app.order[0]]  # the run given, or the newest of the folder's
        if view_run.index is None:
            raise GraceError(f"{run}: {view_run.problem or 'the run could not be indexed'}")
        ix = view_run.index
        answers = int((ix.arrays["asked"] > 0).sum()) * ix.repeats
        if answers > MAX_ANSWERS:
            raise GraceError(f"{run}: {answers:,} answers; an export holds at most {MAX_ANSWERS:,} (its whole grid "
                             "is in the page's memory). Serve this run with 'grace view' instead")
        files = _files(app, view_run)
    finally:
        indexer.stop()
    target.write(files, {"grace_version": __version__, "run": str(folder.path.resolve())})
    return out / "index.html"


def _files(app: ViewApp, run) -> dict[str, str]:
    """Every file of the export (its path in the folder -> its text), made in memory before any is written."""
    ix = run.index
    files: dict[str, str] = {}
    for name in ASSETS:
        source = STATIC / name if (STATIC / name).exists() else SHARED_STATIC / name
        files[f"assets/{name}"] = source.read_text(encoding="utf-8")
    plots: dict[str, dict[str, str]] = {}
    for k, rid in enumerate(app.order):
        plots[rid] = {}
        if app.runs[rid].report is None:
            continue
        for name in plots_for(app.runs[rid].report):
            path = f"assets/plot-{name}.svg" if rid == run.id else f"assets/plot-{k}-{name}.svg"
            files[path] = app.plot(rid, name).body.decode("utf-8")
            plots[rid][name] = path
    grid = app.grid([run])
    chunks: dict[str, int] = {}
    pages: list[tuple[str, dict]] = []
    search: list[str] = []
    for q, qid in enumerate(grid.qids):
        page = app.question(run.id, qid)
        rows = ix.answers_of(q)
        texts = [row.get("response") for _, row in rows.values() if row and isinstance(row.get("response"), str)]
        search.append(search_text(qid, grid.question[q], *texts))
        chunks[qid] = q // CHUNK
        pages.append((qid, page))
        if len(pages) == CHUNK or q == len(grid.qids) - 1:
            body = json.dumps(dict(pages), ensure_ascii=True, separators=(",", ":"))
            files[f"data/questions-{q // CHUNK}.js"] = (
                "window.GRACE_EXPORT.questions = window.GRACE_EXPORT.questions || {};\n"
                f"Object.assign(window.GRACE_EXPORT.questions, {body});\n")
            pages = []
    compare = {}
    for a, b in permutations([m.model for m in run.report.ranked()] if run.report else ix.models, 2):
        compare["|".join([run.id, run.id, a, b])] = app.compare(run.id, run.id, a, b)
    data = {
        "created": now(),
        "runs": [app.runs[rid].summary() for rid in app.order],
        "leaderboards": {rid: app.leaderboard(rid) for rid in app.order if app.runs[rid].report},
        "plots": plots,
        "trend": _trend(app, files),
        "grid": _grid(grid, run.id, search),
        "chunks": chunks,
        "compare": compare,
    }
    files["data/export.js"] = _js("window.GRACE_EXPORT", data)
    page = (STATIC / "view.html").read_text(encoding="utf-8")
    page = page.replace("__TOKEN_QUERY__", "").replace('href="static/', 'href="assets/')
    page = page.replace('<script src="static/common.js" defer></script>',
                        '<script src="assets/common.js" defer></script>\n<script src="data/export.js" defer></script>')
    page = page.replace('src="static/', 'src="assets/')
    page = page.replace('<meta charset="utf-8">',
                        f'<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="{EXPORT_CSP}">')
    files["index.html"] = page
    return files


def _trend(app: ViewApp, files: dict[str, str]) -> dict[str, Any] | None:
    """The Trends page of every gold set, metric and category as the server gives it, and each chart (every model,
    and each model alone) as a file; None when no run is scored. The page applies the model filter itself."""
    from harness.reports.trend import CITATION_METRICS
    from harness.web import Rejected

    try:
        first = app.trends.page({})
    except Rejected:
        return None
    pages: dict[str, Any] = {}
    charts: dict[str, str] = {}
    golds = [g["hash"] for g in first["trend"]["groups"]]
    for gold in golds:
        categories = app.trends.page({"gold": [gold]})["trend"]["categories"]
        for metric in [m["name"] for m in first["metrics"]]:  # the citation figures: runs with such models only
            for category in ["", *(categories if metric not in CITATION_METRICS else [])]:
                query = {"gold": [gold], "metric": [metric], "category": [category]}
                page = pages["|".join((gold, metric, category))] = app.trends.page(query)
                for model in ["", *page["trend"]["models"]]:
                    path = f"assets/trend-{len(charts)}.svg"
                    files[path] = app.trend_plot({**query, "model": [model]}).body.decode("utf-8")
                    charts["|".join((gold, metric, category, model))] = path
    return {"default": first["trend"]["gold_hash"], "golds": golds, "pages": pages, "plots": charts}


def _grid(grid, rid: str, search: list[str]) -> dict[str, Any]:
    flat = {name: getattr(grid, name).astype(int).ravel().tolist()
            for name in ("outcome", "hits", "asked", "pred", "truncated")}
    return {
        "run": rid,
        "columns": [{"run": c.run, "model": c.model} for c in grid.columns],
        "outcomes": OUTCOME_NAMES,  # the page's names for the codes in "outcome"
        "labels": grid.label_names,
        "none": grid.none_code,
        "qids": grid.qids,
        "question": [t[:QUESTION_PREVIEW] + ("…" if len(t) > QUESTION_PREVIEW else "") for t in grid.question],
        "gold": grid.gold,
        "suspect": grid.suspect.astype(int).tolist(),
        "missed": grid.missed.astype(int).tolist(),
        "search": search,
        # the gold categories (the page's category filter), only when the gold file has them
        **({"categories": grid.categories, "category": grid.category} if grid.categories else {}),
        **flat,
    }
