"""How a workflow calls its models: one typed config for the spot-check judge, the labeler and the question generator.

The three go through the engine of ``grace run`` (:mod:`harness.runner.calls`),
so they take the same knobs with the same defaults, and the same model options
as ``grace run`` (:class:`~harness.runner.model_options.ModelOptions`:
``max_tokens``, ``json_mode``, ``timeout``, ``base_url``, ``api_key_env``). A
command line builds a :class:`ModelCalls` from its flags
(:func:`harness.cli.call_options.model_calls`); Python passes one::

    grace.spotcheck_run("runs/first", "openai:gpt-4o-mini", calls=grace.ModelCalls(concurrency=4, redact_pii=True))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.runner.call_defaults import CONCURRENCY, MAX_ATTEMPTS

if TYPE_CHECKING:
    from rich.console import Console

if TYPE_CHECKING:  # loaded by the workflow that calls: a command's --help imports no provider
    from harness.runner.calls import CallSettings
    from harness.runner.model_options import ModelOptions

__all__ = ["ModelCalls"]


@dataclass(frozen=True)
class ModelCalls:
    """The calls of a workflow's model: how many at once, how often tried, cache, prices, model options, redaction."""

    concurrency: int = CONCURRENCY  # parallel calls
    max_attempts: int = MAX_ATTEMPTS  # attempts per call (429/5xx retried)
    read_cache: bool = True  # False: do not read the response cache (answers are still saved in it)
    prices: Path | None = None  # JSON {model: [input, output]} USD per 1M tokens
    options: ModelOptions | None = None  # the model options of ``grace run``; None: the spec's and provider's own
    redact_pii: bool = False  # personal data replaced by placeholders in every prompt (harness.privacy)

    def check(self) -> ModelCalls:
        """These calls, or a clear error for a bad knob (before any model is made ready)."""
        self.settings()
        return self

    def model_options(self, default_max_tokens: int | None = None) -> ModelOptions:
        """The model options, with ``default_max_tokens`` as the output limit when none was given."""
        from harness.runner.model_options import ModelOptions

        return (self.options or ModelOptions()).with_default_max_tokens(default_max_tokens)

    def redactor(self, console: Console | None = None) -> Any:
        """The redactor ``redact_pii`` asks for (it says once what it cannot find), or None."""
        from harness.privacy import make_redactor

        return make_redactor(self.redact_pii, console)

    def settings(self, *, console: Console | None = None, progress: Any = None, redactor: Any = None) -> CallSettings:
        """The engine's settings for these calls, checked (:func:`harness.runner.model_options.call_settings`)."""
        from harness.runner.model_options import call_settings

        return call_settings(self.concurrency, self.max_attempts, self.read_cache, progress=progress,
                             redactor=redactor)
