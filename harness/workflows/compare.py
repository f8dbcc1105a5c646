"""The comparison workflows of ``grace compare``: two runs, or two models of one run, question by question."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: numpy is not every command's to load
    from harness.scoring.run_comparison import Comparison

__all__ = ["Comparison", "compare_models", "compare_runs"]


def compare_runs(run_a: str | Path, run_b: str | Path, models: Sequence[str] = (), *, seed: int | None = None,
                 bootstrap: int | None = None) -> Comparison:
    """Run A against run B, question by question, for every model in both (or ``models``).

    Per model: both accuracies, the change with a paired bootstrap 95% CI, McNemar's exact p-value and the
    question IDs that ``improved`` (not correct in A, correct in B) and ``regressed``, each question read with the
    report's repeat policy (correct when more than half of its repeats are). ``seed`` and ``bootstrap`` default
    to the reports'. Raises ``GraceError`` when the runs were scored against different gold sets.
    """
    from harness.scoring.run_comparison import compare_runs as _compare

    return _compare(run_a, run_b, models, seed=seed, bootstrap=bootstrap)


def compare_models(run: str | Path, model_a: str, model_b: str, *, seed: int | None = None,
                   bootstrap: int | None = None) -> Comparison:
    """Two models of one run, compared as :func:`compare_runs` compares runs (A: ``model_a``, B: ``model_b``)."""
    from harness.scoring.run_comparison import compare_models as _compare

    return _compare(run, model_a, model_b, seed=seed, bootstrap=bootstrap)


def __getattr__(name: str) -> Any:
    if name == "Comparison":
        from harness.scoring.run_comparison import Comparison

        return Comparison
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
