"""Proposals from a model: the prompt, one batch of calls through grace's engine, the replies read.

Like the labeler and the question generator (:mod:`annotations.labeler`, :mod:`annotations.generate`), a
proposer is "ask one model these prompts": the engine of ``grace run``
(:mod:`harness.runner.calls`) gives it the response cache (asking again costs
nothing), retries, prices, ``--redact-pii`` and dry-run estimates. The prompt is
a versioned template (``harness/kb_curate/templates/proposal.v1.txt``, in the KB's
language when grace has a translation) whose hash is in the cache key.
``baseline:heuristic`` (:func:`harness.kb_curate.proposals.baseline_proposal`) makes no
call at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness.core.errors import GraceError
from harness.kb_curate.proposals import (
    BASELINE,
    KINDS,
    OUTPUT_TOKENS,
    Proposal,
    ProposalInput,
    baseline_proposal,
    parse_reply,
)
from harness.prompts.template_files import SectionTemplate, builtin_in_language, find_template, split_sections
from harness.providers.base import ModelSpec, Provider, Request
from harness.runner.calls import CallSettings, Estimate, Prompted, PromptJob, PromptStats, estimate_prompts, run_prompts
from harness.runner.engine import CallResult
from harness.runner.model_options import ModelOptions, ready_model

TEMPLATES_DIR = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "proposal.v1"
KIND = "grace-proposal"  # in the cache key: a proposal never answers another caller's prompt
_SECTION = re.compile(r"^=== (system|rewrite|merge|split) ===\s*$", re.M)
_STR = {"type": "string"}
SCHEMAS: dict[str, dict[str, Any]] = {
    "rewrite": {"title": "rewrite", "type": "object", "additionalProperties": False,
                "properties": {"reason": _STR, "title": _STR, "text": _STR}, "required": ["reason", "title", "text"]},
    "merge": {"title": "merge", "type": "object", "additionalProperties": False,
              "properties": {"reason": _STR, "keep": _STR, "title": _STR, "text": _STR},
              "required": ["reason", "keep", "title", "text"]},
    "split": {"title": "split", "type": "object", "additionalProperties": False,
              "properties": {"reason": _STR, "at": {"type": "integer"}, "titles": {"type": "array", "items": _STR}},
              "required": ["reason", "at", "titles"]},
}


@dataclass(frozen=True)
class ProposalTemplate(SectionTemplate):
    placeholder: ClassVar[re.Pattern[str]] = re.compile(r"\{\{\s*(finding|article|context|articles|paragraphs)\s*\}\}")

    def render(self, inp: ProposalInput) -> list[dict[str, str]]:
        def show(a: dict[str, str]) -> str:
            return f"[ID: {a['id']}] {a['title']}\n{a['text'].strip()}"

        values = {
            "finding": inp.finding or f"lint asks for a {inp.kind}",
            "article": show(inp.articles[0]),
            "context": "\n\n".join(f"({what})\n{text}" for what, text in inp.context) or "(none found)",
            "articles": "\n\n".join(show(a) for a in inp.articles),
            "paragraphs": "\n\n".join(f"[{i}] {p}" for i, p in enumerate(inp.paragraphs, 1)),
        }
        return self._messages(inp.kind, values)


def load_proposal_template(spec: str | None = None, language: str | None = None) -> ProposalTemplate:
    """A built-in name (``proposal.v1``) or a template file; with neither, ``proposal.v1`` in ``language``."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "proposal template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    missing = [k for k in KINDS if k not in sections]
    if missing:
        raise GraceError(f"proposal template {path}: no '=== {missing[0]} ===' section (see "
                         "harness/kb_curate/templates/proposal.v1.txt)")
    return ProposalTemplate.from_text(path.stem, text, sections)


@dataclass
class Proposer:
    """Who proposes: ``baseline:heuristic`` (no model) or a model asked with the proposal template."""

    name: str
    spec: ModelSpec | None = None
    provider: Provider | None = None
    template: ProposalTemplate | None = None

    @property
    def offline(self) -> bool:
        return self.spec is None

    def prompted(self, kind: str) -> Prompted:
        assert self.spec is not None and self.provider is not None and self.template is not None
        return Prompted(self.spec, self.provider, kind=f"{KIND}-{kind}", template_hash=self.template.sha256,
                        json_schema=SCHEMAS[kind])

    def job(self, n: int, inp: ProposalInput) -> PromptJob:
        assert self.template is not None
        return PromptJob(f"{inp.kind}:{'+'.join(inp.ids)}", inp.finding, self.template.render(inp), payload=n)


def make_proposer(text: str, *, options: ModelOptions | None = None, prices: Path | None = None,
                  language: str | None = None, template: str | None = None, ready: bool = True) -> Proposer:
    """``baseline:heuristic`` or ``PROVIDER:MODEL`` (checked and priced now: a missing key fails before any click;
    ``ready=False``, a dry run, only warns of it)."""
    if text.strip() in (BASELINE, "baseline"):
        return Proposer(BASELINE)
    if text.startswith("baseline:"):
        raise GraceError(f"proposer {text!r}: the offline proposer is {BASELINE}; or name a model "
                         "(openai:..., anthropic:..., google:...)")
    opts = (options or ModelOptions()).with_default_max_tokens(OUTPUT_TOKENS)
    spec, provider = ready_model(text, role="proposer", options=opts, prices=prices, ready=ready)
    return Proposer(spec.name, spec, provider, load_proposal_template(template, language))


def propose(proposer: Proposer, inputs: Sequence[ProposalInput], settings: CallSettings,
            stats: PromptStats | None = None) -> list[Proposal]:
    """One proposal per input, in order. Failed calls and unusable replies come back rejected (``error`` set);
    a failed call is not cached, so asking again calls again."""
    if proposer.offline:
        return [baseline_proposal(inp) for inp in inputs]
    stats = stats if stats is not None else PromptStats()
    out: dict[int, Proposal] = {}
    for kind in KINDS:
        jobs = [proposer.job(n, inp) for n, inp in enumerate(inputs) if inp.kind == kind]
        if not jobs:
            continue

        def record(job: PromptJob, request: Request, result: CallResult) -> dict[str, Any]:
            inp = inputs[job.payload]
            if result.completion is None:
                err = result.error.message if result.error else "no answer"
                p = Proposal(kind=inp.kind, articles=inp.ids, finding=inp.finding_kind,  # type: ignore[arg-type]
                             model=proposer.name, error=f"the call failed: {err}"[:500])
            else:
                p = parse_reply(inp, result.completion.text, proposer.name)
            p.cached, p.cost_usd = result.cached, 0.0 if result.cached else result.cost_usd
            return {"n": job.payload, "proposal": p}

        for row in run_prompts(proposer.prompted(kind), jobs, record, settings, stats, label="proposals"):
            out[row["n"]] = row["proposal"]
    return [out[n] for n in range(len(inputs))]


def estimate(proposer: Proposer, inputs: Sequence[ProposalInput], settings: CallSettings) -> list[Estimate]:
    """What proposing for ``inputs`` would cost, per kind, as ``--dry-run`` shows it; no call is made."""
    if proposer.offline:
        return [Estimate("proposals", BASELINE, cost_usd_est=0.0)]
    rows = []
    for kind in KINDS:
        jobs = [proposer.job(n, inp) for n, inp in enumerate(inputs) if inp.kind == kind]
        if jobs:
            rows.append(estimate_prompts(proposer.prompted(kind), jobs, settings, f"{kind} proposals",
                                         OUTPUT_TOKENS if kind != "split" else 80))
    return rows
