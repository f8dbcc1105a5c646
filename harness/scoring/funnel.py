"""The retrieval funnel of models that search for themselves: found, then cited, and what the loop cost.

A model that searches (harness.runner.tool_loop) can fail in two places a pushed-top-k model cannot tell apart: its
searches never return the gold article, or they return it and the model cites something else. Per answer:

* ``retrieved``: every article its searches returned (a model shown the top k: those k), ``cited``: the KB
  articles its answer cites, read as the scorer reads them (:func:`harness.scoring.extraction.extract_both`);
* ``found``: an answerable question whose gold article is among ``retrieved``; ``cited gold``: the answer cites one;
* ``cited unseen``: the answer cites a KB article no search returned, a citation of something it never read;
* coverage, as the guidance defines it: ``|cited ∩ retrieved| / |retrieved used|``, every returned article having
  been put before the model.

Per model, over its answers (each repeat one): the shares with their Wilson intervals, coverage's mean with a
bootstrap interval, tool calls and latency as mean and 95th percentile (nearest rank: the smallest value at or
above 95% of the answers), cost summed over every turn, and how each loop ended (its named outcome:
``hit_cap``, ``unknown_tool``, ``malformed_arguments``, ``oversized_arguments``, else ``completed``). A pushed
model of the same run sits beside it with no tool calls, its "search" the top k it was shown, so the board says
what letting a model search buys; the paired test of the two is the leaderboard's (McNemar, ``report.pairwise``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.run_folder.report import FunnelShare, Report, SearchFunnel
from harness.run_folder.run_records import LOOP_OUTCOMES
from harness.scoring.extraction import extract_both
from harness.stats.wilson import wilson_interval


@dataclass(frozen=True)
class AnswerFunnel:
    """One answer's place in the funnel."""

    searches: bool
    error: bool
    tool_calls: int = 0
    turns: int = 0
    answerable: bool = False
    found: bool = False
    cited_gold: bool = False
    cites_kb: bool = False
    cited_unseen: bool = False
    coverage: float | None = None  # None: nothing retrieved
    outcome: str = "completed"
    cost_usd: float | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


def answer_funnel(row: dict[str, Any], gold: tuple[bool, frozenset[str]] | None, kb_ids: Collection[str]) -> AnswerFunnel:
    """One response row (as responses.jsonl holds it) against its gold (must_refuse, expected articles)."""
    loop = row.get("tool_loop")
    searches = isinstance(loop, dict)
    if row.get("error"):
        return AnswerFunnel(searches, True)
    retrieved = set(loop.get("retrieved") or []) if searches else set(row.get("retrieved_ids") or [])
    cited = [i for i in extract_both(row.get("response") or "", kb_ids)[0].cited_ids if i in kb_ids]
    must, expected = gold if gold is not None else (False, frozenset())
    answerable = not must and bool(expected)
    hit = set(cited) & retrieved
    return AnswerFunnel(
        searches=searches, error=False,
        tool_calls=int(loop.get("tool_calls") or 0) if searches else 0,
        turns=len(loop.get("turns") or []) if searches else 1,
        answerable=answerable,
        found=answerable and bool(expected & retrieved),
        cited_gold=answerable and bool(expected & set(cited)),
        cites_kb=bool(cited),
        cited_unseen=bool(set(cited) - retrieved),
        coverage=len(hit) / len(retrieved) if retrieved else None,
        outcome=str(loop.get("outcome") or "completed") if searches else "completed",
        cost_usd=row.get("cost_usd"), latency_ms=row.get("latency_ms"),
        input_tokens=row.get("input_tokens"), output_tokens=row.get("output_tokens"),
    )


def nearest_rank(values: Sequence[float], q: float = 0.95) -> float | None:
    """The ``q`` quantile by nearest rank: the smallest value with at least ``q`` of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(q * len(ordered)) - 1)])


def _share(k: int, n: int) -> FunnelShare:
    rate = k / n if n else None
    return FunnelShare(k=k, n=n, rate=None if rate is None else round(rate, 6), ci=wilson_interval(rate, n))


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def model_funnel(answers: list[AnswerFunnel], seed: int = 0, bootstrap: int = 1000) -> SearchFunnel:
    """A model's funnel from its answers' (see the module docstring for each figure)."""
    from harness.stats.bootstrap import bootstrap_cis

    ok = [a for a in answers if not a.error]
    answerable = [a for a in ok if a.answerable]
    found = [a for a in answerable if a.found]
    citing = [a for a in ok if a.cites_kb]
    covered = [a.coverage for a in ok if a.coverage is not None]
    coverage_ci = bootstrap_cis([np.array(covered)], bootstrap, seed)[0] if covered and bootstrap > 0 else None
    costs = [a.cost_usd for a in ok]
    latencies = [a.latency_ms for a in ok if a.latency_ms is not None]
    calls = [a.tool_calls for a in ok]
    tokens_in = [a.input_tokens for a in ok if a.input_tokens is not None]
    tokens_out = [a.output_tokens for a in ok if a.output_tokens is not None]
    cost = None if not ok or any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 8)
    return SearchFunnel(
        searches=any(a.searches for a in answers), answers=len(ok), errors=len(answers) - len(ok),
        tool_calls_mean=_mean(calls), tool_calls_p95=nearest_rank(calls), turns_mean=_mean([a.turns for a in ok]),
        gold_found=_share(len(found), len(answerable)),
        cited_given_found=_share(sum(a.cited_gold for a in found), len(found)),
        found_not_cited=_share(sum(not a.cited_gold for a in found), len(answerable)),
        cited_unseen=_share(sum(a.cited_unseen for a in citing), len(citing)),
        coverage=_mean(covered), coverage_ci=[round(v, 6) for v in coverage_ci] if coverage_ci else None,
        coverage_n=len(covered),
        loop_outcomes={o: _share(sum(a.outcome == o for a in ok), len(ok)) for o in LOOP_OUTCOMES},
        cost_usd=cost, cost_per_answer_usd=round(cost / len(ok), 8) if cost is not None and ok else None,
        latency_ms_mean=_mean(latencies), latency_ms_p95=nearest_rank(latencies),
        input_tokens_mean=_mean(tokens_in), output_tokens_mean=_mean(tokens_out),
    )


def add_funnel(report: Report, responses: Path, questions: Sequence[Any], kb_ids: Collection[str], seed: int,
               bootstrap: int) -> None:
    """The report's ``funnel`` when run.json beside the responses says a model searched, and its
    ``native_citations`` when one asked for them: both from one more pass over the file, made only then (a run of
    pushed models pays nothing for it), over the last row of each call as the scorer reads them (a resumed call's
    earlier rows are superseded)."""
    from harness.run_folder.report import NativeCitations
    from harness.run_folder.responses import iter_response_lines, row_key
    from harness.run_folder.run_dir import RunDir
    from harness.scoring.spans import span_figures

    info = RunDir(Path(responses).parent).read_run_info()
    if info is None:
        return
    funnel = any(m.search is not None or m.tool_loop or m.provider in ("python", "http") for m in info.models)
    native = any(m.options.get("native_citations") for m in info.models)
    if not (funnel or native):
        return
    gold = {q.question_id: (bool(q.must_refuse), frozenset(q.expected_citations)) for q in questions}
    kb = frozenset(kb_ids)
    answers: dict[tuple[str, str, int], AnswerFunnel] = {}
    spans: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in iter_response_lines(responses):
        if row["question_id"] not in gold:
            continue
        key = row_key(row)
        if funnel:
            answers[key] = answer_funnel(row, gold[row["question_id"]], kb)
        if native:
            spans[key] = {"model": row["model"], "cited_spans": row.get("cited_spans"), "error": row.get("error")}
    if funnel and any(a.searches for a in answers.values()):
        models: dict[str, list[AnswerFunnel]] = {}
        for (model, _, _), answer in answers.items():
            models.setdefault(model, []).append(answer)
        report.funnel = {name: model_funnel(rows, seed, bootstrap) for name, rows in models.items()}
    if native:
        report.native_citations = {name: NativeCitations(**f) for name, f in span_figures(spans.values()).items()} \
            or None
