"""grace's Python API: what the ``grace`` commands do, callable from a script or a notebook.

Each CLI command parses its options and makes one call to a function here, so a
notebook gets exactly what the command line gets::

    import grace

    kb = grace.build_kb("handbook/", "kb")
    result = grace.run("kb", "gold.csv", ["baseline:top1", "baseline:threshold"], out="runs/first")
    board = result.leaderboard            # typed rows, best first
    df = board.to_pandas()                # or board.to_records() for plain dicts
    run = grace.load_run("runs/first")    # any scored folder, later

Errors in the inputs raise :class:`GraceError` with the file, line and fix.
Progress bars show only when asked (``progress=True``); notices go to the
``grace`` logger.

Every name is imported here by name, so ``help(grace)``, an editor and a type
checker (this package ships ``py.typed``) all see the same list with its real
signatures. The functions are the workflows (``harness.workflows``: one module
per command); the types a ``python:`` system or a provider plugin writes against
(:class:`SystemRequest`, :class:`SystemAnswer`, :class:`Provider`,
:class:`Request`, :class:`Completion`, :class:`KB`, :class:`Article`,
:class:`Hit`, ...) are here too, so nothing a user writes imports ``harness``.
"""

from __future__ import annotations

from harness.core.errors import GraceError as GraceError
from harness.core.errors import WorkFailed as WorkFailed
from harness.core.version import __version__ as __version__
from harness.providers.base import Completion as Completion
from harness.providers.base import ErrorKind as ErrorKind
from harness.providers.base import ModelSpec as ModelSpec
from harness.providers.base import Provider as Provider
from harness.providers.base import ProviderError as ProviderError
from harness.providers.base import Request as Request
from harness.providers.base import RequestContext as RequestContext
from harness.providers.base import RunContext as RunContext
from harness.providers.base import http_client as http_client
from harness.providers.base import missing_key as missing_key
from harness.providers.base import require_sdk as require_sdk
from harness.providers.base import sdk_http_client as sdk_http_client
from harness.providers.base import sdk_installed as sdk_installed
from harness.web.run import listen as listen
from harness.web.run import serve as serve
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
from harness.workflows.board import Board as Board
from harness.workflows.board import combine_runs as combine_runs
from harness.workflows.board import write_board as write_board
from harness.workflows.calls import ModelCalls as ModelCalls
from harness.workflows.compare import Comparison as Comparison
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
from harness.workflows.spotcheck import SpotcheckOptions as SpotcheckOptions
from harness.workflows.spotcheck import calibrate_judge as calibrate_judge
from harness.workflows.spotcheck import meta_eval_judge as meta_eval_judge
from harness.workflows.spotcheck import spotcheck_run as spotcheck_run
from harness.workflows.systems import SystemAnswer as SystemAnswer
from harness.workflows.systems import SystemRequest as SystemRequest
from harness.workflows.trend import Trend as Trend
from harness.workflows.trend import trend as trend
from harness.workflows.trend import write_trend as write_trend
from harness.workflows.view import export_view as export_view
from harness.workflows.view import view as view
from kb_builder.build import BuildResult as BuildResult
from kb_builder.gold import GoldSet as GoldSet
from kb_builder.gold import load_gold as load_gold
from kb_builder.kb_records import Article as Article
from kb_builder.lint import LintReport as LintReport
from kb_builder.references import Resolution as Resolution
from kb_builder.retrieval import Hit as Hit
from kb_builder.retrieval.evaluate import RetrievalComparison as RetrievalComparison
from kb_builder.store import KB as KB

__all__ = [
    # running, scoring, reading results
    "run", "score", "report", "load_run", "RunResult", "Run", "Leaderboard", "LeaderboardRow", "check_gate",
    "compare_runs", "compare_models", "Comparison", "combine_runs", "write_board", "Board", "trend", "write_trend",
    "Trend", "view", "export_view", "export_run", "log_exports", "retry_exports", "question_table", "ExportAttempt",
    "import_logs", "ImportLogsConfig", "ImportResult", "sample_questions", "Drawn", "list_providers", "ProviderInfo",
    "ModelCalls",
    # the KB
    "build_kb", "index_kb", "load_kb", "search", "resolve_references", "lint_kb", "eval_retrieval", "KB", "Article",
    "Hit", "Resolution", "BuildResult", "LintReport", "RetrievalComparison",
    # curating it
    "open_curating", "propose_fixes", "CuratingApp", "edit_kb", "curation_edits", "open_curation", "KbEdit",
    "Curation", "CurationEdit", "CurationConflict",
    # gold labels and the judge
    "load_gold", "GoldSet", "audit_gold", "suggest_labels", "validate_gold", "gold_stats", "agree_labels", "open_labelling", "open_review",
    "open_review_team", "Agreement", "LabellingApp", "ReviewingApp", "Suggested", "generate_gold", "migrate_gold",
    "GoldDraft", "GoldMigration", "spotcheck_run", "calibrate_judge", "meta_eval_judge", "Spotcheck",
    "SpotcheckOptions", "MetaEval",
    # serving the web apps an open_* call returns (their .app)
    "listen", "serve",
    # your own system (python: SYSTEM) and provider plugins
    "SystemRequest", "SystemAnswer", "Provider", "Request", "RequestContext", "Completion", "ModelSpec",
    "ProviderError", "ErrorKind", "RunContext", "http_client", "missing_key", "require_sdk", "sdk_installed",
    "sdk_http_client",
    # errors
    "GraceError", "WorkFailed", "__version__",
]
