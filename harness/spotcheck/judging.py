"""Judge calls through the same engine as ``grace run`` (see :mod:`harness.runner.calls`).

So the spot-check inherits the response cache, retries with Retry-After,
rate limits, per-model concurrency and cost accounting: checking 200 answers
is one judge pass, and checking them again costs nothing. The cache key holds
everything that determines a verdict, including the judge template's hash and
the judge repeat (so ``--repeats`` makes fresh calls, not cache hits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.providers.base import ModelSpec, Provider, Request, RetrievedArticle
from harness.runner.calls import CallSettings, CallStats, Prompted, PromptJob, run_prompts
from harness.runner.engine import CallResult
from harness.spotcheck.judge import JUDGE_SCHEMA, JudgeTemplate, SourceArticle

JudgeSettings = CallSettings
__all__ = ["CallStats", "Judge", "JudgeJob", "JudgeSettings", "run_jobs"]


@dataclass
class Judge:
    spec: ModelSpec
    provider: Provider
    template: JudgeTemplate

    @property
    def kind(self) -> str:
        if self.spec.provider == "baseline":
            return "lexical"
        return "scripted" if self.spec.provider == "scripted" else "llm"


@dataclass
class JudgeJob:
    """One call: a claim, what it is checked against, and the judge repeat."""

    context_id: str  # RequestContext.question_id: how scripted judges find their reply
    claim: str
    messages: list[dict[str, str]]
    sources: list[SourceArticle]
    judge_repeat: int = 0
    payload: Any = None  # the caller's own data, handed back in record()


def run_jobs(judge: Judge, jobs: list[JudgeJob], record: Callable[[JudgeJob, Request, CallResult], dict[str, Any]],
             settings: CallSettings, stats: CallStats, out: Any = None, label: str = "judging") -> list[dict[str, Any]]:
    """One batch of judge calls, start to finish; returns the recorded rows in completion order."""
    who = Prompted(judge.spec, judge.provider, kind="grace-spotcheck-judge", template_hash=judge.template.sha256,
                   json_schema=JUDGE_SCHEMA)
    prompts = [PromptJob(j.context_id, j.claim, j.messages, [RetrievedArticle(a.id, a.title, a.text, 0.0) for a in j.sources],
                         repeat=j.judge_repeat, payload=j) for j in jobs]
    return run_prompts(who, prompts, lambda job, request, result: record(job.payload, request, result),
                       settings, stats, out, label)
