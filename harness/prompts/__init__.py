"""Versioned prompt templates (files, not strings in code) and their rendering.

A template is a text file with ``=== system ===`` and ``=== user ===`` sections
and ``{{articles}}``, ``{{question}}``, ``{{refusal}}`` placeholders (the refusal
sentence in the template's language, :mod:`harness.prompts.languages`). Its
SHA-256 is recorded with every response and is part of the cache key, so editing
a template can never be confused with the old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import GraceError
from harness.prompts.languages import REFUSALS, refusal_sentence, template_language
from harness.prompts.template_files import builtin_in_language, find_template, split_sections, template_sha

REFUSAL = REFUSALS["en"]
TEMPLATES_DIR = Path(__file__).parent / "templates"
BUILTIN = {"inline": "grounded-inline.v1", "json": "grounded-json.v1"}
SEARCH = "grounded-search.v1"  # the prompt of a model that searches the KB itself: no {{articles}}, tools instead
_SECTION = re.compile(r"^=== (system|user) ===\s*$", re.M)


@dataclass
class RetrievedArticle:
    """An article as a prompt shows it to a model: what retrieval found for a question, with its score."""

    id: str
    title: str
    text: str
    score: float


def article_block(articles: list[RetrievedArticle]) -> str:
    """Articles as every GRACE prompt shows them, ``[ID: x] title`` then the text, a blank line between: in the
    prompt of a model shown its top k, and in the search results of a model that searches for itself."""
    return "\n\n".join(f"[ID: {a.id}] {a.title}\n{a.text}" for a in articles)


ARTICLES_ATTACHED = "(the articles are the documents above, each titled with its ID)"


def without_articles(text: str, articles: list[RetrievedArticle]) -> str:
    """A prompt whose articles go as documents of their own (an API's native citations): its article block replaced
    by a line saying where they are, so no article is sent twice."""
    return text.replace(article_block(articles), ARTICLES_ATTACHED)


JSON_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "citation": {"type": ["string", "null"]}},
    "required": ["answer", "citation"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str
    sha256: str
    mode: str  # "inline" or "json": how the answer is expected, and whether JSON mode is requested
    language: str = "en"  # the template's (its "# language: xx" header); the refusal sentence is in it too
    # the prompt of the run's models that search the KB themselves (harness.runner.tool_loop), in the same language
    search: Template | None = None

    def for_model(self, searches: bool) -> Template:
        """The template a model is asked with: this one, or its search twin for a model that searches."""
        if not searches:
            return self
        if self.search is None:
            raise GraceError(f"template {self.name}: no search prompt loaded (load_template(..., search=True))")
        return self.search

    @property
    def refusal(self) -> str:
        return refusal_sentence(self.language)

    def render(self, question: str, articles: list[RetrievedArticle]) -> list[dict[str, str]]:
        block = article_block(articles)
        values = {"articles": block, "question": question, "refusal": self.refusal}

        def fill(text: str) -> str:
            return re.sub(r"\{\{\s*(articles|question|refusal)\s*\}\}", lambda m: values[m.group(1)], text)

        messages = []
        if self.system.strip():
            messages.append({"role": "system", "content": fill(self.system).strip()})
        messages.append({"role": "user", "content": fill(self.user).strip()})
        return messages


def parse_template(text: str, name: str, mode: str, *, search: bool = False) -> Template:
    """A template file's text; ``search``: a search prompt, which holds the question and no articles (the model
    finds them with its tools)."""
    sections = split_sections(text, _SECTION)
    if not sections:
        raise GraceError(f"template {name}: needs '=== user ===' (and optionally '=== system ===') section lines")
    user = sections.get("user", "")
    if search:
        if "{{question}}" not in user.replace(" ", ""):
            raise GraceError(f"template {name}: a search prompt must contain {{{{question}}}} in the user section")
        return Template(name, sections.get("system", ""), user, template_sha(text), mode, template_language(text))
    if "{{question}}" not in user.replace(" ", "") or "{{articles}}" not in (user + sections.get("system", "")).replace(" ", ""):
        raise GraceError(f"template {name}: must contain {{{{question}}}} in the user section and {{{{articles}}}} somewhere")
    return Template(name, sections.get("system", ""), user, template_sha(text), mode, template_language(text))


def load_template(spec: str | None, mode: str = "inline", language: str | None = None, *,
                  search: bool = False) -> Template:
    """A built-in name (``inline``/``json``, or a file name in templates/) or a path to a file.

    With no ``spec``, the built-in template of the KB's ``language`` when grace has one
    (``grounded-inline.v1.fr``), else the English one: a French KB gets a French prompt
    and a French refusal sentence without asking. ``search``: with its search twin (:attr:`Template.search`), the
    built-in ``grounded-search.v1`` in the template's language, for the run's models that search the KB themselves.
    """
    from dataclasses import replace

    if mode not in ("inline", "json"):
        raise GraceError(f"output mode {mode!r}: use inline or json")
    path = find_template(spec or builtin_in_language(BUILTIN[mode], TEMPLATES_DIR, language), TEMPLATES_DIR, "template",
                         BUILTIN)
    template = parse_template(path.read_text(encoding="utf-8"), path.stem, mode)
    if not search:
        return template
    twin = TEMPLATES_DIR / f"{builtin_in_language(SEARCH, TEMPLATES_DIR, template.language)}.txt"
    return replace(template, search=parse_template(twin.read_text(encoding="utf-8"), twin.stem, "inline", search=True))
