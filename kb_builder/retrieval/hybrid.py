"""Reciprocal-rank fusion of several rankings (Cormack et al., 2009; k=60).

RRF ignores raw scores, which live on different scales for BM25 and cosine, and
rewards articles that both rankers place high: the fix for near-duplicate topics
where one ranker alone confuses siblings.
"""

from __future__ import annotations

from kb_builder.retrieval import Hit, Retriever


class HybridRetriever:
    """``unmatched``: whether an article a lexical part scores 0 (no word in common; lexical retrievers pad their
    ranking with those, in KB order) still earns that part's rank. ``hybrid:`` KBs keep the rankings they had;
    ``A+B`` fusions leave them out, or a question no word of which is in the KB would promote the first articles."""

    def __init__(self, parts: list[Retriever], name: str = "hybrid", rrf_k: int = 60, depth: int = 50,
                 unmatched: bool = True):
        self.parts, self.name, self.rrf_k, self.depth, self.unmatched = parts, name, rrf_k, depth, unmatched

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        rankings = [p.search_many(queries, max(k, self.depth)) for p in self.parts]
        lexical = [getattr(p, "lexical", False) for p in self.parts]
        out: list[list[Hit]] = []
        for qi in range(len(queries)):
            fused: dict[str, float] = {}
            for ranking, words in zip(rankings, lexical, strict=True):
                for rank, hit in enumerate(ranking[qi], 1):
                    if words and not self.unmatched and hit.score <= 0.0:
                        break
                    fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (self.rrf_k + rank)
            if len(fused) < k:  # every part unmatched: pad like a lexical retriever, in the first part's order
                fused.update({h.id: 0.0 for h in rankings[0][qi] if h.id not in fused})
            best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
            out.append([Hit(i, round(s, 6)) for i, s in best])
        return out
