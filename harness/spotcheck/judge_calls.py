"""Judge calls through the same engine as ``grace run`` (see :mod:`harness.runner.calls`).

So the spot-check inherits the response cache, retries with Retry-After,
rate limits, per-model concurrency and cost accounting: checking 200 answers
is one judge pass, and checking them again costs nothing. The cache key holds
everything that determines a verdict, including the judge template's hash and
the judge repeat (so ``--repeats`` makes fresh calls, not cache hits).

A reply with no readable verdict is recorded but never cached (``Prompted.accept``),
and asked once more with the stricter instruction appended
(:func:`harness.spotcheck.judge_prompt.strict_messages`): another prompt, so another
cache key, and the row says ``retry``. If that reply is unreadable too, the
segment stays unjudged, and the next run asks both again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from harness.providers.base import Completion, ModelSpec, Provider, Request, RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats, run_prompts
from harness.runner.engine import CallResult
from harness.spotcheck.claims import ClaimsTemplate, load_claims_template
from harness.spotcheck.judge_prompt import (
    JUDGE_SCHEMA,
    JudgeTemplate,
    SourceArticle,
    load_judge_template,
    parse_verdict,
    strict_messages,
)

JudgeSettings = CallSettings
__all__ = ["PromptStats", "Judge", "JudgeJob", "JudgeSettings", "run_jobs"]


def mode_template(mode: str, spec: str | None = None, language: str | None = None) -> JudgeTemplate | ClaimsTemplate:
    """The judge's template for ``mode``: ``spec`` (``--template``) when given, else the mode's built-in one
    (``claims.v1`` or ``judge.v1``) in ``language`` when grace has it."""
    return load_claims_template(spec, language) if mode == "claims" else load_judge_template(spec, language)


@dataclass
class Judge:
    spec: ModelSpec
    provider: Provider
    template: JudgeTemplate | ClaimsTemplate | None  # None until the KB's language is known (:meth:`in_language`)

    @property
    def kind(self) -> str:
        if self.spec.provider == "baseline":
            return "lexical"
        return "scripted" if self.spec.provider == "scripted" else "llm"

    def in_language(self, mode: str, language: str | None) -> Judge:
        """This judge with its template: the one it was given (``--template`` wins), else ``mode``'s built-in one in
        ``language`` (the KB's), so a French KB's answers are checked with French prompts."""
        return self if self.template is not None else replace(self, template=mode_template(mode, None, language))


@dataclass
class JudgeJob:
    """One call: a claim, what it is checked against, and the judge repeat."""

    context_id: str  # RequestContext.question_id: how scripted judges find their reply
    claim: str
    messages: list[dict[str, str]]
    sources: list[SourceArticle]
    judge_repeat: int = 0
    payload: Any = None  # the caller's own data, handed back in record()
    retry: bool = False  # the stricter second asking of a job whose first reply had no readable verdict


def readable(completion: Completion) -> bool:
    """Whether a reply holds a verdict: only those are cached."""
    return parse_verdict(completion.text).supported is not None


def run_jobs(judge: Judge, jobs: list[JudgeJob], record: Callable[[JudgeJob, Request, CallResult], dict[str, Any]],
             settings: CallSettings, stats: PromptStats, out: Any = None, label: str = "judging",
             retry_unreadable: bool = True) -> list[dict[str, Any]]:
    """One batch of judge calls, start to finish; returns the recorded rows in completion order.

    Every job whose reply had no readable verdict is then asked once more with
    the stricter prompt (``job.retry`` is True in its ``record`` call); its row
    comes after the first one.
    """
    who = Prompted(judge.spec, judge.provider, kind="grace-spotcheck-judge", template_hash=judge.template.sha256,
                   json_schema=JUDGE_SCHEMA, accept=readable)
    unreadable: list[JudgeJob] = []

    def recorded(job: PromptJob, request: Request, result: CallResult) -> dict[str, Any]:
        comp = result.completion
        if comp is not None and not job.payload.retry and not readable(comp):
            unreadable.append(job.payload)
        return record(job.payload, request, result)

    def prompts(batch: list[JudgeJob]) -> list[PromptJob]:
        return [PromptJob(j.context_id, j.claim, j.messages,
                          [RetrievedArticle(a.id, a.title, a.text, 0.0) for a in j.sources],
                          repeat=j.judge_repeat, payload=j) for j in batch]

    rows = run_prompts(who, prompts(jobs), recorded, settings, stats, out, label)
    if retry_unreadable and unreadable and not stats.aborted:
        again = [replace(j, messages=strict_messages(j.messages), retry=True) for j in unreadable]
        rows += run_prompts(who, prompts(again), recorded, settings, stats, out, f"{label} (unreadable, asked again)")
    return rows
