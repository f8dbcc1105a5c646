"""``grace spotcheck run``: sample the hits, judge their segments, measure, write, publish.

Writes into the run folder: ``spotcheck/judgements.jsonl`` (every judgement),
``spotcheck.json`` (the summary), ``spotcheck_review.csv`` (for human labels)
and the ``spotcheck`` block of ``report.json``, then re-renders the report.

Nothing is dropped silently: answers cut off by max_tokens are skipped and
counted, verdicts the judge gave in no readable form are counted ("9 of 10
verdicts unreadable"), and every rate carries its n, with no interval below
:data:`~harness.spotcheck.metrics.MIN_ANSWERS_FOR_CI` checked answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.core.version import __version__
from harness.rundir import JUDGEMENTS, REVIEW_CSV, RunDir
from harness.spotcheck.inputs import RunInputs, load_run
from harness.spotcheck.judging import Judge, JudgeSettings
from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI, RISK_FORMULA, AnswerResult, model_differences, model_metrics
from harness.spotcheck.passes import Judged, judge_hits
from harness.spotcheck.publish import notes_for, update_report
from harness.spotcheck.records import JudgeBlock, SpotcheckFile
from harness.spotcheck.review import write_review_csv
from harness.spotcheck.sampling import sample_hits
from kb_builder.store import load_kb

LABELS = {"lexical": "offline word-overlap judge (lower quality than an LLM judge)",
          "scripted": "scripted judge (tests and rehearsals only)", "llm": "LLM judge"}


@dataclass
class SpotcheckOptions:
    sample: int | None = 50  # hits per model; None = all
    seed: int = 0
    repeats: int = 1
    bootstrap: int = 2000
    models: tuple[str, ...] = ()


def judge_block(judge: Judge, repeats: int, run_dir: Path) -> JudgeBlock:
    block = JudgeBlock(name=judge.spec.name, model=judge.spec.name, provider=judge.spec.provider, kind=judge.kind,
                       label=LABELS[judge.kind], template=judge.template.name, template_hash=judge.template.sha256,
                       params=dict(judge.spec.params), max_tokens=judge.spec.params.get("max_tokens"),
                       options=dict(judge.spec.options), timeout_s=judge.spec.timeout_s, base_url=judge.spec.base_url,
                       repeats=repeats)
    calib = RunDir(run_dir).calibration
    if calib.exists():  # a calibration of this very judge and template still holds
        try:
            data = json.loads(calib.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {}
        if data.get("judge") == judge.spec.name and data.get("template_hash") == judge.template.sha256:
            block.calibrated, block.n = True, data.get("n")
            block.kappa = data.get("kappa")
            block.precision_unsupported = data.get("precision_unsupported")
            block.recall_unsupported = data.get("recall_unsupported")
    return block


def answer_results(judged: Judged, keys: list[tuple[str, str, int]], repeats: int) -> tuple[list[AnswerResult], int]:
    """Complete answers (every segment judged in every repeat) and how many were not complete."""
    done, incomplete = [], 0
    for key in keys:
        segs = judged.segments[key]
        sup, hal, ok = [], [], True
        for r in range(repeats):
            verdicts = [judged.rows.get((key, r, s.index), {}).get("supported") for s in segs]
            if any(v is None for v in verdicts):
                ok = False
                break
            sup.append(sum(verdicts))
            hal.append(not all(verdicts))
        if ok:
            done.append(AnswerResult(key, len(segs), sup, hal))
        else:
            incomplete += 1
    return done, incomplete


def verdict_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """What the judge was asked about one model's segments, as it stands: replies, unreadable ones, failures, retries."""
    judged = [r for r in rows if r.get("source") == "judge"]
    replies = [r for r in judged if not r.get("error")]
    retried = [r for r in replies if r.get("retry")]
    return {"n_verdicts": len(replies), "n_unreadable": sum(r.get("supported") is None for r in replies),
            "n_failed_calls": len(judged) - len(replies), "n_retried": len(retried),
            "n_retry_recovered": sum(r.get("supported") is not None for r in retried)}


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def model_warnings(m: str, v: dict[str, Any]) -> list[str]:
    """What a reader of one model's figures must know: skipped, unreadable, failed."""
    out = []
    if v["truncated_skipped"]:
        out.append(f"{m}: {_plural(v['truncated_skipped'], 'truncated answer')} skipped (cut off by max_tokens)")
    if v["n_unreadable"]:
        out.append(f"{m}: {v['n_unreadable']} of {_plural(v['n_verdicts'], 'verdict')} unreadable, even asked again "
                   "with a stricter instruction; not cached, so running the same command again asks them again "
                   "(a stronger judge, or --json-mode, may help)")
    if v["n_incomplete"]:
        why = [x for x in (_plural(v["n_failed_calls"], "failed call") if v["n_failed_calls"] else "",
                           _plural(v["n_unreadable"], "unreadable verdict") if v["n_unreadable"] else "") if x]
        out.append(f"{m}: {_plural(v['n_incomplete'], 'sampled answer')} not fully judged"
                   + (f" ({', '.join(why)})" if why else "") + " left out of the figures; run the same command "
                   "again to ask those again")
    return out


def review_rows(judged: Judged, keys: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    rows = []
    for model, qid, rep in keys:
        for s in judged.segments[(model, qid, rep)]:
            rows.append({"model": model, "question_id": qid, "repeat": rep, "segment_index": s.index,
                         "citation": ", ".join(s.citations), "segment_text": s.text})
    return rows


def _kb_dir(kb_dir: Path | None, inputs: RunInputs) -> Path:
    if kb_dir is not None:
        return kb_dir
    recorded = inputs.report.kb.path if inputs.report is not None else None
    if recorded and Path(recorded).exists():
        return Path(recorded)
    raise GraceError(f"{inputs.run_dir}: give --kb KB_DIR (the articles the answers cite); report.json names none that exists")


def run_spotcheck(run_path: Path, kb_dir: Path | None, judge: Judge, opts: SpotcheckOptions,
                  settings: JudgeSettings | None = None, console: Any = None) -> dict[str, Any]:
    settings = settings or JudgeSettings()
    if opts.repeats < 1 or (opts.sample is not None and opts.sample < 1):
        raise GraceError("--sample and --repeats must be 1 or more")
    inputs = load_run(run_path, opts.models)
    with RunDir(inputs.run_dir).lock():
        return _run_spotcheck(inputs, kb_dir, judge, opts, settings, console)


def _run_spotcheck(inputs: RunInputs, kb_dir: Path | None, judge: Judge, opts: SpotcheckOptions,
                   settings: JudgeSettings, console: Any) -> dict[str, Any]:
    kb = load_kb(_kb_dir(kb_dir, inputs), write_missing=False)
    warnings = []
    run_kb = inputs.report.kb.hash if inputs.report is not None else None
    if run_kb and run_kb != kb.kb_hash:
        warnings.append(f"KB {kb.path} (hash {kb.kb_hash}) is not the one the run was scored on ({run_kb}); "
                        "segments are judged against the articles as they are now")
    samples = sample_hits(inputs.hits, opts.sample, opts.seed)
    chosen = [h for m in inputs.models if m in samples for h in samples[m].chosen]
    run_dir, files = inputs.run_dir, RunDir(inputs.run_dir)
    judged = judge_hits(judge, chosen, kb, opts.repeats, files.judgements, settings)

    models: dict[str, Any] = {}
    for i, m in enumerate(inputs.models):
        keys = [h.key for h in (samples[m].chosen if m in samples else [])]
        answers, incomplete = answer_results(judged, keys, opts.repeats)
        c = inputs.counts[m]
        block = model_metrics(answers, c.n, c.correct, c.correct_refusal, opts.bootstrap, opts.seed + i)
        keyset = set(keys)
        quote_fails = sum(1 for (k, r, _), row in judged.rows.items()
                          if r == 0 and k in keyset and row.get("source") == "quote")
        cut = inputs.truncated.get(m, 0)
        models[m] = {"hits": (samples[m].hits if m in samples else 0) + cut, "n_incomplete": incomplete,
                     "quote_failures": quote_fails, "truncated_skipped": cut,
                     **verdict_counts([row for (k, _, _), row in judged.rows.items() if k in keyset]), **block}
        warnings += model_warnings(m, models[m])
    spreads = {m: v["groundedness_spread"] for m, v in models.items()}
    variance = {
        "repeats": opts.repeats,
        "per_model": {m: {"groundedness_per_repeat": v["groundedness_per_repeat"], "spread": v["groundedness_spread"]}
                      for m, v in models.items()},
        "max_spread": max((s for s in spreads.values() if s is not None), default=None) if opts.repeats > 1 else None,
        "model_differences": model_differences({m: v["groundedness"] for m, v in models.items()},
                                               spreads if opts.repeats > 1 else {}),
    }
    rows = list(judged.rows.values())
    costs = [r.get("cost_usd") for r in rows if r.get("source") == "judge"]
    spot = SpotcheckFile(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        grace_version=__version__,
        run={"path": str(run_dir), "scores": str(inputs.scores_path), "responses": str(inputs.responses_path),
             "kb": {"path": str(kb.path), "hash": kb.kb_hash}},
        judge=judge_block(judge, opts.repeats, run_dir),
        sample={"per_model": opts.sample, "all": opts.sample is None, "seed": opts.seed,
                "strategy": "per model, proportional to hits per cited article (seeded)",
                "models": {m: s.summary() for m, s in samples.items()}},
        seed=opts.seed, bootstrap_samples=opts.bootstrap, models=models, variance=variance,
        judge_calls={**judged.stats.as_dict(), "reused_from_file": judged.reused,
                     "decided_without_judge": judged.decided_without_judge,
                     "retried": sum(v["n_retried"] for v in models.values()),
                     "unreadable": sum(v["n_unreadable"] for v in models.values())},
        judgements={"path": JUDGEMENTS, "n": len(rows),
                    "judge_pass_cost_usd": None if any(c is None for c in costs) else round(sum(costs), 6)},
        review_csv=REVIEW_CSV, min_answers_for_ci=MIN_ANSWERS_FOR_CI, risk_formula=RISK_FORMULA, notes="", warnings=warnings,
    ).model_dump(mode="json")
    spot["notes"] = notes_for(spot)
    write_review_csv(files.review_csv, review_rows(judged, [h.key for h in chosen]))
    atomic_write_text(files.spotcheck, json.dumps(spot, indent=2, ensure_ascii=False) + "\n")
    spot["_report_html"] = update_report(run_dir, spot, console)
    return spot
