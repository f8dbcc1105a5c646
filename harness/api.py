"""grace's Python API: what the ``grace`` commands do, callable from a script or a notebook.

Each CLI command parses its options and makes one call here, so a notebook
gets exactly what the command line gets::

    import harness as grace

    kb = grace.build_kb("handbook/", "kb")
    result = grace.run(kb="kb", gold="gold.csv", models=["baseline:top1", "baseline:threshold"], out="runs/first")
    board = result.leaderboard            # typed rows, best first
    df = board.to_pandas()                # or board.to_records() for plain dicts
    run = grace.load_run("runs/first")    # any scored folder, later

Errors in the inputs raise :class:`GraceError` with the file, line and fix.
Progress bars show only when asked (``progress=True``); notices go to the
``grace`` logger.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import API_NAMES
from harness.core.errors import GraceError
from harness.providers.base import ModelSpec
from harness.rundir import RunDir, RunInfo
from harness.rundir.report import ModelReport, Report
from harness.runner.run_result import RunResult

if TYPE_CHECKING:  # imported on first use: numpy is not every command's to load
    from harness.scoring.compare import Comparison

log = logging.getLogger("grace")


# -- typed results -------------------------------------------------------------
# A leaderboard row is report.json's own typed per-model block (harness.rundir.report.ModelReport): row.model,
# row.rank, row.accuracy, row.ci_low / row.ci_high, row.refusal.calibration, row.cost.total_usd, ... A figure
# added to the report is here, and in to_records(), with no second field list to keep in step.
LeaderboardRow = ModelReport


@dataclass(frozen=True)
class Leaderboard:
    """The ranked models of a scored run; failed models (every call failed) are listed apart, never ranked."""

    rows: tuple[LeaderboardRow, ...]
    failed: dict[str, str] = field(default_factory=dict)  # model -> why
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_report(cls, report: Report) -> Leaderboard:
        failed = {name: f.reason for name, f in report.failed_models.items()}
        return cls(tuple(report.ranked()), failed, tuple(report.warnings))

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, model: str) -> LeaderboardRow:
        for row in self.rows:
            if row.model == model:
                return row
        raise KeyError(model)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per model (:meth:`ModelReport.record`): every scalar figure, CIs as ci_low/ci_high."""
        return [r.record() for r in self.rows]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.to_records()).set_index("model")


@dataclass
class Run:
    """A run folder, read: what was asked (``info``), the report (typed, as report.json holds it), and the rows on demand."""

    path: Path
    info: RunInfo | None
    report: Report | None

    @property
    def leaderboard(self) -> Leaderboard:
        if self.report is None:
            raise GraceError(f"{self.path}: not scored yet; run grace.score(...) or 'grace score' first")
        return Leaderboard.from_report(self.report)

    def responses(self) -> list[dict[str, Any]]:
        """One row per call (the latest, as scored)."""
        return list(RunDir(self.path).latest_responses().values())

    def scores(self) -> list[dict[str, Any]]:
        """One dict per scores.jsonl line (harness.rundir.scores.ScoreLine's fields), not validated: fast for a million."""
        return [row for _, row in RunDir(self.path).iter_scores()]


# -- the KB ---------------------------------------------------------------------
def build_kb(source: str | Path | None, out: str | Path, **options: Any):
    """Split documents into self-contained articles and write a KB folder (rebuilding into one keeps its IDs).

    ``options``: ``articles_file`` (pre-split articles instead of documents), ``max_tokens``, ``min_tokens``,
    ``embedder``, ``language`` (ISO 639-1, or None to detect it per article), ``progress`` (called once per document). Returns a ``BuildResult``: ``.kb`` (the loaded KB),
    ``.changes`` (IDs added, changed, removed), ``.documents``, ``.skipped``.
    """
    from kb_builder.build import build_kb as _build

    return _build(Path(source) if source is not None else None, Path(out), **options)


def index_kb(kb: str | Path, embedder: str | None = None):
    """Write a missing manifest and index (embeddings, the bm25f index) for a KB folder, with ``embedder`` if
    named; returns ``(KB, articles newly embedded)``."""
    from harness.core.files import atomic_write_text
    from kb_builder.retrieval import canonical_embedder
    from kb_builder.store import MANIFEST

    kb_obj = load_kb(kb)
    if embedder:
        kb_obj.manifest.embedder = canonical_embedder(embedder)
        atomic_write_text(kb_obj.path / MANIFEST, kb_obj.manifest.model_dump_json(indent=2) + "\n")
    retriever = kb_obj.retriever()
    return kb_obj, getattr(retriever, "newly_embedded", None)


def eval_retrieval(kb: Any, gold: str | Path, *, ks: Sequence[int] = (1, 3, 5), embedders: Sequence[str] = (),
                   retrieved: str | Path | None = None, rerank: str | None = None, rerank_depth: int = 20,
                   bootstrap: int = 2000, seed: int = 0):
    """Recall@k and MRR of each retriever on the answerable gold questions, side by side with paired bootstrap
    CIs: the KB's own retriever (or ``embedders``), a team's ranked file (``retrieved``), each reranked by
    ``rerank``. Returns a ``RetrievalComparison`` (``.rows``, ``.questions``, ``.reranked``)."""
    from harness.scoring.retrieval_eval import compare_on_gold
    from kb_builder.gold import load_gold

    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    return compare_on_gold(kb, load_gold(gold), list(ks), list(embedders), Path(retrieved) if retrieved else None,
                           rerank, rerank_depth, bootstrap, seed)


def load_kb(path: str | Path):
    from kb_builder.store import load_kb as _load

    return _load(path)


def search(kb: Any, questions: str | Sequence[str], k: int = 5, embedder: str | None = None):
    """Top-``k`` articles for each question (one question: one list)."""
    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    one = isinstance(questions, str)
    hits = kb.retriever(embedder).search_many([questions] if one else list(questions), k)
    return hits[0] if one else hits


def lint_kb(kb: Any, run: str | Path | None = None):
    """KB faults worst first (confusable pairs, articles not self-contained, ...); ``run`` adds the pairs a
    scored run's models swap. Returns a ``LintReport`` (``.findings``, ``.as_json()``)."""
    from kb_builder.lint import lint_kb as _lint

    scores = None
    if run is not None:
        folder = RunDir(run)
        if not folder.scores.exists():
            raise GraceError(f"{folder.path}: no scores.jsonl; score the run first (grace score, or grace run "
                             "without --no-score), then lint with --run")
        scores = (row for _, row in folder.iter_scores())
    return _lint(load_kb(kb) if isinstance(kb, str | Path) else kb, scores)


# -- run, score, report -----------------------------------------------------------
def run(kb: str | Path, gold: str | Path, models: Iterable[str | ModelSpec] = (), *, progress: bool = False,
        console: Any = None, **options: Any) -> RunResult:
    """Ask every model every gold question from the same retrieved articles; resume ``out`` if it holds a run.

    The keywords are the options of ``grace run``, under the same names (see
    :class:`harness.runner.config.RunConfig`, or ``help(grace.run)``): ``out`` (required), ``config`` (a
    leaderboard TOML, whose ``[run]`` table the keywords override), ``k``, ``repeats``, ``no_cache``,
    ``template``, ``embedder``, ``retrieved``, ``rerank``, ``batch``, ``dry_run``, ``no_score``, ...

    Re-running with the same ``out`` asks only what is missing, failed, or was
    asked with different inputs. The folder is locked while this runs.
    ``retrieved`` takes each question's top ``k`` from a file of ranked article
    IDs (``grace kb search --out``'s format, or your production retriever's)
    instead of grace's retriever; ``rerank`` (``PROVIDER:MODEL`` or
    ``cross-encoder[:MODEL]``) reorders each question's top ``rerank_depth``
    candidates first. ``batch`` sends the calls of every model whose provider has
    a batch API through it at half price; without ``wait`` the call returns once
    they are submitted (``RunResult.pending``) and calling it again collects them.
    A ``dry_run`` returns the estimate (``RunResult.estimates``) and needs no key.
    """
    from harness.runner.run_session import RunSession

    session = RunSession.open({"kb": kb, "gold": gold, "models": tuple(models), **options}, progress=progress,
                              console=console)
    session.plan()
    if session.config.dry_run:
        return session.estimate()
    result = session.execute()
    if session.finish(result):
        result.run = load_run(session.folder.path)
    return result


def _run_signature() -> inspect.Signature:
    """``run``'s keywords are RunConfig's fields: one list of run options, shown by ``help(grace.run)``."""
    from harness.runner.config import RunConfig

    head = list(inspect.signature(_RUN).parameters.values())[:3]
    kw = inspect.Parameter.KEYWORD_ONLY
    options = [inspect.Parameter(name, kw, default=inspect.Parameter.empty if f.is_required() else f.default,
                                 annotation=_plain(f.annotation))
               for name, f in RunConfig.model_fields.items() if name not in ("kb", "gold", "models")]
    extra = [inspect.Parameter("progress", kw, default=False, annotation=bool),
             inspect.Parameter("console", kw, default=None, annotation=Any)]
    return inspect.Signature(head + options + extra, return_annotation=RunResult)


def score(responses: str | Path, gold: str | Path, kb: Any, out: str | Path | None = None, *, seed: int = 0,
          bootstrap: int = 2000, workers: int | None = None) -> Run:
    """Score a responses file (a run folder's, or any file in the format) into ``out`` (default: its folder)."""
    from harness.core.outputs import check_output_folder
    from harness.rundir import LEADERBOARD_MD, REPORT, REPORT_HTML, SCORES
    from harness.scoring import score_responses

    responses = Path(responses)
    if responses.is_dir():
        responses = RunDir(responses).responses
    out = Path(out) if out is not None else responses.parent
    check_output_folder(out, {"responses file": responses, "gold CSV": gold,
                              "KB folder": kb if isinstance(kb, str | Path) else getattr(kb, "path", None)},
                        [SCORES, REPORT, LEADERBOARD_MD, REPORT_HTML])
    score_responses(responses, gold, kb, out, seed=seed, bootstrap=bootstrap, workers=workers)
    return load_run(out)


def _plain(kind: Any) -> Any:
    """``Optional[Annotated[float, Ge(0)]]`` -> ``float | None``: the type as a reader of ``help()`` wants it."""
    import functools
    import operator
    import types
    import typing

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        return _plain(args[0])
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, (_plain(a) for a in args))
    return kind


_RUN = run  # reached through __getattr__, which gives it RunConfig's fields as its signature on first use
del run


def __getattr__(name: str) -> Any:
    if name == "run":
        if "__signature__" not in vars(_RUN):
            _RUN.__signature__ = _run_signature()
        return _RUN
    if name == "Comparison":
        from harness.scoring.compare import Comparison

        return Comparison
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def audit_gold(gold: str | Path, kb: Any, run: str | Path, out: str | Path | None = None, **rules: Any):
    """The gold labels a run's models contradict, most likely wrong first (``grace annotations audit``); written
    to ``out`` (a suspects CSV) when given. ``rules``: ``min_voters``, ``min_swaps``. Returns an ``AuditResult``."""
    from annotations.audit import audit_gold as _audit

    return _audit(gold, load_kb(kb) if isinstance(kb, str | Path) else kb, run, out, **rules)


def check_gate(report: str | Path, **thresholds: Any):
    """``grace gate``'s checks of a scored run (``report``: its report.json or folder) for CI: ``min_accuracy``,
    ``max_invalid_rate``, ``max_hallucination_rate``, and with ``baseline`` (an earlier report) the noise-aware
    regression rules (``max_drop``, ``max_hallucination_rise``); ``models`` picks models. Returns a ``GateResult``
    (``.checks`` as (passed, sentence), ``.failed``, ``.notes``)."""
    from harness.reports.gate import check_gate as _check

    baseline = thresholds.pop("baseline", None)
    return _check(Path(report), baseline=Path(baseline) if baseline is not None else None, **thresholds)


def report(out: str | Path, kb: Any = None, console: Any = None) -> dict[str, Path]:
    """Write ``leaderboard.md`` and ``report.html`` from a scored folder; print the table if given a console."""
    from harness.reports import write_reports

    return write_reports(Path(out), kb=kb, console=console)


def load_run(path: str | Path) -> Run:
    """Read a run folder (scored or not)."""
    folder = RunDir(path)
    if not folder.path.is_dir():
        raise GraceError(f"{folder.path}: run folder not found")
    report_data = folder.read_report() if folder.report.exists() else None
    return Run(folder.path, folder.read_run_info(), report_data)


# -- compare runs, view runs ------------------------------------------------------
def compare_runs(run_a: str | Path, run_b: str | Path, models: Sequence[str] = (), *, seed: int | None = None,
                 bootstrap: int | None = None) -> Comparison:
    """Run A against run B, question by question, for every model in both (or ``models``).

    Per model: both accuracies, the change with a paired bootstrap 95% CI, McNemar's exact p-value and the
    question IDs that ``improved`` (not correct in A, correct in B) and ``regressed``, each question read with the
    report's repeat policy (correct when more than half of its repeats are). ``seed`` and ``bootstrap`` default
    to the reports'. Raises ``GraceError`` when the runs were scored against different gold sets.
    """
    from harness.scoring.compare import compare_runs as _compare

    return _compare(run_a, run_b, models, seed=seed, bootstrap=bootstrap)


def compare_models(run: str | Path, model_a: str, model_b: str, *, seed: int | None = None,
                   bootstrap: int | None = None) -> Comparison:
    """Two models of one run, compared as :func:`compare_runs` compares runs (A: ``model_a``, B: ``model_b``)."""
    from harness.scoring.compare import compare_models as _compare

    return _compare(run, model_a, model_b, seed=seed, bootstrap=bootstrap)


def view(paths: Sequence[str | Path] = (".",), *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
         cache_dir: str | Path | None = None) -> None:
    """Serve ``grace view`` over the runs under ``paths`` (run folders, or folders holding them) until Ctrl-C.

    Read-only on the run folders: each run's index is kept in grace's cache folder (``cache_dir``), built in
    a child process while the Runs and Leaderboard pages already answer, and rebuilt when the run changes.
    Bound to 127.0.0.1 unless ``host`` says otherwise (then the URL carries a token).
    """
    from harness.viewer import open_viewer
    from harness.web import listen, serve

    app, indexer = open_viewer(list(paths), cache_dir)
    try:
        server, url, token = listen(app, host, port)
        log.info(f"{len(app.runs)} run(s): {', '.join(app.order)}")
        serve(server, url, host if token else None, not open_browser, "read these runs")
    finally:
        indexer.stop()


def export_view(run: str | Path, out: str | Path, *, force: bool = False, cache_dir: str | Path | None = None) -> Path:
    """Write a static, self-contained copy of ``grace view`` for one run into the folder ``out``.

    ``out/index.html`` opens from ``file://`` with no server: the same grid, filters, question pages and the
    comparisons of the run's models. Runs up to ``harness.viewer.export.MAX_ANSWERS`` answers; a bigger one is
    refused with a message. Returns the path of ``index.html``. A folder that is not empty needs ``force``; then
    only the files an earlier export wrote (``out/.grace-export.json`` lists them with their hashes) are replaced
    or removed, any other file at a name the export writes (or one of its files edited since) is kept as
    ``NAME.bak``, and a symbolic link that leads out of ``out`` is refused (``GraceError``).
    """
    from harness.viewer.export import export

    return export(Path(run), Path(out), force=force, cache_dir=cache_dir)


ProgressCallback = Callable[[Any], None]

__all__ = list(API_NAMES)  # one list, in harness/__init__.py
