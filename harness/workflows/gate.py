"""The CI gate of ``grace gate``: a scored run's report checked against thresholds and an earlier report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["check_gate"]


def check_gate(report: str | Path, **thresholds: Any):
    """``grace gate``'s checks of a scored run (``report``: its report.json or folder) for CI: ``min_accuracy``,
    ``max_invalid_rate``, ``max_forbidden_rate`` (citations of articles the asker may not see), ``max_hallucination_rate``,
    ``min_citation_precision``/``min_citation_recall``/``min_citation_f1`` (models read as references), and with
    ``baseline`` (an earlier report) the noise-aware
    regression rules (``max_drop``, ``max_hallucination_rise``); ``models`` picks models. Returns a ``GateResult``
    (``.checks`` as (passed, sentence), ``.failed``, ``.notes``)."""
    from harness.reports.gate import check_gate as _check

    baseline = thresholds.pop("baseline", None)
    return _check(Path(report), baseline=Path(baseline) if baseline is not None else None, **thresholds)
