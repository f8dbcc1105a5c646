"""The Wilson score interval of a proportion: an interval that stays honest on a handful of questions.

A percentile bootstrap over n questions can only resample what it saw: a
category of 4 questions all answered right gives [100%, 100%], a category of one
question [0%, 0%] or [100%, 100%], which says "certain" where the data says
almost nothing. Wilson's interval (Wilson 1927; Agresti & Coull 1998) inverts the
score test, so it has close to its nominal coverage from n = 1 up, never leaves
[0, 1], and always contains the observed share; at large n it meets the
bootstrap's. Every share of independent questions the report gives an interval
(accuracy, per category too; a citation hit rate; recall@k; a spot-check's
hallucination rate) takes it; a mean of per-answer figures that are not 0 or 1
(citation F1, MRR, groundedness) keeps the bootstrap (docs/concepts/statistics.md).
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson_interval(share: float | None, n: int, z: float = Z95) -> list[float] | None:
    """``[low, high]`` of the 95% Wilson score interval of ``share`` observed over ``n`` units; None when n is 0 or
    there is no share.

    ``share`` may be fractional (a question asked several times counts once, at its share of hits)."""
    if n <= 0 or share is None:
        return None
    p = min(1.0, max(0.0, share))
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # rounded outward to the report's 6 digits, so the interval still holds the share as written
    return [min(math.floor(low * 1e6) / 1e6, round(p, 6)), max(math.ceil(high * 1e6) / 1e6, round(p, 6))]
