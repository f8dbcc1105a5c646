"""grace's harness: prompts -> model responses -> scores -> reports, and grace's Python API.

``import harness as grace`` gives the API (:mod:`harness.api`): ``run``,
``score``, ``report``, ``load_run``, ``build_kb``, ``load_kb``, ``search`` and
their typed results. Attributes load on first use, so importing the package
(as every command does) costs nothing.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import GraceError
from harness.core.version import __version__

_API = {"Leaderboard", "LeaderboardRow", "Run", "RunResult", "build_kb", "load_kb", "load_run", "report",
        "resolve_models", "run", "score", "search"}


def __getattr__(name: str) -> Any:
    if name in _API:
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = ["GraceError", "__version__", *sorted(_API)]
