"""Retrieval quality on a gold set: recall@k and MRR over answerable questions.

Retrieval caps what any model can score (a model cannot cite an article it was
never shown), so this is the first number to look at. Several retrievers are
compared on the same questions, each with 95% intervals: recall@k, a share of
questions, Wilson's score interval (honest at 0% and 100% too, as the leaderboard's
accuracy); MRR, a mean, a bootstrap from the same seeded resamples of questions
for every retriever. Two rows whose intervals overlap widely are not shown to
differ by a handful of questions.
A retriever that cannot run here (no API key, an optional extra not installed)
becomes a row with its reason instead of stopping the comparison.

Reranking calls a model, so it lives with the run engine
(:mod:`harness.runner.rerank`); :func:`compare_on_gold` takes it as a function
that wraps a retriever, made by the caller (``grace kb eval --rerank``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.core.errors import GraceError
from harness.stats.bootstrap import bootstrap_cis
from harness.stats.wilson import wilson_interval
from kb_builder.gold import GoldQuestion
from kb_builder.retrieval import Retriever

if TYPE_CHECKING:
    from kb_builder.store import KB

DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 0


@dataclass
class RetrievalEval:
    ks: list[int]
    recall: dict[int, float]
    mrr: float
    n_answerable: int
    n_refuse: int
    misses: list[tuple[GoldQuestion, list[str]]]  # answerable questions not found in the top max(k)
    ranks: dict[str, int | None]
    name: str = ""
    recall_ci: dict[int, list[float] | None] = field(default_factory=dict)
    mrr_ci: list[float] | None = None
    seconds: float = 0.0  # search time; compare_retrievers adds the index (embedding) time


@dataclass
class RetrieverRow:
    """One retriever's line in a comparison: its results, or why it could not run."""

    spec: str  # as asked for (``hybrid``); ``result.name`` is the canonical one (``hybrid:st:...``)
    result: RetrievalEval | None = None
    error: str | None = None


def evaluate_retrieval(
    retriever: Retriever,
    gold: list[GoldQuestion],
    ks: list[int],
    depth: int = 100,
    *,
    bootstrap: int = 0,
    seed: int = DEFAULT_SEED,
) -> RetrievalEval:
    answerable = [g for g in gold if not g.must_refuse]
    ks = sorted(set(ks))
    kmax = max(ks)
    t0 = time.perf_counter()
    hits = retriever.search_many([g.question for g in answerable], max(depth, kmax)) if answerable else []
    seconds = time.perf_counter() - t0
    ranks: dict[str, int | None] = {}
    misses = []
    for g, found in zip(answerable, hits, strict=True):
        ids = [h.id for h in found]
        rank = next((i + 1 for i, x in enumerate(ids) if x in g.expected_citations), None)
        ranks[g.question_id] = rank
        if rank is None or rank > kmax:
            misses.append((g, ids[:kmax]))
    n = len(answerable)
    rank_arr = np.array([r or 0 for r in ranks.values()], dtype=np.int64)
    found_at = {k: ((rank_arr > 0) & (rank_arr <= k)).astype(np.float64) for k in ks}
    rr = np.where(rank_arr > 0, 1.0 / np.maximum(rank_arr, 1), 0.0)
    recall = {k: float(found_at[k].mean()) if n else 0.0 for k in ks}
    res = RetrievalEval(ks, recall, float(rr.mean()) if n else 0.0, n, len(gold) - n, misses, ranks,
                        name=getattr(retriever, "name", ""), seconds=seconds)
    if bootstrap and n:  # --bootstrap 0: no intervals at all
        res.recall_ci = {k: wilson_interval(recall[k], n) for k in ks}
        res.mrr_ci = bootstrap_cis([rr], bootstrap, seed)[0]
    return res


def compare_retrievers(
    kb: KB,
    gold: list[GoldQuestion],
    specs: list[str],
    ks: list[int],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    factories: dict[str, Callable[[], Retriever]] | None = None,
) -> list[RetrieverRow]:
    """Evaluate each embedder spec on the same questions; a spec that cannot run gets its reason.

    Every retriever is resampled with the same seed over the same answerable
    questions, so its intervals are paired with the others'. ``factories`` name
    retrievers that are not embedder specs (a file of a team's own rankings, a
    reranked retriever), made only when their turn comes.
    """
    rows: list[RetrieverRow] = []
    for spec in specs:
        t0 = time.perf_counter()
        try:
            retriever = (factories or {}).get(spec, lambda s=spec: kb.retriever(s))()
            index_seconds = time.perf_counter() - t0
            res = evaluate_retrieval(retriever, gold, ks, bootstrap=bootstrap, seed=seed)
        except GraceError as exc:
            rows.append(RetrieverRow(spec, error=_one_line(str(exc))))
            continue
        except Exception as exc:  # a broken optional backend (e.g. a model that fails to load) is one row, not a crash
            rows.append(RetrieverRow(spec, error=_one_line(f"{type(exc).__name__}: {exc}")))
            continue
        res.seconds += index_seconds
        rows.append(RetrieverRow(spec, result=res))
    return rows


def _one_line(text: str) -> str:
    return " ".join(text.split())


def rows_to_json(rows: list[RetrieverRow]) -> list[dict[str, Any]]:
    """The comparison as plain data (``grace kb eval --json``)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if row.result is None:
            out.append({"retriever": row.spec, "error": row.error})
            continue
        r = row.result
        out.append({
            "retriever": row.spec,
            "name": r.name,
            "n_answerable": r.n_answerable,
            "n_refuse": r.n_refuse,
            "recall": {str(k): round(v, 6) for k, v in r.recall.items()},
            "recall_ci": {str(k): v for k, v in r.recall_ci.items()},
            "mrr": round(r.mrr, 6),
            "mrr_ci": r.mrr_ci,
            "seconds": round(r.seconds, 3),
            "misses": [{"question_id": g.question_id, "expected": g.expected_citations, "retrieved": got}
                       for g, got in r.misses],
        })
    return out


@dataclass
class RetrievalComparison:
    """``grace kb eval``'s result: one row per retriever, the questions, and the rerankers (for their calls)."""

    rows: list[RetrieverRow]
    questions: list[GoldQuestion]
    ks: list[int]
    reranked: list[Any] = field(default_factory=list)


def compare_on_gold(kb: KB, gold: Any, ks: list[int], embedders: list[str], retrieved: Path | None,
                    rerank: Callable[[], Callable[[Retriever], Any]] | None, bootstrap: int,
                    seed: int) -> RetrievalComparison:
    """The retrievers named (the KB's own when none), a team's ranked file, each reranked: on one gold set.

    ``rerank``, when given, is called once (after the file is read) for a function that wraps a retriever in
    its reranked version (see :func:`harness.runner.rerank.reranking`).
    """
    questions = list(gold.questions)
    kb.check_cited(questions, gold.path)
    ks = sorted(set(ks))
    if not ks or min(ks) < 1:
        raise GraceError(f"-k {ks}: every k must be 1 or more")
    if bootstrap < 0:
        raise GraceError(f"--bootstrap {bootstrap}: give 0 (no intervals) or a number of resamples such as 2000")
    specs = list(dict.fromkeys(embedders)) or [kb.manifest.embedder]
    factories, reranked = _extra_retrievers(kb, questions, specs, retrieved, rerank)
    rows = compare_retrievers(kb, questions, [*specs, *factories], ks, bootstrap=bootstrap, seed=seed,
                              factories=factories)
    if len(rows) == 1 and rows[0].error:
        raise GraceError(rows[0].error)  # a single retriever that cannot run is an error, as before
    return RetrievalComparison(rows, questions, ks, reranked)


def _extra_retrievers(kb: KB, questions: list[GoldQuestion], specs: list[str], retrieved: Path | None,
                      rerank: Callable[[], Callable[[Retriever], Any]] | None,
                      ) -> tuple[dict[str, Callable[[], Any]], list[Any]]:
    """Rows beside the embedders: a file of the team's own rankings, and each retriever reranked."""
    factories: dict[str, Callable[[], Any]] = {}
    reranked: list[Any] = []
    if retrieved is not None:
        from kb_builder.retrieval.files import FileRetriever, read_retrieved

        ranked = read_retrieved(retrieved, kb.by_id)
        name = f"file:{retrieved.name}"
        factories[name] = lambda: FileRetriever(name, ranked, [(q.question_id, q.question) for q in questions])
    if rerank is not None:
        wrap = rerank()

        def reranking(spec: str, base: Callable[[], Any] | None) -> Callable[[], Any]:
            def make() -> Any:
                retriever = wrap(base() if base else kb.retriever(spec))
                reranked.append(retriever)
                return retriever

            return make

        for spec in [*specs, *factories]:
            factories[f"{spec} + rerank"] = reranking(spec, factories.get(spec))
    return factories, reranked
