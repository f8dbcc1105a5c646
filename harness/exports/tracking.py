"""What an experiment tracker (MLflow, W&B) is sent for a scored run: per model, its params, metrics and tags.

Both trackers get the same names and the same numbers, read from ``report.json`` (the figures, never recomputed)
and ``run.json`` (what the run was asked with), so a dashboard built on one can be rebuilt on the other.

- **params** (what produced the figures): ``model``, ``provider``, ``provider_model``, ``template`` and
  ``template_hash``, ``retriever``, ``k``, ``repeats``, ``kb_hash``, ``gold_hash``, ``grace_version``, ... and each
  generation parameter as ``generation.NAME``;
- **metrics**: every number of the model's block in ``report.json``, flat, as :meth:`ModelReport.record` names
  them (``accuracy``, ``strict_accuracy``, ``refusal_calibration``, ``invalid_citation_rate``, ``cost_total_usd``,
  ``latency_p95_ms``, ``n``, ...), the CIs as ``accuracy_ci_low``/``accuracy_ci_high`` (and ``strict_accuracy_``),
  each outcome's count as ``outcome_NAME``, each gold category as ``category/NAME/accuracy`` (``_ci_low``,
  ``_ci_high``, ``n``), a spot-checked run's figures as ``spotcheck_NAME`` (``spotcheck_hallucination_rate``,
  ...), and for a model read as references its citation figures (``citation_precision``, ``citation_recall``,
  ``citation_f1``, ``citation_hit_rate``, each with ``_ci_low``/``_ci_high``, ``citation_n_unmapped``,
  ``cit_correct``, ``citation_coverage``, ...: :meth:`CitationScores.record`); a figure the report leaves null is
  not sent (a tracker has no null);
- **tags**: the run folder, when the run started, and the identity of the report exported (``grace.report_sha256``:
  16 hex digits of the SHA-256 of ``report.json``'s bytes), by which a second export of the same report finds the
  tracker runs of the first instead of making duplicates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.hashing import file_hash
from harness.core.model_names import split_model
from harness.run_folder.report import SPOT_FIGURES, ModelReport, Report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import ModelEntry, RunInfo

KEY_TAG = "grace.report_sha256"  # the identity of the exported report: how a second export finds the first's runs
MODEL_TAG = "grace.model"
# ModelReport.record() names the accuracy CIs ci_low/ci_high; a tracker's metric list needs the figure in the name
_RENAMED = {"ci_low": "accuracy_ci_low", "ci_high": "accuracy_ci_high",
            "strict_ci_low": "strict_accuracy_ci_low", "strict_ci_high": "strict_accuracy_ci_high"}
_GENERIC_GOLD_NAMES = {"gold", "questions", "gold_set", "goldset", "test", "eval"}


@dataclass
class TrackedModel:
    """One model as a tracker run: its name, params, metrics and tags."""

    name: str
    params: dict[str, Any]
    metrics: dict[str, float | int]
    tags: dict[str, str]


@dataclass
class TrackedRun:
    """A scored grace run as a tracker sees it: one :class:`TrackedModel` per model, in leaderboard order."""

    key: str  # 16 hex digits of the SHA-256 of report.json: this report's identity
    folder: Path  # the run folder, resolved
    name: str  # the run folder's name: the parent run's (MLflow) and the group's (W&B) name
    experiment: str  # the default experiment (MLflow) or project (W&B) name: the gold set's name
    started_at: datetime | None  # when the run started (run.json), else when it was scored
    finished_at: datetime | None  # when it finished (run.json), else when it was scored
    scored_at: datetime  # when report.json was written: the time the metrics are logged at
    params: dict[str, Any]  # what every model of the run shares
    tags: dict[str, str]
    models: list[TrackedModel]
    artifacts: list[Path] = field(default_factory=list)  # report.json, leaderboard.md, report.html: those present
    leaderboard: str = ""  # leaderboard.md's text, a parent run's description


def tracked_run(run: RunDir) -> TrackedRun:
    """The run's params, metrics and tags, per model. Raises ``GraceError`` when it is not scored."""
    if not run.report.exists():
        raise GraceError(f"{run.path}: not scored yet (no report.json); score it first with 'grace score "
                         f"{run.responses} --gold GOLD --kb KB', then export")
    if run.scores_behind():  # the figures would not count every answer on file (as the question table refuses too)
        raise GraceError(f"{run.path}: responses.jsonl changed after it was scored, so report.json does not count "
                         f"every answer; score it again ('grace score {run.responses} --gold GOLD --kb KB', or "
                         "re-run the same 'grace run'), then export")
    report = run.read_report()
    info = run.read_run_info()
    scored = _time(report.created_at) or datetime.now().astimezone()
    common = run_params(report, info)
    tags = {KEY_TAG: file_hash(run.report), "grace.run_folder": str(run.path.resolve()),
            "grace.report_created_at": report.created_at}
    if info is not None:
        tags["grace.started_at"] = info.started_at
    entries = {m.name: m for m in info.models} if info is not None else {}
    spot = report.spotcheck.models if report.spotcheck is not None else {}
    models = [TrackedModel(m.model, {**common, **model_params(m.model, entries.get(m.model))},
                           model_metrics(m, spot.get(m.model)),
                           {**tags, MODEL_TAG: m.model, "grace.significance_group": m.significance_group})
              for m in report.ranked()]
    artifacts = [p for p in (run.report, run.leaderboard_md, run.report_html) if p.is_file()]
    return TrackedRun(
        key=tags[KEY_TAG], folder=run.path.resolve(), name=run.path.resolve().name or "grace",
        experiment=gold_set_name(report), started_at=_time(info.started_at if info else None) or scored,
        finished_at=_time(info.finished_at if info else None) or scored, scored_at=scored, params=common,
        tags=tags, models=models, artifacts=artifacts,
        leaderboard=run.leaderboard_md.read_text(encoding="utf-8") if run.leaderboard_md.is_file() else "")


def run_params(report: Report, info: RunInfo | None) -> dict[str, Any]:
    """What every model of the run was asked with and scored against; values None are left out."""
    out: dict[str, Any] = {
        "grace_version": report.grace_version, "kb_path": report.kb.path, "kb_hash": report.kb.hash,
        "kb_articles": report.kb.n_articles, "gold_path": report.gold.path, "gold_hash": report.gold.hash,
        "gold_questions": report.gold.n_questions, "gold_must_refuse": report.gold.n_must_refuse,
        "bootstrap_samples": report.bootstrap_samples, "seed": report.seed,
    }
    if report.sample is not None:  # grace run --sample: every figure is over a draw of the gold set
        out["sample"] = report.sample.describe()
    if info is not None:
        config = info.config
        retriever = info.kb.embedder
        if config.retrieved is not None:
            retriever = f"rankings file {config.retrieved.path} ({config.retrieved.hash})"
        out.update({
            "template": ",".join(info.templates) or None, "template_hash": ",".join(info.templates.values()) or None,
            "retriever": retriever, "rerank": _text(config.rerank.get("model") or config.rerank)
            if config.rerank else None,
            "k": config.k, "repeats": config.repeats, "output_mode": config.output_mode,
            "run_grace_version": info.grace_version if info.grace_version != report.grace_version else None,
        })
    else:  # a folder scored from a responses file alone: what the report itself says
        first = next(iter(report.ranked()), None)
        if first is not None:
            out["k"] = first.retrieval.k if first.retrieval is not None else None
            out["repeats"] = first.repeats
    return {k: v for k, v in out.items() if v is not None}


def model_params(name: str, entry: ModelEntry | None) -> dict[str, Any]:
    """One model's own params: its name, provider, the provider's model name, endpoint and generation params."""
    if entry is None:  # not in run.json (an imported log's model): what its name says
        provider, model = split_model(name)
        return {"model": name, "provider": provider if model else None, "provider_model": model or name}
    out: dict[str, Any] = {"model": name, "provider": entry.provider, "provider_model": entry.model,
                           "endpoint": entry.endpoint, "batch": entry.batch or None,
                           "price_input_per_mtok": entry.price_input_per_mtok,
                           "price_output_per_mtok": entry.price_output_per_mtok, "plugin": entry.plugin}
    out.update({f"generation.{k}": _text(v) if isinstance(v, dict | list) else v for k, v in entry.params.items()})
    return {k: v for k, v in out.items() if v is not None}


def model_metrics(m: ModelReport, spot: Any = None) -> dict[str, float | int]:
    """Every number of the model's report block, flat (see the module docstring); nulls left out."""
    out: dict[str, float | int] = {}
    for key, value in m.record().items():
        if _number(value):
            out[_RENAMED.get(key, key)] = value
    for outcome, count in m.outcomes.items():
        out[f"outcome_{metric_name(outcome)}"] = count
    for category, score in (m.categories or {}).items():
        base = f"category/{metric_name(category)}"
        out[f"{base}/n"] = score.n
        if score.accuracy is not None:
            out[f"{base}/accuracy"] = score.accuracy
        if score.accuracy_ci95:
            out[f"{base}/accuracy_ci_low"], out[f"{base}/accuracy_ci_high"] = score.accuracy_ci95
    if spot is not None:
        for name in SPOT_FIGURES:
            value = getattr(spot, name, None)
            if name.endswith("_ci95") and isinstance(value, list | tuple) and len(value) == 2:
                stem = name.removesuffix("_ci95")
                out[f"spotcheck_{stem}_ci_low"], out[f"spotcheck_{stem}_ci_high"] = value
            elif _number(value):
                out[f"spotcheck_{name}"] = value
    return out


def gold_set_name(report: Report) -> str:
    """The gold set's name, for the experiment or project: its file's stem, or its folder's name when the file is
    called ``gold.csv`` (benchmarks/sample/gold.csv -> sample); "grace" when the questions had no file."""
    if not report.gold.path:
        return "grace"
    path = Path(report.gold.path)
    stem = path.stem
    if stem.lower() in _GENERIC_GOLD_NAMES and path.parent.name not in ("", ".", ".."):
        stem = path.parent.name
    return stem or "grace"


def metric_name(text: str) -> str:
    """A name both trackers take as a metric key part: letters, digits, ``_ - .`` and spaces; others become ``_``."""
    return re.sub(r"[^\w\-. ]", "_", text).strip() or "_"


def option_bool(options: dict[str, Any], name: str, default: bool) -> bool:
    """A yes/no option as TOML (a bool) or the command line (a string) gives it."""
    value = options.get(name, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise GraceError(f"option {name}={value!r}: expected true or false")


def check_options(options: dict[str, Any], known: dict[str, str], target: str) -> None:
    """An option the target does not have is an error naming the ones it has, never silently ignored."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        listed = "; ".join(f"{k} ({v})" for k, v in known.items())
        raise GraceError(f"{target} export: unknown option(s) {', '.join(unknown)}; its options: {listed}")


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value  # NaN is no figure


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)[:500]


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()
