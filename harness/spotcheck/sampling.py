"""Which hits get checked: per model, stratified by cited article, seeded.

Each model gets its own sample of ``n`` hits, so models are compared on equal
effort. Within a model, the hits are split by the article they cite and each
article gets a share proportional to its hits (largest remainders, ties broken
by the seeded order): the sample is self-weighting, so its rates estimate the
model's whole set of hits, while no article can crowd the others out by luck.

The order inside a stratum is a seeded hash of the hit, not a shuffle: the same
seed gives the same sample whatever the file order, and a larger ``n`` keeps
the hits a smaller one chose (up to one per article moved by rounding), so a
bigger spot-check reuses the judgements and cache of the smaller one.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from harness.spotcheck.inputs import Hit


def _rank(seed: int, hit: Hit) -> str:
    return hashlib.sha256(f"{seed}\x1f{hit.model}\x1f{hit.question_id}\x1f{hit.repeat}".encode()).hexdigest()


@dataclass
class ModelSample:
    hits: int
    articles: int
    chosen: list[Hit]

    def summary(self) -> dict[str, int]:
        return {"hits": self.hits, "sampled": len(self.chosen), "articles_in_hits": self.articles,
                "articles_sampled": len({h.cited_ids[:1] for h in self.chosen})}


def allocate(sizes: dict[str, int], n: int, order: list[str]) -> dict[str, int]:
    """Proportional shares of ``n`` over strata of ``sizes``, largest remainder first, never above a stratum's size."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    exact = {k: n * s / total for k, s in sizes.items()}
    share = {k: int(v) for k, v in exact.items()}
    left = n - sum(share.values())
    pos = {k: i for i, k in enumerate(order)}
    for k in sorted(sizes, key=lambda k: (-(exact[k] - share[k]), pos[k]))[:left]:
        share[k] += 1
    return share


def sample_hits(hits: list[Hit], per_model: int | None, seed: int) -> dict[str, ModelSample]:
    """``per_model=None`` takes every hit."""
    by_model: dict[str, dict[str, list[Hit]]] = defaultdict(lambda: defaultdict(list))
    for h in hits:
        by_model[h.model][h.cited_ids[0] if h.cited_ids else ""].append(h)
    out = {}
    for model, strata in by_model.items():
        for group in strata.values():
            group.sort(key=lambda h: _rank(seed, h))
        total = sum(len(g) for g in strata.values())
        order = sorted(strata, key=lambda a: _rank(seed, strata[a][0]))
        shares = allocate({a: len(g) for a, g in strata.items()}, total if per_model is None else per_model, order)
        chosen = sorted((h for a, g in strata.items() for h in g[:shares[a]]), key=lambda h: _rank(seed, h))
        out[model] = ModelSample(total, len(strata), chosen)
    return out
