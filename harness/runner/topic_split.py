"""``grace kb build --splitter llm:PROVIDER:MODEL``: a model says where the topics of a text start and names them.

The KB builder plans the questions (:func:`kb_builder.build.plan_topic_requests`:
the texts without a heading above them, or over the token budget, as numbered
paragraphs) and applies the answers (:mod:`kb_builder.topics`); asking lives
here, with the run engine, so the calls are cached (asking again costs
nothing), retried, priced and counted by ``--dry-run`` like every other model
call grace makes. The prompt is a versioned template
(``harness/prompts/splitter/topics.v1.txt``) whose hash is in the cache key.

Model output is read leniently (a fenced block, prose around the JSON, starts
as numbers or strings, ``sections`` for ``parts``) and checked strictly (starts
in range and increasing): an answer that still cannot be read is None, and the
builder splits that text with ``semantic`` instead and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.json_text import json_objects
from harness.prompts.template_files import SectionTemplate, find_template, split_sections, template_sha
from harness.providers.base import ModelSpec, Provider
from harness.runner.calls import CallSettings, Estimate, Prompted, PromptJob, PromptStats, estimate_prompts, run_prompts
from harness.runner.engine import CallResult
from harness.runner.model_options import ModelOptions
from kb_builder.topics import Segmentation, TopicRequest, check_segmentation

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "prompts" / "splitter"
DEFAULT_TEMPLATE = "topics.v1"
KIND = "grace-topic-splitter"  # in the cache key: a split never answers another caller's prompt
OUTPUT_TOKENS = 600  # output limit sent when --max-tokens is not given: a title and a number per part
OUTPUT_TOKENS_EST = 150
_SECTION = re.compile(r"^=== (system|user) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(title|count|paragraphs)\s*\}\}")
_LISTS = ("parts", "sections", "articles", "topics", "segments", "splits")
_STARTS = ("start", "start_paragraph", "paragraph", "from", "first", "index", "begin")
_TITLES = ("title", "name", "heading", "topic")
TOPICS_SCHEMA = {"title": "topics", "type": "object",
                 "properties": {"parts": {"type": "array", "items": {
                     "type": "object", "properties": {"start": {"type": "integer"}, "title": {"type": "string"}},
                     "required": ["start", "title"], "additionalProperties": False}}},
                 "required": ["parts"], "additionalProperties": False}


@dataclass(frozen=True)
class TopicTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def messages(self, request: TopicRequest) -> list[dict[str, str]]:
        shown = "\n\n".join(f"[{i}] {u}" for i, u in enumerate(request.units, 1))
        return self._messages("user", {"title": request.title, "count": str(len(request.units)), "paragraphs": shown})


def load_topic_template(spec: str | None = None) -> TopicTemplate:
    path = find_template(spec or DEFAULT_TEMPLATE, TEMPLATES_DIR, "topic splitter template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    if "{{paragraphs}}" not in sections.get("user", "").replace(" ", ""):
        raise GraceError(f"topic splitter template {path}: needs a '=== user ===' section with {{{{paragraphs}}}} "
                         "(see harness/prompts/splitter/topics.v1.txt)")
    return TopicTemplate(path.stem, sections, template_sha(text))


def parse_topics(text: str | None, n: int) -> Segmentation | None:
    """The parts a reply names for ``n`` paragraphs, or None when it names none that can be used."""
    for obj in json_objects(text):
        items = next((obj[k] for k in _LISTS if isinstance(obj.get(k), list)), None)
        if items is None:
            continue
        starts: list[Any] = []
        titles: list[Any] = []
        for item in items:
            if isinstance(item, dict):
                start = next((item[k] for k in _STARTS if k in item), None)
                if start is None:
                    return None
                starts.append(start)
                titles.append(next((item[k] for k in _TITLES if isinstance(item.get(k), str)), ""))
            elif isinstance(item, int | str):
                starts.append(item)
                titles.append("")
            else:
                return None
        return check_segmentation(starts, titles, n)
    return None


@dataclass
class TopicModel:
    """The model a ``--splitter llm:`` build asks, with its template."""

    spec: ModelSpec
    provider: Provider
    template: TopicTemplate

    def prompted(self) -> Prompted:
        return Prompted(self.spec, self.provider, KIND, self.template.sha256, TOPICS_SCHEMA)

    def jobs(self, requests: Sequence[TopicRequest]) -> list[PromptJob]:
        return [PromptJob(r.key, r.title, self.template.messages(r), payload=len(r.units)) for r in requests]

    def ask(self, requests: Sequence[TopicRequest], settings: CallSettings,
            stats: PromptStats) -> dict[str, Segmentation | None]:
        def record(job: PromptJob, request: Any, result: CallResult) -> dict[str, Any]:
            text = result.completion.text if result.completion is not None else None
            return {"key": job.context_id, "parts": parse_topics(text, job.payload)}

        rows = run_prompts(self.prompted(), self.jobs(requests), record, settings, stats, label="finding topics")
        return {r["key"]: r["parts"] for r in rows}

    def estimate(self, requests: Sequence[TopicRequest], settings: CallSettings) -> Estimate:
        return estimate_prompts(self.prompted(), self.jobs(requests), settings, "finding topics", OUTPUT_TOKENS_EST)


def make_topic_model(splitter: str, *, options: ModelOptions | None = None, prices: Path | None = None,
                     template: str | None = None, ready: bool = True) -> TopicModel:
    """``llm:PROVIDER:MODEL`` -> the model, ready (key checked, priced, temperature 0) unless a dry run."""
    from harness.runner.model_options import ready_model

    text = splitter.removeprefix("llm:")
    opts = (options or ModelOptions()).with_default_max_tokens(OUTPUT_TOKENS)
    spec, provider = ready_model(text, role="topic splitter", options=opts, prices=prices, ready=ready)
    return TopicModel(spec, provider, load_topic_template(template))
