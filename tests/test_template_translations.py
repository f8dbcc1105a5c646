"""The judge, labeler and generator templates in each language grace has answer templates for: each loads through
its real loader (``--template judge.v1.fr``), declares its language, and keeps the English one's sections,
placeholders and JSON keys (grace reads the keys, so they stay English)."""

from __future__ import annotations

import re

import pytest

from annotations.generator_prompt import TEMPLATES_DIR as ANNOTATION_TEMPLATES
from annotations.generator_prompt import load_generator_template
from annotations.labeler import load_labeler_template
from harness.prompts.languages import TEMPLATE_LANGUAGES, template_language
from harness.spotcheck.judge import TEMPLATES_DIR as JUDGE_TEMPLATES
from harness.spotcheck.judge import load_judge_template

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_SECTION = re.compile(r"^=== (\w+) ===\s*$", re.M)
_KEY = re.compile(r'"(reason|article_ids|none|explanation|supported|questions|question|answer|topic)"')
KINDS = {"labeler.v1": (ANNOTATION_TEMPLATES, load_labeler_template),
         "generator.v1": (ANNOTATION_TEMPLATES, load_generator_template),
         "judge.v1": (JUDGE_TEMPLATES, load_judge_template)}


def _shape(text: str) -> tuple[list[str], set[str], set[str]]:
    body = text.split("===", 1)[1]
    return _SECTION.findall(text), set(_PLACEHOLDER.findall(body)), set(_KEY.findall(body))


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("code", [c for c in TEMPLATE_LANGUAGES if c != "en"])
def test_translated_template_loads_and_keeps_the_english_shape(kind, code):
    folder, load = KINDS[kind]
    english = (folder / f"{kind}.txt").read_text(encoding="utf-8")
    translated = (folder / f"{kind}.{code}.txt").read_text(encoding="utf-8")
    assert template_language(translated) == code and template_language(english) == "en"
    assert _shape(translated) == _shape(english)
    loaded = load(f"{kind}.{code}")
    assert loaded.name == f"{kind}.{code}" and loaded.sha256 != load(kind).sha256
