"""Leaderboard config (TOML): models with their parameters and prices, plus run defaults.

Config is plain data naming registered providers; it never holds code::

    [run]
    k = 3
    concurrency = 8

    [[models]]
    spec = "openai:gpt-4o-mini"
    temperature = 0
    price_input = 0.15          # USD per 1M tokens
    price_output = 0.60

    [[models]]
    spec = "anthropic:claude-haiku-4-5"
    batch = true                # through Message Batches, at half price

    [[models]]
    spec = "openai:llama3.1"
    name = "llama-local"
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_KEY"

    [[models]]
    spec = "python:my_rag.bot:answer"

    [models.citations]          # how its citations are read and scored (scoring only: never in a cache key)
    scoring = "multi"           # several per answer: citation precision, recall, F1
    reads = "references"        # its own references (paths, URLs, titles, quotes, index IDs) mapped onto articles
    map = "chunk-map.csv"       # their_id,article_id rows; relative to this file
    rewrite = {"https://hr.example.com/docs/" = "payroll/"}

Every table is checked against a schema before anything runs: a value of the
wrong type would otherwise surface as a traceback deep in a run (or as a 400 from
an API after money was spent), and a misspelt key would be silently ignored.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from harness.core.errors import GraceError
from harness.core.literal_secrets import LiteralSecrets, option_problems, url_problems
from harness.providers.base import ModelSpec
from harness.runner.call_defaults import CONCURRENCY, MAX_ATTEMPTS

# strict: TOML has real types, so "3" is a typo for 3, not a number; floats still accept ints (0 and 0.0)
_STRICT = ConfigDict(extra="forbid", strict=True)
Count = Annotated[int, Field(ge=1)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]


class GenParams(BaseModel):
    """Generation parameters, sent to the API as given."""

    model_config = _STRICT
    temperature: NonNegative | None = None
    max_tokens: Count | None = None
    top_p: NonNegative | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    reasoning_effort: str | None = None


class ModelTable(GenParams):
    """One ``[[models]]`` entry."""

    spec: str
    name: str | None = None
    base_url: str | list[str] | None = None  # several: the model's replicas (harness.providers.replicas)
    api_key_env: str | None = None
    price_input: NonNegative | None = None  # USD per 1M tokens
    price_output: NonNegative | None = None
    price_batch_input: NonNegative | None = None  # USD per 1M tokens through the batch API [default: half]
    price_batch_output: NonNegative | None = None
    price_server_hour: NonNegative | None = None  # USD per hour of one of its servers (a self-hosted model)
    concurrency: Count | None = None
    batch: bool | None = None  # through the provider's batch API at half price (openai, azure, anthropic, google)
    rpm: NonNegative | None = None  # 0: no limit
    tpm: NonNegative | None = None
    timeout: Positive | None = None
    options: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    http: dict[str, Any] | None = None  # an http: system's endpoint (harness.providers.http_system.HttpTable)
    citations: dict[str, Any] | None = None  # [models.citations]: how its citations are read and scored (CitationTable)


class CitationTable(BaseModel):
    """One model's ``[models.citations]`` table (recorded as run.json's ``models[].citations``)."""

    model_config = _STRICT
    scoring: Literal["single", "multi"] | None = None  # multi: several citations per answer [default: multi for a system]
    reads: Literal["ids", "references"] | None = None  # references: its own references mapped onto KB articles
    map: str | None = None  # a their_id,article_id CSV, relative to the TOML file
    rewrite: dict[str, str] | None = None  # path/URL prefix -> replacement, applied before resolving


def _toml(default: Any = None) -> Any:
    """A run option that the TOML's ``[run]`` table may set too (under the same name)."""
    return Field(default, json_schema_extra={"toml": True})


class RunConfig(BaseModel):
    """Every option of one ``grace run``, typed and checked in one place.

    :meth:`build` applies one precedence: the command line (or the API's keywords)
    over the TOML's ``[run]`` table over the defaults here. Each field is a
    ``grace run`` flag and a keyword of ``grace.run`` (:func:`harness.workflows.run.run`) under the same
    name; fields marked ``_toml`` are also keys of ``[run]``. Adding a run option
    is a field here, its flag in ``harness/cli/run.py`` and its keyword of ``run``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kb: Path
    gold: Path
    out: Path
    # machine labels for every question (a suggestions CSV or a gold-format CSV): gold is then the human-labelled
    # subset, every question of either is asked, and the report adds prediction-powered figures
    machine_gold: Path | None = None
    models: tuple[str | ModelSpec, ...] = ()
    config: Path | None = None  # the leaderboard TOML
    # MODEL=SCORING[:READS] per model (single|multi, ids|references): how its citations are read and scored, over
    # its [models.citations] (a map file and rewrite rules: the TOML only)
    citations: tuple[str, ...] = ()
    k: Count = _toml(3)
    repeats: Count = _toml(1)
    concurrency: Count = _toml(CONCURRENCY)
    rpm: NonNegative | None = _toml()
    tpm: NonNegative | None = _toml()
    timeout: Positive | None = _toml()
    max_attempts: Count = _toml(MAX_ATTEMPTS)
    no_cache: bool = False
    template: str | None = _toml()
    output_mode: Literal["inline", "json"] = _toml("inline")
    temperature: NonNegative | None = _toml()
    max_tokens: Count | None = _toml()
    threshold: float | None = None  # a fixed cut for baseline:threshold instead of a fitted one
    prices: Path | None = None
    # USD per hour of one server: every self-hosted model's (on this machine or network) without its own, or
    # MODEL=USD for one model; over its TOML price_server_hour
    price_server_hour: tuple[str, ...] = ()
    embedder: str | None = _toml()
    rerank: str | None = _toml()  # PROVIDER:MODEL or cross-encoder[:MODEL]
    rerank_depth: Count = _toml(20)
    retrieved: Path | None = _toml()  # a file of ranked article IDs per question
    # a their_id,article_id CSV: the --retrieved file ranks the retriever's own documents (chunk IDs, paths, URLs)
    retrieved_map: Path | None = _toml()
    seed: int = _toml(0)
    # ask a seeded draw of N gold questions (by --seed; within each gold category in proportion, when the gold file
    # has categories): the gold set stays the file's, so compare and trends put the run beside the full runs
    sample: Count | None = _toml()
    batch: bool = _toml(False)  # every model with a batch API goes through it
    wait: bool = _toml(False)  # poll batches until they end
    poll_interval: Positive = _toml(30.0)  # seconds between batch status checks
    cancel_batches: bool = False
    dry_run: bool = False
    no_score: bool = _toml(False)
    redact_pii: bool = _toml(False)  # personal data replaced by placeholders in every prompt (harness.privacy)
    # once the run is scored, export it to each of these (inspect, mlflow, wandb, parquet); a failed export is
    # recorded in RUN/exports.jsonl and never fails the run. Where to: the TOML's [export.TARGET] tables
    log_to: list[str] = _toml([])

    @classmethod
    def build(cls, options: dict[str, Any], run_table: dict[str, Any] | None = None) -> RunConfig:
        """Defaults, then ``run_table`` (the TOML's ``[run]``, already checked), then ``options``.

        An option counts as given unless it is ``None`` (or ``False`` for a flag, or no models),
        so a TOML value holds until the command line names another.
        """
        given = {k: v for k, v in options.items() if v is not None and v is not False and v != ()}
        unknown = sorted(set(given) - set(cls.model_fields))
        if unknown:
            raise GraceError(f"unknown run option(s): {', '.join(unknown)}; known: {', '.join(cls.model_fields)}")
        try:
            return cls.model_validate({**(run_table or {}), **given})
        except ValidationError as exc:
            raise GraceError("\n".join(_option_problem(err) for err in exc.errors())) from None


def _option_problem(err: dict[str, Any]) -> str:
    key = str(err["loc"][0]) if err["loc"] else "?"
    flag = "--" + key.replace("_", "-")
    if err["type"] == "missing":
        return f"{flag} is required"
    return f"{flag} must be {_expected(err)}, got {err.get('input')!r}"


def _optional(field: Any) -> Any:
    """A RunConfig field's type for the TOML: the same bounds, ``None`` allowed, a path as a string."""
    kind = (str if field.annotation in (Path, Path | None) else field.annotation) | None
    return Annotated[(kind, *field.metadata)] if field.metadata else kind


# the TOML's [run] table: the RunConfig fields marked _toml, strictly typed (TOML has real types, so "3" is a
# typo for 3); a path is written as a string there
RunTable = create_model(
    "RunTable", __config__=_STRICT,
    **{name: (_optional(f), None) for name, f in RunConfig.model_fields.items() if (f.json_schema_extra or {}).get("toml")},
)


class Board(BaseModel):
    model_config = _STRICT
    run: dict[str, Any] | None = None
    models: list[dict[str, Any]] | None = None
    export: dict[str, dict[str, Any]] | None = None  # [export.TARGET]: where --log-to sends the run, and how


_GEN_PARAMS = set(GenParams.model_fields)
_EXPECT = {
    "int_type": "a whole number", "float_type": "a number", "string_type": "a string", "bool_type": "true or false",
    "dict_type": "a table", "list_type": "an array", "model_type": "a table",
}
_BOARD_EXPECT = {"run": "a [run] table", "models": "[[models]] tables (an array of tables)",
                 "export": "[export.TARGET] tables (e.g. [export.mlflow] with tracking_uri = \"...\")"}
_MODEL_EXPECT = {"stop": "a string or an array of strings", "base_url": "a URL or an array of URLs (the model's replicas)"}
_UNSHOWN = frozenset({"base_url", "options", "http", "params"})  # a wrong value here may be a secret: never echoed
_TOML_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a float", dict: "a table", list: "an array"}


def _expected(err: dict[str, Any]) -> str:
    ctx = err.get("ctx") or {}
    if err["type"] == "greater_than_equal":
        return f"{ctx['ge']:g} or more"
    if err["type"] == "greater_than":
        return f"more than {ctx['gt']:g}"
    if err["type"] == "literal_error":
        return f"one of {ctx['expected']}"
    return _EXPECT.get(err["type"], err["msg"])


def _type(value: Any) -> str:
    return _TOML_TYPES.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    return f"{json.dumps(value, default=str, ensure_ascii=False)} ({_type(value)})"


def _problems(schema: type[BaseModel], table: dict[str, Any], label: str, expect: dict[str, str] | None = None) -> list[str]:
    """One line per bad key of ``table``: where it is, what was expected, what was given."""
    try:
        schema.model_validate(table)
        return []
    except ValidationError as exc:
        errors = exc.errors()
    by_key: dict[str, list[str]] = {}
    out = []
    for err in errors:
        key = str(err["loc"][0])
        if err["type"] == "extra_forbidden":
            near = difflib.get_close_matches(key, list(schema.model_fields), n=1)
            hint = f"; did you mean '{near[0]}'?" if near else f"; known keys: {', '.join(schema.model_fields)}"
            if schema is ModelTable and not near:
                hint += " (other provider settings go under options)"
            elif schema is Board and key in RunTable.model_fields | ModelTable.model_fields:
                hint = "; it belongs under [run]" if key in RunTable.model_fields else "; it belongs in a [[models]] entry"
            out.append(f"{label}: unknown key '{key}'{hint}")
        elif err["type"] == "missing":
            out.append(f"{label}: missing key '{key}'" + (' (spec = "PROVIDER:MODEL")' if key == "spec" else ""))
        else:
            wanted = by_key.setdefault(key, [])
            text = (expect or {}).get(key) or _expected(err)
            if text not in wanted:
                wanted.append(text)
    out += [f"{label}: key '{key}' must be {' or '.join(wanted)}"
            + (f", got {_shown(table[key])}" if key not in _UNSHOWN else f", got {_type(table[key])}")
            for key, wanted in by_key.items()]
    return out


def model_from_table(entry: dict[str, Any], where: str, base: Path | None = None) -> ModelSpec:
    """One ``[[models]]`` entry as a spec; ``base`` is the TOML file's folder (a citation map is relative to it)."""
    from harness.providers import parse_model_spec

    problems = _problems(ModelTable, entry, where, _MODEL_EXPECT)
    if problems:
        raise GraceError("\n".join(problems))
    try:
        spec = parse_model_spec(entry["spec"])
    except GraceError as exc:
        raise GraceError(f"{where}: key 'spec': {exc}") from None
    spec.name = entry.get("name") or spec.name
    spec.params = {**{k: entry[k] for k in _GEN_PARAMS if k in entry}, **entry.get("params", {})}
    _base_urls(spec, entry, where)
    spec.api_key_env = entry.get("api_key_env")
    spec.price_input_per_mtok = entry.get("price_input")
    spec.price_output_per_mtok = entry.get("price_output")
    spec.price_batch_input_per_mtok = entry.get("price_batch_input")
    spec.price_batch_output_per_mtok = entry.get("price_batch_output")
    spec.price_server_hour = entry.get("price_server_hour")
    spec.concurrency = entry.get("concurrency")
    spec.batch = entry.get("batch")
    spec.rpm, spec.tpm = entry.get("rpm"), entry.get("tpm")
    if "timeout" in entry:
        spec.timeout_s = float(entry["timeout"])
    spec.options = dict(entry.get("options", {}))
    problems = _written_secrets(entry)
    if "http" in entry or spec.provider == "http":
        try:
            _http_system(spec, entry, where)
        except LiteralSecrets as exc:
            problems += exc.problems
    if problems:
        raise LiteralSecrets(where, problems)
    spec.citations = _citations(spec, entry.get("citations"), where, base)
    return spec


def _written_secrets(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """The entry's values that must come from the environment (harness.core.literal_secrets): a credential in a
    base_url, a secret among the provider's options; as (the key in the file, the problem)."""
    urls = entry.get("base_url")
    problems = [("base_url", text) for url in (urls if isinstance(urls, list) else [urls]) if isinstance(url, str)
                for text in url_problems(url, "base_url")]
    return problems + option_problems(entry.get("options") or {})


def _citations(spec: ModelSpec, table: dict[str, Any] | None, where: str, base: Path | None) -> Any:
    """The model's ``[models.citations]`` over its default (a system: multi + references; a prompt model: none),
    checked: an unknown key or a bad value (with what was meant), a map file that is not there, a duplicate or
    conflicting rewrite rule. The map's rows are checked against the KB once it is loaded (RunSession.open)."""
    from harness.runner.citation_settings import default_for, settings

    if table is None:
        return default_for(spec.provider)
    label = f"{where}: [models.citations]"
    problems = _problems(CitationTable, table, label)
    if problems:
        raise GraceError("\n".join(problems))
    start = default_for(spec.provider)
    scoring = table.get("scoring") or (start.scoring if start else "single")
    reads = table.get("reads") or (start.reads if start else "ids")
    map_file = None
    if table.get("map") is not None:
        map_file = Path(table["map"]).expanduser()
        if not map_file.is_absolute() and base is not None:
            map_file = base / map_file
        if not map_file.is_file():
            raise GraceError(f"{label}: key 'map': {map_file}: no such file (a CSV of their_id,article_id rows; a "
                             "relative path is read from the TOML file's folder)")
    try:
        return settings(scoring, reads, map_file, table.get("rewrite") or {}, origin=f"{label} rewrite")
    except GraceError as exc:
        raise GraceError(f"{label}: {exc}") from None


def _base_urls(spec: ModelSpec, entry: dict[str, Any], where: str) -> None:
    """``base_url``: one endpoint, or an array of a model's replicas (the same model served by several servers)."""
    urls = entry.get("base_url")
    if not isinstance(urls, list):
        spec.base_url = urls
        return
    if not urls:
        raise GraceError(f"{where}: key 'base_url' is an empty array; give the model's URL, or its replicas' URLs")
    if len(set(urls)) != len(urls):
        twice = next(u for u in urls if urls.count(u) > 1)
        raise GraceError(f"{where}: key 'base_url' lists {twice!r} twice; list each replica once")
    if len(urls) > 1 and entry.get("batch"):
        raise GraceError(f"{where}: key 'batch' sends a model's calls to one endpoint, and 'base_url' lists "
                         f"{len(urls)} replicas; remove batch = true, or keep one base_url")
    spec.base_url = urls[0]
    spec.replicas = list(urls) if len(urls) > 1 else []
    if spec.replicas and not _takes_base_url(spec):
        raise GraceError(f"{where}: key 'base_url' lists replicas, but a {spec.provider}: model does not send its calls "
                         "to base_url; give the model's endpoint as its provider documents it")


def _takes_base_url(spec: ModelSpec) -> bool:
    """Whether the provider sends calls where ``base_url`` says (openai:, anthropic:, presets, plugins that do)."""
    from dataclasses import replace

    from harness.providers import provider_class

    probe = "http://replica.invalid/v1"
    try:
        cls = provider_class(spec)
        return cls.needs_network and cls.endpoint(replace(spec, base_url=probe, options={})) == probe
    except GraceError:
        return False


def _http_system(spec: ModelSpec, entry: dict[str, Any], where: str) -> None:
    """An http: model's [models.http] table, checked and kept with the model's options (part of its cache key; its
    headers' ${VAR} are filled only when calling, so no secret is recorded)."""
    from harness.providers.http_system import read_http_table

    if spec.provider != "http":
        raise GraceError(f"{where}: key 'http' is for an http: system (spec = \"http:NAME\"), not {spec.provider}:")
    if "http" not in entry and not spec.model.startswith(("http://", "https://")):
        raise GraceError(f"{where}: an http: system needs its endpoint: add [models.http] with url = \"https://...\" "
                         "(and the body template and reply paths), or write spec = \"http:https://HOST/PATH\"")
    spec.options["http"] = read_http_table(entry.get("http", {}), where, spec.model)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise GraceError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise GraceError(f"{path}: is a folder, expected a TOML file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise GraceError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GraceError(f"{path}: invalid TOML ({exc})") from None


def load_config(path: Path) -> tuple[list[ModelSpec], dict[str, Any]]:
    """Models and the ``[run]`` table (only the keys set, as written); every problem in the file is listed at once."""
    data = _read_toml(path)
    problems = _problems(Board, data, f"{path}: top level", _BOARD_EXPECT)
    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    entries = data.get("models") if isinstance(data.get("models"), list) else []
    problems += _problems(RunTable, run, f"{path}: [run]")
    for i, entry in enumerate(entries, 1):
        if isinstance(entry, dict):  # a non-table entry is already reported at the top level
            problems += _problems(ModelTable, entry, f"{path}: [[models]] #{i}", _MODEL_EXPECT)
    if problems:
        raise GraceError("\n".join(problems))
    models, written = [], []
    for i, entry in enumerate(entries, 1):
        try:
            models.append(model_from_table(entry, f"{path}: [[models]] #{i}", path.resolve().parent))
        except LiteralSecrets as exc:  # every model's, at once, each at its line of the file
            written += [_at_line(path, i, key, f"[[models]] #{i}: {text}") for key, text in exc.problems]
    if written:
        raise GraceError("\n".join(written))
    return models, dict(run)


def _at_line(path: Path, model: int, key: str, text: str) -> str:
    """``text`` prefixed by ``path:LINE:``, the line of the ``model``-th ``[[models]]`` entry where ``key`` is set (as
    ``key =`` or ``"key" =``); ``path:`` alone when it cannot be found (an inline table spanning lines, say)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [n for n, line in enumerate(lines) if re.match(r"\s*\[\[\s*models\s*\]\]", line)]
    first = starts[model - 1] if len(starts) >= model else 0
    last = starts[model] if len(starts) > model else len(lines)
    setting = re.compile(r"""(?:^|[\s{,])["']?""" + re.escape(key) + r"""["']?\s*=""")
    line = next((n + 1 for n in range(first, last) if setting.search(lines[n])), None)
    return f"{path}:{line}: {text}" if line else f"{path}: {text}"


def load_export_tables(path: Path) -> dict[str, dict[str, Any]]:
    """The TOML's ``[export.TARGET]`` tables (where ``log_to`` sends the run: a tracking URI, a W&B project, and the
    target's options), as written; the file is checked by :func:`load_config` first."""
    export = _read_toml(path).get("export")
    return {name: dict(table) for name, table in export.items()} if isinstance(export, dict) else {}


def resolve_models(config: RunConfig, toml_specs: list[ModelSpec] = ()) -> list[ModelSpec]:
    """The run's models (the TOML's, then the command line's), with the run-wide options applied where a
    model sets none itself, and priced."""
    from harness.providers import parse_model_spec
    from harness.providers.base import DEFAULT_MAX_TOKENS
    from harness.runner.citation_settings import apply_option, default_for
    from harness.runner.pricing import apply_price, apply_server_prices, load_prices

    specs = list(toml_specs) + [m if isinstance(m, ModelSpec) else parse_model_spec(m) for m in config.models]
    if not specs:
        raise GraceError("no models: give --model PROVIDER:MODEL (e.g. baseline:top1) or --config leaderboard.toml")
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise GraceError(f"model(s) named twice: {', '.join(sorted(dupes))}; give each a distinct name in the config")
    for s in specs:
        if s.citations is None:  # a system named on the command line: its default, as a TOML entry gets
            s.citations = default_for(s.provider)
    apply_option(specs, config.citations)
    price_table = load_prices(config.prices)
    max_tokens = config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS
    for s in specs:
        if config.temperature is not None:
            s.params.setdefault("temperature", config.temperature)
        s.params.setdefault("max_tokens", max_tokens)
        s.rpm, s.tpm = s.rpm or config.rpm, s.tpm or config.tpm
        if config.timeout and s.timeout_s is None:
            s.timeout_s = float(config.timeout)
        apply_price(s, price_table)
    apply_server_prices(specs, config.price_server_hour)
    return specs
