"""What one ``grace run`` did, as the API returns it.

Apart from the session that fills it, so that importing the API (as ``grace score``
and ``grace report`` do) does not import the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError


@dataclass
class RunResult:
    """What one ``grace run`` did: calls per model, models stopped early or left with no answer, and the
    scored run (``run``, set by the API unless ``no_score``)."""

    out: Path
    counts: dict[str, dict[str, Any]]
    stopped: dict[str, str]  # model -> why it was stopped early (key refused, endpoint unreachable)
    errors: int  # calls that failed after retries (recorded as error rows; retried by the next run)
    resumed: dict[str, int]  # done / failed / stale rows found on file
    pending: dict[str, int] = field(default_factory=dict)  # model -> calls in batches not ended yet (batch mode)
    unanswered: dict[str, str] = field(default_factory=dict)  # model -> why it has no usable answer on file
    estimates: list[dict[str, Any]] | None = None  # dry run only
    run: Any = None  # the scored folder (grace.Run)
    exports: list[Any] = field(default_factory=list)  # log_to: each export tried (harness.workflows.export.ExportAttempt)
    # a run of questions with no label: the models' consensus on each, as `grace annotations suggest` writes it
    # (annotations.suggestions.Suggestion), the first thing to label from; None for a labelled run
    suggestions: list[Any] | None = None

    @property
    def leaderboard(self):
        if self.run is None:
            raise GraceError("this run was not scored (no_score=True or dry_run=True)")
        return self.run.leaderboard

    @property
    def ok(self) -> bool:
        """No model was stopped early and every model has a usable answer (``grace run`` exits 1 otherwise)."""
        return not self.stopped and not self.unanswered
