"""Claim-level checking (``--mode claims``): atomic claims, each with a verdict and the sentence that decides it.

A segment that joins a supported fact and an invented one gets one verdict in
``--mode segments``; guidance for grounded QA (the FACTScore approach) asks to
decompose an answer into atomic claims and label each. Two LLM steps, both
through the engine (cached, priced, retried, counted by ``--dry-run``):

1. **extract**: one call per answer. The answer goes in as its segments
   (:mod:`.segmentation`, no LLM), numbered, and each claim comes back tied to
   its segment, so it inherits the citation that segment sits under.
2. **verify**: one call per answer and cited source, with the claims under that
   citation; each gets ``supported``, ``partial`` or ``unsupported``, an
   explanation and the evidence sentence from the article. A claim under no
   citation is checked against the articles the answer cites elsewhere, or,
   citing none, against the articles it was shown. A claim citing an ID that is
   not in the KB is unsupported without a call.

A reply with no readable claims or verdicts is never cached and is asked once
more with a stricter instruction (another prompt, so another cache key); what
is still unreadable leaves its answer out of the figures, counted. Judge
repeats repeat step 2 (the claims are extracted once), so the spread they
show is the verdicts' own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.clock import now as clock_now
from harness.core.errors import GraceError
from harness.core.json_text import json_objects
from harness.prompts.template_files import SectionTemplate, builtin_in_language, find_template, split_sections
from harness.providers.base import Completion, RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats, run_prompts
from harness.runner.engine import CallResult
from harness.spotcheck.inputs import Hit
from harness.spotcheck.judge_prompt import SourceArticle, strict_messages
from harness.spotcheck.segmentation import Segment, segment_answer

TEMPLATES_DIR = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "claims.v1"
VERDICTS = ("supported", "partial", "unsupported")
_SECTION = re.compile(r"^=== (\w+) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(segments|article_id|article_title|article|claims)\s*\}\}")
EXTRACT_KIND, VERIFY_KIND = "grace-spotcheck-claims", "grace-spotcheck-claim-verdicts"
STRICT_EXTRACT = ('Reply with only one JSON object and nothing else (no code fence, no text before or after it): '
                  '{"claims": [{"segment": 1, "claim": "<one atomic claim>"}]}, or {"claims": []}.')
STRICT_VERIFY = ('Reply with only one JSON object and nothing else (no code fence, no text before or after it): '
                 '{"verdicts": [{"claim": 1, "explanation": "<one sentence>", "evidence": "<a sentence of the source>", '
                 '"verdict": "supported"}]} with one entry per claim and verdict "supported", "partial" or "unsupported".')
EXTRACT_SCHEMA = {
    "title": "claims", "type": "object", "additionalProperties": False, "required": ["claims"],
    "properties": {"claims": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["segment", "claim"],
        "properties": {"segment": {"type": "integer"}, "claim": {"type": "string"}}}}},
}
VERIFY_SCHEMA = {
    "title": "claim_verdicts", "type": "object", "additionalProperties": False, "required": ["verdicts"],
    "properties": {"verdicts": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["claim", "explanation", "evidence", "verdict"],
        "properties": {"claim": {"type": "integer"}, "explanation": {"type": "string"}, "evidence": {"type": "string"},
                       "verdict": {"type": "string", "enum": list(VERDICTS)}}}}},
}


@dataclass(frozen=True)
class ClaimsTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def _pair(self, section: str, values: dict[str, str]) -> list[dict[str, str]]:
        from harness.prompts.template_files import chat_messages

        return chat_messages(self.sections.get(f"{section}_system", ""), self.sections[section], values, self.placeholder)

    def extract(self, segments: Sequence[Segment]) -> list[dict[str, str]]:
        from harness.prompts.languages import note

        lines = [f"[{i}] {s.claim}  " + (note(self.language, "cites", ids=", ".join(s.citations)) if s.citations
                                         else note(self.language, "cites_nothing"))
                 for i, s in enumerate(segments, 1)]
        return self._pair("extract", {"segments": "\n".join(lines)})

    def verify(self, claims: Sequence[str], sources: Sequence[SourceArticle]) -> list[dict[str, str]]:
        return self._pair("verify", {
            "article_id": ", ".join(a.id for a in sources), "article_title": " / ".join(a.title for a in sources),
            "article": "\n\n".join(a.text.strip() for a in sources),
            "claims": "\n".join(f"[{i}] {c}" for i, c in enumerate(claims, 1)),
        })


def load_claims_template(spec: str | None = None, language: str | None = None) -> ClaimsTemplate:
    """A built-in name (``claims.v1``) or a path to a template file with the four sections; with neither,
    ``claims.v1`` in ``language``."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "claims template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    squash = {k: v.replace(" ", "") for k, v in sections.items()}
    if "{{segments}}" not in squash.get("extract", "") or not {"{{article}}", "{{claims}}"} <= {
            p for p in ("{{article}}", "{{claims}}") if p in squash.get("verify", "")}:
        raise GraceError(f"claims template {path.stem}: needs '=== extract ===' with {{{{segments}}}} and "
                         "'=== verify ===' with {{article}} and {{claims}} (see templates/claims.v1.txt)")
    return ClaimsTemplate.from_text(path.stem, text, sections)


@dataclass(frozen=True)
class Claim:
    index: int
    segment: int  # index of the answer segment it comes from
    text: str
    citations: tuple[str, ...]  # of that segment; () when it sits under no citation


@dataclass(frozen=True)
class ClaimVerdict:
    verdict: str | None  # supported | partial | unsupported; None: not readable
    explanation: str = ""
    evidence: str = ""


def parse_claims(text: str | None, segments: Sequence[Segment]) -> list[Claim] | None:
    """The extraction reply -> claims tied to their segments; ``None`` when the reply holds no readable list."""
    for obj in json_objects(text):
        items = {str(k).lower(): v for k, v in obj.items()}.get("claims")
        if not isinstance(items, list):
            continue
        out: list[Claim] = []
        for item in items:
            if isinstance(item, str):
                seg, claim = (1 if len(segments) == 1 else 0), item
            elif isinstance(item, dict):
                low = {str(k).lower(): v for k, v in item.items()}
                seg, claim = low.get("segment"), low.get("claim") or low.get("text")
            else:
                continue
            if not isinstance(claim, str) or not claim.strip():
                continue
            try:
                n = int(seg)
            except (TypeError, ValueError):
                n = 0
            src = segments[n - 1] if 1 <= n <= len(segments) else None
            out.append(Claim(len(out), src.index if src else -1, " ".join(claim.split()),
                             src.citations if src else ()))
        return out
    return None


def _verdict_word(value: Any) -> str | None:
    v = str(value or "").strip().lower().replace("_", " ")
    if v in ("supported", "yes", "true", "fully supported"):
        return "supported"
    if v in ("partial", "partially supported", "partly supported"):
        return "partial"
    if v in ("unsupported", "not supported", "no", "false", "contradicted"):
        return "unsupported"
    return None


def parse_verdicts(text: str | None, n: int) -> list[ClaimVerdict] | None:
    """The verification reply -> one verdict per claim, in order; ``None`` unless every claim has a readable one."""
    for obj in json_objects(text):
        items = {str(k).lower(): v for k, v in obj.items()}.get("verdicts")
        if not isinstance(items, list):
            continue
        got: dict[int, ClaimVerdict] = {}
        for pos, item in enumerate(items, 1):
            if not isinstance(item, dict):
                continue
            low = {str(k).lower(): v for k, v in item.items()}
            try:
                i = int(low.get("claim", pos))
            except (TypeError, ValueError):
                i = pos
            word = _verdict_word(low.get("verdict"))
            if word is not None and 1 <= i <= n:
                got.setdefault(i, ClaimVerdict(word, str(low.get("explanation") or "").strip(),
                                               str(low.get("evidence") or "").strip()))
        if len(got) == n:
            return [got[i] for i in range(1, n + 1)]
    return None


# --- the two steps ---------------------------------------------------------------------------------------------

@dataclass
class AnswerClaims:
    hit: Hit
    segments: list[Segment]
    claims: list[Claim] | None = None  # None: the extraction failed or was unreadable
    extraction_error: str | None = None
    extraction_failed_call: bool = False  # the call itself failed (not an unreadable reply)
    verdicts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (judge repeat, claim) -> row


@dataclass
class ClaimsJudged:
    answers: dict[tuple[str, str, int], AnswerClaims]
    stats: PromptStats
    retried: int = 0
    unreadable: int = 0  # replies still unreadable after the stricter asking (extractions and verifications)
    rows: list[dict[str, Any]] = field(default_factory=list)  # claims.jsonl


def _ask(who: Prompted, jobs: list[PromptJob], readable: Callable[[PromptJob, Completion], bool], strict: str,
         settings: CallSettings, stats: PromptStats, label: str, result: ClaimsJudged) -> dict[str, tuple[PromptJob, CallResult]]:
    """Every job answered once; a reply that cannot be read is asked once more with ``strict`` appended."""
    done: dict[str, tuple[PromptJob, CallResult]] = {}

    def record(job: PromptJob, request: Any, res: CallResult) -> dict[str, Any]:
        done[job.context_id] = (job, res)
        return {}

    run_prompts(who, jobs, record, settings, stats, label=label)
    again = [j for j in jobs if done[j.context_id][1].completion is not None
             and not readable(j, done[j.context_id][1].completion)]
    if again and not stats.aborted:
        result.retried += len(again)
        strict_jobs = [PromptJob(j.context_id, j.text, strict_messages(j.messages, strict), j.articles, j.repeat,
                                 j.payload) for j in again]
        run_prompts(who, strict_jobs, record, settings, stats, label=f"{label} (unreadable, asked again)")
    result.unreadable += sum(1 for j in jobs if done[j.context_id][1].completion is not None
                             and not readable(j, done[j.context_id][1].completion))
    return done


def _has_list(text: str | None, key: str) -> bool:
    """Only replies holding the list asked for are cached (one short of a verdict is asked again, stricter)."""
    return any(isinstance({str(k).lower(): v for k, v in o.items()}.get(key), list) for o in json_objects(text))


def _sources(hit: Hit, claim: Claim, kb: Any, cited_any: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """The article IDs a claim is checked against, and those of them missing from the KB."""
    ids = claim.citations or cited_any or tuple(hit.retrieved)
    return ids, [i for i in ids if i not in kb.by_id]


def check_claims(judge: Any, template: ClaimsTemplate, hits: list[Hit], kb: Any, repeats: int,
                 settings: CallSettings, segments: dict[tuple[str, str, int], list[Segment]] | None = None) -> ClaimsJudged:
    """Extract the claims of every answer in ``hits``, then verify them; returns every verdict, by answer.
    ``segments``: answers already cut by their own citation reading (a system citing its own references)."""
    kb_ids = set(kb.by_id)
    segments = segments or {}
    result = ClaimsJudged({h.key: AnswerClaims(h, segments[h.key] if h.key in segments else
                                               segment_answer(h.text, kb_ids)) for h in hits}, PromptStats())
    spec, provider = judge.spec, judge.provider
    extractor = Prompted(spec, provider, EXTRACT_KIND, template.sha256, EXTRACT_SCHEMA,
                         accept=lambda c: _has_list(c.text, "claims"))
    jobs = []
    for key, a in result.answers.items():
        if not a.segments:
            a.claims = []  # nothing to extract (an empty answer): no call
            continue
        payload = json.dumps([[s.index, s.claim] for s in a.segments], ensure_ascii=False)
        jobs.append(PromptJob(f"claims:extract:{'|'.join(map(str, key))}", payload, template.extract(a.segments),
                              payload=key))
    done = _ask(extractor, jobs, lambda j, c: parse_claims(c.text, result.answers[j.payload].segments) is not None,
                STRICT_EXTRACT, settings, result.stats, "claims: extracting", result)
    for job, res in done.values():
        a = result.answers[job.payload]
        comp = res.completion
        a.claims = parse_claims(comp.text, a.segments) if comp is not None else None
        if a.claims is None:
            a.extraction_error = res.error.message if res.error else "no readable claims in the reply, asked twice"
            a.extraction_failed_call = res.error is not None

    verifier = Prompted(spec, provider, VERIFY_KIND, template.sha256, VERIFY_SCHEMA,
                        accept=lambda c: _has_list(c.text, "verdicts"))
    vjobs = []
    now = clock_now()
    for key, a in result.answers.items():
        if not a.claims:
            continue
        cited_any = tuple(dict.fromkeys(i for c in a.claims for i in c.citations)) or a.hit.cited_ids
        groups: dict[tuple[str, ...], list[Claim]] = {}
        for c in a.claims:
            ids, missing = _sources(a.hit, c, kb, cited_any)
            if missing or not ids:
                why = (f"cited article(s) {', '.join(missing)} not in the KB" if missing
                       else "no article to check it against (the answer cites none and none was shown)")
                for r in range(repeats):
                    a.verdicts[(r, c.index)] = _row(judge, template, a, c, r, ids, "missing_article" if missing else
                                                    "no_source", ClaimVerdict("unsupported", why), now)
                continue
            groups.setdefault(ids, []).append(c)
        for ids, claims in groups.items():
            sources = [SourceArticle(i, kb.by_id[i].title, kb.by_id[i].text) for i in ids]
            messages = template.verify([c.text for c in claims], sources)
            arts = [RetrievedArticle(s.id, s.title, s.text, 0.0) for s in sources]
            text = json.dumps([c.text for c in claims], ensure_ascii=False)
            for r in range(repeats):
                vjobs.append(PromptJob(f"claims:verify:{'|'.join(map(str, key))}|{','.join(ids)}|{r}", text, messages,
                                       arts, repeat=r, payload=(key, ids, [c.index for c in claims], r)))
    done = _ask(verifier, vjobs, lambda j, c: parse_verdicts(c.text, len(j.payload[2])) is not None,
                STRICT_VERIFY, settings, result.stats, "claims: verifying", result)
    for job, res in done.values():
        key, ids, indexes, r = job.payload
        a = result.answers[key]
        comp = res.completion
        verdicts = parse_verdicts(comp.text, len(indexes)) if comp is not None else None
        for n, ci in enumerate(indexes):
            v = verdicts[n] if verdicts else ClaimVerdict(None, res.error.message if res.error else "unreadable")
            a.verdicts[(r, ci)] = _row(judge, template, a, a.claims[ci], r, ids, "judge", v, now, res)
    for a in result.answers.values():
        if a.claims is None:
            result.rows.append({"model": a.hit.model, "question_id": a.hit.question_id, "repeat": a.hit.repeat,
                                "kind": "extraction_failed", "error": a.extraction_error, "answer_hash": a.hit.answer_hash,
                                "judge": spec.name, "template": template.name, "template_hash": template.sha256})
        result.rows += [a.verdicts[k] for k in sorted(a.verdicts)]
    return result


def _row(judge: Any, template: ClaimsTemplate, a: AnswerClaims, c: Claim, r: int, ids: tuple[str, ...], source: str,
         v: ClaimVerdict, now: str, res: CallResult | None = None) -> dict[str, Any]:
    return {
        "kind": "claim", "model": a.hit.model, "question_id": a.hit.question_id, "repeat": a.hit.repeat,
        "judge_repeat": r, "claim_index": c.index, "segment_index": c.segment, "claim": c.text,
        "citations": list(c.citations), "checked_against": list(ids), "source": source, "verdict": v.verdict,
        "explanation": v.explanation, "evidence": v.evidence, "answer_hash": a.hit.answer_hash,
        "judge": judge.spec.name, "template": template.name, "template_hash": template.sha256,
        "cached": bool(res and res.cached), "cost_usd": res.cost_usd if res else 0.0,
        "error": res.error.message if res is not None and res.error else None, "created_at": now,
    }
