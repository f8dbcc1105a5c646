"""Prediction-powered inference (PPI++): a confidence interval from a few human labels and many machine labels.

A leaderboard over 400 questions of which humans labelled 60 can either throw
340 questions away (the human-only interval, wide) or trust machine labels
blindly (narrow, and biased by every label the machine got wrong). PPI
(Angelopoulos et al., Science 2023) does neither: it takes the figure computed
with machine labels over every question and corrects it by the machine's error
measured on the human-labelled ones, a *rectifier*. PPI++ (Angelopoulos, Duchi,
Zrnic 2023) weighs the machine labels by a power-tuning ``lam`` in [0, 1],
estimated from the data: 0 ignores them (the human-only interval), 1 is plain
PPI. With a useless machine the tuned ``lam`` goes to 0, so the interval is never
(asymptotically) wider than the human-only one; grace also falls back to 0
whenever the estimated variance at the tuned ``lam`` is above the human-only
one, so it is never wider on the data either.

Here the figures are means over questions (accuracy, a paired difference of two
models' accuracies) or smooth functions of means (refusal calibration, a mean of
two ratios), so one estimator serves them all: the M-estimation form of PPI++
for a scalar target ``g(mean(Z))``, linearised through ``grad g`` (for a plain
mean, ``g`` is the identity and this is exactly ``ppi_py.ppi_mean_ci``; a test
holds it to ``ppi_python`` on fixed data). With a stratified draw (``grace
annotations sample --by``) each stratum gets its own rectifier and ``lam``, and
the strata are combined by their share of the questions.

Pure numpy (no scipy, no ``ppi_python`` at run time): a few lines, checked
against the maintained implementation in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from harness.stats.bootstrap import ALPHA


@dataclass(frozen=True)
class Estimate:
    """One prediction-powered figure and the human-only one it improves on, with their normal intervals."""

    value: float  # the PPI++ point estimate
    low: float
    high: float
    se: float  # its standard error
    lam: float  # the power-tuning weight on the machine labels (strata: their labelled-weighted mean)
    classical: float  # the human-only estimate (lam = 0)
    classical_low: float
    classical_high: float
    classical_se: float
    n: int  # human-labelled questions
    n_unlabelled: int  # questions with machine labels only

    @property
    def effective_labels(self) -> float | None:
        """Human labels the human-only interval would need to be as narrow as this one: n * (se_h / se)^2."""
        if self.se <= 0 or not math.isfinite(self.se):
            return None
        return self.n * (self.classical_se / self.se) ** 2

    @property
    def p_value(self) -> float:
        """Two-sided normal p-value of the hypothesis that the figure is 0 (for a difference: no difference)."""
        if self.se <= 0:
            return 1.0 if self.value == 0 else 0.0
        return math.erfc(abs(self.value) / self.se / math.sqrt(2))


def tuned_lambda(psi: np.ndarray, psi_hat: np.ndarray, psi_hat_unlabelled: np.ndarray) -> float:
    """The PPI++ ``lam`` minimising the variance of a mean: cov(Y, Yhat) / ((1 + n/N) var(Yhat)), clipped to [0, 1].

    As ``ppi_py``'s ``_calc_lam_glm`` for a one-dimensional mean: the covariance over the labelled questions
    (divided by n), the variance of the machine labels over labelled and unlabelled questions pooled (n - 1)."""
    n, big_n = psi.size, psi_hat_unlabelled.size
    if big_n == 0 or n < 2:
        return 0.0
    cov = float(((psi - psi.mean()) * (psi_hat - psi_hat.mean())).mean())
    var = float(np.concatenate([psi_hat, psi_hat_unlabelled]).var(ddof=1))
    if var <= 0 or not math.isfinite(cov):
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def _identity(mu: np.ndarray) -> float:
    return float(mu[0])


def _one(mu: np.ndarray) -> np.ndarray:
    return np.ones(1)


def estimate(
    y: np.ndarray, y_hat: np.ndarray, y_hat_unlabelled: np.ndarray, *,
    g: Callable[[np.ndarray], float] = _identity, grad: Callable[[np.ndarray], np.ndarray] = _one,
    strata: np.ndarray | None = None, strata_unlabelled: np.ndarray | None = None,
    weights: np.ndarray | None = None, lam: float | None = None, alpha: float = ALPHA,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> Estimate | None:
    """PPI++ for ``g(E[Z])``: ``y`` the human-labelled rows of Z (n, d), ``y_hat`` the same rows with machine labels,
    ``y_hat_unlabelled`` the other questions' rows with machine labels (N, d); 1-D arrays are one column.

    ``strata``/``strata_unlabelled`` give each row's stratum (0..H-1) and ``weights`` each stratum's share of
    the questions; None is one stratum. ``lam`` fixes the weight (0: human-only, 1: plain PPI) instead of tuning
    it. The value and interval are clipped to ``bounds``. None when a stratum has fewer than two human labels (and
    other questions) or ``g`` is undefined there (a ratio over no must-refuse question)."""
    z, zh, zu = (np.asarray(a, dtype=np.float64) for a in (y, y_hat, y_hat_unlabelled))
    z, zh, zu = (a[:, None] if a.ndim == 1 else a for a in (z, zh, zu))
    if strata is None:
        strata, strata_unlabelled, weights = np.zeros(len(z), int), np.zeros(len(zu), int), np.ones(1)
    assert strata_unlabelled is not None and weights is not None
    parts = [(z[strata == h], zh[strata == h], zu[strata_unlabelled == h]) for h in range(len(weights))]
    # a stratum needs two human labels to measure its spread, unless humans labelled all of it (then none is left)
    if any(len(p[0]) < (2 if len(p[2]) else 1) for p, w in zip(parts, weights, strict=True) if w > 0):
        return None

    def mean(lams: list[float]) -> np.ndarray:
        return sum((w * ((p[0] - lm * p[1]).mean(0) + (lm * p[2].mean(0) if len(p[2]) else 0.0))
                    for p, w, lm in zip(parts, weights, lams, strict=True) if w > 0), np.zeros(z.shape[1]))

    def variance(c: np.ndarray, lams: list[float]) -> float:
        return sum(w * w * _part_var(*p, c, lm) for p, w, lm in zip(parts, weights, lams, strict=True) if w > 0)

    zero = [0.0] * len(parts)
    if lam is None:
        c = grad(mean([1.0 if len(p[2]) else 0.0 for p in parts]))
        lams = []
        for (a, b, u) in parts:
            tuned = tuned_lambda(a @ c, b @ c, u @ c) if len(u) else 0.0
            # never wider than the human-only interval on this data: fall back to lam = 0 when tuning did not help
            lams.append(tuned if _part_var(a, b, u, c, tuned) <= _part_var(a, b, u, c, 0.0) else 0.0)
    else:
        lams = [float(lam) if len(p[2]) else 0.0 for p in parts]
    try:
        mu, mu0 = mean(lams), mean(zero)
        theta, theta0 = g(mu), g(mu0)
        se, se0 = math.sqrt(max(variance(grad(mu), lams), 0.0)), math.sqrt(max(variance(grad(mu0), zero), 0.0))
    except (ZeroDivisionError, FloatingPointError):
        return None
    if not all(math.isfinite(x) for x in (theta, theta0, se, se0)):
        return None
    q = NormalDist().inv_cdf(1 - alpha / 2)
    lo, hi = bounds

    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    n_l = sum(len(p[0]) for p in parts)
    lam_mean = sum(len(p[0]) * lm for p, lm in zip(parts, lams, strict=True)) / n_l if n_l else 0.0
    return Estimate(value=clip(theta), low=clip(theta - q * se), high=clip(theta + q * se), se=se, lam=lam_mean,
                    classical=clip(theta0), classical_low=clip(theta0 - q * se0), classical_high=clip(theta0 + q * se0),
                    classical_se=se0, n=n_l, n_unlabelled=sum(len(p[2]) for p in parts))


def _part_var(a: np.ndarray, b: np.ndarray, u: np.ndarray, c: np.ndarray, lam: float) -> float:
    """One stratum's variance of the linearised estimate at ``lam`` (unweighted)."""
    return float(((a - lam * b) @ c).var() / len(a) + (lam * lam * (u @ c).var() / len(u) if len(u) else 0.0))


def calibration_terms(must: np.ndarray, refused: np.ndarray) -> np.ndarray:
    """Per question, the three means refusal calibration is a function of: must*refused, must, (1-must)(1-refused).

    ``must`` is 1 for a must-refuse question (a label: human or machine), ``refused`` the share of the model's
    answers to it that refused (what the model did, the same under either label)."""
    must, refused = np.asarray(must, dtype=np.float64), np.asarray(refused, dtype=np.float64)
    return np.stack([must * refused, must, (1 - must) * (1 - refused)], axis=1)


def calibration(mu: np.ndarray) -> float:
    """Refusal calibration from :func:`calibration_terms`' means: the mean of P(refused | must refuse) and
    P(answered | answerable), as the report's ``refusal.calibration``."""
    if not 0 < mu[1] < 1:
        raise ZeroDivisionError
    return 0.5 * mu[0] / mu[1] + 0.5 * mu[2] / (1 - mu[1])


def calibration_grad(mu: np.ndarray) -> np.ndarray:
    if not 0 < mu[1] < 1:
        raise ZeroDivisionError
    return np.array([0.5 / mu[1], -0.5 * mu[0] / mu[1] ** 2 + 0.5 * mu[2] / (1 - mu[1]) ** 2, 0.5 / (1 - mu[1])])
