"""The runs ``grace view`` shows: found under the paths given, summarised, and indexed in the background.

A path is a run folder (it holds ``report.json``, ``scores.jsonl``,
``responses.jsonl`` or ``run.json``) or a folder holding run folders (searched a
few levels down). Each run gets a short, stable ID from its folder name, so a
link into the viewer (``#/questions?runs=last-week,today&...``) works again the
next time the same folders are opened.

Indexes (:mod:`harness.viewer.index`) are built one at a time by a child process
(``python -m harness.viewer.build``): the pages that need only ``report.json``
(Runs, Leaderboard) answer at once, and a big run's index (a minute for a million
responses) neither blocks them nor shares their interpreter lock. A run whose
files change (``grace run`` still writing, a re-score) is indexed again; the old
index serves, with a notice, until the new one is in place. Its ``report.json``
is read again as soon as a page sees it changed (:func:`reread_report`), so the
Runs and Leaderboard pages never show an older report than the grid's index.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.run_folder.report import Report
from harness.run_folder.run_dir import RunDir
from harness.viewer.build import build_index
from harness.viewer.index import RunIndex, source_key

log = logging.getLogger("grace")

SEARCH_DEPTH = 3
_SKIP = {".git", "node_modules", ".venv", "__pycache__", "kb", "spotcheck"}


def is_run_folder(path: Path) -> bool:
    run = RunDir(path)
    return path.is_dir() and any(p.exists() for p in (run.report, run.scores, run.responses, run.run_info))


def find_runs(paths: list[Path]) -> list[Path]:
    """Every run folder under ``paths``, in the order given (folders holding runs: newest first)."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise GraceError(f"{path}: no such folder; give a run folder ('grace run --out' wrote it) or a folder "
                             "holding run folders")
        if not path.is_dir():
            raise GraceError(f"{path}: a file, not a run folder; give the folder that holds report.json")
        if is_run_folder(path):
            found.append(path)
            continue
        inside = _search(path, SEARCH_DEPTH)
        if not inside:
            raise GraceError(f"{path}: not a run folder, and no run folder inside (a run folder holds report.json, "
                             "scores.jsonl, responses.jsonl or run.json); give the folder 'grace run --out' wrote")
        found += sorted(inside, key=lambda p: -_mtime(p))
    return list(dict.fromkeys(p.resolve() for p in found))


def _search(root: Path, depth: int) -> list[Path]:
    out = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in _SKIP)
    except OSError:
        return out
    for child in children:
        if is_run_folder(child):
            out.append(child)
        elif depth > 1:
            out += _search(child, depth - 1)
    return out


def _mtime(path: Path) -> float:
    run = RunDir(path)
    return max((p.stat().st_mtime for p in (run.report, run.scores, run.responses, run.run_info) if p.exists()),
               default=0.0)


def run_ids(paths: list[Path]) -> list[str]:
    """Short IDs from the folder names: ``today``; ``2025-06/today`` when two are called ``today``."""
    def slug(parts: tuple[str, ...]) -> str:
        return re.sub(r"[^\w.\-/]+", "-", "/".join(parts)).strip("-") or "run"

    depth = {p: 1 for p in paths}
    while True:
        ids = {p: slug(p.parts[-depth[p]:]) for p in paths}
        clash = {i for i in ids.values() if list(ids.values()).count(i) > 1}
        grow = [p for p in paths if ids[p] in clash and depth[p] < len(p.parts)]
        if not grow:
            break
        for p in grow:
            depth[p] += 1
    out, seen = [], set()
    for p in paths:
        rid, n = ids[p], 2
        while rid in seen:
            rid, n = f"{ids[p]}-{n}", n + 1
        seen.add(rid)
        out.append(rid)
    return out


@dataclass
class ViewRun:
    """One run as the viewer holds it: its report (read again when it changes), its index (when built) and what
    to tell the user."""

    id: str
    path: Path
    report: Report | None = None
    problem: str | None = None  # why there is no grid for it (not scored yet, unreadable report, index failed)
    state: str = "waiting"  # waiting | indexing | ready | unscored | failed
    progress: float = 0.0
    phase: str = ""
    index: RunIndex | None = None
    stale: bool = False  # the files changed since the index was built; a new one is on its way
    plots: dict[str, bytes] = field(default_factory=dict)
    checked: float = 0.0
    quick: tuple | None = None
    spot: dict | None = None
    report_stat: tuple | None = None  # report.json's (size, mtime) when it was read; None: no file
    report_error: str | None = None  # why the report on file could not be read

    @property
    def folder(self) -> RunDir:
        return RunDir(self.path)

    def summary(self) -> dict[str, Any]:
        """The Runs page's line: when, KB, gold, models, questions, cost, and the state of its index."""
        info = self.folder.read_run_info() if self.folder.run_info.exists() else None
        r = self.report
        models = [{"model": m.model, "accuracy": m.accuracy, "ci": m.accuracy_ci95, "rank": m.rank}
                  for m in r.ranked()] if r else [{"model": m.name, "accuracy": None, "ci": None,
                                                   "rank": None} for m in (info.models if info else [])]
        cost = sum(m.cost.total_usd or 0 for m in r.ranked()) if r else None
        writer = self.folder.writer()
        return {
            "id": self.id,
            "path": str(self.path),
            "when": (r.created_at if r else None) or (info.started_at if info else None),
            "kb": {"path": r.kb.path, "articles": r.kb.n_articles} if r else (info.kb.model_dump() if info else None),
            # prediction-powered: the run's every question and row (report.gold and .responses are the human part)
            "gold": {"path": r.gold.path, "questions": r.ppi.questions if r.ppi else r.gold.n_questions,
                     "must_refuse": r.gold.n_must_refuse} if r else (info.gold.model_dump() if info else None),
            "models": models,
            "sample": r.sample.describe() if r and r.sample else None,  # grace run --sample: "30 of 90 questions, sampled ..."
            "responses": (r.ppi.rows if r.ppi and r.ppi.rows is not None else r.responses.n) if r else None,
            "cost_usd": cost,
            "in_progress": writer,
            "state": self.state,
            "progress": round(self.progress, 3),
            "phase": self.phase,
            "problem": self.problem,
            "stale": self.stale,
            "notes": [n for n in [self.folder.report_out_of_date(r) if r else None] if n] + (self.index.notes if self.index else [])
            + (r.warnings if r else []),
        }


def load_run(rid: str, path: Path) -> ViewRun:
    """Read what the Runs and Leaderboard pages need; a run that cannot be shown says why, it does not fail."""
    run = ViewRun(rid, path)
    folder = run.folder
    reread_report(run)
    if not folder.scores.exists():
        run.state = "unscored"
        rows = _count_lines(folder.responses) if folder.responses.exists() else 0
        run.problem = (f"no scores yet: {rows} response(s) on file" + (", still being written by grace run"
                       if folder.writer() else "") + f". The questions appear once the run is scored (grace score "
                       f"{folder.responses} --gold GOLD.csv --kb KB, or let grace run finish).")
    return run


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def reread_report(run: ViewRun) -> bool:
    """Read the run's ``report.json`` (again) when it is not the one read last (size, time); True when read.

    Every page looks (through :meth:`Indexer.check`): a run that gained a model while the viewer is open shows it
    on the Runs and Leaderboard pages as soon as its report says so, as the grid does once it is indexed again."""
    stat = _stat(run.folder.report)
    if stat == run.report_stat:
        return False
    report, error = None, None
    if stat is not None:
        try:
            report = run.folder.read_report()
        except GraceError as exc:
            error = str(exc)
        else:  # no page shows them, and a 500-article run holds ten 500 x 500 matrices: not kept
            for m in report.models.values():
                m.confusion.matrix, m.confusion.labels, m.per_class = [], [], {}
    if run.problem is None or run.problem == run.report_error:
        run.problem = error
    run.report, run.report_stat, run.report_error = report, stat, error
    run.plots.clear()
    return True


def _count_lines(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            n += chunk.count(b"\n")
    return n


def _quick_key(run: ViewRun) -> tuple:
    """Sizes and times of the files an index is built from: cheap enough to look at on every page."""
    out = []
    for p in (run.folder.scores, run.folder.responses, run.folder.report, run.folder.judgements):
        try:
            st = p.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


class Indexer:
    """Builds or reopens each run's index, one at a time, in a background thread (and a child process)."""

    RECHECK_SECONDS = 2.0

    def __init__(self, runs: list[ViewRun], cache_dir: Path, *, child: bool = True):
        self.runs, self.cache_dir, self.child = runs, Path(cache_dir), child
        self._queue: list[ViewRun] = []
        self._wake = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._work, name="grace-view-indexer", daemon=True)

    def start(self) -> None:
        for run in self.runs:
            run.quick = _quick_key(run)  # an unscored run is queued once its scores appear (check)
            if run.state != "unscored":
                self._queue.append(run)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Until every run is ready or failed (tests, the benchmark, an export)."""
        end = None if timeout is None else time.monotonic() + timeout
        while any(r.state in ("waiting", "indexing") for r in self.runs):
            if end is not None and time.monotonic() > end:
                return False
            time.sleep(0.02)
        return True

    def check(self, run: ViewRun) -> None:
        """Queue a new index when the run's files changed (looked at most every ``RECHECK_SECONDS``)."""
        now = time.monotonic()
        if now - run.checked < self.RECHECK_SECONDS:
            return
        run.checked = now
        quick = _quick_key(run)
        if run.quick is None or quick == run.quick:
            return
        run.quick = quick
        reread_report(run)  # the Runs and Leaderboard pages at once; the grid once the new index is in place
        if not run.folder.scores.exists():
            return
        with self._wake:
            if run.state == "unscored":
                run.state, run.problem = "waiting", None
            run.stale = run.index is not None
            if run not in self._queue:
                self._queue.append(run)
            self._wake.notify_all()

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._stop:
                    self._wake.wait()
                if self._stop:
                    return
                run = self._queue.pop(0)
            try:
                self._index(run)
            except Exception as exc:  # a failed index is a message on the page, never a dead viewer
                run.state, run.problem = "failed", f"could not index this run: {exc}"
                log.warning(f"grace view: {run.path}: {run.problem}")

    def _index(self, run: ViewRun) -> None:
        dest = run.folder.view_index(self.cache_dir)
        run.quick = _quick_key(run)
        key = source_key(run.path)
        old = _open_if_current(dest, key)
        if old is None:
            run.state = "indexing" if run.index is None else run.state
            run.phase, run.progress = "starting", 0.0
            started = time.monotonic()
            log.info(f"indexing {run.id} ({run.path}); its pages show the progress")
            self._build(run, dest)
            old = _open_if_current(dest, source_key(run.path)) or RunIndex(dest)
            log.info(f"{run.id} indexed in {time.monotonic() - started:.1f} s (kept in {dest.parent})")
        run.index = old  # the one it replaces closes when the last page using it is done with it
        run.state, run.stale, run.progress, run.phase, run.spot = "ready", False, 1.0, "ready", None
        run.plots.clear()
        reread_report(run)  # a report rewritten while this index was built (check saw the files' keys already)

    def _build(self, run: ViewRun, dest: Path) -> None:
        if not self.child:
            def say(phase: str, done: float) -> None:
                run.phase, run.progress = phase, done

            build_index(run.path, dest, say)
            return
        cmd = [sys.executable, "-m", "harness.viewer.build", str(run.path), str(dest)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                                          os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            run.phase, run.progress = str(msg.get("phase", "")), float(msg.get("done", 0.0))
        err = proc.stderr.read() if proc.stderr else ""
        if proc.wait() != 0:
            last = [line for line in err.strip().splitlines() if line.strip()]
            raise GraceError(last[-1].removeprefix("error: ") if last else f"the indexer exited with {proc.returncode}")


def _open_if_current(dest: Path, key: str) -> RunIndex | None:
    if not dest.exists():
        return None
    try:
        ix = RunIndex(dest)
    except Exception:  # an index from another grace, or a damaged file: built again
        return None
    if ix.source != key:
        ix.close()
        return None
    return ix
