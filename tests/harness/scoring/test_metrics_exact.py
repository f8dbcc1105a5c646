"""grace's own precision/recall/F1, confusion matrix and exact McNemar test equal scikit-learn's and scipy's.

They replace those imports (1.4 s and 0.4 s of every ``grace score``), so they
are checked against them here, where the libraries are installed anyway.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.scoring.metrics import confusion, precision_recall_f1
from harness.scoring.significance import mcnemar_exact


@pytest.mark.parametrize("seed", range(20))
def test_precision_recall_f1_and_confusion_equal_scikit_learns(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    classes = int(rng.integers(2, 40))
    n = int(rng.integers(1, 3000))
    y_true = rng.integers(0, classes, n)
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, classes + 3, n))
    labels = sorted(int(c) for c in rng.choice(classes + 3, size=int(rng.integers(1, classes + 3)), replace=False))
    ours = precision_recall_f1(y_true, y_pred, labels)
    theirs = metrics.precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0, average=None)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(confusion(y_true, y_pred, labels), metrics.confusion_matrix(y_true, y_pred, labels=labels))


def test_mcnemar_exact_equals_scipys_binomial_test_to_eight_digits():
    stats = pytest.importorskip("scipy.stats")
    for n in list(range(1, 120)) + [250, 999, 2000]:
        for a in (range(n + 1) if n < 120 else (0, 1, n // 3, n // 2 - 7, n // 2, n - 5, n)):
            expected = round(float(stats.binomtest(a, n, 0.5).pvalue), 8)
            assert round(mcnemar_exact(a, n - a), 8) == expected, (a, n)
    assert mcnemar_exact(0, 0) == 1.0
