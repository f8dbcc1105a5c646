"""What a run was asked and scored with, setting by setting, and what differs between two runs (or two models).

``grace compare`` of a k=3 run with a k=1 run once said ``notes: []``, leaving the reader to guess that the
accuracy moved because retrieval changed. Here ``run.json`` and ``report.json`` are read into one ordered list of
settings, each a short text a person reads (``k 3``, ``template default-inline (1a2b3c4d5e6f)``, ``temperature
0.7``); two runs differ in a setting where its texts differ. ``grace compare``, the viewer's Compare page and a
leaderboard across runs (:mod:`harness.scoring.run_board`, which names each row by what sets it apart) all read
the same list, so they name the same differences in the same words.

Each setting has a kind: ``answers`` (it changes what a model is asked or how it answers: the KB, the retriever,
k, the template, the questions, the model and its parameters), ``scoring`` (the same answers are scored or
summarised differently: how citations are read, the seed, the bootstrap, grace's version) or ``calls`` (how the
calls were made: concurrency, attempts, the cache, batch, prices; time and money, never an answer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from harness.run_folder.report import Report
from harness.run_folder.run_records import ModelEntry, RunInfo

Kind = Literal["answers", "scoring", "calls"]
KINDS: tuple[Kind, ...] = ("answers", "scoring", "calls")  # the order differences are listed in


class Setting(BaseModel):
    """One setting of a run or of one of its models, as a person reads it."""

    name: str  # "k", "template", "temperature", ...
    value: str | None  # its value as text; None: not recorded (a folder without run.json, a model without it)
    kind: Kind  # answers | scoring | calls


class Difference(BaseModel):
    """A setting two runs (or two models) were asked or scored with differently."""

    setting: str  # the setting's name: "k", "template", "temperature", ...
    model: str | None = None  # the model it is of (its name on side A); None: the whole run's
    a: str | None  # its value on side A; None: not set there (no rerank, no temperature given)
    b: str | None  # its value on side B
    kind: Kind  # answers: a different question or prompt; scoring: the same answers scored otherwise; calls: how asked

    def text(self) -> str:
        """``k: 3 → 1``; ``gpt-x temperature: not set → 0.7``; a long value (a table of options) cut short."""
        return f"{self.name()}: {_shown(self.a)} → {_shown(self.b)}"

    def name(self) -> str:
        """``k``; ``gpt-x temperature``: the setting, and whose."""
        return f"{self.model} {self.setting}" if self.model else self.setting


SHOWN = 80  # characters of a value a sentence shows (the JSON keeps it whole)


def _shown(value: str | None) -> str:
    if value is None:
        return "not set"
    return value if len(value) <= SHOWN else value[:SHOWN - 1] + "…"


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else None


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def run_settings(info: RunInfo | None, report: Report | None) -> list[Setting]:
    """The run-wide settings of a folder: from ``run.json`` (what the rows were asked with), the gold set and KB
    from ``report.json`` when scored (what the figures are of)."""
    c = info.config if info else None
    kb_hash = report.kb.hash if report else info.kb.kb_hash if info else None
    gold_hash = report.gold.hash if report else info.gold.hash if info else None
    sample = report.sample if report and report.sample else info.sample if info else None
    n = report.gold.n_questions if report else info.gold.questions if info else None
    retrieved = c.retrieved if c else None
    rerank = c.rerank if c else None
    values: list[tuple[str, Any, Kind]] = [
        ("gold", _short(gold_hash), "answers"),
        ("questions", sample.describe() if sample else (f"all {n:,}" if n is not None else None), "answers"),
        ("KB", f"{_short(kb_hash)} ({(report.kb.n_articles if report else info.kb.articles):,} articles)"
         if kb_hash else None, "answers"),
        ("retriever", (info.kb.embedder or "the KB's") if info else None, "answers"),
        ("retrieved file", f"{Path(retrieved.path).name} ({_short(retrieved.hash)})" if retrieved else None, "answers"),
        ("rerank", f"{rerank.get('reranker')} (top {rerank.get('depth')})" if rerank else None, "answers"),
        ("template", ", ".join(f"{name} ({_short(h)})" for name, h in sorted(info.templates.items())) if info else None,
         "answers"),
        ("output mode", c.output_mode if c else None, "answers"),
        ("k", c.k if c else None, "answers"),
        ("repeats", c.repeats if c else None, "answers"),
        ("PII redaction", ("on" if info.redaction is not None else "off") if info else None, "answers"),
        ("seed", c.seed if c else report.seed if report else None, "scoring"),
        ("bootstrap samples", report.bootstrap_samples if report else None, "scoring"),
        ("grace", report.grace_version if report else info.grace_version if info else None, "scoring"),
        ("concurrency", c.concurrency if c else None, "calls"),
        ("max attempts", c.max_attempts if c else None, "calls"),
        ("cache", ("read" if c.read_cache else "not read (--no-cache)") if c else None, "calls"),
    ]
    return [Setting(name=name, value=None if v is None else str(v), kind=kind) for name, v, kind in values
            if not (name in _WHEN_SET and v is None and info is not None)]


_WHEN_SET = {"retrieved file", "rerank"}  # listed only when the run used one (unlisted: not set)


def model_settings(entry: ModelEntry | None) -> list[Setting]:
    """One model's settings (``run.json``'s entry for it): which model where, its parameters, options, how its
    citations are read, how it was called. None (no run.json): nothing is known."""
    if entry is None:
        return []
    values: list[tuple[str, Any, Kind]] = [("model", f"{entry.provider}:{entry.model}", "answers"),
                                           ("endpoint", entry.endpoint or "the provider's", "answers")]
    values += [(name, _json(value), "answers") for name, value in sorted(entry.params.items())]
    if entry.options:
        values.append(("options", _json(entry.options), "answers"))
    cit = entry.citations
    values.append(("citations", f"{cit.scoring}, {cit.reads}" + (f" ({Path(cit.map).name}, {_short(cit.map_hash)})"
                                                                   if cit.map else "") if cit else "single, ids",
                   "scoring"))
    values.append(("batch", "yes" if entry.batch else "no", "calls"))
    if entry.price_input_per_mtok is not None:
        values.append(("price", f"${entry.price_input_per_mtok:g} / ${entry.price_output_per_mtok:g} per 1M tokens",
                       "calls"))
    if entry.replicas:
        values.append(("replicas", str(len(entry.replicas)), "calls"))
    return [Setting(name=name, value=str(v), kind=kind) for name, v, kind in values]


def differences(a: list[Setting], b: list[Setting], model: str | None = None) -> list[Difference]:
    """The settings whose texts differ, answers first, then scoring, then calls. A setting one side does not list
    (a parameter only one model sets, a rerank only one run had) differs from its absence; one a side lists as not
    recorded (a folder without run.json), or a side with no settings at all, is not a difference anyone can name."""
    if not a or not b:
        return []
    by_a, by_b = {s.name: s for s in a}, {s.name: s for s in b}
    out = []
    for name in dict.fromkeys([*by_a, *by_b]):
        sa, sb = by_a.get(name), by_b.get(name)
        if (sa is not None and sa.value is None) or (sb is not None and sb.value is None):
            continue
        va, vb = sa.value if sa else None, sb.value if sb else None
        if va != vb:
            out.append(Difference(setting=name, model=model, a=va, b=vb, kind=(sa or sb).kind))
    return sorted(out, key=lambda d: KINDS.index(d.kind))


def model_entry(info: RunInfo | None, name: str) -> ModelEntry | None:
    return next((e for e in info.models if e.name == name), None) if info else None


def run_differences(info_a: RunInfo | None, report_a: Report | None, info_b: RunInfo | None,
                    report_b: Report | None, models: list[tuple[str, str]] = ()) -> list[Difference]:
    """Everything two runs differ in: the run-wide settings, then each compared model's (``models``: its name in
    A and in B; two models of one run: the pair, which differ only in their own settings) asked otherwise."""
    out = differences(run_settings(info_a, report_a), run_settings(info_b, report_b))
    for name_a, name_b in models:
        out += differences(model_settings(model_entry(info_a, name_a)), model_settings(model_entry(info_b, name_b)),
                           model=name_a if name_a == name_b else f"{name_a} vs {name_b}")
    return out
