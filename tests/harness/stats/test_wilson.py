"""The Wilson score interval every share of questions in a report takes (accuracy, hit rate, recall@k...): scipy's
interval to the report's six digits, never a point at 0% or 100%, and its coverage checked by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from harness.stats.bootstrap import bootstrap_cis
from harness.stats.wilson import wilson_interval

N_SIMULATED = 20_000  # models per true share in the coverage simulation
N_QUESTIONS = 30


@pytest.mark.parametrize("n", [1, 4, 7, 30, 90])
def test_equals_scipys_wilson_interval_rounded_outward(n):
    for k in range(n + 1):
        truth = binomtest(k, n).proportion_ci(method="wilson")
        low, high = wilson_interval(k / n, n)
        assert truth.low - 1e-6 <= low <= truth.low + 1e-12 and truth.high - 1e-12 <= high <= truth.high + 1e-6
        assert low <= round(k / n, 6) <= high


def test_the_extremes_are_never_a_point():
    """Issue 47: 0 of 90 right is [0, 4.1%], not [0, 0]; 90 of 90 is [95.9%, 100%]."""
    assert wilson_interval(0.0, 90) == [0.0, 0.040936]
    assert wilson_interval(1.0, 90) == [0.959064, 1.0]
    assert wilson_interval(0.0, 0) is None and wilson_interval(None, 90) is None


@pytest.mark.parametrize("p", [0.02, 0.5, 0.98])
def test_coverage_of_simulated_models_is_at_least_94_percent(p):
    """Simulated models, each answering 30 independent questions right with probability p (seeded): the share of
    them whose 95% interval holds p. The percentile bootstrap over the same samples is shown beside: at the extremes
    most samples are all wrong (or all right), where it is a point that misses p."""
    rng = np.random.default_rng(47)
    right = rng.binomial(N_QUESTIONS, p, size=N_SIMULATED)
    by_k = {k: wilson_interval(k / N_QUESTIONS, N_QUESTIONS) for k in np.unique(right).tolist()}
    holds = np.array([by_k[k][0] <= p <= by_k[k][1] for k in right.tolist()])
    coverage = float(holds.mean())
    assert coverage >= 0.94, (p, coverage)
    # the exact coverage (binomial weights, not a sample) agrees with the simulation
    exact = sum(binom.pmf(k, N_QUESTIONS, p) for k in range(N_QUESTIONS + 1)
                if (c := wilson_interval(k / N_QUESTIONS, N_QUESTIONS))[0] <= p <= c[1])
    assert coverage == pytest.approx(exact, abs=0.005)
    boot = {k: bootstrap_cis([np.repeat([1.0, 0.0], [k, N_QUESTIONS - k])], 2000, 0)[0] for k in by_k}
    boot_coverage = float(np.mean([boot[k][0] <= p <= boot[k][1] for k in right.tolist()]))
    print(f"p = {p}: Wilson covers {coverage:.1%} (exact {exact:.1%}), the percentile bootstrap {boot_coverage:.1%}")
    if p != 0.5:
        assert boot_coverage < 0.6
