"""The lazy registry: a table of ``"module:attr"`` strings, resolved only when an entry is used.

grace's extension points (providers, a provider's batch API, export targets, offline judges, commands, provider
plugins) are tables of names to ``"module:attr"`` strings rather than imported objects, so ``grace --help`` and a
run that never exports import no SDK, no tracker and no command it does not run. :func:`resolve` is the one
place such a string is imported; a table's owner keeps its own names and its own "unknown NAME; known: ..."
message, since only it knows which names to offer.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.core.errors import GraceError


def split_target(target: str) -> tuple[str, str]:
    """``"module:attr"`` -> ``(module, attr)``, each stripped; ``attr`` is empty for ``"module"`` alone."""
    module, _, attr = target.partition(":")
    return module.strip(), attr.strip()


def resolve(target: str, *, missing: str | None = None) -> Any:
    """The object ``target`` names, its module imported now: ``"module:attr"`` (``attr`` may be dotted, a class's
    attribute), or ``"module"`` alone for the module itself.

    ``missing`` is the install hint, e.g. ``"the anthropic provider needs the anthropic package: pip install
    anthropic"``: when given, a module that cannot be imported (an optional extra not installed) is a
    :class:`GraceError` with that message instead of a traceback. Without it the ImportError goes up as it is:
    an entry of grace's own tables that does not import is a bug, and a plugin's caller says whose it is."""
    module, attr = split_target(target)
    try:
        obj = importlib.import_module(module)
    except ImportError:
        if missing is None:
            raise
        raise GraceError(missing) from None
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj
