"""Retrieval quality on a gold set: recall@k and MRR over answerable questions.

Retrieval caps what any model can score (a model cannot cite an article it was
never shown), so this is the first number to look at.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb_builder.gold import GoldQuestion
from kb_builder.retrieval import Retriever


@dataclass
class RetrievalEval:
    ks: list[int]
    recall: dict[int, float]
    mrr: float
    n_answerable: int
    n_refuse: int
    misses: list[tuple[GoldQuestion, list[str]]]  # answerable questions not found in the top max(k)
    ranks: dict[str, int | None]


def evaluate_retrieval(retriever: Retriever, gold: list[GoldQuestion], ks: list[int], depth: int = 100) -> RetrievalEval:
    answerable = [g for g in gold if not g.must_refuse]
    ks = sorted(set(ks))
    kmax = max(ks)
    hits = retriever.search_many([g.question for g in answerable], max(depth, kmax)) if answerable else []
    ranks: dict[str, int | None] = {}
    misses = []
    rr = 0.0
    for g, found in zip(answerable, hits, strict=True):
        ids = [h.id for h in found]
        rank = next((i + 1 for i, x in enumerate(ids) if x in g.expected_citations), None)
        ranks[g.question_id] = rank
        rr += 1.0 / rank if rank else 0.0
        if rank is None or rank > kmax:
            misses.append((g, ids[:kmax]))
    n = len(answerable)
    recall = {k: (sum(1 for r in ranks.values() if r and r <= k) / n if n else 0.0) for k in ks}
    return RetrievalEval(ks, recall, rr / n if n else 0.0, n, len(gold) - n, misses, ranks)
