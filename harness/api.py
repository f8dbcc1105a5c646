"""grace's Python API: what the ``grace`` commands do, callable from a script or a notebook.

Each CLI command parses its options and makes one call here, so a notebook
gets exactly what the command line gets::

    import grace                          # harness/grace; import harness as grace gives the same names

    kb = grace.build_kb("handbook/", "kb")
    result = grace.run(kb="kb", gold="gold.csv", models=["baseline:top1", "baseline:threshold"], out="runs/first")
    board = result.leaderboard            # typed rows, best first
    df = board.to_pandas()                # or board.to_records() for plain dicts
    run = grace.load_run("runs/first")    # any scored folder, later

Every name is a workflow's (:mod:`harness.workflows`: one module per command,
its ``__all__`` its part of this API), imported on first use, so a new workflow
is here with nothing to add to this file.

Errors in the inputs raise :class:`GraceError` with the file, line and fix.
Progress bars show only when asked (``progress=True``); notices go to the
``grace`` logger.
"""

from __future__ import annotations

import inspect
from typing import Any

from harness.workflows import api_names, api_object


def _run_signature() -> inspect.Signature:
    """``run``'s keywords are RunConfig's fields: one list of run options, shown by ``help(grace.run)``."""
    from harness.runner.config import RunConfig
    from harness.runner.run_result import RunResult
    from harness.workflows.run import run as _run

    head = list(inspect.signature(_run).parameters.values())[:3]
    kw = inspect.Parameter.KEYWORD_ONLY
    options = [inspect.Parameter(name, kw, default=inspect.Parameter.empty if f.is_required() else f.default,
                                 annotation=_plain(f.annotation))
               for name, f in RunConfig.model_fields.items() if name not in ("kb", "gold", "models")]
    extra = [inspect.Parameter("progress", kw, default=False, annotation=bool),
             inspect.Parameter("console", kw, default=None, annotation=Any)]
    return inspect.Signature(head + options + extra, return_annotation=RunResult)


def _plain(kind: Any) -> Any:
    """``Optional[Annotated[float, Ge(0)]]`` -> ``float | None``: the type as a reader of ``help()`` wants it."""
    import functools
    import operator
    import types
    import typing

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        return _plain(args[0])
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, (_plain(a) for a in args))
    return kind


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = api_object(name)
    if name == "run" and "__signature__" not in vars(value):  # given RunConfig's fields as its signature on first use
        value.__signature__ = _run_signature()
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = list(api_names())  # the workflows' own lists, read by harness.workflows.api_names
