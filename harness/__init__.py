"""grace's harness: prompts -> model responses -> scores -> reports."""

from kb_builder import __version__

__all__ = ["__version__"]
