"""One ``grace run``: plan the calls, resume what is truly done, run, record.

Retrieval runs once per question and is shared by every model, so models are
compared on exactly the same prompts.

Resuming is by fingerprint, not by key: a row on file counts as done only if
its ``fingerprint`` (the hash of question text, retrieved articles, model,
parameters, template, output mode, KB and repeat) equals what would be asked
now. Anything else (an edited question, another temperature, a row from an
older grace) is asked again; the cache still answers what it already has, so
nothing is paid twice.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.hashing import normalise, text_hash
from harness.core.version import __version__
from harness.prompts import Template
from harness.providers import endpoint_of, make_provider, plugin_of, provider_class
from harness.providers.base import ModelSpec, RetrievedArticle, RunContext, ensure_ready, is_local_url
from harness.run_folder.batches import BatchLedger
from harness.run_folder.responses import RowIndex
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import (
    ModelEntry,
    ReplicaEntry,
    RowCounts,
    RunConfig,
    RunGold,
    RunInfo,
    RunKb,
    RunSample,
)
from harness.runner.batch_mode import POLL_SECONDS, BatchRunner
from harness.runner.cache import ResponseCache
from harness.runner.engine import (
    AnswerJob,
    EngineSettings,
    ResponseRows,
    RunPlan,
    answer_engine,
    build_request,
    request_key,
)
from harness.runner.pricing import batch_price, call_cost
from kb_builder.gold import GoldQuestion, GoldSet
from kb_builder.store import KB

log = logging.getLogger("grace")


@dataclass
class RunSettings(EngineSettings):
    k: int = 3
    repeats: int = 1
    seed: int = 0
    threshold: float | None = None  # a fixed cut for baseline:threshold instead of a fitted one
    wait: bool = False  # batch models: poll until every batch has ended, instead of returning after submitting
    cancel_batches: bool = False  # batch models: cancel the open batches and submit nothing new
    poll_s: float = POLL_SECONDS
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, config: Any) -> RunSettings:
        """The settings of a run (``config``: its :class:`~harness.runner.config.RunConfig`). Every field here that
        the config has under the same name comes from it, so a run option the engine reads is a field of each,
        never copied by hand; the two that differ in kind (``--no-cache``, ``--poll-interval``) are said here."""
        names = {f.name for f in fields(cls)} & set(type(config).model_fields)
        return cls(**{n: getattr(config, n) for n in sorted(names)}, read_cache=not config.no_cache,
                   poll_s=config.poll_interval)


@dataclass
class Resume:
    """What the folder already holds for the planned calls."""

    done: int = 0
    failed: int = 0  # error rows, asked again
    stale: int = 0  # answers to different inputs, asked again
    stale_models: dict[str, int] = field(default_factory=dict)


def retrieve_all(kb: KB, questions: list[GoldQuestion], k: int, embedder: str | None = None) -> dict[str, list[RetrievedArticle]]:
    retriever = kb.retriever(embedder)
    hits = retriever.search_many([q.question for q in questions], k)
    out = {}
    for q, hs in zip(questions, hits, strict=True):
        out[q.question_id] = [RetrievedArticle(h.id, kb.by_id[h.id].title, kb.by_id[h.id].text, h.score) for h in hs]
    return out


SHOWN_UNMAPPED = 20  # unmapped IDs of a rankings file named in the warning and in run.json (all are counted)


def retrieved_from_file(kb: KB, questions: list[GoldQuestion], k: int, path: Any,
                        id_map: Any = None) -> tuple[dict[str, list[RetrievedArticle]], dict[str, Any]]:
    """The top ``k`` of a team's own retriever, read from ``path`` (see kb_builder.retrieval.files), and what
    run.json records of it (``config.retrieved``).

    A missing score becomes ``1 / rank``, so the rows (and baseline:threshold) still see a falling score. With
    ``id_map`` (``--retrieved-map``, a their_id,article_id CSV) the file may rank the retriever's own documents:
    each ID is mapped through it and the KB's own records (a path, URL or title: kb_builder.references), the way a
    system's citations are; an ID that maps to no article is left out of the prompt, counted and named (a warning,
    and run.json), never read as an article.
    """
    from harness.core.hashing import file_hash
    from kb_builder.references import Resolver, read_mapping
    from kb_builder.retrieval.files import IdMapping, read_retrieved

    mapping = None
    if id_map is not None:
        try:
            table = read_mapping(id_map, kb.by_id)
        except GraceError as exc:
            raise GraceError(f"--retrieved-map: {exc}") from None
        resolver = Resolver(kb.articles, mapping=table, bare_ids=True)
        cache: dict[str, tuple[str, ...]] = {}

        def resolve(ref: str) -> tuple[str, ...]:
            """The article(s) a retrieved ID holds (a chunk over two articles: both); a page's are no ranking."""
            if ref not in cache:
                got = resolver.resolve(ref)
                cache[ref] = got.articles if got.scope != "page" else ()
            return cache[ref]

        mapping = IdMapping(resolve)
    ranked = read_retrieved(path, kb.by_id, mapping)
    record: dict[str, Any] = {"path": str(path), "hash": file_hash(path)}
    if mapping is not None:
        record.update(map=str(id_map.resolve() if hasattr(id_map, "resolve") else id_map), map_hash=file_hash(id_map), mapped=mapping.mapped,
                      unmapped=sum(mapping.unmapped.values()),
                      unmapped_ids=[i for i, _ in mapping.unmapped.most_common(SHOWN_UNMAPPED)])
        if mapping.unmapped:
            n, ids = sum(mapping.unmapped.values()), record["unmapped_ids"]
            log.warning(f"{path}: {n:,} ranked entr{'y' if n == 1 else 'ies'} ({len(mapping.unmapped):,} distinct "
                        f"ID(s)) map to no KB article through {id_map} and are left out of the prompts: "
                        f"{', '.join(map(repr, ids))}{' ...' if len(mapping.unmapped) > len(ids) else ''} (add them to "
                        "the map; all are counted in run.json config.retrieved)")
    missing = [q.question_id for q in questions if q.question_id not in ranked]
    if missing:
        raise GraceError(f"{path}: {len(missing)} gold question(s) have no line: {', '.join(missing[:8])}"
                         f"{' ...' if len(missing) > 8 else ''}; every question needs its retrieved articles")
    out = {}
    for q in questions:
        hits = ranked[q.question_id][:k]
        out[q.question_id] = [RetrievedArticle(i, kb.by_id[i].title, kb.by_id[i].text, 1.0 / r if s is None else s)
                              for r, (i, s) in enumerate(hits, 1)]
    return out, record


class PlannedJobs:
    """One model's calls still to make, each made into an :class:`AnswerJob` only as the engine takes it.

    A leaderboard-sized run (20 models x 10,000 questions x 5 repeats) would otherwise hold a million jobs from
    planning to its end; this holds each call's place in the plan (``repeat * questions + question``; a ``range``
    for a model with nothing on file), 8 bytes at most.
    """

    def __init__(self, questions: list[GoldQuestion], retrieved: dict[str, list[RetrievedArticle]],
                 todo: range | array):
        self.questions, self.retrieved, self.todo = questions, retrieved, todo

    def __len__(self) -> int:
        return len(self.todo)

    def __iter__(self) -> Iterator[AnswerJob]:
        nq, questions, retrieved = len(self.questions), self.questions, self.retrieved
        for place in self.todo:
            r, qi = divmod(place, nq)
            q = questions[qi]
            yield AnswerJob(q.question_id, q.question, r, retrieved[q.question_id])


def plan_jobs(
    specs: list[ModelSpec],
    questions: list[GoldQuestion],
    retrieved: dict[str, list[RetrievedArticle]],
    on_file: RowIndex | None,
    template: Template,
    kb_hash: str,
    settings: RunSettings,
    *,
    ready: bool = True,
    language: str | None = None,
) -> tuple[list[RunPlan], Resume]:
    """One plan per model with the calls still to make; a row on file is done only if its fingerprint matches.

    ``on_file``: the folder's rows (:meth:`RunDir.row_index`), or None for an empty folder.
    ``ready=False`` (a dry run, which sends nothing) warns of a missing key or SDK instead of refusing.
    ``language`` (the KB's) is what a system under test is told the questions are in; default the template's.
    """
    context = RunContext(questions, retrieved, settings.seed,
                         {"threshold": settings.threshold}, k=settings.k, language=language or template.language)
    plans, resume = [], Resume()
    nq, repeats = len(questions), settings.repeats
    grid = None
    if on_file is not None and len(on_file):
        grid = on_file.grid([s.name for s in specs], [q.question_id for q in questions], repeats)
    for si, spec in enumerate(specs):
        provider = make_provider(spec)
        provider.prepare_run(context)
        ensure_ready(provider, spec.name, ready=ready)
        todo: range | array = range(repeats * nq)
        at = grid[si].ravel() if grid is not None else None
        if at is not None and (at >= 0).any():
            todo, start = array("q"), 0
            for place in (at >= 0).nonzero()[0].tolist():  # only the calls with a row on file are looked at
                todo.extend(range(start, place))
                start = place + 1
                row = int(at[place])
                r, qi = divmod(place, nq)
                q = questions[qi]
                if on_file.error[row]:
                    resume.failed += 1
                else:
                    job = AnswerJob(q.question_id, q.question, r, retrieved[q.question_id])
                    key = request_key(spec, template, kb_hash, build_request(spec, template, job, settings.redactor), r)
                    if on_file.fingerprint_of(row) == bytes.fromhex(key):
                        resume.done += 1
                        continue
                    resume.stale += 1
                    resume.stale_models[spec.name] = resume.stale_models.get(spec.name, 0) + 1
                todo.append(place)
            todo.extend(range(start, repeats * nq))
        plans.append(RunPlan(spec, provider, PlannedJobs(questions, retrieved, todo), batch=bool(spec.batch)))
    return plans, resume


def model_entry(spec: ModelSpec) -> ModelEntry:
    return ModelEntry(name=spec.name, provider=spec.provider, model=spec.model, params=normalise(spec.params),
                      endpoint=endpoint_of(spec), batch=bool(spec.batch), price_input_per_mtok=spec.price_input_per_mtok,
                      price_output_per_mtok=spec.price_output_per_mtok,
                      price_batch_per_mtok=list(batch_price(spec)) if spec.price_input_per_mtok is not None else None,
                      price_server_hour=spec.price_server_hour,
                      options={k: v for k, v in spec.options.items() if k != "responses"}, plugin=plugin_of(spec),
                      citations=spec.citations,
                      replicas=[ReplicaEntry(url=u) for u in spec.replicas] if len(spec.replicas) > 1 else None,
                      search=spec.search)


def new_run_info(kb: KB, gold: GoldSet, template: Template, specs: list[ModelSpec], settings: RunSettings,
                 embedder: str | None) -> RunInfo:
    return RunInfo(
        grace_version=__version__,
        started_at=now(),
        kb=RunKb(path=str(kb.path), kb_hash=kb.kb_hash, articles=len(kb.articles),
                 embedder=embedder or kb.manifest.embedder),
        gold=RunGold(path=str(gold.path), hash=gold.hash, questions=len(gold.questions),
                     must_refuse=sum(q.must_refuse for q in gold.questions)),
        templates={template.name: template.sha256,
                   **({template.search.name: template.search.sha256} if any(s.search for s in specs) and template.search
                      else {})},
        config=RunConfig(k=settings.k, repeats=settings.repeats, concurrency=settings.concurrency,
                         cache=settings.use_cache, read_cache=settings.read_cache, max_attempts=settings.max_attempts,
                         seed=settings.seed, output_mode=template.mode, **settings.extra),
        models=[model_entry(s) for s in specs],
    )


def check_same_run(run: RunDir, info: RunInfo) -> None:
    """Refuse to mix answers to a different KB, prompt or k into one folder: every other model's rows would go stale."""
    old = run.read_run_info()
    if old is None or not run.responses.exists():
        return
    for label, a, b in (
        ("KB", old.kb.kb_hash, info.kb.kb_hash),
        ("prompt template", sorted(old.templates.values()), sorted(info.templates.values())),
        ("k", old.config.k, info.config.k),
    ):
        if a is not None and a != b:
            raise GraceError(f"{run.path} holds a run with a different {label}; use a new --out folder (answers are "
                             "cached, so nothing is paid twice)")
    if old.gold.hash == info.gold.hash and not _holds(info.sample, old.sample):
        def asked(sample: RunSample | None) -> str:
            return sample.describe() if sample else f"every one of the gold set's {info.gold.questions:,} questions"

        raise GraceError(f"{run.path} holds a run of {asked(old.sample)}, and this one asks {asked(info.sample)}; use "
                         "a new --out folder (answers are cached, so nothing is paid twice), or run without --sample "
                         "here to complete it to the whole gold set")


def _holds(new: RunSample | None, old: RunSample | None) -> bool:
    """Whether the questions ``new`` asks include those ``old`` asked (None: the whole gold set): a folder may grow
    from a sample to the full run, never hold answers a narrower run's report would count as its own."""
    return new is None or (old is not None and set(old.question_ids) <= set(new.question_ids))


def describe_rows(run: RunDir, info: RunInfo, previous: RunInfo | None,
                  questions: list[GoldQuestion]) -> dict[str, str]:
    """Make ``run.json`` say what ``responses.jsonl`` holds: every model on file, its rows and parameters.

    Models from earlier commands on the same folder keep their entry; rows that
    answer an earlier text of a question are counted as ``stale`` and warned about.
    Returns one error message per model that has error rows, to say why a model has no answer.
    Counted on the file's :class:`RowIndex` (a million rows: columns, not dicts).
    """
    import numpy as np

    index = run.row_index()
    latest = index.latest()  # the row of each call, in the order the calls first appear
    model, error = index.model[latest], index.error[latest]
    qid, qhash = index.qid[latest], index.qhash[latest]
    current = {q.question_id: text_hash(q.question) for q in questions}
    hash_code = {h: i for i, h in enumerate(index.qhashes)}
    # each question ID's current hash as a code of index.qhashes: -2 when no row holds it, -3 when it left the gold
    expected = np.array([hash_code.get(current[q], -2) if q in current else -3 for q in index.qids] or [-3], np.int64)
    stale = (expected[qid] == -3) | ((qhash != -1) & (qhash != expected[qid]))
    n_models = len(index.models)
    rows, errors = np.bincount(model, minlength=n_models), np.bincount(model[error], minlength=n_models)
    stales = np.bincount(model[stale], minlength=n_models)
    variants = np.bincount(np.unique(model.astype(np.int64) * max(1, len(index.params)) + index.params_code[latest])
                           // max(1, len(index.params)), minlength=n_models)
    first_error: dict[str, str] = {}
    per_model: dict[str, RowCounts] = {}
    _, first_at = np.unique(model, return_index=True)
    for m in model[np.sort(first_at)].tolist():  # in the order the models first appear, as run.json always listed them
        name = index.models[m]
        per_model[name] = RowCounts(rows=int(rows[m]), answered=int(rows[m] - errors[m]), errors=int(errors[m]),
                                    stale=int(stales[m]), params_variants=int(variants[m]))
        if errors[m]:
            row = index.row(int(latest[np.flatnonzero((model == m) & error)[0]]))
            err = row["error"] if isinstance(row["error"], dict) else {"message": str(row["error"])}
            first_error[name] = f"{err.get('kind', 'error')}: {err.get('message', '')}".strip(": ")
    info.rows = per_model
    known = {e.name for e in info.models}
    for entry in previous.models if previous else []:
        if entry.name in per_model and entry.name not in known:
            info.models.append(entry)
    for name, m in per_model.items():
        if m.stale and name not in known:
            log.warning(f"{name}: {m.stale} answer(s) on file in {run.path} were given to questions that have "
                        f"since changed or left the gold set; run {name} again on this folder to refresh them")
    return first_error


def estimate_plans(plans: list[RunPlan], template: Template, kb_hash: str, cache: ResponseCache | None, read_cache: bool,
             ledger: BatchLedger | None = None, redactor: Any = None) -> list[dict[str, Any]]:
    """Dry-run figures per model: calls to make, cached, already in open batches, estimated tokens and cost
    (no call is made)."""
    from kb_builder.tokens import count_tokens

    rows = []
    for p in plans:
        calls = cached = in_tok = out_tok = 0
        sent = {c for e in ledger.open_entries(p.spec.name) for c in e.custom_ids} if ledger and p.batch else set()
        in_batches = 0
        max_out = int(p.spec.params.get("max_tokens") or 150)
        for job in p.jobs:
            req = build_request(p.spec, template, job, redactor)
            key = request_key(p.spec, template, kb_hash, req, job.repeat)
            if cache is not None and read_cache and p.provider.needs_network and cache.contains(key):
                cached += 1
                continue
            if key in sent:
                in_batches += 1
                continue
            calls += 1
            in_tok += sum(count_tokens(m["content"]) + 4 for m in req.messages)
            out_tok += min(max_out, 150)
        real_time = _cost(p, in_tok, out_tok, (p.spec.price_input_per_mtok, p.spec.price_output_per_mtok))
        rows.append({"model": p.spec.name, "calls": calls, "cached": cached, "in_batches": in_batches,
                     "input_tokens": in_tok, "output_tokens_est": out_tok, "batch": p.batch,
                     "cost_usd_est": _cost(p, in_tok, out_tok, batch_price(p.spec)) if p.batch else real_time,
                     "real_time_cost_usd_est": real_time})
    return rows


def _cost(plan: RunPlan, in_tok: int, out_tok: int, price: tuple[float | None, float | None]) -> float | None:
    return call_cost(in_tok, out_tok, *price) if plan.provider.needs_network else 0.0


def choose_batch(specs: list[ModelSpec], batch: bool) -> None:
    """Decide per model: its own ``batch`` setting, else the run's, where the provider has a batch API.

    A server on this machine or network (vLLM, Ollama, llama.cpp behind ``openai:``) has none, so ``--batch``
    leaves it in real time; ``batch = true`` on the model still sends it batches (a local gateway that has one).
    """
    for s in specs:
        cls = provider_class(s)
        if s.search is not None:
            if s.batch:
                raise GraceError(f"{s.name}: batch = true, but the model searches the KB itself, and a search loop "
                                 "cannot be batched (each turn waits for the answer to the one before); remove one")
            if batch:
                log.info(f"{s.name}: runs in real time (a search loop cannot be batched: each turn waits for the "
                         "answer to the one before)")
            s.batch = False
            continue
        if s.batch and not cls.batch_api:
            raise GraceError(f"{s.name}: batch = true, but {s.provider}: has no batch API in grace (openai:, azure:, "
                             "anthropic: and google: have one); remove batch = true for this model")
        if s.batch is None:
            local = is_local_url(cls.endpoint(s))
            spread = len(s.replicas) > 1  # a batch goes to one endpoint
            s.batch = bool(batch and cls.batch_api and not local and not spread)
            if batch and cls.needs_network and not s.batch:
                why = ("its endpoint is a local server" if local and cls.batch_api
                       else "its calls are spread over its replicas" if spread and cls.batch_api
                       else f"{s.provider}: has no batch API")
                log.info(f"{s.name}: runs in real time ({why})")


def adopt_open_batches(specs: list[ModelSpec], ledger: BatchLedger) -> None:
    """A model with batches still open in the folder is collected in batch mode even without ``--batch``:
    asking those calls again in real time would pay for them twice."""
    for s in specs:
        waiting = sum(len(e.custom_ids) for e in ledger.open_entries(s.name))
        if waiting and not s.batch:
            log.warning(f"{s.name}: {waiting:,} call(s) of this folder are in open batches; this model runs in batch "
                        "mode to collect them rather than paying for them again in real time")
            s.batch = True


def run_calls(plans: list[RunPlan], template: Template, kb_hash: str, run: RunDir, settings: RunSettings, on_update=None) -> None:
    """Real-time models through the engine and batch models through their batch APIs, side by side."""
    cache = settings.open_cache()
    writer = run.responses_appender()
    rows = ResponseRows(template, kb_hash, settings.redactor)
    engine = answer_engine([p for p in plans if not p.batch], rows, writer, cache, on_update=on_update,
                             **settings.engine_kwargs())
    batch_plans = [p for p in plans if p.batch]
    batches = BatchRunner(batch_plans, rows, writer, cache, run.batch_ledger(), read_cache=settings.read_cache,
                          wait=settings.wait, poll_s=settings.poll_s, max_attempts=settings.max_attempts,
                          backoff_base=settings.backoff_base, cancel=settings.cancel_batches,
                          on_update=on_update) if batch_plans else None

    async def both() -> None:
        await asyncio.gather(engine.run(), *([batches.run()] if batches else []))

    try:
        asyncio.run(both())
    finally:
        try:
            writer.close()
        finally:
            if cache is not None:
                cache.close()
