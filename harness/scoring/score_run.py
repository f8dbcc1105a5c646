"""Score a responses file: ``scores.jsonl`` (one line per response) and ``report.json``.

This is the library behind ``grace score`` and the last step of ``grace run``.
The pass over the responses is the hot path (a million rows in well under a
minute): each row is read, extracted strictly and leniently, judged, written,
and reduced to a few integers in compact arrays; every whole-run metric is then
computed once per model on numpy arrays.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from array import array
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from harness.scoring.extraction import Extraction, extract_both
from harness.scoring.metrics import class_metrics, cost_latency, refusal_calibration, repeat_stats, retrieval_split
from harness.scoring.outcomes import HIT_CODES, NONE, OUTCOME_CODE, OUTCOMES, REFUSE, decide_outcome
from harness.scoring.records import REPORT_SCHEMA_VERSION, SCORES_SCHEMA_VERSION, Report
from harness.scoring.responses import read_responses
from harness.scoring.significance import bootstrap_cis, compact_letters, pairwise_tests, per_question
from kb_builder import __version__
from kb_builder.errors import GraceError
from kb_builder.gold import GoldQuestion, file_hash, read_gold
from kb_builder.store import KB, atomic_write_text, load_kb

SCORES = "scores.jsonl"
REPORT = "report.json"
RULE_CODE = {"json": 0, "inline": 1, "lenient": 2, "none": 3}
RULES = list(RULE_CODE)
_FLUSH_EVERY = 20_000
_NOTHING = Extraction([], False, "none")


class _Columns:
    """One compact typed array per per-row fact: ~60 bytes a response instead of a dict."""

    def __init__(self) -> None:
        self.model, self.q, self.repeat = array("i"), array("i"), array("i")
        self.outcome, self.strict, self.rule = array("b"), array("b"), array("b")
        self.true, self.pred, self.refused = array("i"), array("i"), array("b")
        self.expected_retrieved, self.retrieved_len = array("b"), array("i")
        self.cost, self.latency = array("d"), array("d")
        self.in_tokens, self.out_tokens = array("q"), array("q")

    def numpy(self) -> dict[str, np.ndarray]:
        return {k: np.frombuffer(v, dtype=v.typecode).copy() for k, v in vars(self).items()}


def _load_gold(gold: str | Path | Sequence[GoldQuestion]) -> tuple[list[GoldQuestion], dict[str, Any]]:
    if isinstance(gold, str | Path):
        questions = read_gold(gold)
        info = {"path": str(gold), "hash": file_hash(gold)}
    else:
        questions = list(gold)
        h = hashlib.sha256(json.dumps([[g.question_id, g.expected_citations, g.must_refuse] for g in questions])
                           .encode()).hexdigest()[:16]
        info = {"path": None, "hash": h}
    info["n_questions"] = len(questions)
    info["n_must_refuse"] = sum(g.must_refuse for g in questions)
    return questions, info


def score_responses(
    responses_path: str | Path,
    gold: str | Path | Sequence[GoldQuestion],
    kb: str | Path | KB,
    out_dir: str | Path,
    *,
    seed: int = 0,
    bootstrap: int = 2000,
) -> dict[str, Any]:
    """Score ``responses_path`` against ``gold`` and ``kb``; write scores.jsonl and report.json in ``out_dir``.

    Returns the report as a dict (the content of report.json). Raises
    ``GraceError`` naming the file and line of the first bad response.
    """
    responses_path, out_dir = Path(responses_path), Path(out_dir)
    if bootstrap < 0:
        raise GraceError(f"--bootstrap must be 0 or more, got {bootstrap}")
    questions, gold_info = _load_gold(gold)
    kb_obj = kb if isinstance(kb, KB) else load_kb(kb, write_missing=False)
    article_ids = [a.id for a in kb_obj.articles]
    kb_ids = frozenset(article_ids)
    # expected IDs missing from the KB can never be cited correctly, but still need a label
    unknown = sorted({e for g in questions for e in g.expected_citations} - kb_ids)
    names = article_ids + unknown + [REFUSE, NONE]
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{SCORES}.", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            cols, models = _score_rows(responses_path, questions, kb_ids, names[:-2], fh)
        if not models:
            raise GraceError(f"{responses_path}: no responses in the file")
        arrays, dropped = _drop_superseded(cols.numpy())
        if dropped.size:
            _rewrite_without(Path(tmp_name), set(dropped.tolist()))
        report = _build_report(arrays, models, questions, names, seed, bootstrap)
        report["warnings"] = _warnings(report, len(questions), int(dropped.size), unknown)
        report.update(
            gold=gold_info,
            kb={"path": str(kb_obj.path), "hash": kb_obj.kb_hash, "n_articles": len(article_ids)},
            responses={"path": str(responses_path), "n": int(arrays["model"].size)},
        )
        data = Report.model_validate(report).model_dump(mode="json")
        os.replace(tmp_name, out_dir / SCORES)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    # no indent: the confusion matrices would put every number on its own line (and json's C encoder skips indent)
    atomic_write_text(out_dir / REPORT, json.dumps(data, ensure_ascii=False) + "\n")
    return data


def _score_rows(
    path: Path, questions: list[GoldQuestion], kb_ids: frozenset[str], label_ids: list[str], fh
) -> tuple[_Columns, list[str]]:
    """The hot loop: one pass over the responses, writing each scores line as it goes."""
    code = {a: i for i, a in enumerate(label_ids)}
    refuse_code, none_code = len(label_ids), len(label_ids) + 1
    gold_index = {g.question_id: i for i, g in enumerate(questions)}
    qinfo = [(g.must_refuse, g.expected_citations, frozenset(g.expected_citations)) for g in questions]
    c = _Columns()
    models: list[str] = []
    model_index: dict[str, int] = {}
    dumps, decide, nan = json.dumps, decide_outcome, float("nan")
    buf: list[str] = []
    for row in read_responses(path, gold_index):
        qi = gold_index[row.question_id]
        must, expected, expected_set = qinfo[qi]
        mi = model_index.get(row.model)
        if mi is None:
            mi = model_index[row.model] = len(models)
            models.append(row.model)
        if row.error:
            ext = strict = _NOTHING
            outcome = strict_outcome = "error"
        else:
            ext, strict = extract_both(row.text, kb_ids)
            outcome = decide(ext.cited_ids, ext.refused, must, expected_set, kb_ids)
            strict_outcome = decide(strict.cited_ids, strict.refused, must, expected_set, kb_ids)
        cited = ext.cited_ids
        if must:
            true = refuse_code
        else:
            true = code[next((x for x in cited if x in expected_set), expected[0])]
        if ext.refused:
            pred = refuse_code
        elif len(cited) == 1 and cited[0] in kb_ids:
            pred = code[cited[0]]
        else:
            pred = none_code
        retrieved = row.retrieved_ids
        if retrieved is None or must:
            er = None
        else:
            er = any(e in retrieved for e in expected)
        buf.append(dumps({
            "schema_version": SCORES_SCHEMA_VERSION, "question_id": row.question_id, "model": row.model,
            "repeat": row.repeat, "cited_ids": cited, "refused": ext.refused, "outcome": outcome,
            "extraction": ext.rule, "strict_cited_ids": strict.cited_ids, "strict_refused": strict.refused,
            "strict_outcome": strict_outcome, "must_refuse": must, "expected_citations": expected,
            "retrieved_ids": retrieved, "expected_retrieved": er, "cost_usd": row.cost_usd,
            "latency_ms": row.latency_ms, "input_tokens": row.input_tokens, "output_tokens": row.output_tokens,
        }))
        if len(buf) >= _FLUSH_EVERY:
            fh.write("\n".join(buf) + "\n")
            buf.clear()
        c.model.append(mi)
        c.q.append(qi)
        c.repeat.append(row.repeat)
        c.outcome.append(OUTCOME_CODE[outcome])
        c.strict.append(OUTCOME_CODE[strict_outcome])
        c.rule.append(RULE_CODE[ext.rule])
        c.true.append(true)
        c.pred.append(pred)
        c.refused.append(ext.refused)
        c.expected_retrieved.append(-1 if er is None else er)
        c.retrieved_len.append(-1 if retrieved is None else len(retrieved))
        c.cost.append(nan if row.cost_usd is None else row.cost_usd)
        c.latency.append(nan if row.latency_ms is None else row.latency_ms)
        c.in_tokens.append(-1 if row.input_tokens is None else row.input_tokens)
        c.out_tokens.append(-1 if row.output_tokens is None else row.output_tokens)
    if buf:
        fh.write("\n".join(buf) + "\n")
    return c, models


def _drop_superseded(a: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Keep the last response per (model, question, repeat): a re-run appends its retry of a failed call."""
    n = a["model"].size
    order = np.lexsort((np.arange(n), a["repeat"], a["q"], a["model"]))
    keys = np.stack([a["model"][order], a["q"][order], a["repeat"][order]])
    last = np.r_[np.any(keys[:, 1:] != keys[:, :-1], axis=0), True]
    dropped = np.sort(order[~last])
    if not dropped.size:
        return a, dropped
    keep = np.ones(n, dtype=bool)
    keep[dropped] = False
    return {k: v[keep] for k, v in a.items()}, dropped


def _rewrite_without(path: Path, skip: set[int]) -> None:
    tmp = path.with_name(path.name + ".dedup")
    with path.open(encoding="utf-8") as src, tmp.open("w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i not in skip:
                dst.write(line)
    os.replace(tmp, path)


def _model_metrics(a: dict[str, np.ndarray], sel: np.ndarray, must_q: np.ndarray, names: list[str]) -> dict[str, Any]:
    oc, sc = a["outcome"][sel], a["strict"][sel]
    hits, shits = np.isin(oc, HIT_CODES), np.isin(sc, HIT_CODES)
    n = int(sel.size)
    counts = np.bincount(oc, minlength=len(OUTCOMES))
    q = a["q"][sel]
    must = must_q[q]
    valid = oc != OUTCOME_CODE["error"]
    answer_code = a["pred"][sel].astype(np.int64) * len(OUTCOMES) + oc
    cost, latency = cost_latency(a["cost"][sel], a["latency"][sel], a["in_tokens"][sel], a["out_tokens"][sel])
    repeats = int(np.unique(a["repeat"][sel]).size)
    return {
        "n": n,
        "n_questions": int(np.unique(q).size),
        "repeats": repeats,
        "accuracy": round(float(hits.mean()), 6),
        "strict_accuracy": round(float(shits.mean()), 6),
        "outcomes": {name: int(x) for name, x in zip(OUTCOMES, counts)},
        "strict_outcomes": {name: int(x) for name, x in zip(OUTCOMES, np.bincount(sc, minlength=len(OUTCOMES)))},
        "invalid_citation_rate": round(float(counts[OUTCOME_CODE["invalid_citation"]] / n), 6),
        "error_count": int(counts[OUTCOME_CODE["error"]]),
        "extraction_rules": {r: int(x) for r, x in zip(RULES, np.bincount(a["rule"][sel], minlength=len(RULES)))},
        **class_metrics(a["true"][sel], a["pred"][sel], names),
        "refusal": refusal_calibration(must, a["refused"][sel] == 1, valid),
        "retrieval": retrieval_split(a["retrieved_len"][sel], a["expected_retrieved"][sel], hits),
        "repeat_stats": repeat_stats(q, a["repeat"][sel], hits, answer_code),
        "cost": cost,
        "latency": latency,
        "_hits": hits,
        "_strict_hits": shits,
    }


def _build_report(
    a: dict[str, np.ndarray], models: list[str], questions: list[GoldQuestion], names: list[str], seed: int, bootstrap: int
) -> dict[str, Any]:
    nq = len(questions)
    must_q = np.array([g.must_refuse for g in questions], dtype=bool)
    per_model: dict[str, dict[str, Any]] = {}
    majority: dict[str, np.ndarray] = {}
    # models that answered the same questions are bootstrapped together, on the same resamples
    same_questions: dict[bytes, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for mi, name in enumerate(models):
        sel = np.flatnonzero(a["model"] == mi)
        m = _model_metrics(a, sel, must_q, names)
        answered, rate = per_question(a["q"][sel], m.pop("_hits").astype(np.float64), nq)
        _, strict_rate = per_question(a["q"][sel], m.pop("_strict_hits").astype(np.float64), nq)
        same_questions.setdefault(answered.tobytes(), []).append((name, rate, strict_rate))
        vote = np.full(nq, -1, dtype=np.int8)
        vote[answered] = rate > 0.5  # majority of repeats hit; a tie counts as a miss
        majority[name] = vote
        per_model[name] = m
    for group in same_questions.values():
        cis = bootstrap_cis([s for _, rate, strict in group for s in (rate, strict)], bootstrap, seed)
        for k, (name, _, _) in enumerate(group):
            per_model[name]["accuracy_ci95"], per_model[name]["strict_accuracy_ci95"] = cis[2 * k], cis[2 * k + 1]
    board = sorted(models, key=lambda x: (-per_model[x]["accuracy"], -per_model[x]["strict_accuracy"], x))
    pairs = pairwise_tests(board, majority)
    letters = compact_letters(board, {frozenset((p["a"], p["b"])) for p in pairs if p["significant"]})
    for name in board:
        acc = per_model[name]["accuracy"]
        per_model[name]["rank"] = 1 + sum(per_model[o]["accuracy"] > acc for o in board)
        per_model[name]["significance_group"] = letters[name]
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "grace_version": __version__,
        "seed": seed,
        "bootstrap_samples": bootstrap,
        "leaderboard": board,
        "models": {name: per_model[name] for name in board},
        "pairwise": pairs,
        "spotcheck": None,
    }


def _warnings(report: dict[str, Any], nq: int, dropped: int, unknown: list[str]) -> list[str]:
    out = []
    if unknown:
        shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        out.append(f"{len(unknown)} expected citation(s) in the gold file are not KB article IDs ({shown}); "
                   "questions expecting them can never be answered correctly")
    if dropped:
        out.append(f"{dropped} response(s) were superseded by a later line for the same model, question and "
                   "repeat; only the last one is scored")
    for name, m in report["models"].items():
        if m["n_questions"] < nq:
            out.append(f"{name} answered {m['n_questions']} of {nq} gold questions; its accuracy is over those only")
        if m["error_count"]:
            out.append(f"{name}: {m['error_count']} failed call(s) scored as misses; run 'grace run' again to retry them")
    return out
