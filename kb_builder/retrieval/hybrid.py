"""Reciprocal-rank fusion of several rankings (Cormack et al., 2009; k=60).

RRF ignores raw scores, which live on different scales for BM25 and cosine, and
rewards articles that both rankers place high: the fix for near-duplicate topics
where one ranker alone confuses siblings.
"""

from __future__ import annotations

from kb_builder.retrieval import Hit, Retriever


class HybridRetriever:
    def __init__(self, parts: list[Retriever], name: str = "hybrid", rrf_k: int = 60, depth: int = 50):
        self.parts, self.name, self.rrf_k, self.depth = parts, name, rrf_k, depth

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        rankings = [p.search_many(queries, max(k, self.depth)) for p in self.parts]
        out: list[list[Hit]] = []
        for qi in range(len(queries)):
            fused: dict[str, float] = {}
            for ranking in rankings:
                for rank, hit in enumerate(ranking[qi], 1):
                    fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (self.rrf_k + rank)
            best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
            out.append([Hit(i, round(s, 6)) for i, s in best])
        return out
