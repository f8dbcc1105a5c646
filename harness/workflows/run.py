"""The run workflow: one ``grace run`` from its typed config (:class:`harness.runner.config.RunConfig`) to its
scored folder.

The stages (retrieval and planning in :mod:`harness.runner.session`, the calls,
scoring, reports) each import only what comes before them in the data flow; this
module sits above them all and calls them in order, so the gold file and the KB
are read once and handed from stage to stage. :func:`run` is ``grace.run`` and
what ``grace run`` calls.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.prompts import RetrievedArticle, Template
from harness.providers.base import ModelSpec
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import Attempt, CallCounts, RunInfo, RunSample
from harness.runner.cache import ResponseCache, any_cached
from harness.runner.config import RunConfig
from harness.runner.engine import RunPlan
from harness.runner.run_result import RunResult
from harness.runner.session import (
    RunSettings,
    adopt_open_batches,
    check_same_run,
    choose_batch,
    describe_rows,
    estimate_plans,
    new_run_info,
    plan_jobs,
    retrieve_all,
    retrieved_from_file,
    run_calls,
)
from harness.runner.tool_loop import attach_loops
from kb_builder.gold import GoldQuestion, GoldSet
from kb_builder.store import KB

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["run"]

log = logging.getLogger("grace")


class RunSession:
    """One ``grace run``: the KB and the gold file read once, then plan -> estimate (dry run) or execute -> finish.

    :meth:`open` turns a :class:`RunConfig` (options over the TOML's ``[run]``
    over defaults) into ready models, the template, the KB and the gold set, all
    checked before anything is asked; :meth:`plan` retrieves (and reranks) once
    for every model; :meth:`estimate` prices the calls without making them;
    :meth:`execute` makes them under the folder's lock; :meth:`finish` scores the
    folder with the questions and KB already in hand.
    """

    def __init__(self, config: RunConfig, specs: list[ModelSpec], template: Template, kb: KB, gold: GoldSet,
                 *, progress: bool = False, console: Any = None, export_tables: dict[str, dict[str, Any]] | None = None):
        self.config, self.specs, self.template, self.kb, self.gold = config, specs, template, kb, gold
        self.export_tables = export_tables or {}  # the TOML's [export.TARGET] tables: where log_to sends the run
        self.progress, self.console = progress, console
        self.folder = RunDir(config.out)
        self.machine: Any = None  # machine labels for every question (--machine-gold): gold is the human subset
        if config.machine_gold is not None:
            from annotations.machine_labels import read_machine_labels

            self.machine = read_machine_labels(config.machine_gold)
        self.sample: RunSample | None = None  # --sample N: the gold questions drawn (run.json's "sample")
        if config.sample is not None:
            if config.machine_gold is not None:
                raise GraceError("--sample draws a quick subset of --gold; with --machine-gold the human labels are a "
                                 "drawn subset already and every question is asked: give one of them")
            self.sample = _draw_sample(gold.questions, config.sample, config.seed)
        self.settings = RunSettings.of(config)
        self.retrieved: dict[str, list[RetrievedArticle]] = {}
        self.rerank_estimate: Any = None
        if config.redact_pii:
            from harness.privacy import make_redactor

            self.settings.redactor = make_redactor(True, console)

    @classmethod
    def open(cls, options: dict[str, Any], *, progress: bool = False, console: Any = None) -> RunSession:
        """Check and load everything a run needs; a problem in any input raises ``GraceError`` before any call."""
        from harness.core.outputs import check_output_folder
        from harness.exports.settings import check_targets, export_settings
        from harness.prompts import load_template
        from harness.runner.config import RunConfig, load_config, load_export_tables, resolve_models
        from kb_builder.gold import load_gold, require_labels
        from kb_builder.loader import load_kb

        toml = options.get("config")
        toml_specs, run_table = load_config(Path(toml)) if toml else ([], {})
        config = RunConfig.build(options, run_table)
        check_targets(config.log_to)  # a misspelt --log-to is known before any call, not after the run
        check_output_folder(config.out, {"KB folder": config.kb, "gold CSV": config.gold, "config": config.config,
                                         "machine-label file": config.machine_gold,
                                         "prices file": config.prices, "retrieved file": config.retrieved,
                                         "retrieved map": config.retrieved_map},
                            RunDir(config.out).written_files())
        specs = resolve_models(config, toml_specs)
        choose_batch(specs, config.batch)
        if not config.dry_run:
            _preload_sdks(specs, read_cache=not config.no_cache)
        kb = load_kb(config.kb)
        # no --template: the KB's language's built-in one (a French KB: a French prompt and refusal sentence)
        template = load_template(config.template, config.output_mode, kb.manifest.language,
                                 search=any(s.search is not None for s in specs))
        if config.k > len(kb.articles):
            log.warning(f"--k {config.k} is more than the KB's {len(kb.articles)} articles; every prompt shows all "
                        f"{len(kb.articles)}")
            config = config.model_copy(update={"k": len(kb.articles)})
        gold = load_gold(config.gold)
        if config.machine_gold is not None:
            require_labels(gold, "--machine-gold (its human labels of a random subset)")
        kb.check_cited(gold.questions, gold.path)
        from harness.runner.citation_settings import check_against_kb

        for spec in specs:  # a citation map's rows against the KB: a bad row is its file and line before any call
            spec.citations = check_against_kb(spec.citations, kb, f"model {spec.name}")
        if config.retrieved_map and not config.retrieved:
            raise GraceError("--retrieved-map maps the IDs of a --retrieved rankings file: give that file too")
        if config.retrieved and config.embedder:
            raise GraceError("give --retrieved (your own retrieval) or --embedder (grace's), not both")
        exports = load_export_tables(Path(toml)) if toml else {}
        check_targets(list(exports), f"{toml}: [export.TARGET]: ")
        for target, table in exports.items():
            export_settings(target, table)  # a table that names its destination twice: said now, not after the run
        return cls(config, specs, template, kb, gold, progress=progress, console=console, export_tables=exports)

    @property
    def questions(self) -> list[GoldQuestion]:
        """The questions asked: the gold file's; with machine labels, every question of either (the others with
        their machine label, which only a baseline fitting its threshold reads; scoring uses the human labels)."""
        if self.sample is not None:
            drawn = set(self.sample.question_ids)
            return [q for q in self.gold.questions if q.question_id in drawn]
        if self.machine is None:
            return list(self.gold.questions)
        from harness.scoring.prediction_powered import asked_questions

        return asked_questions(self.gold.questions, self.machine)

    def plan(self) -> None:
        """Each question's top k, from the KB's retriever or the team's file, reranked when asked: once for all models."""
        from harness.runner.calls import CallSettings
        from harness.runner.rerank import rerank_for_run

        c, questions = self.config, self.questions
        depth = max(c.k, c.rerank_depth) if c.rerank else c.k
        if c.retrieved:
            self.retrieved, self.settings.extra["retrieved"] = retrieved_from_file(self.kb, questions, depth,
                                                                                   c.retrieved, c.retrieved_map)
        else:
            self.retrieved = retrieve_all(self.kb, questions, depth, c.embedder)
        if c.rerank:
            calls = CallSettings(concurrency=c.concurrency, max_attempts=c.max_attempts, read_cache=not c.no_cache,
                                 redactor=self.settings.redactor)
            self.retrieved, self.rerank_estimate, record = rerank_for_run(
                c.rerank, [(q.question_id, q.question) for q in questions], self.retrieved, c.k, depth, calls,
                prices=c.prices, dry_run=c.dry_run, console=self.console if self.progress else None)
            if record is not None:
                self.settings.extra["rerank"] = record

    def estimate(self) -> RunResult:
        """The dry run: calls, cached answers, tokens and cost per model; nothing is asked and no key is needed."""
        folder = self.folder
        on_file = folder.row_index()
        ledger = folder.batch_ledger()
        adopt_open_batches(self.specs, ledger)
        plans, resume = plan_jobs(self.specs, self.questions, self.retrieved, on_file, self.template,
                                  self.kb.kb_hash, self.settings, ready=False, language=self.kb.manifest.language)
        for spec in (s for s in self.specs if s.search is not None):
            log.warning(f"{spec.name} searches the KB itself: the dry run counts its first turn of each question only; "
                        f"each turn with tool calls adds one more (up to {spec.search.max_tool_calls + 1} a question), "
                        "each sending the conversation so far")
        cache = ResponseCache.open_for_reading() if self.settings.use_cache else None
        try:
            rows = estimate_plans(plans, self.template, self.kb.kb_hash, cache, self.settings.read_cache, ledger,
                                  self.settings.redactor)
        finally:
            if cache is not None:
                cache.close()
        if self.rerank_estimate is not None:
            e = self.rerank_estimate
            rows.append({"model": f"{e.model} (reranking)", "calls": e.calls, "cached": e.cached, "in_batches": 0,
                         "input_tokens": e.input_tokens, "output_tokens_est": e.output_tokens_est, "batch": False,
                         "cost_usd_est": e.cost_usd_est, "real_time_cost_usd_est": e.cost_usd_est})
        return RunResult(folder.path, {}, {}, 0, vars(resume), estimates=rows)

    def execute(self) -> RunResult:
        """Make the calls still to make, under the folder's lock; ``run.json`` says what the folder then holds."""
        import threading

        folder, questions, settings = self.folder, self.questions, self.settings
        with folder.lock():
            previous = folder.read_run_info()
            adopt_open_batches(self.specs, folder.batch_ledger())
            plans, resume = plan_jobs(self.specs, questions, self.retrieved, folder.row_index(), self.template,
                                      self.kb.kb_hash, settings, language=self.kb.manifest.language)
            attach_loops(plans, self.kb, self.config.embedder, self.config.k, settings.redactor is not None)
            # (planned first: baselines fit their options on the questions)
            asked = self.gold if self.machine is None else GoldSet(self.gold.path, self.gold.hash, tuple(questions))
            info = new_run_info(self.kb, asked, self.template, self.specs, settings, self.config.embedder)
            info.sample = self.sample
            info.attempts = previous.past_attempts() if previous else []
            check_same_run(folder, info)
            folder.write_run_info(info)
            todo = sum(len(p.jobs) for p in plans)
            if resume.done or resume.failed or resume.stale:
                msg = (f"resuming {folder.path}: {resume.done} responses already done, {resume.failed} failed call(s) "
                       "to retry")
                if resume.stale:
                    msg += (f", {resume.stale} answer(s) asked with different inputs (question text, retrieval, "
                            "parameters or template) to ask again")
                log.warning(f"{msg}, {todo} to do")
            interrupted = False
            calls_over = threading.Event()
            if not self.config.no_score and todo:
                from harness.core.preload import preload

                # once a first answer is in (the SDK is imported, requests are out and the process waits)
                preload("harness.reports.inputs", "harness.reports.markdown", "harness.reports.page",
                        "harness.reports.terminal", "harness.scoring.label_audit", "harness.scoring.votes",
                        when=lambda: calls_over.is_set() or any(p.stats.done for p in plans))
            try:
                if self.progress:
                    from harness.runner.progress import run_with_progress

                    run_with_progress(plans, self.template, self.kb.kb_hash, folder, settings, self.console)
                else:
                    run_calls(plans, self.template, self.kb.kb_hash, folder, settings)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                calls_over.set()
                folder.compact_responses([q.question_id for q in questions])
                stopped = {p.spec.name: p.stats.aborted for p in plans if p.stats.aborted}
                pending = {p.spec.name: p.stats.pending for p in plans if p.stats.pending}
                if settings.redactor is not None:
                    info.redaction = settings.redactor.record()
                first_error = _record_outcome(folder, info, previous, plans, questions, interrupted, stopped, pending)
                folder.drop_row_index()  # (not held while the run is scored)
            if interrupted:
                raise KeyboardInterrupt
        unanswered = {p.spec.name: first_error.get(p.spec.name, "no row on file")
                      for p in plans if not getattr(info.rows.get(p.spec.name), "answered", 0)
                      and p.spec.name not in pending and p.spec.name not in stopped}
        if pending:
            each = ", ".join(f"{m}: {n:,}" for m, n in pending.items())
            log.warning(f"{sum(pending.values()):,} call(s) wait in provider batches ({each}); run the same command "
                        "again to collect them, or add --wait to poll until they end; the run is scored once all are in")
        return RunResult(folder.path, {m: c.model_dump() for m, c in info.counts.items()}, stopped, sum(p.stats.errors for p in plans), vars(resume),
                         pending=pending, unanswered=unanswered)

    def finish(self, result: RunResult) -> bool:
        """Score and report the folder with the questions and KB in hand; ``False`` when there is nothing to score
        yet (answers still in batches, no response on file, or ``no_score``)."""
        if self.config.no_score or result.pending or not self.folder.responses.exists():
            return False
        from harness.reports import write_reports
        from harness.runner.citation_settings import for_scoring
        from harness.scoring import score_responses

        report = score_responses(self.folder.responses, self.gold, self.kb, self.folder.path, seed=self.config.seed,
                                 machine_gold=self.machine, citations=for_scoring(self.folder.read_run_info()))
        for warning in report.warnings:  # as grace score says them: unmapped references, marker problems...
            log.warning(warning)
        write_reports(self.folder.path, kb=self.kb, console=self.console, gold=self.gold)
        if not self.gold.labelled:  # no accuracy without labels: what the models agree on is where labelling starts
            from annotations.suggest import suggest_from_run

            result.suggestions = suggest_from_run(self.questions, self.folder.path,
                                                  {a.id for a in self.kb.articles})[0]
        return True


def _preload_sdks(specs: list[ModelSpec], *, read_cache: bool) -> None:
    """Import the models' SDKs (openai's alone: 0.8 s of CPU, before its first request can leave) on a thread while
    the KB, the gold set and retrieval load, unless the response cache may answer the run: it holds answers of these
    models (a re-run), which then never needs the SDK. Asked on the thread: the cache's scan costs the run nothing."""
    from harness.core.preload import preload
    from harness.providers import sdk_modules

    sdks = sdk_modules(specs)
    if not sdks:
        return
    if not read_cache:
        preload(*sdks)
        return
    names = [s.name for s in specs]
    preload(*sdks, needed=lambda: not any_cached(names))


def _draw_sample(questions: Sequence[GoldQuestion], n: int, seed: int) -> RunSample | None:
    """``--sample N``: which ``n`` gold questions to ask, drawn as ``grace annotations sample`` draws the questions
    humans label (one seeded draw, :mod:`annotations.sample`), within each gold category in proportion (one at
    least) when the gold file has a category column; None when ``n`` is not fewer than the questions (all asked)."""
    from annotations.sample import UNIFORM, allocate, pick

    if n >= len(questions):
        log.warning(f"--sample {n} is not fewer than the gold set's {len(questions)} questions: every question is "
                    "asked")
        return None
    by = "category" if any(q.category is not None for q in questions) else None
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault((q.category or "(no category)") if by else UNIFORM, []).append(i)
    if by and n < len(groups):
        raise GraceError(f"--sample {n} is fewer than the gold set's {len(groups)} categories, and each category is "
                         f"asked at least once: give --sample {len(groups)} or more")
    alloc = allocate([len(m) for m in groups.values()], n, least=1) if by else [n]
    chosen = pick(groups, alloc, seed)
    return RunSample(n=n, of=len(questions), seed=seed, by=by, question_ids=[questions[i].question_id for i in chosen],
                     per_category=dict(zip(groups, alloc, strict=True)) if by else None)


def _record_outcome(folder: RunDir, info: RunInfo, previous: RunInfo | None, plans: list[RunPlan],
                    questions: list[GoldQuestion], interrupted: bool, stopped: dict[str, str],
                    pending: dict[str, int]) -> dict[str, str]:
    """Write ``run.json`` as the calls left the folder; returns each failing model's first error."""
    info.finished_at = now()
    info.status = "interrupted" if interrupted else ("failed" if stopped else "finished")
    if pending and not interrupted and not stopped:
        info.status = "waiting for batches"
    info.counts = {p.spec.name: CallCounts.model_validate({"planned": p.stats.total, "done": p.stats.done, "cached": p.stats.cached,
                                 "errors": p.stats.errors, "not_tried": p.stats.not_tried,
                                 "retries": p.stats.retries, "timeouts": p.stats.timeouts,
                                 "in_flight_limit": p.stats.in_flight_limit, "stopped": p.stats.aborted,
                                 **({"batch_submitted": p.stats.submitted, "batch_pending": p.stats.pending}
                                    if p.batch else {}), **_served(p)}) for p in plans}
    before = {e.name: e.learned() for e in (previous.models if previous else [])}
    for entry, p in zip(info.models, plans, strict=False):
        kept = {k: v for k, v in before.get(entry.name, {}).items() if k.startswith("json_mode")}
        entry.learn(p.provider.learned() or kept)
    first_error = describe_rows(folder, info, previous, questions)
    info.attempts.append(Attempt(started_at=info.started_at, finished_at=info.finished_at, status=info.status,
                                 counts=info.counts))
    folder.write_run_info(info)
    return first_error


def _served(plan: RunPlan) -> dict[str, Any]:
    """What a model's endpoint did in this command, for run.json: the calls in flight it ran at, its server's slots,
    the calls it answered, the span of its calls and the answer tokens (a self-hosted model's cost is its server's
    time), and each replica's state. Nothing for a model with no call to make, or one that makes none (baselines)."""
    st = plan.stats
    if not plan.jobs or not plan.provider.needs_network or plan.batch:
        return {}
    return {"concurrency": st.concurrency, "server_slots": st.server_slots, "slots_from": st.slots_from,
            "answered": st.answered, "busy_s": st.busy_s, "output_tokens": st.served_output_tokens,
            "replicas": plan.provider.learned().get("replicas")}


def run(kb: str | Path, gold: str | Path, models: Iterable[str | ModelSpec] = (), *, out: str | Path,
        config: str | Path | None = None, machine_gold: str | Path | None = None, citations: Sequence[str] = (),
        k: int | None = None, repeats: int | None = None, concurrency: int | None = None, rpm: float | None = None,
        tpm: float | None = None, timeout: float | None = None, max_attempts: int | None = None,
        no_cache: bool = False, template: str | None = None, output_mode: Literal["inline", "json"] | None = None,
        temperature: float | None = None, max_tokens: int | None = None, threshold: float | None = None,
        prices: str | Path | None = None, price_server_hour: Sequence[str] = (), embedder: str | None = None,
        search: Sequence[str] = (), max_tool_calls: int | None = None,
        rerank: str | None = None, rerank_depth: int | None = None, retrieved: str | Path | None = None,
        retrieved_map: str | Path | None = None, seed: int | None = None, sample: int | None = None,
        batch: bool = False, wait: bool = False, poll_interval: float | None = None, cancel_batches: bool = False,
        dry_run: bool = False, no_score: bool = False, redact_pii: bool = False, log_to: Sequence[str] = (),
        progress: bool = False, console: Console | None = None) -> RunResult:
    """Ask every model every gold question from the same retrieved articles; resume ``out`` if it holds a run.

    The keywords are the options of ``grace run``, under the same names (the fields of
    :class:`harness.runner.config.RunConfig`, where each default is): ``out`` (required), ``config`` (a
    leaderboard TOML, whose ``[run]`` table the keywords override), ``k``, ``repeats``, ``no_cache``,
    ``template``, ``embedder``, ``retrieved``, ``rerank``, ``batch``, ``dry_run``, ``no_score``, ``log_to``, ...
    A keyword left at None (or False, or empty) is not given: the TOML's ``[run]`` value holds, else the default.

    ``gold`` may be a file of questions alone (``question_id, question``, or label columns left empty): the
    models are asked and the report has no accuracy, and ``RunResult.suggestions`` holds what they agree on per
    question, where labelling starts (see :func:`kb_builder.gold.load_gold`).

    Re-running with the same ``out`` asks only what is missing, failed, or was
    asked with different inputs. The folder is locked while this runs.
    ``retrieved`` takes each question's top ``k`` from a file of ranked article
    IDs (``grace kb search --out``'s format, or your production retriever's)
    instead of grace's retriever (``retrieved_map``, a ``their_id,article_id``
    CSV, maps a file that ranks the retriever's own documents); ``citations``
    (``["MODEL=multi", "MODEL=single:ids"]``) sets how a model's citations are
    read and scored, over its TOML ``[models.citations]``; ``rerank`` (``PROVIDER:MODEL`` or
    ``cross-encoder[:MODEL]``) reorders each question's top ``rerank_depth``
    candidates first. ``search`` (``["MODEL", "MODEL=CAP"]``) lets a model search the KB itself with tools
    instead of being shown the top k, up to ``max_tool_calls`` per question (default 6). ``batch`` sends the calls of every model whose provider has
    a batch API through it at half price; without ``wait`` the call returns once
    they are submitted (``RunResult.pending``) and calling it again collects them.
    A ``dry_run`` returns the estimate (``RunResult.estimates``) and needs no key. ``sample`` (N) asks a seeded
    draw of N gold questions (within each gold category in proportion) for a quick try: the gold set stays the
    file's, so :func:`~harness.workflows.compare.compare_runs` and trends put it beside the full runs.
    ``log_to`` (e.g. ``["mlflow"]``) exports the scored run to each target (``RunResult.exports``), as
    :func:`harness.workflows.export.export_run` does; a failed export is recorded and returned, and never fails
    the run.
    """
    options = dict(locals())  # RunConfig's fields: first, while the keywords are all that is local
    del options["progress"], options["console"]
    options["models"] = tuple(models)
    from harness.workflows.results import load_run

    session = RunSession.open(options, progress=progress, console=console)
    session.plan()
    if session.config.dry_run:
        return session.estimate()
    result = session.execute()
    if session.finish(result):
        result.run = load_run(session.folder.path)
        if session.config.log_to:  # after the run is whole: a failed export is recorded and returned, never raised
            from harness.workflows.export import log_exports

            result.exports = log_exports(session.folder, session.config.log_to, session.export_tables)
    elif session.config.log_to:
        log.warning(f"not exported to {', '.join(session.config.log_to)}: the run is not scored yet; once it is, "
                    f"'grace export {session.folder.path} --to TARGET'")
    return result
