"""Bootstrap intervals over questions, shared by the leaderboard (harness.scoring) and retrieval evaluation.

Questions, not responses, are the unit of sampling: the bootstrap resamples
questions, seeded, and vectorised in chunks so 2,000 resamples of 10,000
questions stay fast and small. Every call with the same seed and length draws
the same resamples, so two series over the same questions are paired.
"""

from __future__ import annotations

import numpy as np

ALPHA = 0.05
_CHUNK_CELLS = 1_000_000  # resample indices held at once (8 MB of int64; the same draws as any other size, and faster)


def bootstrap_cis(
    series: list[np.ndarray], n_samples: int, seed: int, alpha: float = ALPHA
) -> list[list[float] | None]:
    """Percentile CIs of the mean of each array, all resampled with the same question indices.

    Every call with the same seed and length draws the same resamples, so two
    models answering the same questions are resampled identically.
    """
    if not series or n_samples <= 0:
        return [None for _ in series]
    n = series[0].size
    if n == 0:
        return [None for _ in series]
    rng = np.random.default_rng(seed)
    stack = np.vstack([s.astype(np.float64) for s in series])  # (k, n)
    means = np.empty((n_samples, len(series)))
    chunk = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_samples, chunk):
        b = min(chunk, n_samples - start)
        idx = rng.integers(0, n, size=(b, n))
        # how often each question was drawn in each resample; one matrix product then serves every series
        idx += np.arange(b)[:, None] * n
        counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        means[start:start + b] = counts @ stack.T / n
    lo, hi = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return [[round(float(a), 6), round(float(b), 6)] for a, b in zip(lo, hi, strict=True)]
