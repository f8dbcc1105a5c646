"""Offline baselines: the floor every leaderboard gets, and the demo's models.

``baseline:top1`` trusts retrieval completely: it cites the top article and
quotes its sentence that shares most words with the question. Its accuracy is
roughly recall@1 on answerable questions, so any LLM below it is adding harm.
``baseline:threshold`` does the same but refuses when the top retrieval score is
low, which is the cheapest possible refusal policy to beat.
"""

from __future__ import annotations

import json
import re

from harness.core.errors import GraceError
from harness.prompts import REFUSAL
from harness.providers.base import Completion, Provider, Request, RunContext

_WORD = re.compile(r"[a-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_STOP = frozenset("a an the of to in on for and or is are do does i my me we our you your can how what when who which with be it at by as from if not".split())


def best_sentence(question: str, text: str) -> str:
    q = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    best, best_score = "", -1.0
    for s in _SENT.split(text):
        s = _EMPHASIS.sub("", s).strip().lstrip("#-*> ").strip()
        if len(s) < 15:
            continue
        words = set(_WORD.findall(s.lower()))
        score = len(q & words) + 0.001 * min(len(s), 200)
        if score > best_score:
            best, best_score = s, score
    return best or text.strip().split("\n")[0][:300]


def format_answer(answer: str, citation: str | None, mode: str) -> str:
    if mode == "json":
        return json.dumps({"answer": answer, "citation": citation}, ensure_ascii=False)
    return answer if citation is None else f"{answer} [ID: {citation}]"


class BaselineProvider(Provider):
    provider_name = "baseline"
    needs_network = False
    KINDS = ("top1", "threshold")

    def check_ready(self) -> None:
        if self.spec.model not in self.KINDS:
            raise GraceError(f"baseline:{self.spec.model}: unknown baseline; use baseline:top1 or baseline:threshold")
        if self.spec.model == "threshold" and self.spec.options.get("threshold") is None:
            raise GraceError("baseline:threshold needs a threshold (--threshold X, or let grace run fit one)")

    def prepare_run(self, context: RunContext) -> None:
        """``baseline:threshold`` fits its cut on a seeded calibration split, which it then does not answer."""
        opts = self.spec.options
        if self.spec.model != "threshold" or opts.get("threshold") is not None:
            return
        if context.options.get("threshold") is not None:
            opts["threshold"] = float(context.options["threshold"])
            return
        import random

        share = float(context.options.get("calibration_share", 0.3))
        ids = sorted(q.question_id for q in context.questions)
        n = max(1, min(len(ids) - 1, round(len(ids) * share)))
        calib = set(random.Random(context.seed).sample(ids, n))
        scored = []
        for q in context.questions:
            if q.question_id in calib:
                arts = context.retrieved[q.question_id]
                top = arts[0] if arts else None
                scored.append((top.score if top else 0.0, q.must_refuse, bool(top and top.id in q.expected_citations)))
        opts["threshold"] = round(fit_threshold(scored), 6)
        opts["calibration_question_ids"] = sorted(calib)

    async def complete(self, request: Request) -> Completion:
        ctx = request.context
        if ctx is None or not ctx.articles:
            return Completion(format_answer(REFUSAL, None, request.output_mode), finish_reason="stop")
        top = ctx.articles[0]
        if self.spec.model == "threshold" and top.score < float(self.spec.options["threshold"]):
            return Completion(format_answer(REFUSAL, None, request.output_mode), finish_reason="stop")
        return Completion(format_answer(best_sentence(ctx.question, top.text), top.id, request.output_mode), finish_reason="stop")


def fit_threshold(scored: list[tuple[float, bool, bool]]) -> float:
    """Best refusal threshold on a calibration split.

    ``scored`` holds (top retrieval score, must_refuse, top article is correct).
    A question is a hit if it is refused and must_refuse, or answered and its
    top article is correct; the cut that maximises hits wins (ties: the lowest).
    """
    if not scored:
        return 0.0
    cuts = sorted({s for s, _, _ in scored} | {0.0})
    best, best_hits = 0.0, -1
    for cut in cuts + [max(cuts) + 1e-6]:
        hits = sum((s < cut and refuse) or (s >= cut and not refuse and ok) for s, refuse, ok in scored)
        if hits > best_hits:
            best, best_hits = cut, hits
    return float(best)
