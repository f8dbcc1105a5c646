"""One ``grace run``: plan the calls, resume what is done, run, record, score.

Retrieval runs once per question and is shared by every model, so models are
compared on exactly the same prompts.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.prompts import Template
from harness.providers import make_provider
from harness.providers.base import ModelSpec, RetrievedArticle
from harness.runner.cache import ResponseCache
from harness.runner.engine import EngineSettings, Job, JsonlAppender, RunPlan, build_request, request_key, response_engine
from harness.runner.records import RunInfo, latest_rows, read_response_lines
from harness.core.version import __version__
from harness.core.errors import GraceError
from kb_builder.gold import GoldQuestion
from harness.core.hashing import file_hash
from kb_builder.store import KB
from harness.core.files import atomic_write_text

RESPONSES = "responses.jsonl"


@dataclass
class RunSettings(EngineSettings):
    k: int = 3
    repeats: int = 1
    seed: int = 0
    calibration_share: float = 0.3
    extra: dict[str, Any] = field(default_factory=dict)


def retrieve_all(kb: KB, questions: list[GoldQuestion], k: int, embedder: str | None = None) -> dict[str, list[RetrievedArticle]]:
    retriever = kb.retriever(embedder)
    hits = retriever.search_many([q.question for q in questions], k)
    out = {}
    for q, hs in zip(questions, hits):
        out[q.question_id] = [RetrievedArticle(h.id, kb.by_id[h.id].title, kb.by_id[h.id].text, h.score) for h in hs]
    return out


def calibrate_threshold(spec: ModelSpec, questions: list[GoldQuestion], retrieved: dict[str, list[RetrievedArticle]], settings: RunSettings) -> None:
    """Fit ``baseline:threshold`` on a seeded calibration split, which it then does not answer."""
    from harness.providers.baseline import fit_threshold

    if spec.options.get("threshold") is not None:
        return
    rng = random.Random(settings.seed)
    ids = sorted(q.question_id for q in questions)
    n = max(1, min(len(ids) - 1, round(len(ids) * settings.calibration_share)))
    calib = set(rng.sample(ids, n))
    scored = []
    for q in questions:
        if q.question_id in calib:
            arts = retrieved[q.question_id]
            top = arts[0] if arts else None
            scored.append((top.score if top else 0.0, q.must_refuse, bool(top and top.id in q.expected_citations)))
    spec.options["threshold"] = round(fit_threshold(scored), 6)
    spec.options["calibration_question_ids"] = sorted(calib)


def plan_jobs(
    specs: list[ModelSpec],
    questions: list[GoldQuestion],
    retrieved: dict[str, list[RetrievedArticle]],
    done: set[tuple[str, str, int]],
    settings: RunSettings,
) -> list[RunPlan]:
    plans = []
    for spec in specs:
        provider = make_provider(spec)
        provider.check_ready()
        skip = set(spec.options.get("calibration_question_ids", []))
        jobs = [
            Job(q.question_id, q.question, r, retrieved[q.question_id])
            for r in range(settings.repeats)
            for q in questions
            if q.question_id not in skip and (spec.name, q.question_id, r) not in done
        ]
        plans.append(RunPlan(spec, provider, jobs))
    return plans


def finished_keys(path: Path) -> tuple[set[tuple[str, str, int]], int]:
    """Keys already answered (error rows are not: they are retried), and how many rows failed."""
    rows = latest_rows(read_response_lines(path))
    done = {k for k, r in rows.items() if not r.get("error")}
    return done, len(rows) - len(done)


def compact_responses(path: Path, order: list[str], question_order: list[str]) -> int:
    """Rewrite ``responses.jsonl`` with one (the latest) row per call, in a stable order."""
    rows = read_response_lines(path)
    latest = latest_rows(rows)
    if len(latest) == len(rows):
        return 0
    qpos = {q: i for i, q in enumerate(question_order)}
    mpos = {m: i for i, m in enumerate(order)}
    keys = sorted(latest, key=lambda k: (mpos.get(k[0], 1e9), k[2], qpos.get(k[1], 1e9), k[1]))
    atomic_write_text(path, "".join(json.dumps(latest[k], ensure_ascii=False) + "\n" for k in keys))
    return len(rows) - len(latest)


def write_run_info(out: Path, info: RunInfo) -> None:
    atomic_write_text(out / "run.json", info.model_dump_json(indent=2) + "\n")


def new_run_info(kb: KB, gold_path: Path, questions: list[GoldQuestion], template: Template, specs: list[ModelSpec], settings: RunSettings, embedder: str | None) -> RunInfo:
    return RunInfo(
        grace_version=__version__,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        kb={"path": str(kb.path), "kb_hash": kb.kb_hash, "articles": len(kb.articles), "embedder": embedder or kb.manifest.embedder},
        gold={"path": str(gold_path), "hash": file_hash(gold_path), "questions": len(questions),
              "must_refuse": sum(q.must_refuse for q in questions)},
        templates={template.name: template.sha256},
        config={"k": settings.k, "repeats": settings.repeats, "concurrency": settings.concurrency,
                "cache": settings.use_cache, "read_cache": settings.read_cache, "max_attempts": settings.max_attempts,
                "seed": settings.seed, "output_mode": template.mode, **settings.extra},
        models=[{"name": s.name, "provider": s.provider, "model": s.model, "params": s.params, "base_url": s.base_url,
                 "price_input_per_mtok": s.price_input_per_mtok, "price_output_per_mtok": s.price_output_per_mtok,
                 "options": {k: v for k, v in s.options.items() if k != "responses"}} for s in specs],
    )


def check_same_run(out: Path, info: RunInfo) -> None:
    """Refuse to mix answers to a different KB, gold set or prompt into one responses file."""
    path = out / "run.json"
    if not path.exists() or not (out / RESPONSES).exists():
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return
    for label, a, b in (
        ("KB", old.get("kb", {}).get("kb_hash"), info.kb["kb_hash"]),
        ("prompt template", sorted(old.get("templates", {}).values()), sorted(info.templates.values())),
        ("k", old.get("config", {}).get("k"), info.config["k"]),
    ):
        if a is not None and a != b:
            raise GraceError(f"{out} holds a run with a different {label}; use a new --out folder (answers are cached, "
                             "so nothing is paid twice)")


def estimate(plans: list[RunPlan], template: Template, kb_hash: str, cache: ResponseCache | None, read_cache: bool) -> list[dict[str, Any]]:
    """Dry-run figures per model: calls to make, cached, estimated tokens and cost (no call is made)."""
    from kb_builder.tokens import count_tokens

    rows = []
    for p in plans:
        calls = cached = in_tok = out_tok = 0
        max_out = int(p.spec.params.get("max_tokens") or 150)
        for job in p.jobs:
            req = build_request(p.spec, template, job)
            if cache is not None and read_cache and p.provider.needs_network and cache.contains(
                request_key(p.spec, template, kb_hash, req, job.repeat)
            ):
                cached += 1
                continue
            calls += 1
            in_tok += sum(count_tokens(m["content"]) + 4 for m in req.messages)
            out_tok += min(max_out, 150)
        price_in, price_out = p.spec.price_input_per_mtok, p.spec.price_output_per_mtok
        if not p.provider.needs_network:
            cost: float | None = 0.0
        elif price_in is None or price_out is None:
            cost = None
        else:
            cost = (in_tok * price_in + out_tok * price_out) / 1e6
        rows.append({"model": p.spec.name, "calls": calls, "cached": cached, "input_tokens": in_tok,
                     "output_tokens_est": out_tok, "cost_usd_est": cost})
    return rows


def run_engine(plans: list[RunPlan], template: Template, kb_hash: str, out: Path, settings: RunSettings, on_update=None) -> None:
    cache = settings.open_cache()
    writer = JsonlAppender(out / RESPONSES)
    engine = response_engine(plans, template, kb_hash, writer, cache, on_update=on_update, **settings.engine_kwargs())
    try:
        asyncio.run(engine.run())
    finally:
        writer.close()
        if cache is not None:
            cache.close()
