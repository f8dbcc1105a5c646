"""The workflows: what each ``grace`` command does, one function each, above every stage and below the API and CLI.

A workflow is the one place that drives several stages in order (read the KB and
gold once, call the models, score, write the reports); the stages below import
only what comes before them in the data flow (``tests/source_tree/test_layers.py``). The
Python API (:mod:`harness.api`) re-exports these functions; a command line parses
its options, makes one call here and prints the result.

* :mod:`harness.workflows.kb`: ``grace kb`` (build, index, search, lint, evaluate retrieval)
* :mod:`harness.workflows.run`: ``grace run`` (:func:`~harness.workflows.run.run`, the run session)
* :mod:`harness.workflows.score`: ``grace score``, ``grace report``
* :mod:`harness.workflows.gate`: ``grace gate``
* :mod:`harness.workflows.compare`: ``grace compare``
* :mod:`harness.workflows.board`: ``grace report RUN_A RUN_B ...`` (one leaderboard across runs)
* :mod:`harness.workflows.view`: ``grace view``, ``grace view --export``
* :mod:`harness.workflows.spotcheck`: ``grace spotcheck`` (run, calibrate, meta-eval)
* :mod:`harness.workflows.annotate`: ``grace annotations`` (audit, suggest, validate, stats, agree)
* :mod:`harness.workflows.gold`: ``grace gold generate``
* :mod:`harness.workflows.curate_app`: ``grace kb curate`` (the curation web app, proposals for lint findings)
* :mod:`harness.workflows.kb_edits`: ``grace kb edit`` (one curation action on a KB, or the list of them)
* :mod:`harness.workflows.calls`: :class:`~harness.workflows.calls.ModelCalls`, the one model-call config
* :mod:`harness.workflows.results`: the typed results (a run folder read, its leaderboard)

Each module's ``__all__`` is its part of the Python API: :func:`api_names` reads
them (without importing the modules, which would load the stages), so a new
workflow module is in ``import harness as grace`` with no list to edit.
"""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def api_names() -> dict[str, str]:
    """Public name -> the workflows module that defines it, in ``sorted`` name order.

    A module's names are its ``__all__`` (a literal list at the start of a line), else
    its public top-level functions. Read from the source text, so asking costs under a
    millisecond and imports nothing (importing the workflows would load every stage).
    """
    import ast
    import re

    found: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("[!_]*.py")):
        text = path.read_text(encoding="utf-8")
        listed = re.search(r"^__all__ = (\[[^\]]*\])", text, re.M)
        for name in ast.literal_eval(listed.group(1)) if listed else re.findall(r"^def ([^_\W]\w*)\(", text, re.M):
            if name in found:
                raise RuntimeError(f"{name} is in the API twice: harness.workflows.{found[name]} and {path.stem}")
            found[name] = path.stem
    return {name: found[name] for name in sorted(found)}


def api_object(name: str):
    """The workflow function or type ``grace.NAME`` is, imported on first use."""
    import importlib

    module = api_names().get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
