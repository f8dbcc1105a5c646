"""The flags every command that calls a model shares, spelled once, and the :class:`ModelCalls` they make.

The judge (``grace spotcheck``), the labeler (``grace annotations suggest``) and
the question generator (``grace gold generate``) all go through the same engine,
so they take the same knobs, and the same model options as ``grace run``
(``--max-tokens --json-mode --timeout --base-url --api-key-env``). The knobs and
their defaults are :class:`harness.workflows.calls.ModelCalls`'s fields; these
flags only spell them for the command line, and :func:`model_calls` turns what
a command received back into one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from harness.workflows.calls import ModelCalls

MODEL_OPTION_NAMES = ("max_tokens", "json_mode", "timeout", "base_url", "api_key_env")


def call_options(what: str, no_cache_help: str = "Do not read the response cache (answers are still saved in it).",
                 *, max_tokens_default: int | None = None, max_tokens_none: str = "the provider's own",
                 skip: tuple[str, ...] = ()) -> Callable:
    """``--concurrency --max-attempts --prices --no-cache`` and the model options; ``what`` names the calls in the help.

    The command receives ``max_tokens, json_mode, timeout, base_url, api_key_env``
    as keyword arguments; :func:`model_options` gathers them. ``max_tokens_default``
    is the output limit sent when ``--max-tokens`` is not given (``None``: send
    none, so ``max_tokens_none`` applies). ``skip``: flags the command does not
    take, because it has its own of that name (``grace kb build --max-tokens`` is
    the articles' token budget).
    """
    one = what.removesuffix("s")
    limit = f"{max_tokens_default}" if max_tokens_default is not None else max_tokens_none
    options = [
        click.option("--concurrency", type=int, default=ModelCalls.concurrency, show_default=True, help=f"Parallel {what}."),
        click.option("--max-attempts", type=int, default=ModelCalls.max_attempts, show_default=True,
                     help=f"Attempts per {one} (429/5xx retried)."),
        click.option("--timeout", type=float, default=None,
                     help=f"Seconds per {one} [default: 60, or 300 for a server on this machine or network]."),
        click.option("--max-tokens", type=click.IntRange(min=1), default=max_tokens_default,
                     help=f"Output limit per {one}, sent with every call and part of the cache key [default: {limit}]."),
        click.option("--json-mode", default=None, metavar="MODE",
                     help="How to ask for JSON (options.json_mode); the provider checks the value. openai and "
                     "openai-compatible servers: auto, json_schema, json_object_schema, json_object, prompt [default: auto]."),
        click.option("--base-url", default=None, metavar="URL",
                     help="API base URL (an openai-compatible server such as llama.cpp, Ollama, vLLM, or a proxy); "
                     "several, comma-separated, are the model's replicas: calls are spread over them."),
        click.option("--api-key-env", default=None, metavar="VAR", help="Read the API key from this variable."),
        click.option("--prices", type=click.Path(path_type=Path), default=None,
                     help="JSON {model: [input, output]} USD per 1M tokens."),
        click.option("--no-cache", is_flag=True, help=no_cache_help),
    ]

    names = ["--concurrency", "--max-attempts", "--timeout", "--max-tokens", "--json-mode", "--base-url",
             "--api-key-env", "--prices", "--no-cache"]

    def apply(fn):
        for name, opt in reversed(list(zip(names, options, strict=True))):
            if name not in skip:
                fn = opt(fn)
        return fn

    return apply


def redact_option(fn: Callable) -> Callable:
    """``--redact-pii``: the same flag, with the same meaning, on every command that sends data to a model."""
    return click.option("--redact-pii", is_flag=True,
                        help="Replace emails, phones, IBANs, cards, national IDs, IP addresses and (with "
                        "grace-eval[pii]) person names in every prompt with placeholders before it is sent or "
                        "cached; the counts per type (never the values) are recorded with the results.")(fn)


def model_calls(kwargs: dict[str, Any]) -> ModelCalls:
    """Pop the flags of :func:`call_options` (and ``--redact-pii``, when the command has it) out of a command's
    ``kwargs`` into one :class:`ModelCalls`."""
    return ModelCalls(concurrency=kwargs.pop("concurrency"), max_attempts=kwargs.pop("max_attempts"),
                      read_cache=not kwargs.pop("no_cache"), prices=kwargs.pop("prices"), options=model_options(kwargs),
                      redact_pii=kwargs.pop("redact_pii", False))


def model_options(kwargs: dict[str, Any]) -> Any:
    """Pop the model options out of a command's ``kwargs`` into a :class:`~harness.runner.model_options.ModelOptions`."""
    from harness.runner.model_options import ModelOptions

    return ModelOptions(**{name: kwargs.pop(name, None) for name in MODEL_OPTION_NAMES})
