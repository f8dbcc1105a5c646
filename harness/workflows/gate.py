"""The CI gate of ``grace gate``: a scored run's report checked against thresholds and an earlier report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.reports.gate import GateResult

__all__ = ["check_gate"]


def check_gate(report: str | Path, *, min_accuracy: float | None = None, max_invalid_rate: float | None = None,
               baseline: str | Path | None = None, max_drop: float | None = None,
               max_hallucination_rate: float | None = None, max_hallucination_rise: float | None = None,
               max_forbidden_rate: float | None = None, min_citation_precision: float | None = None,
               min_citation_recall: float | None = None, min_citation_f1: float | None = None,
               models: Sequence[str] = ()) -> GateResult:
    """``grace gate``'s checks of a scored run (``report``: its report.json or folder) for CI: ``min_accuracy``,
    ``max_invalid_rate``, ``max_forbidden_rate`` (citations of articles the asker may not see), ``max_hallucination_rate``,
    ``min_citation_precision``/``min_citation_recall``/``min_citation_f1`` (models read as references), and with
    ``baseline`` (an earlier report) the noise-aware
    regression rules (``max_drop``, ``max_hallucination_rise``); ``models`` picks models. Returns a ``GateResult``
    (``.checks`` as (passed, sentence), ``.failed``, ``.notes``)."""
    from harness.reports.gate import check_gate as _check

    return _check(Path(report), baseline=Path(baseline) if baseline is not None else None, min_accuracy=min_accuracy,
                  max_invalid_rate=max_invalid_rate, max_drop=max_drop, max_hallucination_rate=max_hallucination_rate,
                  max_hallucination_rise=max_hallucination_rise, max_forbidden_rate=max_forbidden_rate,
                  min_citation_precision=min_citation_precision, min_citation_recall=min_citation_recall,
                  min_citation_f1=min_citation_f1, models=tuple(models))
