"""grace's harness: prompts -> model responses -> scores -> reports, below the Python API.

The public API is the package ``grace`` (``import grace``: every name imported by name there); ``harness`` holds
the stages and the workflows it re-exports, and the command lines (:mod:`harness.cli`). Importing it loads nothing,
so every command starts fast.
"""

from __future__ import annotations

from harness.core.errors import GraceError as GraceError
from harness.core.errors import WorkFailed as WorkFailed
from harness.core.version import __version__ as __version__
