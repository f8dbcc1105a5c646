"""Agreement beyond chance between raters: Cohen's kappa for two, Fleiss' kappa for several.

One implementation for every agreement grace reports: gold labels between annotators (``annotations.agreement``),
spot-check verdicts between reviewers and a judge (``harness.spotcheck.calibration``). It lives with grace's
statistics, below both, because the spot-check sits below the labelling apps in grace's layers.
"""

from __future__ import annotations

import math
from collections import Counter


def cohen_kappa(a: list[str], b: list[str]) -> float:
    """(p_o - p_e) / (1 - p_e); NaN when both annotators used one and the same label throughout."""
    if len(a) != len(b) or not a:
        raise ValueError("cohen_kappa needs two equally long, non-empty label lists")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in ca) / (n * n)
    return math.nan if p_e == 1 else (p_o - p_e) / (1 - p_e)


def fleiss_kappa(counts: list[list[int]]) -> float:
    """Fleiss (1971): ``counts[i][j]`` = raters who put subject i in category j (same raters per subject)."""
    if not counts:
        raise ValueError("fleiss_kappa needs at least one subject")
    n = sum(counts[0])
    if n < 2 or any(sum(row) != n for row in counts):
        raise ValueError("fleiss_kappa needs the same number (two or more) of ratings for every subject")
    big_n = len(counts)
    k = len(counts[0])
    p_j = [sum(row[j] for row in counts) / (big_n * n) for j in range(k)]
    p_i = [(sum(x * x for x in row) - n) / (n * (n - 1)) for row in counts]
    p_bar = sum(p_i) / big_n
    p_e = sum(p * p for p in p_j)
    return math.nan if p_e == 1 else (p_bar - p_e) / (1 - p_e)
