"""Reranking: reorder the retriever's top candidates before the top ``k`` are shown to the models.

Retrieval misses are mostly paraphrases ("my child dies" vs "bereavement"):
BM25 has the right article at rank 6 or 12, not in the top 3. A reranker reads
the top ``depth`` candidates and orders them by whether they answer the
question, so a team can see how much recall@k (and accuracy) it buys before
putting one in production. Off by default; two kinds:

* ``PROVIDER:MODEL`` (``--rerank openai:gpt-4o-mini``): an LLM asked with a
  versioned template (``harness/prompts/rerank/reranker.v1.txt``) through the
  same engine as ``grace run``, so calls are cached, retried, priced and shown
  by ``--dry-run``. An unreadable or failed ranking keeps the retriever's order
  for that question (counted, never silent).
* ``cross-encoder[:MODEL]``: a local sentence-transformers cross-encoder
  (optional extra ``grace-eval[local]``; the model must already be on disk).

The reranked order keeps each article's retriever score, so the rows still say
what the retriever thought.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, WorkFailed
from harness.core.json_text import first_json_object
from harness.core.model_names import split_model
from harness.prompts.template_files import SectionTemplate, find_template, split_sections, template_sha
from harness.providers.base import ModelSpec, Provider, RetrievedArticle
from harness.runner.calls import (
    CallSettings,
    Estimate,
    Prompted,
    PromptJob,
    PromptStats,
    estimate_prompts,
    progress,
    run_prompts,
)
from harness.runner.engine import CallResult
from harness.runner.model_options import ModelOptions

log = logging.getLogger("grace")

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "prompts" / "rerank"
DEFAULT_TEMPLATE = "reranker.v1"
KIND = "grace-reranker"  # in the cache key: a ranking never answers another caller's prompt
DEPTH = 20  # candidates read per question
SNIPPET_CHARS = 800  # of each candidate's text: enough to judge the topic, cheap at 20 candidates
OUTPUT_TOKENS_EST = 120
_SECTION = re.compile(r"^=== (system|user) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(question|candidates)\s*\}\}")
RANKING_SCHEMA = {"title": "ranking", "type": "object",
                  "properties": {"ranking": {"type": "array", "items": {"type": "string"}}},
                  "required": ["ranking"], "additionalProperties": False}


@dataclass(frozen=True)
class RerankTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def messages(self, question: str, candidates: Sequence[RetrievedArticle]) -> list[dict[str, str]]:
        shown = "\n\n".join(f"[ID: {a.id}] {a.title}\n{_snippet(a.text)}" for a in candidates)
        return self._messages("user", {"question": question, "candidates": shown})


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " ..."


def load_rerank_template(spec: str | None = None) -> RerankTemplate:
    path = find_template(spec or DEFAULT_TEMPLATE, TEMPLATES_DIR, "reranker template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    user = sections.get("user", "").replace(" ", "")
    if "{{question}}" not in user or "{{candidates}}" not in user:
        raise GraceError(f"reranker template {path}: needs a '=== user ===' section with {{{{question}}}} and "
                         "{{candidates}} (see harness/prompts/rerank/reranker.v1.txt)")
    return RerankTemplate(path.stem, sections, template_sha(text))


def parse_ranking(text: str | None, shown: Sequence[str]) -> list[str] | None:
    """The shown IDs in the reply's order, then any it left out in their old order; None when unreadable."""
    obj = first_json_object(text or "")
    ranking = obj.get("ranking") if isinstance(obj, dict) else None
    if not isinstance(ranking, list):
        return None
    allowed = set(shown)
    out: list[str] = []
    for item in ranking:
        rid = str(item.get("id") if isinstance(item, dict) else item).strip()
        rid = rid.removeprefix("ID:").strip().strip("[]").removeprefix("ID:").strip()
        if rid in allowed and rid not in out:
            out.append(rid)
    if not out:
        return None
    return out + [i for i in shown if i not in out]


@dataclass
class RerankSummary:
    """What reranking did, for run.json and the terminal."""

    reranker: str
    depth: int
    questions: int = 0
    changed: int = 0  # questions whose top k differs from the retriever's
    kept_order: int = 0  # failed or unreadable rankings: the retriever's order was kept
    calls: dict[str, Any] = field(default_factory=dict)  # the LLM's calls, tokens and cost (PromptStats)


@dataclass
class LLMReranker:
    spec: ModelSpec
    provider: Provider
    template: RerankTemplate

    @property
    def name(self) -> str:
        return self.spec.name

    def prompted(self) -> Prompted:
        return Prompted(self.spec, self.provider, KIND, self.template.sha256, RANKING_SCHEMA)

    def jobs(self, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]]) -> list[PromptJob]:
        return [PromptJob(qid, text, self.template.messages(text, candidates[qid]), candidates[qid])
                for qid, text in questions]

    def order(self, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
              settings: CallSettings, stats: PromptStats) -> dict[str, list[str] | None]:
        def record(job: PromptJob, request: Any, result: CallResult) -> dict[str, Any]:
            text = result.completion.text if result.completion is not None else None
            return {"qid": job.context_id, "order": parse_ranking(text, [a.id for a in job.articles])}

        rows = run_prompts(self.prompted(), self.jobs(questions, candidates), record, settings, stats, label="reranking")
        return {r["qid"]: r["order"] for r in rows}

    def estimate(self, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
                 settings: CallSettings) -> Estimate:
        return estimate_prompts(self.prompted(), self.jobs(questions, candidates), settings, "reranking", OUTPUT_TOKENS_EST)


@dataclass
class CrossEncoderReranker:
    """A local cross-encoder scoring (question, article) pairs; no API, no cost."""

    model: str

    @property
    def name(self) -> str:
        return f"cross-encoder:{self.model}"

    def order(self, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
              settings: CallSettings, stats: PromptStats) -> dict[str, list[str] | None]:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise GraceError("--rerank cross-encoder needs the optional extra: pip install 'grace-eval[local]'") from None
        try:
            encoder = CrossEncoder(self.model)
        except OSError as exc:  # not on disk and no network: never download behind the user's back
            raise GraceError(f"cross-encoder {self.model!r} is not available offline ({exc}); download it once "
                             "(huggingface-cli download MODEL) or use --rerank PROVIDER:MODEL") from None
        out: dict[str, list[str] | None] = {}
        for qid, text in questions:
            arts = candidates[qid]
            scores = encoder.predict([(text, f"{a.title}\n{a.text}") for a in arts]) if arts else []
            ranked = sorted(range(len(arts)), key=lambda i: -float(scores[i]))
            out[qid] = [arts[i].id for i in ranked]
        return out

    def estimate(self, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
                 settings: CallSettings) -> Estimate:
        return Estimate("reranking", self.name, input_tokens=0, cost_usd_est=0.0)


Reranker = LLMReranker | CrossEncoderReranker


def make_reranker(text: str, *, options: ModelOptions | None = None, prices: Path | None = None,
                  template: str | None = None, ready: bool = True) -> Reranker:
    """``cross-encoder[:MODEL]`` or ``PROVIDER:MODEL`` (ready: key checked, priced, temperature 0)."""
    kind, model = split_model(text)
    if kind == "cross-encoder":
        return CrossEncoderReranker(model or "cross-encoder/ms-marco-MiniLM-L-6-v2")
    from harness.runner.model_options import ready_model

    spec, provider = ready_model(text, role="reranker", options=options, prices=prices, ready=ready)
    return LLMReranker(spec, provider, load_rerank_template(template))


def rerank(reranker: Reranker, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
           k: int, settings: CallSettings) -> tuple[dict[str, list[RetrievedArticle]], RerankSummary]:
    """The top ``k`` of each question's candidates in the reranker's order (``questions``: (id, text) pairs)."""
    stats = PromptStats()
    orders = reranker.order(questions, candidates, settings, stats)
    summary = RerankSummary(reranker.name, max((len(c) for c in candidates.values()), default=0),
                            questions=len(questions), calls=stats.as_dict())
    out = {}
    for qid, _ in questions:
        arts = candidates[qid]
        order = orders.get(qid)
        if order is None:
            summary.kept_order += 1
            order = [a.id for a in arts]
        by_id = {a.id: a for a in arts}
        out[qid] = [by_id[i] for i in order][:k]
        summary.changed += [a.id for a in out[qid]] != [a.id for a in arts[:k]]
    return out, summary


def rerank_for_run(text: str, questions: Sequence[tuple[str, str]], candidates: dict[str, list[RetrievedArticle]],
                   k: int, depth: int, settings: CallSettings, *, prices: Path | None = None, dry_run: bool = False,
                   console: Any = None) -> tuple[dict[str, list[RetrievedArticle]], Estimate | None, dict[str, Any] | None]:
    """``grace run --rerank TEXT``: each question's top ``k`` in the reranker's order, with a progress bar on
    ``console``; a dry run keeps the retriever's top ``k`` and returns the reranking's estimate instead.

    Returns ``(top k per question, the dry run's estimate or None, what run.json records or None)``.
    """
    reranker = make_reranker(text, prices=prices, ready=not dry_run)
    if dry_run:
        return {qid: arts[:k] for qid, arts in candidates.items()}, reranker.estimate(questions, candidates, settings), None
    with progress(settings, console) as settings:
        top, summary = rerank(reranker, questions, candidates, k, settings)
    if summary.calls.get("aborted"):
        raise GraceError(f"the reranker was stopped: {summary.calls['aborted'][0]}")
    if summary.questions and summary.kept_order == summary.questions:
        failed = summary.calls.get("errors", 0)
        raise WorkFailed(f"the reranker {summary.reranker} gave no usable ranking for any of {summary.questions} "
                         f"question(s) ({failed} call(s) failed, {summary.questions - failed} unreadable); no model "
                         "was asked. Run the same command again to retry, or drop --rerank")
    log.warning(f"reranked {summary.questions} question(s) with {summary.reranker} (top {depth}): the top {k} changed "
                f"for {summary.changed}; {summary.kept_order} kept the retriever's order (ranking failed or unreadable)")
    return top, None, {"reranker": summary.reranker, "depth": depth, "changed": summary.changed,
                       "kept_order": summary.kept_order, "calls": summary.calls}


class RerankedRetriever:
    """``base``'s top ``depth`` reordered by ``reranker``: the retriever a run with ``--rerank`` shows the
    models, as one more row of ``grace kb eval``."""

    def __init__(self, base: Any, reranker: Reranker, kb: Any, depth: int, settings: CallSettings):
        self.base, self.reranker, self.kb, self.depth, self.settings = base, reranker, kb, depth, settings
        self.name = f"{getattr(base, 'name', 'retriever')} + rerank {reranker.name}"
        self.summary: RerankSummary | None = None

    def search_many(self, queries: list[str], k: int) -> list[list[Any]]:
        from kb_builder.retrieval import Hit

        hits = self.base.search_many(queries, self.depth)
        asked = [(f"q{i}", q) for i, q in enumerate(queries)]
        candidates = {qid: [RetrievedArticle(h.id, self.kb.by_id[h.id].title, self.kb.by_id[h.id].text, h.score)
                            for h in hs] for (qid, _), hs in zip(asked, hits, strict=True)}
        ordered, self.summary = rerank(self.reranker, asked, candidates, self.depth, self.settings)
        if self.summary.calls.get("aborted"):
            raise GraceError(f"the reranker was stopped: {self.summary.calls['aborted'][0]}")
        return [[Hit(a.id, a.score) for a in ordered[qid][:k]] for qid, _ in asked]


def reranking(text: str, kb: Any, depth: int) -> Callable[[Any], RerankedRetriever]:
    """``grace kb eval --rerank TEXT``: a function that wraps a retriever so its top ``depth`` are reranked
    (for :func:`kb_builder.retrieval.evaluate.compare_on_gold`)."""
    reranker = make_reranker(text)
    return lambda base: RerankedRetriever(base, reranker, kb, depth, CallSettings())
