"""The typed results the workflows hand back: a scored run's leaderboard, a run folder read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.errors import GraceError
from harness.run_folder.report import ModelReport, Report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import RunInfo
from harness.runner.run_result import RunResult as RunResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Leaderboard", "LeaderboardRow", "Run", "RunResult", "load_run"]

# A leaderboard row is report.json's own typed per-model block (harness.run_folder.report.ModelReport): row.model,
# row.rank, row.accuracy, row.ci_low / row.ci_high, row.refusal.calibration, row.cost.total_usd, ... A figure
# added to the report is here, and in to_records(), with no second field list to keep in step.
LeaderboardRow = ModelReport


@dataclass(frozen=True)
class Leaderboard:
    """The ranked models of a scored run; failed models (every call failed) are listed apart, never ranked."""

    rows: tuple[LeaderboardRow, ...]
    failed: dict[str, str] = field(default_factory=dict)  # model -> why
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_report(cls, report: Report) -> Leaderboard:
        failed = {name: f.reason for name, f in report.failed_models.items()}
        return cls(tuple(report.ranked()), failed, tuple(report.warnings))

    def __iter__(self) -> Iterator[LeaderboardRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, model: str) -> LeaderboardRow:
        for row in self.rows:
            if row.model == model:
                return row
        raise KeyError(model)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per model (:meth:`ModelReport.record`): every scalar figure, CIs as ci_low/ci_high."""
        return [r.record() for r in self.rows]

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.to_records()).set_index("model")


@dataclass
class Run:
    """A run folder, read: what was asked (``info``), the report (typed, as report.json holds it), and the rows on demand."""

    path: Path
    info: RunInfo | None
    report: Report | None

    @property
    def leaderboard(self) -> Leaderboard:
        if self.report is None:
            raise GraceError(f"{self.path}: not scored yet; run grace.score(...) or 'grace score' first")
        return Leaderboard.from_report(self.report)

    def responses(self) -> list[dict[str, Any]]:
        """One row per call (the latest, as scored)."""
        return list(RunDir(self.path).latest_responses().values())

    def scores(self) -> list[dict[str, Any]]:
        """One dict per scores.jsonl line (harness.run_folder.scores.ScoreLine's fields), not validated: fast for a million."""
        rows = [row for _, row in RunDir(self.path).iter_scores()]
        return rows


def load_run(path: str | Path) -> Run:
    """Read a run folder (scored or not)."""
    folder = RunDir(path)
    if not folder.path.is_dir():
        raise GraceError(f"{folder.path}: run folder not found")
    report_data = folder.read_report() if folder.report.exists() else None
    return Run(folder.path, folder.read_run_info(), report_data)
