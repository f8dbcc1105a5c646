"""The LLM labeler: an LLM reads a question with its top-k articles and names the one(s) that fully answer it.

It is one more way to pre-label gold questions (``grace annotations suggest
--labeler``) and the check on generated questions (``grace gold generate``).
The prompt is a versioned template file (``annotations/templates/labeler.v1.txt``)
whose hash is in the cache key; the answer is JSON, schema-enforced where the
API can (``{"reason": ..., "article_ids": [...], "none": ...}``, reason first
so a model writing left to right reasons before it decides).

Reading the answer is lenient about form (code fences, prose around the
object, an ID given as a number) and strict about content: an ID that was not
among the shown articles is dropped and said so in the reason, and an answer
with no usable decision is flagged ``labeler_error``, never guessed. A
suggestion is only ever a proposal: a person accepts it in ``grace annotate``.

``baseline:top1`` is an offline labeler (the top retrieved article, always),
so the command and its tests run without a key; it is exactly as good as
retrieval@1 and no better.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotations.suggest import HasQuestion
from annotations.suggestions import Suggestion, label_of
from harness.core.errors import GraceError
from harness.core.json_text import first_json_object
from harness.prompts.languages import template_language
from harness.prompts.template_files import (
    builtin_in_language,
    chat_messages,
    find_template,
    split_sections,
    template_sha,
)
from harness.providers.base import Completion, ModelSpec, Provider, Request, RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats, estimate_prompts, progress, run_prompts
from harness.runner.engine import CallResult
from harness.runner.model_options import ModelOptions, call_settings, call_summary, print_estimates, ready_model

TEMPLATES_DIR = Path(__file__).parent / "templates"  # apart from grace run's answer templates

DEFAULT_TEMPLATE = "labeler.v1"
KIND = "grace-labeler"  # in the cache key: a labeler's answer never serves another caller's prompt
_SECTION = re.compile(r"^=== (system|user) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(articles|question)\s*\}\}")
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0", ""}
OUTPUT_TOKENS_EST = 80  # one sentence and a few IDs

LABEL_SCHEMA = {
    "title": "label",
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "article_ids": {"type": "array", "items": {"type": "string"}},
        "none": {"type": "boolean"},
    },
    "required": ["reason", "article_ids", "none"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class LabelerTemplate:
    name: str
    system: str
    user: str
    sha256: str
    language: str = "en"  # its "# language: xx" header line

    def render(self, question: str, articles: Sequence[RetrievedArticle]) -> list[dict[str, str]]:
        values = {"question": question,
                  "articles": "\n\n".join(f"[ID: {a.id}] {a.title}\n{a.text.strip()}" for a in articles)}
        return chat_messages(self.system, self.user, values, _PLACEHOLDER)


def load_labeler_template(spec: str | None = None, language: str | None = None) -> LabelerTemplate:
    """A built-in name (``labeler.v1``) or a path to a template file; with neither, ``labeler.v1`` in ``language``."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "labeler template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    both = sections.get("system", "") + sections.get("user", "")
    if "{{question}}" not in both.replace(" ", "") or "{{articles}}" not in both.replace(" ", ""):
        raise GraceError(f"labeler template {path}: needs '=== user ===' (and optionally '=== system ===') with "
                         "{{question}} and {{articles}} (see annotations/templates/labeler.v1.txt)")
    return LabelerTemplate(path.stem, sections.get("system", ""), sections.get("user", ""), template_sha(text),
                           template_language(text))


@dataclass(frozen=True)
class Label:
    """What the labeler said about one question: article IDs, or none; ``error`` when it said nothing usable."""

    article_ids: tuple[str, ...] = ()
    none: bool = False
    reason: str = ""
    error: str | None = None

    @property
    def suggested(self) -> str:
        return "" if self.error else label_of(self.article_ids, self.none)


def json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object in a reply: the whole text, a fenced block, or one inside prose."""
    return first_json_object(text)


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None


def _ids(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [p for p in re.split(r"[;,\s]+", str(value)) if p]
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            return None
        v = str(v).strip()
        v = re.sub(r"^\[?\s*ID:\s*|\s*\]$", "", v, flags=re.I)  # "[ID: 17]" written as shown in the prompt
        if v and v not in out:
            out.append(v)
    return out


def parse_label(text: str | None, shown: Sequence[str]) -> Label:
    """The labeler's reply -> a :class:`Label`; IDs that were not shown are dropped, and the reason says so."""
    if not text or not text.strip():
        return Label(error="empty reply")
    obj = json_object(text)
    if obj is None:
        return Label(reason=text.strip()[:300], error="no JSON object in the reply")
    lower = {str(k).lower(): v for k, v in obj.items()}
    reason = " ".join(str(lower.get("reason") or lower.get("explanation") or "").split())[:500]
    ids = _ids(lower.get("article_ids", lower.get("ids")))
    none = _as_bool(lower.get("none"))
    if ids is None or none is None:
        return Label(reason=reason, error="article_ids must be a list of IDs and none true or false")
    unknown = [i for i in ids if i not in shown]
    ids = [i for i in ids if i in shown]
    if unknown:
        reason = f"{reason} [ignored ID(s) not shown: {', '.join(unknown)}]".strip()
    if none and ids:
        return Label(tuple(ids), False, reason, "said none and named article(s)")
    if not none and not ids:
        why = "named only article(s) that were not shown" if unknown else "named no article and did not say none"
        return Label((), False, reason, why)
    return Label(tuple(sorted(ids)), bool(none), reason)


class TopRetrievedLabeler(Provider):
    """``baseline:top1`` as a labeler: the top retrieved article, in the labeler's JSON, with no call."""

    provider_name = "baseline"
    needs_network = False

    async def complete(self, request: Request) -> Completion:
        arts = request.context.articles if request.context else []
        if not arts:
            answer = {"reason": "baseline:top1: nothing was retrieved", "article_ids": [], "none": True}
        else:
            answer = {"reason": f"baseline:top1: the top retrieved article (score {arts[0].score:.3f})",
                      "article_ids": [arts[0].id], "none": False}
        return Completion(json.dumps(answer), finish_reason="stop")


OFFLINE_LABELERS = {"top1": TopRetrievedLabeler}


@dataclass
class Labeler:
    spec: ModelSpec
    provider: Provider
    template: LabelerTemplate

    @property
    def source(self) -> str:
        return f"labeler:{self.spec.name}"

    def prompted(self) -> Prompted:
        return Prompted(self.spec, self.provider, kind=KIND, template_hash=self.template.sha256, json_schema=LABEL_SCHEMA)

    def job(self, qid: str, question: str, articles: list[RetrievedArticle], payload: Any = None) -> PromptJob:
        return PromptJob(qid, question, self.template.render(question, articles), articles, payload=payload)


def make_labeler(text: str, *, timeout: float | None = None, prices: Path | None = None,
                 template: str | None = None, options: ModelOptions | None = None,
                 language: str | None = None, ready: bool = True) -> Labeler:
    """The labeler ``text`` names, asked with ``template``, else with ``labeler.v1`` in ``language`` (the KB's);
    ``ready=False`` (a dry run) warns of a missing key or SDK instead of refusing."""
    opts = (options or ModelOptions()).with_default_timeout(timeout)
    spec, provider = ready_model(text, role="labeler", options=opts, prices=prices, offline=OFFLINE_LABELERS,
                                 ready=ready)
    return Labeler(spec, provider, load_labeler_template(template, language))


@dataclass
class LabelResult:
    question_id: str
    label: Label
    shown: list[str] = field(default_factory=list)
    top_score: float | None = None


def retrieve(kb, texts: list[str], k: int) -> list[list[RetrievedArticle]]:
    """The top ``k`` articles for each text, as the prompt shows them."""
    if not texts:
        return []
    hits = kb.retriever().search_many(texts, k)
    return [[RetrievedArticle(h.id, kb.by_id[h.id].title, kb.by_id[h.id].text, h.score) for h in hs] for hs in hits]


def run_labeler(labeler: Labeler, jobs: list[PromptJob], settings: CallSettings, stats: PromptStats,
                label: str = "labelling") -> dict[str, LabelResult]:
    """Ask the labeler every job (cached, retried, priced by the engine); results by job context ID."""

    def record(job: PromptJob, request: Request, result: CallResult) -> dict[str, Any]:
        shown = [a.id for a in job.articles]
        if result.completion is None:
            err = result.error.message if result.error else "no answer"
            lab = Label(reason=f"the call failed: {err}"[:500], error="call failed")
        else:
            lab = parse_label(result.completion.text, shown)
        top = job.articles[0].score if job.articles else None
        return {"result": LabelResult(job.context_id, lab, shown, top)}

    rows = run_prompts(labeler.prompted(), jobs, record, settings, stats, label=label)
    return {r["result"].question_id: r["result"] for r in rows}


def to_suggestion(question: HasQuestion, res: LabelResult, source: str, template: str = "") -> Suggestion:
    lab = res.label
    s = Suggestion(question_id=question.question_id, question=question.question, source=source, voters=1,
                   top_score=res.top_score, template=template)
    if lab.error:
        s.flag, s.voters = "labeler_error", 0
        s.reason = f"{lab.error}: {lab.reason}" if lab.reason else lab.error
    else:
        s.suggested, s.support, s.reason = lab.suggested, 1.0, lab.reason
    return s


def suggest_with_labeler(kb, questions: Sequence[HasQuestion], labeler: str, *, k: int = 10, dry_run: bool = False,
                         concurrency: int = CallSettings.concurrency,
                         max_attempts: int = CallSettings.max_attempts, timeout: float | None = None,
                         prices: Path | None = None, read_cache: bool = True, console=None,
                         options: ModelOptions | None = None, redactor: Any = None,
                         template: str | None = None) -> list[Suggestion] | None:
    """One suggestion per question, in order, from ``labeler`` (``PROVIDER:MODEL``) reading its top-``k`` articles.

    It is asked with ``template`` (``--template``), else with ``labeler.v1`` in the KB's language.

    With ``dry_run`` it prints what the calls would cost and returns ``None``
    without calling. Failed calls come back flagged ``labeler_error`` (and are
    not cached, so the same command asks them again). ``options`` are the
    model options of ``grace run`` (:class:`~harness.runner.model_options.ModelOptions`); a ``redactor``
    (``--redact-pii``, :mod:`harness.privacy`) redacts every prompt before it is keyed and sent.
    """
    if k < 1:
        raise GraceError("--k must be 1 or more")
    lab = make_labeler(labeler, timeout=timeout, prices=prices, options=options, template=template,
                       language=kb.manifest.language)
    settings = call_settings(concurrency, max_attempts, read_cache)
    settings.redactor = redactor
    questions = list(questions)
    retrieved = retrieve(kb, [q.question for q in questions], k)
    jobs = [lab.job(q.question_id, q.question, arts) for q, arts in zip(questions, retrieved, strict=True)]
    if console is None:
        from rich.console import Console

        console = Console(stderr=True) if dry_run else None
    if dry_run:
        print_estimates(console, [estimate_prompts(lab.prompted(), jobs, settings, "labelling", OUTPUT_TOKENS_EST)])
        return None
    stats = PromptStats()
    with progress(settings, console) as s:
        results = run_labeler(lab, jobs, s, stats)
    out = [to_suggestion(q, results[q.question_id], lab.source, lab.template.name) for q in questions]
    line = call_summary("labeler", lab.spec.name, stats)
    if console is not None:
        console.print(line, highlight=False)
    else:
        print(line)
    return out
