"""Reading a run-folder file into a model that is strict on unknown keys.

The models grace writes with forbid unknown keys (``extra="forbid"``), so a
misspelt key in the code that builds a file is an error, never a field that
silently reads back as null. Reading a file is lenient on that one point only:
a key this grace does not know (written by a newer grace of the same schema,
or added by hand) is dropped with a warning that names it, because it cannot
change a figure this grace shows, and refusing an archived run for it would
lock users out of their own results. Every other problem (a missing field, a
wrong type) is still an error.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.core.errors import GraceError, where

log = logging.getLogger("grace")

M = TypeVar("M", bound=BaseModel)


def read_json_object(path: Path, *, missing: str, redo: str) -> dict[str, Any]:
    """The JSON object in ``path``, or a ``GraceError`` that names the file (and line) and says to ``redo``
    (``"re-run 'grace score'"``); ``missing`` is what a user is told when there is no file."""
    if not path.is_file():
        raise GraceError(f"{path}: {missing}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise GraceError(f"{path}: not UTF-8 text; {redo}") from None
    except json.JSONDecodeError as exc:
        raise GraceError(f"{where(path, exc.lineno)}: not valid JSON ({exc.msg}); {redo}") from None
    if not isinstance(data, dict):
        raise GraceError(f"{path}: not a JSON object; {redo}")
    return data


def validate_known(model: type[M], data: Any, path: Path, name: Callable[[Sequence[Any]], str]) -> M:
    """``model`` from ``data``; keys the model does not know are dropped with one warning naming each
    (``name`` spells a location as messages do). Raises ``ValidationError`` for any other problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors(include_url=False) if e["type"] == "extra_forbidden"]
        if not unknown:
            raise
    data = copy.deepcopy(data)
    for loc in unknown:
        parent = data
        for part in loc[:-1]:
            parent = parent[part]
        parent.pop(loc[-1], None)
    log.warning(f"{path}: ignored what this grace does not know ({', '.join(name(loc) for loc in unknown)}): "
                "written by a newer grace or by hand; it is not written back")
    return model.model_validate(data)
