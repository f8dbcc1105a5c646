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

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.providers.base import DEFAULT_MAX_TOKENS, ModelSpec
from harness.rundir import RunDir, RunInfo

log = logging.getLogger("grace")


# -- typed results -------------------------------------------------------------
@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    model: str
    accuracy: float
    ci_low: float | None
    ci_high: float | None
    strict_accuracy: float
    significance_group: str
    n: int
    n_questions: int
    errors: int
    invalid_citation_rate: float
    refusal_calibration: float | None
    macro_f1: float
    cost_usd: float | None
    latency_p50_ms: float | None


@dataclass(frozen=True)
class Leaderboard:
    """The ranked models of a scored run; failed models (every call failed) are listed apart, never ranked."""

    rows: tuple[LeaderboardRow, ...]
    failed: dict[str, str] = field(default_factory=dict)  # model -> why
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> Leaderboard:
        rows = []
        for name in report.get("leaderboard") or []:
            m = report["models"][name]
            ci = m.get("accuracy_ci95") or [None, None]
            rows.append(LeaderboardRow(
                rank=m["rank"], model=name, accuracy=m["accuracy"], ci_low=ci[0], ci_high=ci[1],
                strict_accuracy=m["strict_accuracy"], significance_group=m["significance_group"], n=m["n"],
                n_questions=m["n_questions"], errors=m["error_count"],
                invalid_citation_rate=m["invalid_citation_rate"], refusal_calibration=m["refusal"]["calibration"],
                macro_f1=m["macro_f1"], cost_usd=m["cost"]["total_usd"], latency_p50_ms=m["latency"]["p50_ms"],
            ))
        failed = {k: v.get("reason", "") for k, v in (report.get("failed_models") or {}).items()}
        return cls(tuple(rows), failed, tuple(report.get("warnings") or ()))

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
        from dataclasses import asdict

        return [asdict(r) for r in self.rows]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.to_records()).set_index("model")


@dataclass
class Run:
    """A run folder, read: what was asked (``info``), the report, and the rows on demand."""

    path: Path
    info: RunInfo | None
    report: dict[str, Any] | None

    @property
    def leaderboard(self) -> Leaderboard:
        if self.report is None:
            raise GraceError(f"{self.path}: not scored yet; run grace.score(...) or 'grace score' first")
        return Leaderboard.from_report(self.report)

    def responses(self) -> list[dict[str, Any]]:
        """One row per call (the latest, as scored)."""
        return list(RunDir(self.path).latest_responses().values())

    def scores(self) -> list[dict[str, Any]]:
        return [row for _, row in RunDir(self.path).iter_scores()]


@dataclass
class RunResult:
    """What :func:`run` did: calls per model, models stopped early, and the scored run (unless ``score=False``)."""

    out: Path
    counts: dict[str, dict[str, Any]]
    stopped: dict[str, str]  # model -> why it was stopped early (key refused, endpoint unreachable)
    errors: int  # calls that failed after retries (recorded as error rows; retried by the next run)
    resumed: dict[str, int]  # done / failed / stale rows found on file
    pending: dict[str, int] = field(default_factory=dict)  # model -> calls in batches not ended yet (batch mode)
    unanswered: dict[str, str] = field(default_factory=dict)  # model -> why it has no usable answer on file
    estimates: list[dict[str, Any]] | None = None  # dry run only
    run: Run | None = None

    @property
    def leaderboard(self) -> Leaderboard:
        if self.run is None:
            raise GraceError("this run was not scored (score=False or dry_run=True)")
        return self.run.leaderboard

    @property
    def ok(self) -> bool:
        """No model was stopped early and every model has a usable answer (``grace run`` exits 1 otherwise)."""
        return not self.stopped and not self.unanswered


# -- the KB ---------------------------------------------------------------------
def build_kb(source: str | Path, out: str | Path, **options: Any):
    """Split documents into self-contained articles and write a KB folder; returns the loaded KB."""
    from kb_builder.build import build_kb as _build
    from kb_builder.store import load_kb as _load

    _build(Path(source), Path(out), **options)
    return _load(out)


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

    return _lint(load_kb(kb) if isinstance(kb, str | Path) else kb, run)


# -- run, score, report -----------------------------------------------------------
def resolve_models(models: Iterable[str | ModelSpec] = (), config: str | Path | None = None, *,
                   temperature: float | None = None, max_tokens: int | None = None, rpm: float | None = None,
                   tpm: float | None = None, timeout: float | None = None,
                   prices: str | Path | None = None) -> tuple[list[ModelSpec], dict[str, Any]]:
    """Model specs from ``PROVIDER:MODEL`` strings and a leaderboard TOML, with run-wide defaults applied."""
    from harness.providers import parse_model_spec
    from harness.runner.config import load_config
    from harness.runner.pricing import apply_price, load_prices

    specs, run_cfg = load_config(Path(config)) if config else ([], {})
    specs += [m if isinstance(m, ModelSpec) else parse_model_spec(m) for m in models]
    if not specs:
        raise GraceError("no models: give --model PROVIDER:MODEL (e.g. baseline:top1) or --config leaderboard.toml")
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise GraceError(f"model(s) named twice: {', '.join(sorted(dupes))}; give each a distinct name in the config")
    price_table = load_prices(Path(prices) if prices else None)
    temperature = temperature if temperature is not None else run_cfg.get("temperature")
    max_tokens = max_tokens if max_tokens is not None else run_cfg.get("max_tokens", DEFAULT_MAX_TOKENS)
    timeout = timeout if timeout is not None else run_cfg.get("timeout")
    for s in specs:
        if temperature is not None:
            s.params.setdefault("temperature", temperature)
        if max_tokens is not None:
            s.params.setdefault("max_tokens", max_tokens)
        s.rpm, s.tpm = s.rpm or rpm or run_cfg.get("rpm"), s.tpm or tpm or run_cfg.get("tpm")
        if timeout and s.timeout_s is None:
            s.timeout_s = float(timeout)
        apply_price(s, price_table)
    return specs, run_cfg


def run(
    kb: str | Path,
    gold: str | Path,
    models: Iterable[str | ModelSpec] = (),
    *,
    out: str | Path,
    config: str | Path | None = None,
    k: int | None = None,
    repeats: int | None = None,
    concurrency: int | None = None,
    max_attempts: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout: float | None = None,
    read_cache: bool = True,
    template: str | None = None,
    output_mode: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    threshold: float | None = None,
    prices: str | Path | None = None,
    embedder: str | None = None,
    retrieved_file: str | Path | None = None,
    rerank: str | None = None,
    rerank_depth: int | None = None,
    seed: int = 0,
    batch: bool = False,
    wait: bool = False,
    poll_interval: float | None = None,
    cancel_batches: bool = False,
    score: bool = True,
    dry_run: bool = False,
    progress: bool = False,
    console: Any = None,
) -> RunResult:
    """Ask every model every gold question from the same retrieved articles; resume ``out`` if it holds a run.

    Re-running with the same ``out`` asks only what is missing, failed, or was
    asked with different inputs. The folder is locked while this runs.

    ``retrieved_file`` takes each question's top ``k`` from a file of ranked
    article IDs (``grace kb search --out``'s format, or your production
    retriever's output) instead of grace's retriever. ``rerank``
    (``PROVIDER:MODEL`` or ``cross-encoder[:MODEL]``) reorders each question's
    top ``rerank_depth`` (20) candidates before the top ``k`` are shown.

    ``batch`` sends the calls of every model whose provider has a batch API
    (OpenAI, Azure OpenAI, Anthropic, Gemini) through it, at half price; a
    model's own ``batch = true`` in the config does so for that model alone.
    Without ``wait`` the call returns once the batches are submitted (see
    ``RunResult.pending``); calling it again collects what has ended, and the
    run is scored once nothing is pending. ``cancel_batches`` asks the
    providers to stop the open batches and submits nothing new; what they
    answered until then is collected.
    """
    from harness.core.hashing import file_hash
    from harness.core.outputs import check_output_folder
    from harness.prompts import load_template
    from harness.runner.calls import CallSettings
    from harness.runner.rerank import DEPTH as RERANK_DEPTH
    from harness.runner.rerank import rerank_for_run
    from harness.runner.session import (
        RunSettings,
        adopt_open_batches,
        check_same_run,
        choose_batch,
        describe_rows,
        estimate,
        new_run_info,
        plan_jobs,
        retrieve_all,
        retrieved_from_file,
        run_engine,
    )
    from kb_builder.gold import read_gold
    from kb_builder.store import load_kb as _load_kb

    check_output_folder(out, {"KB folder": kb, "gold CSV": gold, "config": config, "prices file": prices,
                              "retrieved file": retrieved_file}, RunDir(out).written_files())
    specs, run_cfg = resolve_models(models, config, temperature=temperature, max_tokens=max_tokens, rpm=rpm,
                                    tpm=tpm, timeout=timeout, prices=prices)

    def pick(value: Any, key: str, default: Any) -> Any:
        return value if value is not None else run_cfg.get(key, default)  # 0 is a value, not "unset"

    settings = RunSettings(k=pick(k, "k", 3), repeats=pick(repeats, "repeats", 1),
                           concurrency=pick(concurrency, "concurrency", 8), read_cache=read_cache,
                           max_attempts=pick(max_attempts, "max_attempts", 6), seed=seed, threshold=threshold,
                           wait=wait or bool(run_cfg.get("wait")), poll_s=pick(poll_interval, "poll_interval", 30.0),
                           cancel_batches=cancel_batches)
    choose_batch(specs, batch or bool(run_cfg.get("batch")))
    if min(settings.k, settings.repeats, settings.concurrency, settings.max_attempts) < 1:
        raise GraceError("--k, --repeats, --concurrency and --max-attempts must be 1 or more")
    tmpl = load_template(template or run_cfg.get("template"), output_mode or run_cfg.get("output_mode", "inline"))
    kb_obj = _load_kb(kb)
    questions = read_gold(gold)
    kb_obj.check_cited(questions, gold)
    retrieved_file = retrieved_file or run_cfg.get("retrieved")
    if retrieved_file and (embedder or run_cfg.get("embedder")):
        raise GraceError("give --retrieved (your own retrieval) or --embedder (grace's), not both")
    rerank = rerank or run_cfg.get("rerank")
    depth = max(settings.k, pick(rerank_depth, "rerank_depth", RERANK_DEPTH)) if rerank else settings.k
    if retrieved_file:
        retrieved = retrieved_from_file(kb_obj, questions, depth, Path(retrieved_file))
        settings.extra["retrieved"] = {"path": str(retrieved_file), "hash": file_hash(retrieved_file)}
    else:
        retrieved = retrieve_all(kb_obj, questions, depth, embedder or run_cfg.get("embedder"))
    rerank_estimate = None
    if rerank:
        call_settings = CallSettings(concurrency=settings.concurrency, max_attempts=settings.max_attempts,
                                     read_cache=read_cache)
        retrieved, rerank_estimate, record = rerank_for_run(
            rerank, [(q.question_id, q.question) for q in questions], retrieved, settings.k, depth, call_settings,
            prices=prices, dry_run=dry_run, console=console if progress else None)
        if record is not None:
            settings.extra["rerank"] = record
    folder = RunDir(out)
    if dry_run:
        on_file = folder.latest_responses() if folder.responses.exists() else {}
        ledger = folder.batch_ledger()
        adopt_open_batches(specs, ledger)
        plans, resume = plan_jobs(specs, questions, retrieved, on_file, tmpl, kb_obj.kb_hash, settings)
        from harness.runner.cache import ResponseCache

        cache = ResponseCache.open_for_reading() if settings.use_cache else None
        try:
            rows = estimate(plans, tmpl, kb_obj.kb_hash, cache, settings.read_cache, ledger)
        finally:
            if cache is not None:
                cache.close()
        if rerank_estimate is not None:
            e = rerank_estimate
            rows.append({"model": f"{e.model} (reranking)", "calls": e.calls, "cached": e.cached, "in_batches": 0,
                         "input_tokens": e.input_tokens, "output_tokens_est": e.output_tokens_est, "batch": False,
                         "cost_usd_est": e.cost_usd_est, "real_time_cost_usd_est": e.cost_usd_est})
        return RunResult(folder.path, {}, {}, 0, vars(resume), estimates=rows)

    with folder.lock():
        previous = folder.read_run_info()
        adopt_open_batches(specs, folder.batch_ledger())
        plans, resume = plan_jobs(specs, questions, retrieved, folder.latest_responses(), tmpl, kb_obj.kb_hash,
                                  settings)  # first: baselines fit their options on the questions here
        info = new_run_info(kb_obj, gold, questions, tmpl, specs, settings, embedder)
        check_same_run(folder, info)
        folder.write_run_info(info)
        todo = sum(len(p.jobs) for p in plans)
        if resume.done or resume.failed or resume.stale:
            msg = f"resuming {folder.path}: {resume.done} responses already done, {resume.failed} failed call(s) to retry"
            if resume.stale:
                msg += (f", {resume.stale} answer(s) asked with different inputs (question text, retrieval, "
                        "parameters or template) to ask again")
            log.warning(f"{msg}, {todo} to do")
        interrupted = False
        calls_over = threading.Event()
        if score and todo:
            from harness.core.preload import preload

            # once a first answer is in (the SDK is imported, requests are out and the process waits)
            preload("harness.reports.inputs", "harness.reports.markdown", "harness.reports.page",
                    "harness.reports.terminal", "harness.scoring.label_audit", "harness.scoring.votes",
                    when=lambda: calls_over.is_set() or any(p.stats.done for p in plans))
        try:
            if progress:
                from harness.runner.progress import run_with_progress

                run_with_progress(plans, tmpl, kb_obj.kb_hash, folder, settings, console)
            else:
                run_engine(plans, tmpl, kb_obj.kb_hash, folder, settings)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            calls_over.set()
            folder.compact_responses([q.question_id for q in questions])
            info.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            stopped = {p.spec.name: p.stats.aborted for p in plans if p.stats.aborted}
            info.status = "interrupted" if interrupted else ("failed" if stopped else "finished")
            pending = {p.spec.name: p.stats.pending for p in plans if p.stats.pending}
            if pending and not interrupted and not stopped:
                info.status = "waiting for batches"
            info.counts = {p.spec.name: {"planned": p.stats.total, "done": p.stats.done, "cached": p.stats.cached,
                                         "errors": p.stats.errors, "not_tried": p.stats.not_tried,
                                         "retries": p.stats.retries, "timeouts": p.stats.timeouts,
                                         "in_flight_limit": p.stats.in_flight_limit,
                                         "stopped": p.stats.aborted,
                                         **({"batch_submitted": p.stats.submitted, "batch_pending": p.stats.pending}
                                            if p.batch else {})} for p in plans}
            before = {e.get("name"): e for e in (previous.models if previous else [])}
            for entry, p in zip(info.models, plans, strict=False):
                kept = {k: v for k, v in before.get(entry["name"], {}).items() if k.startswith("json_mode")}
                entry.update(p.provider.learned() or kept)
            first_error = describe_rows(folder, info, previous, questions)
            folder.write_run_info(info)
        if interrupted:
            raise KeyboardInterrupt
        unanswered = {p.spec.name: first_error.get(p.spec.name, "no row on file")
                      for p in plans if not (info.rows.get(p.spec.name) or {}).get("answered")
                      and p.spec.name not in pending and p.spec.name not in stopped}
        result = RunResult(folder.path, info.counts, stopped, sum(p.stats.errors for p in plans), vars(resume),
                           pending=pending, unanswered=unanswered)
        if pending:
            each = ", ".join(f"{m}: {n:,}" for m, n in pending.items())
            log.warning(f"{sum(pending.values()):,} call(s) wait in provider batches ({each}); run the same command "
                        "again to collect them, or add --wait to poll until they end; the run is scored once all are in")
        elif score and folder.responses.exists():
            from harness.scoring import score_responses

            score_responses(folder.responses, gold, kb_obj, folder.path, seed=seed)
            report(folder.path, kb=kb_obj, console=console)
            result.run = load_run(folder.path)
        return result


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


ProgressCallback = Callable[[Any], None]

__all__ = [
    "Leaderboard", "LeaderboardRow", "Run", "RunResult", "build_kb", "lint_kb", "load_kb", "load_run", "report",
    "resolve_models", "run", "score", "search",
]
