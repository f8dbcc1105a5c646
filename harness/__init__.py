"""grace's harness: prompts -> model responses -> scores -> reports, and grace's Python API.

``import harness as grace`` gives the API (:mod:`harness.api`), the names in
``API_NAMES``: ``run``, ``score``, ``report``, ``load_run``, ``build_kb``,
``load_kb``, ``search``, ``lint_kb``, ``compare_runs``, ``view`` and their typed results. Attributes load on first use, so importing the package
(as every command does) costs nothing.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import GraceError, WorkFailed
from harness.core.version import __version__

# the public API, one list: what ``import harness as grace`` offers and what harness.api exports
API_NAMES = ("Comparison", "Leaderboard", "LeaderboardRow", "Run", "RunResult", "audit_gold", "build_kb",
             "check_gate", "compare_models", "compare_runs", "eval_retrieval", "export_view", "index_kb", "lint_kb",
             "load_kb", "load_run", "report", "run", "score", "search", "view")


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = ["GraceError", "WorkFailed", "__version__", *API_NAMES]
