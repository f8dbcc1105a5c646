"""Unit tests for a judge, in the spirit of GroUSE: hand-written cases with a known verdict.

Each case is a (segment, article, expected verdict) triple written to trip one
failure mode: a changed number, a swapped entity, a widened scope, a flipped
negation, a claim from world knowledge, a partly supported claim; correct
paraphrases and exact restatements check that the judge does not cry wolf, and
sentences copied with their citation as an answer writes it (``… year [ID: x].``,
``… year. (see [ID: x])``) that the check reads a sentence as written: each
case's segment is read as the spot-check reads an answer (:mod:`.segmentation`),
so the judge gets the claim the spot-check would give it.
The pass rate per failure mode lets a team pick a cheaper judge with evidence,
and see what the one they use will miss. Calls go through the same engine and
cache as the spot-check itself, with the same prompt: pass 1 of ``--mode
segments``, or the claim verification of ``--mode claims`` (the case's segment
is the one claim; an expected "unsupported" passes as ``partial`` or
``unsupported``, an expected "supported" only as ``supported``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.core.clock import now
from harness.core.errors import GraceError, where
from harness.core.jsonl import iter_jsonl
from harness.spotcheck.judge_calls import Judge, JudgeJob, JudgeSettings, PromptStats, run_jobs
from harness.spotcheck.judge_prompt import SourceArticle, parse_verdict
from harness.spotcheck.spotcheck_records import META_EVAL_SCHEMA_VERSION

T = TypeVar("T")

CASES = Path(__file__).parent / "cases.jsonl"
MODES = ("number_changed", "entity_swapped", "scope_widened", "negation", "world_knowledge",
         "partially_supported", "correct_paraphrase", "exact_restatement", "as_written")


@dataclass(frozen=True)
class Case:
    id: str
    failure_mode: str
    article_title: str
    article: str
    segment: str  # as an answer writes it, its citation marker (citing the case's article by its id) included
    expected_supported: bool
    note: str = ""

    @property
    def claim(self) -> str:
        """The segment as the spot-check reads an answer: its claims, without their citation markers."""
        from harness.spotcheck.segmentation import segment_answer

        return " ".join(s.claim for s in segment_answer(self.segment, {self.id}))


def read_cases(path: Path, build: Callable[[dict[str, Any]], T], needs: str) -> list[T]:
    """Hand-written cases, one JSON object a line (the support cases and the quality cases alike): each line
    through ``build``, a missing or mistyped field named as ``needs``, an id used twice refused."""
    cases, seen = [], set()
    for n, d in iter_jsonl(path):
        try:
            case = build(d)
        except (KeyError, TypeError, AttributeError):
            raise GraceError(f"{where(path, n)}: {needs}") from None
        if case.id in seen:
            raise GraceError(f"{where(path, n)}: case id {case.id!r} used twice")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise GraceError(f"{path}: no cases")
    return cases


def per_failure_mode(rows: list[dict[str, Any]], known: tuple[str, ...],
                     extra: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Cases and passes per failure mode (the support and the quality meta-eval alike): ``known`` modes in their
    order, then any other a case file names; ``extra`` adds fields from a mode's rows."""
    found = {r["failure_mode"] for r in rows}
    out = {}
    for m in [m for m in known if m in found] + sorted(found - set(known)):
        rs = [r for r in rows if r["failure_mode"] == m]
        passed = sum(r["passed"] for r in rs)
        out[m] = {"cases": len(rs), "passed": passed, "pass_rate": round(passed / len(rs), 6),
                  **(extra(rs) if extra else {})}
    return out


def load_cases(path: Path | None = None) -> list[Case]:
    def build(d: dict[str, Any]) -> Case:
        expected = {"supported": True, "unsupported": False}[d["expected"]]
        return Case(str(d["id"]), str(d["failure_mode"]), str(d.get("article_title") or ""), str(d["article"]),
                    str(d["segment"]), expected, str(d.get("note") or ""))

    return read_cases(path or CASES, build, "a case needs id, failure_mode, article, segment and expected "
                                            "('supported' or 'unsupported')")


def _claim_rows(judge: Judge, cases: list[Case], settings: JudgeSettings,
                stats: PromptStats) -> tuple[list[dict[str, Any]], int]:
    """Each case's segment as one claim, through the claims verification step."""
    from harness.providers.base import RetrievedArticle
    from harness.runner.calls import Prompted, PromptJob
    from harness.spotcheck.claims import (
        STRICT_VERIFY,
        VERIFY_KIND,
        VERIFY_SCHEMA,
        ClaimsJudged,
        _ask,
        _has_list,
        parse_verdicts,
    )

    who = Prompted(judge.spec, judge.provider, VERIFY_KIND, judge.template.sha256, VERIFY_SCHEMA,
                   accept=lambda c: _has_list(c.text, "verdicts"))
    jobs = []
    for c in cases:
        source = SourceArticle(c.id, c.article_title, c.article)
        jobs.append(PromptJob(f"claims:verify:meta:{c.id}", json.dumps([c.claim], ensure_ascii=False),
                              judge.template.verify([c.claim], [source]),
                              [RetrievedArticle(c.id, c.article_title, c.article, 0.0)], payload=c))
    tally = ClaimsJudged({}, stats)
    done = _ask(who, jobs, lambda j, comp: parse_verdicts(comp.text, 1) is not None, STRICT_VERIFY, settings, stats,
                "meta-eval (claims)", tally)
    rows = []
    for job, res in done.values():
        case: Case = job.payload
        comp = res.completion
        got = parse_verdicts(comp.text, 1) if comp is not None else None
        verdict = got[0].verdict if got else None
        supported = None if verdict is None else verdict == "supported"
        rows.append({"id": case.id, "failure_mode": case.failure_mode, "expected_supported": case.expected_supported,
                     "supported": supported, "verdict": verdict,
                     "passed": supported is not None and supported == case.expected_supported,
                     "explanation": got[0].explanation if got else "", "evidence": got[0].evidence if got else "",
                     "error": res.error.message if res.error else (None if got else "no readable verdict"),
                     "unreadable": comp is not None and got is None, "retry": False, "segment": case.segment,
                     "claim": case.claim, "cost_usd": res.cost_usd, "cached": res.cached})
    return rows, tally.retried


def run_meta_eval(judge: Judge, cases: list[Case], settings: JudgeSettings | None = None) -> dict[str, Any]:
    from harness.spotcheck.claims import ClaimsTemplate

    settings = settings or JudgeSettings()
    stats = PromptStats()
    if isinstance(judge.template, ClaimsTemplate):
        rows, retried = _claim_rows(judge, cases, settings, stats)
        return {**_summary(judge, cases, {r["id"]: r for r in rows}, stats, "claims"), "retried": retried}
    jobs = []
    for c in cases:
        source = SourceArticle(c.id, c.article_title, c.article)
        jobs.append(JudgeJob(c.id, c.claim, judge.template.cited(c.claim, [source]), [source], 0, payload=c))

    def record(job: JudgeJob, request: Any, res: Any) -> dict[str, Any]:
        case: Case = job.payload
        comp = res.completion
        verdict = parse_verdict(comp.text) if comp is not None else None
        got = verdict.supported if verdict else None
        return {"id": case.id, "failure_mode": case.failure_mode, "expected_supported": case.expected_supported,
                "supported": got, "passed": got is not None and got == case.expected_supported,
                "explanation": verdict.explanation if verdict else "",
                "error": res.error.message if res.error else (verdict.parse_error if verdict else None),
                "unreadable": verdict is not None and got is None, "retry": job.retry,
                "segment": case.segment, "claim": case.claim, "cost_usd": res.cost_usd, "cached": res.cached}

    return _summary(judge, cases, {r["id"]: r for r in run_jobs(judge, jobs, record, settings, stats)}, stats,
                    "segments")


def _summary(judge: Judge, cases: list[Case], rows: dict[str, dict[str, Any]], stats: PromptStats,
             mode: str) -> dict[str, Any]:
    ordered = [rows[c.id] for c in cases]
    per_mode = per_failure_mode(ordered, MODES, lambda rs: {
        "expected": sorted({"supported" if r["expected_supported"] else "unsupported" for r in rs})})
    unsup = [r for r in ordered if not r["expected_supported"]]
    sup = [r for r in ordered if r["expected_supported"]]
    passed = sum(r["passed"] for r in ordered)
    from harness.spotcheck.calibration import cohen_kappa

    # agreement beyond chance with the expected verdicts, over the cases the judge gave one: a judge that calls
    # everything supported passes every control case and still has kappa 0 (claims: partial counts as unsupported)
    read = [r for r in ordered if r["supported"] is not None]
    kappa = cohen_kappa([r["expected_supported"] for r in read], [r["supported"] for r in read])
    return {
        "schema_version": META_EVAL_SCHEMA_VERSION,
        "created_at": now(),
        "judge": judge.spec.name, "judge_kind": judge.kind, "mode": mode,
        "template": judge.template.name, "template_hash": judge.template.sha256,
        "cases": len(ordered), "passed": passed, "pass_rate": round(passed / len(ordered), 6),
        "unsupported_caught": round(sum(r["passed"] for r in unsup) / len(unsup), 6) if unsup else None,
        "n_unsupported": len(unsup),
        "supported_accepted": round(sum(r["passed"] for r in sup) / len(sup), 6) if sup else None,
        "n_supported": len(sup),
        "kappa": None if kappa is None else round(kappa, 6), "kappa_n": len(read),
        "unreadable": sum(r["unreadable"] for r in ordered),  # no readable verdict, even asked again
        "retried": sum(r["retry"] for r in ordered),
        "per_mode": per_mode,
        "failures": [r for r in ordered if not r["passed"]],
        "calls": stats.as_dict(),
    }
