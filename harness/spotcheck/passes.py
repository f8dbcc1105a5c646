"""The two judging passes over the sampled answers, resumable from ``judgements.jsonl``.

Pass 1 checks every cited segment against its own cited article(s). Pass 2
checks every uncited segment (introductions, conclusions, text after the last
citation) against the segments of the same answer that pass 1 found supported:
a conclusion that adds a claim fails. Quotes are verified without the judge
first; a quote the source does not contain makes its segment unsupported and
saves the call.

A judgement already in the file (same judge, template, answer text, segment,
judge repeat and, in pass 2, the same supported context) is reused; failed
calls and replies with no readable verdict are not (nor are they in the
response cache), so running the same command again asks exactly those again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.clock import now as _now
from harness.core.files import JsonlAppender
from harness.core.jsonl import iter_jsonl
from harness.providers.base import Request
from harness.runner.engine import CallResult, prompt_hash
from harness.spotcheck.inputs import Hit
from harness.spotcheck.judge_calls import Judge, JudgeJob, JudgeSettings, PromptStats, run_jobs
from harness.spotcheck.judge_prompt import SourceArticle, parse_verdict
from harness.spotcheck.quotes import missing_quotes
from harness.spotcheck.segmentation import Segment, segment_answer
from harness.spotcheck.spotcheck_records import JudgementRecord

SlotKey = tuple[tuple[str, str, int], int, int]  # (answer key, judge repeat, segment index)


@dataclass
class Judged:
    segments: dict[tuple[str, str, int], list[Segment]]
    rows: dict[SlotKey, dict[str, Any]]  # the current judgement of every slot judged so far
    stats: PromptStats
    reused: int = 0
    decided_without_judge: int = 0
    skipped_pass2: list[tuple[str, str, int]] = field(default_factory=list)


def _ident(judge: Judge, model: str, qid: str, rep: int, jrep: int, seg: Segment, answer_hash: str,
           ctx: str | None) -> tuple:
    """A judgement's identity: the same answer read into another claim (a grace whose reading changed) is judged
    again, never given the verdict of the claim that was there before."""
    return (judge.spec.name, judge.template.sha256, model, qid, rep, jrep, seg.index, answer_hash, ctx, seg.claim)


def _row_ident(row: dict[str, Any]) -> tuple:
    return (row.get("judge"), row.get("template_hash"), row.get("model"), row.get("question_id"), row.get("repeat"),
            row.get("judge_repeat"), row.get("segment_index"), row.get("answer_hash"), row.get("context_hash"),
            row.get("claim"))


def _context_hash(context: list[str]) -> str:
    return hashlib.sha256(json.dumps(context, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


class _Pass:
    """Shared bookkeeping of one pass: reuse, judge-free verdicts, and the jobs left for the engine."""

    def __init__(self, judge: Judge, done: dict[tuple, dict[str, Any]], out: JsonlAppender, result: Judged):
        self.judge, self.done, self.out, self.result = judge, done, out, result
        self.jobs: list[JudgeJob] = []

    def base(self, hit: Hit, seg: Segment, jrep: int, pass_: str, ctx: str | None) -> dict[str, Any]:
        spec, t = self.judge.spec, self.judge.template
        return dict(model=hit.model, question_id=hit.question_id, repeat=hit.repeat, segment_index=seg.index,
                    judge_repeat=jrep, pass_=pass_, citations=list(seg.citations), segment_text=seg.text,
                    claim=seg.claim, answer_hash=hit.answer_hash, context_hash=ctx, judge=spec.name,
                    judge_provider=spec.provider, judge_model=spec.model, template=t.name, template_hash=t.sha256)

    def slot(self, hit: Hit, seg: Segment, jrep: int, pass_: str, ctx: str | None, sources: list[SourceArticle],
             messages: list[dict[str, str]] | None, quote_source: str, missing_ids: list[str]) -> None:
        slot = (hit.key, jrep, seg.index)
        prior = self.done.get(_ident(self.judge, *hit.key, jrep, seg, hit.answer_hash, ctx))
        if prior is not None:
            self.result.rows[slot] = prior
            self.result.reused += 1
            return
        base = self.base(hit, seg, jrep, pass_, ctx)
        if missing_ids:
            why = f"cited article(s) {', '.join(missing_ids)} not in the KB"
            self._direct(slot, JudgementRecord(**base, source="missing_article", supported=False, explanation=why))
            return
        absent = missing_quotes(seg.text, quote_source)
        if absent:
            why = "quoted text not found verbatim in the source: " + "; ".join(f"\u201c{q}\u201d" for q in absent)
            self._direct(slot, JudgementRecord(**base, source="quote", supported=False, explanation=why,
                                               missing_quotes=absent))
            return
        self.jobs.append(JudgeJob(f"{hit.model}|{hit.question_id}|{hit.repeat}|{seg.index}", seg.claim, messages or [],
                                  sources, jrep, payload=(slot, base)))

    def _direct(self, slot: SlotKey, rec: JudgementRecord) -> None:
        rec.created_at = _now()
        row = rec.dump()
        self.out.write(row)
        self.result.rows[slot] = row
        self.result.decided_without_judge += 1

    def record(self, job: JudgeJob, request: Request, res: CallResult) -> dict[str, Any]:
        slot, base = job.payload
        comp = res.completion
        verdict = parse_verdict(comp.text) if comp is not None else None
        rec = JudgementRecord(
            **base, source="judge", supported=verdict.supported if verdict else None,
            explanation=verdict.explanation if verdict else "", parse_error=verdict.parse_error if verdict else None,
            prompt_hash=prompt_hash(request.messages), response=comp.text if comp else None, cached=res.cached,
            retry=job.retry, finish_reason=comp.finish_reason if comp else None,
            attempts=res.attempts, latency_ms=res.latency_ms, cost_usd=res.cost_usd,
            input_tokens=comp.input_tokens if comp else None, output_tokens=comp.output_tokens if comp else None,
            error=res.error, created_at=_now(),
        )
        row = rec.dump()
        self.result.rows[slot] = row
        return row


def unjudged(row: dict[str, Any]) -> bool:
    """A judge row with no verdict: the call failed, or the reply held none readable. Never reused."""
    return bool(row.get("error")) or (row.get("source", "judge") == "judge" and row.get("supported") is None)


def load_done(path: Path) -> dict[tuple, dict[str, Any]]:
    """Finished judgements in the file, the latest per identity; failed calls and unreadable verdicts are left
    out, to be asked again."""
    done: dict[tuple, dict[str, Any]] = {}
    if not path.exists():
        return done
    for _, row in iter_jsonl(path, torn_tail_ok=True, hint="; fix or delete the line"):
        ident = _row_ident(row)
        if unjudged(row):
            done.pop(ident, None)
        else:
            done[ident] = row
    return done


def judge_hits(judge: Judge, hits: list[Hit], kb: Any, repeats: int, out_path: Path,
               settings: JudgeSettings, kb_ids: set[str] | None = None,
               segments: dict[tuple[str, str, int], list[Segment]] | None = None) -> Judged:
    """Both passes over ``hits``; every new judgement is appended to ``out_path`` as it is made. ``segments``:
    answers already cut by their own citation reading (a system citing its own references)."""
    by_id = kb.by_id
    kb_ids = kb_ids if kb_ids is not None else set(by_id)
    done = load_done(out_path)
    segments = segments or {}
    result = Judged({h.key: segments[h.key] if h.key in segments else segment_answer(h.text, kb_ids) for h in hits},
                    {}, PromptStats())
    out = JsonlAppender(out_path)
    try:
        first = _Pass(judge, done, out, result)
        for hit in hits:
            for seg in result.segments[hit.key]:
                if not seg.cited:
                    continue
                sources = [SourceArticle(i, by_id[i].title, by_id[i].text) for i in seg.citations if i in by_id]
                missing = [i for i in seg.citations if i not in by_id]
                messages = judge.template.cited(seg.claim, sources) if not missing else None
                text = "\n\n".join(a.text for a in sources)
                for r in range(repeats):
                    first.slot(hit, seg, r, "cited", None, sources, messages, text, missing)
        if first.jobs:
            run_jobs(judge, first.jobs, first.record, settings, result.stats, out, "pass 1: cited segments")
        second = _Pass(judge, done, out, result)
        for hit in hits:
            segs = result.segments[hit.key]
            uncited = [s for s in segs if not s.cited]
            if not uncited:
                continue
            cited_ids = list(dict.fromkeys([i for s in segs for i in s.citations] + list(hit.cited_ids)))
            articles_text = "\n\n".join(by_id[i].text for i in cited_ids if i in by_id)
            for r in range(repeats):
                judged = [result.rows.get((hit.key, r, s.index)) for s in segs if s.cited]
                if any(j is None or j.get("supported") is None for j in judged):
                    result.skipped_pass2.append(hit.key)  # an unjudged cited segment: its context is unknown
                    continue
                context = [j["claim"] for j in judged if j["supported"]]
                ctx = _context_hash(context)
                source = SourceArticle("supported", "verified parts of the answer", "\n".join(context))
                for seg in uncited:
                    second.slot(hit, seg, r, "uncited", ctx, [source], judge.template.uncited(seg.claim, context),
                                articles_text, [])
        if second.jobs:
            run_jobs(judge, second.jobs, second.record, settings, result.stats, out, "pass 2: uncited segments")
    finally:
        out.close()
    return result
