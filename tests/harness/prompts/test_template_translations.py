"""The judge, claims, quality, labeler and generator templates in each language grace has answer templates for: each
loads through its real loader (``--template claims.v1.fr``), declares its language, keeps the English one's sections,
placeholders, tags and JSON keys (grace reads the keys and the claims verdicts, so they stay English), and is the one
its loader picks for a KB in that language when no ``--template`` is given."""

from __future__ import annotations

import re

import pytest

from annotations.generator_prompt import TEMPLATES_DIR as ANNOTATION_TEMPLATES
from annotations.generator_prompt import load_generator_template
from annotations.labeler import load_labeler_template
from harness.prompts.languages import TEMPLATE_LANGUAGES, template_language
from harness.prompts.template_files import builtin_in_language
from harness.providers.base import RetrievedArticle
from harness.spotcheck.claims import VERDICTS, _verdict_word, load_claims_template
from harness.spotcheck.judge_prompt import TEMPLATES_DIR as JUDGE_TEMPLATES
from harness.spotcheck.judge_prompt import SourceArticle, load_judge_template
from harness.spotcheck.quality import SCHEMA, load_quality_template
from harness.spotcheck.segmentation import segment_answer

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_SECTION = re.compile(r"^=== (\w+) ===\s*$", re.M)
_TAG = re.compile(r"</?([a-z]+)>")  # <source>, </answer>: what the prompt's parts are wrapped in
_KEY = re.compile(r'"(reason|article_ids|none|explanation|supported|questions|question|answer|topic|claims|segment|'
                  r'claim|verdicts|evidence|verdict|partial|unsupported|answer_refuses|relevancy|completeness|'
                  r'faithfulness|usefulness|(?:relevancy|completeness|faithfulness|usefulness)_justification)"')
KINDS = {"labeler.v1": (ANNOTATION_TEMPLATES, load_labeler_template),
         "generator.v1": (ANNOTATION_TEMPLATES, load_generator_template),
         "judge.v1": (JUDGE_TEMPLATES, load_judge_template),
         "claims.v1": (JUDGE_TEMPLATES, load_claims_template),
         "quality.v1": (JUDGE_TEMPLATES, load_quality_template)}
TRANSLATED = [c for c in TEMPLATE_LANGUAGES if c != "en"]


def _shape(text: str) -> tuple[list[str], set[str], set[str], list[str]]:
    body = text.split("===", 1)[1]
    return _SECTION.findall(text), set(_PLACEHOLDER.findall(body)), set(_KEY.findall(body)), _TAG.findall(body)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("code", TRANSLATED)
def test_translated_template_loads_and_keeps_the_english_shape(kind, code):
    folder, load = KINDS[kind]
    english = (folder / f"{kind}.txt").read_text(encoding="utf-8")
    translated = (folder / f"{kind}.{code}.txt").read_text(encoding="utf-8")
    assert template_language(translated) == code and template_language(english) == "en"
    assert _shape(translated) == _shape(english)
    loaded = load(f"{kind}.{code}")
    assert loaded.name == f"{kind}.{code}" and loaded.sha256 != load(kind).sha256
    assert loaded.language == code and load(kind).language == "en"


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("code", TRANSLATED)
def test_with_no_template_named_each_loader_takes_the_kb_languages_one(kind, code):
    folder, load = KINDS[kind]
    assert builtin_in_language(kind, folder, code) == f"{kind}.{code}"
    assert (load(None, code).name, load(None, code).language) == (f"{kind}.{code}", code)
    # English, an unknown KB language (built before languages were recorded) and one grace has no translation for
    assert {load(None, lang).name for lang in ("en", None, "zh")} == {kind}
    assert load(f"{kind}.de", code).name == f"{kind}.de"  # a named template always wins


@pytest.mark.parametrize("code", TRANSLATED)
def test_translated_claims_and_quality_prompts_render_and_ask_for_what_the_parsers_read(code):
    claims, quality = load_claims_template(f"claims.v1.{code}"), load_quality_template(f"quality.v1.{code}")
    segs = segment_answer("Twenty-five days of leave a year [ID: 1].", {"1"})
    src = [SourceArticle("1", "Leave", "Twenty-five days of leave a year.")]
    art = RetrievedArticle("1", "Leave", "Twenty-five days of leave a year.", 0.0)
    for messages in (claims.extract(segs), claims.verify(["Twenty-five days of leave."], src),
                     quality.grade("How much leave?", [art], [art], "Twenty-five days [ID: 1].")):
        text = "\n".join(m["content"] for m in messages)
        assert "{{" not in text and "Twenty-five days" in text and messages[0]["role"] == "system"
    # the verdict words the judge is told to use are the ones parse_verdicts reads, and the grade keys parse_grades's
    asked = re.findall(r'"(\w+)"', claims.sections["verify_system"].split('"verdict":')[1])
    assert asked == list(VERDICTS) and [_verdict_word(w) for w in asked] == list(VERDICTS)
    assert re.findall(r'"(\w+)":', quality.sections["system"]) == SCHEMA["required"]


@pytest.mark.parametrize("code", ["en", *TRANSLATED])
def test_the_words_grace_writes_into_a_judge_prompt_are_in_the_templates_language(code):
    from harness.prompts.languages import NOTES

    suffix = "" if code == "en" else f".{code}"
    claims, quality = load_claims_template(f"claims.v1{suffix}"), load_quality_template(f"quality.v1{suffix}")
    judge = load_judge_template(f"judge.v1{suffix}")
    segs = segment_answer("Twenty-five days of leave a year [ID: 1]. Ask HR for more.", {"1"})
    extract = claims.extract(segs)[-1]["content"]
    words = NOTES[code]
    assert "(" + words["cites"].format(ids="1") + ")" in extract and "(" + words["cites_nothing"] + ")" in extract
    grade = quality.grade("How much leave?", [], [], "I don't know.")[-1]["content"]
    assert "(" + words["no_gold"] + ")" in grade and "(" + words["none"] + ")" in grade
    assert "(" + words["nothing_verified"] + ")" in judge.uncited("Ask HR.", [])[-1]["content"]
    if code == "en":  # English prompts are what they were, byte for byte
        assert "(cites 1)" in extract and "(cites nothing)" in extract
        assert "(none: no article holds the answer)" in grade
