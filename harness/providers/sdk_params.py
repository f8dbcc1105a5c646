"""Route model params the SDK's typed signature does not know through ``extra_body``.

SDKs drop keyword arguments between major versions while the API keeps
accepting the field: anthropic 1.x removed ``temperature``/``top_p``/``top_k``
from ``messages.create`` (the API still takes them on models that support
sampling), and OpenAI-compatible servers accept fields such as ``top_k`` or
``min_p`` that the openai SDK never had. Reading the installed signature keeps
one leaderboard config working across SDK versions, with an unchanged wire body.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def split_for_sdk(method: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every name unknown to ``method`` moved into ``extra_body``."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):  # no introspectable signature: pass everything as-is
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return kwargs
    known = set(parameters)
    out = {k: v for k, v in kwargs.items() if k in known}
    extra = {k: v for k, v in kwargs.items() if k not in known}
    if extra:
        out["extra_body"] = {**extra, **(kwargs.get("extra_body") or {})}
    return out
