"""Is a leaderboard difference real? Bootstrap intervals (:mod:`harness.stats.bootstrap`) and paired exact tests.

Questions, not responses, are the unit of sampling: repeats of one question are
not independent evidence, so the bootstrap resamples questions (seeded, and
vectorised in chunks so 2,000 resamples of 10,000 questions stay fast and
small), and pairwise comparisons use one majority hit per question. Two models
are compared on the questions both answered with McNemar's exact test (a
binomial test on the discordant pairs), Holm-corrected over all pairs; a
compact letter display then marks which models are indistinguishable.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from harness.stats.bootstrap import ALPHA


def per_question(q: np.ndarray, values: np.ndarray, n_questions: int) -> tuple[np.ndarray, np.ndarray]:
    """Question indices answered, and the mean of ``values`` over each one's responses (repeats)."""
    counts = np.bincount(q, minlength=n_questions)
    sums = np.bincount(q, weights=values, minlength=n_questions)
    answered = np.flatnonzero(counts)
    return answered, sums[answered] / counts[answered]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs against 1/2.

    With p = 1/2 the binomial is symmetric, so the two-sided p-value is twice the
    tail of the smaller count, capped at 1 (scipy's ``binomtest``, to 8 digits),
    computed exactly in integers: no scipy import (0.4 s) for one comparison.
    """
    n = a_only + b_only
    if n == 0:
        return 1.0
    m = min(a_only, b_only)
    if 2 * m >= n:
        return 1.0
    tail, term = 0, 1  # sum of C(n, i) for i <= m
    for i in range(m + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def majority_vote(n_questions: int, answered: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """A model's one vote per question for :func:`pairwise_tests`: 1 when more than half of its repeats hit (a tie
    is a miss), 0 when not, -1 for a question it never answered. ``answered`` indexes the questions ``rate``
    (the share of hits) is for."""
    vote = np.full(n_questions, -1, dtype=np.int8)
    vote[answered] = rate > 0.5
    return vote


def pairwise_tests(
    models: list[str], majority: dict[str, np.ndarray], alpha: float = ALPHA
) -> list[dict[str, Any]]:
    """McNemar for every pair, in leaderboard order (``a`` ranks above ``b``).

    ``majority[m]`` holds, per gold question, 1 when the model's majority of
    repeats hit, 0 when not and -1 when it never answered that question.
    """
    rows = []
    for a, b in combinations(models, 2):
        va, vb = majority[a], majority[b]
        both = (va >= 0) & (vb >= 0)
        ha, hb = va[both] == 1, vb[both] == 1
        a_only, b_only = int((ha & ~hb).sum()), int((hb & ~ha).sum())
        rows.append({"a": a, "b": b, "n": int(both.sum()), "a_only": a_only, "b_only": b_only,
                     "p_value": mcnemar_exact(a_only, b_only)})
    for row, adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_value"] = round(row["p_value"], 8)
        row["p_adjusted"] = round(adj, 8)
        row["significant"] = adj < alpha
    return rows


def _letter(i: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return alphabet[i] if i < len(alphabet) else f"{alphabet[i % len(alphabet)]}{i // len(alphabet)}"


def compact_letters(models: list[str], significant: set[frozenset[str]]) -> dict[str, str]:
    """Compact letter display by insert-and-absorb (Piepho 2004).

    Models sharing a letter are not significantly different. ``models`` is in
    leaderboard order, so the best model gets "a".
    """
    groups: list[set[str]] = [set(models)]
    for i, j in sorted(tuple(sorted(p)) for p in significant):
        split: list[set[str]] = []
        for g in groups:
            if i in g and j in g:
                split += [g - {i}, g - {j}]
            else:
                split.append(g)
        groups = [g for k, g in enumerate(split)
                  if g and not any((g < h) or (g == h and k2 < k) for k2, h in enumerate(split))]
    rank = {m: i for i, m in enumerate(models)}
    groups.sort(key=lambda g: sorted(rank[m] for m in g))
    out = {m: "" for m in models}
    for n, g in enumerate(groups):
        for m in g:
            out[m] += _letter(n)
    return out


_FLIP_CELLS = 1_000_000  # random signs held at once (8 MB); the same draws whatever the chunk


def paired_sign_flips(diffs: np.ndarray, n_samples: int, seed: int) -> list[float]:
    """Two-sided p-values of paired permutation tests, one per column of ``diffs`` (questions x pairs): is the mean
    of a pair's per-question differences zero? NaN marks a question the pair did not both answer.

    Under the null each question's difference is as likely negative as positive, so its sign is flipped at random
    ``n_samples`` times (seeded; one draw of signs per question serves every pair, so forty-five pairs cost one
    pass); p = (1 + flips whose |mean| reaches the observed) / (1 + n_samples), never 0. No normality assumed
    (per-question F1 is bounded and lumpy). A pair whose differences are all zero (or that shares no question): 1.
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    both = ~np.isnan(d)
    n = both.sum(axis=0)
    d = np.where(both, d, 0.0)
    observed = np.abs(d.sum(axis=0)) / np.maximum(n, 1)
    test = (n > 0) & (observed > 0)
    if n_samples <= 0 or not test.any():
        return [1.0] * d.shape[1]
    rows = np.flatnonzero(both.any(axis=1))  # questions some pair answered
    d = d[rows][:, test]
    nq, count = rows.size, n[test]
    reach = np.zeros(d.shape[1], dtype=np.int64)
    tolerance = 1e-12 * np.maximum(1.0, observed[test])
    rng = np.random.default_rng(seed)
    chunk = max(1, _FLIP_CELLS // nq)
    for start in range(0, n_samples, chunk):
        b = min(chunk, n_samples - start)
        signs = rng.integers(0, 2, size=(b, nq), dtype=np.int8).astype(np.float64) * 2 - 1
        reach += (np.abs(signs @ d) / count >= observed[test] - tolerance).sum(axis=0)
    out = np.ones(test.size)
    out[test] = (1 + reach) / (1 + n_samples)
    return [float(x) for x in out]
