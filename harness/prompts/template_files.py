"""What the answer prompt and the judge prompt have in common: template files.

Both are text files with ``=== name ===`` section lines, found by built-in name
or by path, and named in records by the SHA-256 of their text. A built-in
template may have translations beside it (``claims.v1.fr.txt``); with no
``--template``, every prompt grace sends is the one in the KB's language
(:func:`builtin_in_language`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

from harness.core.errors import GraceError
from harness.prompts.languages import template_language


def template_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def split_sections(text: str, section_line: re.Pattern[str]) -> dict[str, str]:
    """``{name: body}`` for each ``=== name ===`` line that ``section_line`` accepts."""
    parts = section_line.split(text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def find_template(spec: str, directory: Path, what: str, aliases: dict[str, str] | None = None) -> Path:
    """A path to a file, or a built-in name (``x`` or ``x.txt``) in ``directory``."""
    path = Path(spec)
    if path.exists():
        return path
    name = (aliases or {}).get(spec, spec)
    builtin = directory / (name if name.endswith(".txt") else name + ".txt")
    if not builtin.exists():
        names = ", ".join(sorted(p.stem for p in directory.glob("*.txt")))
        raise GraceError(f"{what} {spec!r} not found (built-in: {names}; or give a file path)")
    return builtin


def builtin_in_language(name: str, directory: Path, language: str | None) -> str:
    """The built-in ``name`` in ``language`` (``claims.v1`` -> ``claims.v1.fr``) when grace has it, else ``name``.

    The one rule by which the answer, judge, claims, quality, labeler and generator prompts follow the KB's
    language when no ``--template`` names one: a French KB is asked and judged in French without asking, and a
    language grace has no translation for gets the English template (English files have no suffix).
    """
    if language and language != "en" and (directory / f"{name}.{language}.txt").exists():
        return f"{name}.{language}"
    return name


def chat_messages(system: str, user: str, values: Mapping[str, str], placeholder: re.Pattern[str]) -> list[dict[str, str]]:
    """The system message (left out when the template has none) and the user message, placeholders filled.

    ``placeholder`` names the template's own ``{{name}}`` fields, so any other
    double-brace text in a template stays as written.
    """
    def fill(text: str) -> str:
        return placeholder.sub(lambda m: values.get(m.group(1), ""), text).strip()

    return ([{"role": "system", "content": fill(system)}] if system.strip() else []) + [{"role": "user", "content": fill(user)}]


@dataclass(frozen=True)
class SectionTemplate:
    """A template file split into sections; each subclass names its ``{{fields}}`` in ``placeholder``."""

    placeholder: ClassVar[re.Pattern[str]]
    name: str
    sections: dict[str, str]
    sha256: str
    language: str = "en"  # its "# language: xx" header line

    @classmethod
    def from_text(cls, name: str, text: str, sections: dict[str, str]) -> Self:
        """The template of ``text``, named as records name it (its file's stem: ``claims.v1.fr``)."""
        return cls(name, sections, template_sha(text), template_language(text))

    def _messages(self, section: str, values: dict[str, str]) -> list[dict[str, str]]:
        return chat_messages(self.sections.get("system", ""), self.sections[section], values, self.placeholder)
