"""What ``grace gold generate`` asks the model, and how its answer is read.

The prompt is a versioned template file (``annotations/templates/generator.v1.txt``)
with one section per kind of question: ``article`` (questions one article answers)
and ``refusals`` (questions no article answers, written from the list of titles).
Its hash is in the cache key. Answers are JSON lists, schema-enforced where the
API can; reading them is lenient about form (a bare string for a question, prose
around the object), because a list lost to formatting is a call paid for nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotations.labeler import json_object
from harness.core.errors import GraceError
from harness.prompts.template_files import SectionTemplate, builtin_in_language, find_template, split_sections

TEMPLATES_DIR = Path(__file__).parent / "templates"  # apart from grace run's answer templates

DEFAULT_TEMPLATE = "generator.v1"
KIND = "grace-generator"  # in the cache key: a generator's answer never serves another caller's prompt
TOKENS_PER_QUESTION = 60  # a question and its short answer, for dry-run estimates
_SECTION = re.compile(r"^=== (system|article|refusals) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(n|m|article_id|article_title|article|titles)\s*\}\}")


def _items(fields: list[str]) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "object", "properties": {f: {"type": "string"} for f in fields},
                                       "required": fields, "additionalProperties": False}}


QUESTIONS_SCHEMA = {"title": "questions", "type": "object", "properties": {"questions": _items(["question", "answer"])},
                    "required": ["questions"], "additionalProperties": False}
REFUSALS_SCHEMA = {"title": "refusals", "type": "object", "properties": {"questions": _items(["question", "topic"])},
                   "required": ["questions"], "additionalProperties": False}


@dataclass(frozen=True)
class GeneratorTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def article(self, n: int, art: Any) -> list[dict[str, str]]:
        return self._messages("article", {"n": str(n), "article_id": art.id, "article_title": art.title,
                                          "article": art.text.strip()})

    def refusals(self, m: int, titles: list[str]) -> list[dict[str, str]]:
        return self._messages("refusals", {"m": str(m), "titles": "\n".join(f"- {t}" for t in titles)})


def load_generator_template(spec: str | None = None, language: str | None = None) -> GeneratorTemplate:
    """A built-in name (``generator.v1``) or a path to a template file; with neither, ``generator.v1`` in ``language``
    (the KB's: questions are asked for in the language the employees will ask them in)."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "generator template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    art, ref = (sections.get(s, "").replace(" ", "") for s in ("article", "refusals"))
    if not all(p in art for p in ("{{n}}", "{{article}}")) or not all(p in ref for p in ("{{m}}", "{{titles}}")):
        raise GraceError(f"generator template {path}: needs '=== article ===' with {{{{n}}}} and {{{{article}}}}, and "
                         "'=== refusals ===' with {{m}} and {{titles}} (see annotations/templates/generator.v1.txt)")
    return GeneratorTemplate.from_text(path.stem, text, sections)


def parse_questions(text: str | None, second: str) -> list[tuple[str, str]] | None:
    """``[(question, answer-or-topic)]`` from a generator reply; ``None`` when it holds no question list."""
    obj = json_object(text)
    items = obj.get("questions") if obj else None
    if not isinstance(items, list):
        return None
    out = []
    for it in items:
        if isinstance(it, str):
            it = {"question": it}
        if isinstance(it, dict) and isinstance(it.get("question"), str) and it["question"].strip():
            out.append((" ".join(it["question"].split()), " ".join(str(it.get(second) or "").split())))
    return out
