"""A simulated panel of models and planted gold errors, to measure suggestions and the gold audit offline.

Real models are not available in tests, and the offline baselines all follow
retrieval, so they agree with each other by construction. The panel instead
answers from the true label with a per-model accuracy and, when wrong, makes
the mistakes real models make on an HR KB: it cites the true article's nearest
neighbour (a near-duplicate), another retrieved article, or refuses. Planted
errors move a gold label to the true article's nearest neighbour, the mistake
an annotator makes between two near-duplicate articles. Both are seeded.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any


def nearest_neighbours(kb, k: int = 3) -> dict[str, list[str]]:
    """For each article, the articles retrieval finds closest to its title and text (itself left out)."""
    retriever = kb.retriever()
    texts = [f"{a.title}\n{a.text[:1000]}" for a in kb.articles]
    out = {}
    for art, hits in zip(kb.articles, retriever.search_many(texts, k + 1), strict=True):
        out[art.id] = [h.id for h in hits if h.id != art.id][:k]
    return out


def simulate_panel(kb, questions: Sequence[Any], accuracies: Sequence[float], *, seed: int = 0,
                   refuse_share_of_errors: float = 0.2, neighbour_share_of_errors: float = 0.5) -> list[dict[str, Any]]:
    """Response rows (``question_id, model, repeat, response, retrieved_ids``) of one model per accuracy."""
    rng = random.Random(seed)
    near = nearest_neighbours(kb)
    retriever = kb.retriever()
    hits = dict(zip([q.question_id for q in questions],
                    retriever.search_many([q.question for q in questions], 5), strict=True))
    rows = []
    for m, acc in enumerate(accuracies):
        name = f"sim:model-{m + 1}"
        for q in questions:
            retrieved = [h.id for h in hits[q.question_id]]
            truth = None if q.must_refuse else rng.choice(list(q.expected_citations))
            if rng.random() < acc:
                cite = truth
            else:
                r = rng.random()
                others = [a for a in retrieved if a != truth] or [a.id for a in kb.articles if a.id != truth]
                if r < refuse_share_of_errors:
                    cite = None if truth is not None else rng.choice(others)
                elif truth is not None and r < refuse_share_of_errors + neighbour_share_of_errors and near.get(truth):
                    cite = near[truth][0]
                else:
                    cite = rng.choice(others)
            if cite is not None and cite not in retrieved:  # a model cites only what it was shown
                retrieved = [*retrieved[:-1], cite]
            text = ("I cannot answer that from the provided articles." if cite is None
                    else f"Here is what the policy says. [ID: {cite}]")
            rows.append({"question_id": q.question_id, "model": name, "repeat": 0, "response": text,
                         "retrieved_ids": retrieved})
    return rows


def plant_label_errors(kb, questions: Sequence[Any], n: int, *, seed: int = 0) -> tuple[list[Any], set[str]]:
    """A copy of ``questions`` with ``n`` single-article labels moved to their article's nearest neighbour."""
    rng = random.Random(seed)
    near = nearest_neighbours(kb)
    candidates = [q.question_id for q in questions
                  if not q.must_refuse and len(q.expected_citations) == 1 and near.get(q.expected_citations[0])]
    planted = set(rng.sample(candidates, min(n, len(candidates))))
    out = [replace(q, expected_citations=[near[q.expected_citations[0]][0]]) if q.question_id in planted else q
           for q in questions]
    return out, planted
