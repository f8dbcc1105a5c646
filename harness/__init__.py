"""grace's harness: prompts -> model responses -> scores -> reports, and grace's Python API.

``import harness as grace`` gives the API (:mod:`harness.api`), the names in
``API_NAMES``: ``run``, ``score``, ``report``, ``load_run``, ``build_kb``,
``load_kb``, ``search``, ``lint_kb``, ``compare_runs``, ``view`` and their typed results: each
workflow's ``__all__`` (:mod:`harness.workflows`). Attributes load on first use, so importing the package
(as every command does) costs nothing.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import GraceError as GraceError
from harness.core.errors import WorkFailed as WorkFailed
from harness.core.version import __version__ as __version__


def __getattr__(name: str) -> Any:
    """The API (``grace.run``, ``grace.load_run``, ...) and ``API_NAMES``, its names in order, on first use: the
    names are the workflows' ``__all__`` (:func:`harness.workflows.api_names`), read without importing them."""
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    from harness.workflows import api_names

    if name == "API_NAMES":
        return tuple(api_names())
    if name == "__all__":
        return ["GraceError", "WorkFailed", "__version__", *api_names()]
    if name in api_names():
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
