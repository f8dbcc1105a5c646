"""The judge: its versioned prompt template, its structured verdict, and which provider plays it.

The verdict is ``{"explanation": ..., "supported": true|false}`` with the
explanation first, so a model writing left to right reasons before it decides.
Parsing is lenient (code fences, prose around the object, "true" as a string)
because a verdict lost to formatting is a call paid for nothing; a reply with
no readable verdict is kept as unjudged, never guessed, never cached, and asked
once more with :data:`STRICT_INSTRUCTION` appended (see :mod:`.judge_calls`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import GraceError
from harness.core.json_text import json_objects
from harness.prompts.template_files import SectionTemplate, builtin_in_language, find_template, split_sections
from harness.providers.base import ModelSpec, Provider
from harness.runner.model_options import ModelOptions

TEMPLATES_DIR = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "judge.v1"
SECTIONS = ("system", "cited", "uncited")
_SECTION = re.compile(r"^=== (\w+) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(article_id|article_title|article|supported_segments|segment)\s*\}\}")
_BARE = re.compile(r'"?supported"?\s*[:=]\s*"?(true|false|yes|no)\b', re.IGNORECASE)
_TRUE, _FALSE = {"true", "yes", "supported", "1"}, {"false", "no", "unsupported", "not supported", "0"}
OFFLINE_JUDGES = {"lexical": "harness.spotcheck.lexical_judge:LexicalJudgeProvider"}
DEFAULT_MAX_TOKENS = 1024  # the judge's output limit unless --max-tokens says otherwise; part of the cache key
# Appended to the prompt when a reply held no readable verdict: a different prompt, so a different cache key.
STRICT_INSTRUCTION = (
    "Reply with only one JSON object and nothing else (no code fence, no text before or after it): "
    '{"explanation": "<one short sentence>", "supported": true} if the text supports the segment, or '
    '{"explanation": "<one short sentence>", "supported": false} if it does not.'
)

JUDGE_SCHEMA = {
    "title": "judgement",
    "type": "object",
    "properties": {"explanation": {"type": "string"}, "supported": {"type": "boolean"}},
    "required": ["explanation", "supported"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class SourceArticle:
    id: str
    title: str
    text: str
    source: str = ""  # the document it comes from, and its headings: what a reference to it is resolved by
    heading_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def cited(self, claim: str, articles: Sequence[SourceArticle]) -> list[dict[str, str]]:
        """Pass 1: a cited segment against its own cited article(s)."""
        return self._messages("cited", {
            "article_id": ", ".join(a.id for a in articles),
            "article_title": " / ".join(a.title for a in articles),
            "article": "\n\n".join(a.text.strip() for a in articles),
            "segment": claim,
        })

    def uncited(self, claim: str, supported: Sequence[str]) -> list[dict[str, str]]:
        """Pass 2: an uncited segment against the answer's segments judged supported."""
        from harness.prompts.languages import note

        block = "\n".join(f"- {s}" for s in supported) if supported else note(self.language, "nothing_verified")
        return self._messages("uncited", {"supported_segments": block, "segment": claim})


def strict_messages(messages: Sequence[dict[str, str]], instruction: str = STRICT_INSTRUCTION) -> list[dict[str, str]]:
    """The same prompt with ``instruction`` appended to its last user turn (the retry of an unreadable reply).

    Appended rather than sent as a new turn, so every provider takes it (some
    reject two user turns in a row)."""
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m['content'].rstrip()}\n\n{instruction}"
            return out
    return out + [{"role": "user", "content": instruction}]


def parse_judge_template(text: str, name: str) -> JudgeTemplate:
    sections = split_sections(text, _SECTION)
    missing = [s for s in ("cited", "uncited") if "{{segment}}" not in sections.get(s, "").replace(" ", "")]
    if missing or "{{article}}" not in sections.get("cited", "").replace(" ", ""):
        raise GraceError(f"judge template {name}: needs '=== cited ===' with {{{{article}}}} and {{{{segment}}}}, and "
                         "'=== uncited ===' with {{supported_segments}} and {{segment}} (see templates/judge.v1.txt)")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise GraceError(f"judge template {name}: unknown section(s) {', '.join(unknown)}; use {', '.join(SECTIONS)}")
    return JudgeTemplate.from_text(name, text, sections)


def load_judge_template(spec: str | None = None, language: str | None = None) -> JudgeTemplate:
    """A built-in name (``judge.v1``) or a path to a template file; with neither, ``judge.v1`` in ``language``."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "judge template")
    return parse_judge_template(path.read_text(encoding="utf-8"), path.stem)


@dataclass(frozen=True)
class Verdict:
    supported: bool | None  # None: no readable verdict in the reply
    explanation: str
    parse_error: str | None = None


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        return True if v in _TRUE else False if v in _FALSE else None
    return None


def parse_verdict(text: str | None) -> Verdict:
    """The judge's reply -> a verdict; unreadable replies give ``supported=None`` and say why."""
    if not text or not text.strip():
        return Verdict(None, "", "empty reply")
    for cand in json_objects(text):
        lower = {str(k).lower(): v for k, v in cand.items()}
        supported = _as_bool(lower.get("supported"))
        if supported is not None:
            return Verdict(supported, str(lower.get("explanation") or lower.get("reasoning") or "").strip())
    m = _BARE.search(text)
    if m:
        return Verdict(m.group(1).lower() in _TRUE, text.strip()[:1000])
    return Verdict(None, text.strip()[:1000], 'no {"supported": true|false} in the reply')


def make_judge(text: str, options: ModelOptions | None = None, prices: Path | None = None,
               ready: bool = True) -> tuple[ModelSpec, Provider]:
    """``PROVIDER:MODEL`` -> (spec, ready provider); ``baseline:lexical`` is the offline judge.

    ``options`` are the model options of ``grace run`` (see
    :mod:`harness.runner.model_options`); the judge's output limit defaults to
    :data:`DEFAULT_MAX_TOKENS`, so a judge that rambles is cut off, not waited for.
    """
    from harness.core.registry import resolve
    from harness.runner.model_options import ready_model

    def offline(name: str):
        return lambda spec: resolve(OFFLINE_JUDGES[name])(spec)

    opts = (options or ModelOptions()).with_default_max_tokens(DEFAULT_MAX_TOKENS)
    return ready_model(text, role="judge", options=opts, prices=prices, offline={n: offline(n) for n in OFFLINE_JUDGES},
                       ready=ready)
