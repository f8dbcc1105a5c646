"""Offline baselines: the floor every leaderboard gets, and the demo's models.

``baseline:top1`` trusts retrieval completely: it cites the top article and
quotes its sentence that shares most words with the question. Its accuracy is
roughly recall@1 on answerable questions, so any LLM below it is adding harm.
``baseline:threshold`` does the same but refuses when the top retrieval score is
low, which is the cheapest possible refusal policy to beat. Its cut is fitted
by cross-fitting (each question's on the other folds' questions), so it answers
every gold question, like every other model, without ever being scored on a
question its own cut was fitted on.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from harness.core.errors import GraceError
from harness.prompts import REFUSAL
from harness.prompts.languages import REFUSALS
from harness.providers.base import Completion, ModelSpec, Provider, Request, RunContext

FOLDS = 5  # cross-fitting folds of baseline:threshold
_WORD = re.compile(r"[a-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_STOP = frozenset("a an the of to in on for and or is are do does i my me we our you your can how what when who which with be it at by as from if not".split())


def best_sentence(question: str, text: str, language: str = "en") -> str:
    """The article's sentence sharing most words with the question (the longer one on a tie). English reads a-z
    words less a short stop list, as it always did; another language its own stems and stop words, or a French
    article was read for "les" and "de" only, and its longest sentence quoted whatever was asked."""
    if language == "en":
        def read(t: str) -> set[str]:
            return set(_WORD.findall(t.lower()))
        q = read(question) - _STOP
    else:
        from kb_builder import language as lang

        def read(t: str) -> set[str]:
            return set(lang.terms(t, language))
        q = read(question)
    best, best_score = "", -1.0
    for s in _SENT.split(text):
        s = _EMPHASIS.sub("", s).strip().lstrip("#-*> ").strip()
        if len(s) < 15:
            continue
        words = read(s)
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

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._cut: dict[str, float] = {}  # question_id -> its cross-fitted threshold
        self._calibration: dict[str, Any] | None = None

    def check_ready(self) -> None:
        if self.spec.model not in self.KINDS:
            raise GraceError(f"baseline:{self.spec.model}: unknown baseline; use baseline:top1 or baseline:threshold")
        if self.spec.model == "threshold" and self.spec.options.get("threshold") is None and self._calibration is None:
            raise GraceError("baseline:threshold needs a threshold (--threshold X, or let grace run fit one)")

    def prepare_run(self, context: RunContext) -> None:
        """``baseline:threshold`` without a fixed threshold fits one per fold of the questions (cross-fitting).

        The questions are dealt into ``FOLDS`` seeded folds; each fold's cut is the
        best on the other folds' questions and is applied to its own, so every
        question is answered and none by a cut fitted on it. ``spec.options`` gets
        the cuts and a hash of the folds (part of each call's key, so a resumed run
        redoes answers whose cut changed); ``learned()`` puts the folds in run.json.
        """
        opts = self.spec.options
        if self.spec.model != "threshold" or opts.get("threshold") is not None:
            return
        if context.options.get("threshold") is not None:
            opts["threshold"] = float(context.options["threshold"])
            return
        import random

        if not any(q.must_refuse or q.expected_citations for q in context.questions):
            raise GraceError("baseline:threshold fits its refusal cut on the gold labels, and these questions carry "
                             "none: give the cut (--threshold X) or use baseline:top1")
        ids = sorted(q.question_id for q in context.questions)
        random.Random(context.seed).shuffle(ids)
        k = max(1, min(FOLDS, len(ids)))
        folds = [sorted(ids[i::k]) for i in range(k)]
        seen = {}
        for q in context.questions:
            arts = context.retrieved[q.question_id]
            top = arts[0] if arts else None
            seen[q.question_id] = (top.score if top else 0.0, q.must_refuse, bool(top and top.id in q.expected_citations))
        cuts = [round(fit_threshold([seen[q] for j, other in enumerate(folds) if j != i for q in other]), 6)
                for i in range(k)]
        self._cut = {q: cut for fold, cut in zip(folds, cuts, strict=True) for q in fold}
        opts["threshold_folds"] = cuts
        opts["folds_sha256"] = hashlib.sha256(json.dumps(folds).encode()).hexdigest()[:16]
        self._calibration = {"method": "cross-fitting", "seed": context.seed,
                             "folds": [{"threshold": c, "questions": f} for f, c in zip(folds, cuts, strict=True)]}

    def learned(self) -> dict[str, Any]:
        return {"calibration": self._calibration} if self._calibration else {}

    def _threshold(self, question_id: str) -> float:
        fixed = self.spec.options.get("threshold")
        if fixed is not None:
            return float(fixed)
        try:
            return self._cut[question_id]
        except KeyError:
            raise GraceError(f"baseline:threshold: question {question_id!r} was not among the questions its "
                             "threshold was fitted on; give --threshold X") from None

    async def complete(self, request: Request) -> Completion:
        ctx = request.context
        if ctx is None or not ctx.articles:
            return Completion(format_answer(_refusal(request), None, request.output_mode), finish_reason="stop")
        top = ctx.articles[0]
        if self.spec.model == "threshold" and top.score < self._threshold(ctx.question_id):
            return Completion(format_answer(_refusal(request), None, request.output_mode), finish_reason="stop")
        return Completion(format_answer(best_sentence(ctx.question, top.text, _language(request)), top.id,
                                        request.output_mode), finish_reason="stop")


def _language(request: Request) -> str:
    """The prompt's language, told by the refusal sentence it asks for (a French KB's template asks for the French
    one), as a model reads it from the prompt."""
    prompt = "\n".join(m.get("content", "") for m in request.messages)
    return next((code for code, s in REFUSALS.items() if s in prompt), "en")


def _refusal(request: Request) -> str:
    """The refusal sentence the prompt asks for, as a model would."""
    return REFUSALS.get(_language(request), REFUSAL)


def fit_threshold(scored: list[tuple[float, bool, bool]]) -> float:
    """Best refusal threshold on calibration questions.

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
