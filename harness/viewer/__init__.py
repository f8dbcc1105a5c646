"""``grace view``: a local, read-only web app over run folders, and its static export.

Pages: Runs (every run found), Leaderboard (the report's table, tests and plots),
Questions (a grid of questions x (run, model) with filters, sorting and paging,
its state in the URL), Question (gold, retrieval, each answer with its citations
linked to the article, both readings and why, the spot-check and the label audit)
Compare (two runs or two models: paired CI, McNemar, the questions that
flipped) and Trends (each model's accuracy across the runs of one gold set, the
significant changes marked: :mod:`~harness.viewer.trend`). Modules: :mod:`~harness.viewer.runs` (finding and summarising runs, the
background indexer), :mod:`~harness.viewer.index` (one run's SQLite index, in the
cache folder), :mod:`~harness.viewer.grid` (filters), :mod:`~harness.viewer.question`,
:mod:`~harness.viewer.app` (the JSON API) and :mod:`~harness.viewer.export`. Served by
grace's one web server core, :mod:`harness.web`.
"""

from __future__ import annotations

from pathlib import Path


def open_viewer(paths: list[str | Path], cache_dir: str | Path | None = None, *, child: bool = True,
                annotate_port: int = 8766):
    """The app over the runs under ``paths`` and its started indexer: ``(ViewApp, Indexer)``.

    ``child``: build indexes in a child process (the server keeps answering); False builds them in this
    process's background thread (tests, an export). ``cache_dir``: where indexes live (default grace's cache).
    """
    from harness.viewer.app import ViewApp
    from harness.viewer.runs import Indexer, find_runs, load_run, run_ids

    if cache_dir is None:
        from harness.core import files

        cache_dir = files.cache_dir()
    found = find_runs([Path(p) for p in paths])
    runs = [load_run(rid, path) for rid, path in zip(run_ids(found), found, strict=True)]
    indexer = Indexer(runs, Path(cache_dir), child=child)
    indexer.start()
    return ViewApp(runs, indexer, annotate_port=annotate_port), indexer


__all__ = ["open_viewer"]
