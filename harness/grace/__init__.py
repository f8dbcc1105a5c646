"""``import grace``: grace's Python API, every name imported here by name so editors and type checkers see it.

The functions and typed results of :mod:`harness.api` (each workflow's ``__all__``,
:mod:`harness.workflows`), with their real signatures: ``grace.run(kb, gold, models,
out=...)`` is :func:`harness.workflows.run.run` itself, so a type checker checks a call and an
editor completes it. ``py.typed`` beside this file (and in harness, kb_builder, annotations)
says the types are meant to be read.

This folder installs as the top-level package ``grace`` (``pyproject.toml``: found under
``harness/``, left out of ``harness``), so the distribution, the CLI and the import share one
name. Importing it loads every workflow module (about 0.4 s, once); the four types a workflow
itself loads on first use (``Board``, ``Comparison``, ``SpotcheckOptions``, ``Trend``: numpy and
the scorer) are imported under ``TYPE_CHECKING`` and loaded on first use here too. The ``grace``
command never imports this package: it goes through ``harness``, whose names all load on first
use (``import harness as grace`` keeps working, with the same objects).
``tests/harness/grace/test_grace_package.py`` holds the two lists equal and prints the line a new name needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# help(grace.run) lists the run options: harness.api gives run RunConfig's fields as its signature on first use
from harness.api import run as _run_with_its_options  # noqa: F401
from harness.core.errors import GraceError as GraceError
from harness.core.errors import WorkFailed as WorkFailed
from harness.core.version import __version__ as __version__
from harness.workflows.annotate import Agreement as Agreement
from harness.workflows.annotate import LabellingApp as LabellingApp
from harness.workflows.annotate import ReviewingApp as ReviewingApp
from harness.workflows.annotate import Suggested as Suggested
from harness.workflows.annotate import agree_labels as agree_labels
from harness.workflows.annotate import audit_gold as audit_gold
from harness.workflows.annotate import gold_stats as gold_stats
from harness.workflows.annotate import open_labelling as open_labelling
from harness.workflows.annotate import open_review as open_review
from harness.workflows.annotate import open_review_team as open_review_team
from harness.workflows.annotate import suggest_labels as suggest_labels
from harness.workflows.annotate import validate_gold as validate_gold
from harness.workflows.board import combine_runs as combine_runs
from harness.workflows.board import write_board as write_board
from harness.workflows.calls import ModelCalls as ModelCalls
from harness.workflows.compare import compare_models as compare_models
from harness.workflows.compare import compare_runs as compare_runs
from harness.workflows.curate_app import CuratingApp as CuratingApp
from harness.workflows.curate_app import open_curating as open_curating
from harness.workflows.curate_app import propose_fixes as propose_fixes
from harness.workflows.export import ExportAttempt as ExportAttempt
from harness.workflows.export import export_run as export_run
from harness.workflows.export import log_exports as log_exports
from harness.workflows.export import question_table as question_table
from harness.workflows.export import retry_exports as retry_exports
from harness.workflows.gate import check_gate as check_gate
from harness.workflows.gold import GoldDraft as GoldDraft
from harness.workflows.gold import GoldMigration as GoldMigration
from harness.workflows.gold import generate_gold as generate_gold
from harness.workflows.gold import migrate_gold as migrate_gold
from harness.workflows.import_logs import ImportLogsConfig as ImportLogsConfig
from harness.workflows.import_logs import ImportResult as ImportResult
from harness.workflows.import_logs import import_logs as import_logs
from harness.workflows.kb import build_kb as build_kb
from harness.workflows.kb import eval_retrieval as eval_retrieval
from harness.workflows.kb import index_kb as index_kb
from harness.workflows.kb import lint_kb as lint_kb
from harness.workflows.kb import load_kb as load_kb
from harness.workflows.kb import resolve_references as resolve_references
from harness.workflows.kb import search as search
from harness.workflows.kb_edits import Curation as Curation
from harness.workflows.kb_edits import CurationConflict as CurationConflict
from harness.workflows.kb_edits import CurationEdit as CurationEdit
from harness.workflows.kb_edits import KbEdit as KbEdit
from harness.workflows.kb_edits import curation_edits as curation_edits
from harness.workflows.kb_edits import edit_kb as edit_kb
from harness.workflows.kb_edits import open_curation as open_curation
from harness.workflows.providers import ProviderInfo as ProviderInfo
from harness.workflows.providers import list_providers as list_providers
from harness.workflows.results import Leaderboard as Leaderboard
from harness.workflows.results import LeaderboardRow as LeaderboardRow
from harness.workflows.results import Run as Run
from harness.workflows.results import RunResult as RunResult
from harness.workflows.results import load_run as load_run
from harness.workflows.run import run as run
from harness.workflows.sample import Drawn as Drawn
from harness.workflows.sample import sample_questions as sample_questions
from harness.workflows.score import report as report
from harness.workflows.score import score as score
from harness.workflows.spotcheck import MetaEval as MetaEval
from harness.workflows.spotcheck import Spotcheck as Spotcheck
from harness.workflows.spotcheck import calibrate_judge as calibrate_judge
from harness.workflows.spotcheck import meta_eval_judge as meta_eval_judge
from harness.workflows.spotcheck import spotcheck_run as spotcheck_run
from harness.workflows.systems import SystemAnswer as SystemAnswer
from harness.workflows.systems import SystemRequest as SystemRequest
from harness.workflows.trend import trend as trend
from harness.workflows.trend import write_trend as write_trend
from harness.workflows.view import export_view as export_view
from harness.workflows.view import view as view

if TYPE_CHECKING:  # the types whose workflow loads them on first use (numpy and the scorer), as it does
    from harness.workflows.board import Board as Board
    from harness.workflows.compare import Comparison as Comparison
    from harness.workflows.spotcheck import SpotcheckOptions as SpotcheckOptions
    from harness.workflows.trend import Trend as Trend

__all__ = [
    "GraceError", "WorkFailed", "__version__", "Agreement", "Board", "Comparison", "CuratingApp", "Curation",
    "CurationConflict", "CurationEdit", "Drawn", "ExportAttempt", "GoldDraft", "GoldMigration", "ImportLogsConfig",
    "ImportResult", "KbEdit", "LabellingApp", "Leaderboard", "LeaderboardRow", "MetaEval", "ModelCalls",
    "ProviderInfo", "ReviewingApp", "Run", "RunResult", "Spotcheck", "SpotcheckOptions", "Suggested",
    "SystemAnswer", "SystemRequest", "Trend", "agree_labels", "audit_gold", "build_kb", "calibrate_judge",
    "check_gate", "combine_runs", "compare_models", "compare_runs", "curation_edits", "edit_kb", "eval_retrieval", "export_run",
    "export_view", "generate_gold", "gold_stats", "import_logs", "index_kb", "lint_kb", "list_providers", "load_kb",
    "load_run", "log_exports", "meta_eval_judge", "migrate_gold", "open_curating", "open_curation",
    "open_labelling", "open_review", "open_review_team", "propose_fixes", "question_table", "report", "resolve_references", "retry_exports", "run",
    "sample_questions", "score", "search", "spotcheck_run", "suggest_labels", "trend", "validate_gold", "view",
    "write_board", "write_trend"
]

API_NAMES: tuple[str, ...] = tuple(n for n in __all__ if n not in ("GraceError", "WorkFailed", "__version__"))
"""The API's names in order, as ``harness.API_NAMES``."""

_DEFERRED = {"Board": "board", "Comparison": "compare", "SpotcheckOptions": "spotcheck",
             "Trend": "trend"}  # name -> workflow module


def __getattr__(name: str) -> Any:
    """``grace.Board``, ``grace.Comparison``, ``grace.SpotcheckOptions``, ``grace.Trend``: from their workflow module
    on first use."""
    if name not in _DEFERRED:
        raise AttributeError(f"module 'grace' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"harness.workflows.{_DEFERRED[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
