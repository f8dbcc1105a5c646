"""grace's harness: prompts -> model responses -> scores -> reports."""

from harness.core.version import __version__

__all__ = ["__version__"]
