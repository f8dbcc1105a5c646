"""One model, made ready for a one-model caller: the spot-check judge, the labeler, the question generator.

The one home of what every one-model caller shares (the judge, the labeler, the
question generator, the curation proposer, the reranker, the topic splitter):
the model made ready (:func:`ready_model`), the engine's settings checked
(:func:`call_settings`), the dry-run estimate table (:func:`print_estimates`:
no call made, cached answers counted apart, so a re-run is seen to be free) and
the one summary line after the calls (:func:`call_summary`), worded the same way
for all of them.

``grace spotcheck``, ``grace annotations suggest --labeler`` and ``grace gold
generate`` take the same model options as ``grace run`` (``--max-tokens``,
``--json-mode``, ``--timeout``, ``--base-url``, ``--api-key-env``); this module
is the one place that turns them into a :class:`~harness.providers.base.ModelSpec`,
so the three commands, and Python callers, cannot drift apart:

    from harness.runner.model_options import ModelOptions, ready_model
    spec, provider = ready_model("openai:smollm2", role="judge",
                                 options=ModelOptions(max_tokens=512, json_mode="json_object",
                                                      base_url="http://127.0.0.1:8091/v1"))

``max_tokens`` goes into ``spec.params`` and ``json_mode`` into
``spec.options``, so both are part of every call's cache key; the timeout,
base URL and key variable are not (they do not change an answer). JSON-mode
values are the provider's business: its ``check_ready`` says which it takes
(openai-compatible servers: auto, json_schema, json_object_schema, json_object, prompt), so they are
applied before that check and not validated here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.errors import GraceError
from harness.core.literal_secrets import url_problems
from harness.providers.base import ModelSpec, Provider, ensure_ready

if TYPE_CHECKING:  # the engine loads with the calls: a command's --help imports none of it
    from harness.runner.calls import CallSettings, Estimate, PromptStats


@dataclass(frozen=True)
class ModelOptions:
    """Overrides for one model; ``None`` keeps what the spec (or the provider) has."""

    max_tokens: int | None = None  # output limit per call: spec.params["max_tokens"]
    json_mode: str | None = None  # spec.options["json_mode"]; values are provider-specific
    timeout: float | None = None  # seconds per call: spec.timeout_s
    base_url: str | None = None  # spec.base_url: an openai-compatible server, a proxy; comma-separated: replicas
    api_key_env: str | None = None  # spec.api_key_env: read the key from this variable

    def with_default_max_tokens(self, default: int | None) -> ModelOptions:
        """These options, with ``default`` as the output limit when none was given."""
        if self.max_tokens is not None or default is None:
            return self
        return ModelOptions(default, self.json_mode, self.timeout, self.base_url, self.api_key_env)

    def with_default_timeout(self, default: float | None) -> ModelOptions:
        """These options, with ``default`` seconds per call when no timeout was given (the older ``timeout=``
        argument of the labeler and the question generator)."""
        if self.timeout is not None or not default:
            return self
        return replace(self, timeout=float(default))


def apply_model_options(spec: ModelSpec, options: ModelOptions | None) -> ModelSpec:
    """Write ``options`` into ``spec`` (in place, and returned); raises ``GraceError`` on a limit below 1."""
    if options is None:
        return spec
    if options.max_tokens is not None:
        if int(options.max_tokens) < 1:
            raise GraceError(f"{spec.name}: --max-tokens must be 1 or more, not {options.max_tokens}")
        spec.params["max_tokens"] = int(options.max_tokens)
    if options.timeout is not None:
        if float(options.timeout) <= 0:
            raise GraceError(f"{spec.name}: --timeout must be more than 0 seconds, not {options.timeout}")
        spec.timeout_s = float(options.timeout)
    if options.json_mode is not None:
        spec.options["json_mode"] = options.json_mode
    if options.base_url:
        urls = list(dict.fromkeys(u.strip() for u in options.base_url.split(",") if u.strip()))  # several: replicas
        written = [text for url in urls for text in url_problems(url, "--base-url")]  # recorded: no credential in it
        if written:
            raise GraceError("\n".join(f"{spec.name}: {text} (on a command line, in single quotes: the shell leaves "
                                       "${VAR} to grace)" for text in written))
        spec.base_url = urls[0] if urls else None
        spec.replicas = urls if len(set(urls)) > 1 else []
    if options.api_key_env:
        spec.api_key_env = options.api_key_env
    return spec


def price(spec: ModelSpec, prices: Path | None) -> ModelSpec:
    """Fill the spec's price from ``prices`` (JSON ``{model: [input, output]}``) or the built-in table."""
    from harness.runner.pricing import apply_price, load_prices

    return apply_price(spec, load_prices(Path(prices) if prices else None))


def ready_model(text: str, *, role: str, options: ModelOptions | None = None, prices: Path | None = None,
                offline: Mapping[str, Callable[[ModelSpec], Provider]] | None = None,
                ready: bool = True) -> tuple[ModelSpec, Provider]:
    """``PROVIDER:MODEL`` -> (spec, ready provider): options applied, checked, priced, temperature 0 by default.

    ``baseline:*`` models answer grace's own prompt, not a caller's, so only the
    offline stand-ins named in ``offline`` may play ``role`` (the judge's
    ``baseline:lexical``, the labeler's ``baseline:top1``). The options are
    applied before the provider's readiness check, so a key read from
    ``api_key_env`` or a json mode the provider does not know is caught here,
    before any call. ``ready=False`` (a dry run) warns of a missing key or SDK instead.
    """
    from harness.providers import make_provider, parse_model_spec

    spec = apply_model_options(parse_model_spec(text), options)
    if spec.provider == "baseline":
        if spec.model not in (offline or {}):
            known = " or ".join(f"baseline:{m}" for m in offline or {})
            raise GraceError(f"{role} {text!r}: baseline:{spec.model} is not a {role}; use an LLM "
                             "(openai:..., anthropic:..., google:...)" + (f" or {known} offline" if known else ""))
        provider = offline[spec.model](spec)  # type: ignore[index]
    else:
        provider = make_provider(spec)
    ensure_ready(provider, f"{role} {text}", ready=ready)
    spec.params.setdefault("temperature", 0)  # a verdict, a label or a draft is a measurement: same prompt, same answer
    return price(spec, prices), provider


def call_settings(concurrency: int, max_attempts: int, read_cache: bool, **more: Any) -> CallSettings:
    """The engine's settings for one model's calls, checked: ``--concurrency`` and ``--max-attempts`` 1 or more."""
    from harness.runner.calls import CallSettings

    if concurrency < 1 or max_attempts < 1:
        raise GraceError("--concurrency and --max-attempts must be 1 or more")
    return CallSettings(concurrency=concurrency, max_attempts=max_attempts, read_cache=read_cache, **more)


def print_estimates(console: Any, rows: list[Estimate]) -> None:
    """The dry run's table: calls, cache hits, tokens and cost per kind of call; ``~`` marks a guess."""
    from rich.table import Table

    table = Table("calls for", "model", "calls", "cached", "input tokens", "output tokens (est.)", "cost USD (est.)",
                  title="Dry run: no calls made")
    for r in rows:
        cost = "unknown price (--prices FILE)" if r.cost_usd_est is None else f"{r.cost_usd_est:.4f}"
        mark = "~" if r.approximate else ""
        table.add_row(r.what, r.model, f"{mark}{r.calls}", f"{mark}{r.cached}", f"{mark}{r.input_tokens:,}",
                      f"{mark}{r.output_tokens_est:,}", f"{mark}{cost}" if r.cost_usd_est is not None else cost)
    console.print(table)
    if any(r.approximate for r in rows):
        console.print("~ approximate: those calls depend on answers not given yet", highlight=False)


def call_summary(what: str, model: str, stats: PromptStats) -> str:
    """One line: calls, cache hits, failures and cost, so a re-run visibly costs nothing."""
    if stats.cost_known:
        cost = f"${stats.cost_usd:.4f}"
    else:
        cost = f"cost unknown (no price for {model}; --prices FILE)"
    line = (f"{what} ({model}): {stats.calls} call(s), {stats.cached} cached, {stats.errors} error(s), {cost}")
    for reason in stats.aborted:
        line += f"\n  stopped: {reason}"
    if stats.errors:
        line += "\n  failed calls are not cached: run the same command again to retry them"
    return line
