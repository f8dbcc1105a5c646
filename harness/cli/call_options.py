"""The options every command that calls a model shares, spelled once.

The judge (``grace spotcheck``), the labeler (``grace annotations suggest``) and
the question generator (``grace gold generate``) all go through the same engine,
so they take the same knobs with the same defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click


def call_options(what: str, no_cache_help: str = "Do not read the response cache (answers are still saved in it).") -> Callable:
    """``--concurrency --max-attempts --timeout --prices --no-cache``; ``what`` names the calls in the help."""
    options = [
        click.option("--concurrency", type=int, default=8, show_default=True, help=f"Parallel {what}."),
        click.option("--max-attempts", type=int, default=6, show_default=True,
                     help=f"Attempts per {what.removesuffix('s')} (429/5xx retried)."),
        click.option("--timeout", type=float, default=None, help=f"Seconds per {what.removesuffix('s')} [default: 60]."),
        click.option("--prices", type=click.Path(path_type=Path), default=None,
                     help="JSON {model: [input, output]} USD per 1M tokens."),
        click.option("--no-cache", is_flag=True, help=no_cache_help),
    ]

    def apply(fn):
        for opt in reversed(options):
            fn = opt(fn)
        return fn

    return apply
