"""The anchors site generators make of a page's headings: what the ``#fragment`` of a link to a handbook page says.

A bot's citation ``.../leave/#paid-parental-leave`` names a heading by the anchor its site generator gave it, and
generators differ: GitHub and Docusaurus (github-slugger) keep any letter and drop punctuation; kramdown (Jekyll)
drops leading non-letters and every non-ASCII letter; MkDocs (Python-Markdown) folds accents to ASCII and joins
runs of spaces and hyphens. Each numbers a repeated heading in its own way (``-1``; MkDocs ``_1``), counting every
heading of the page, so anchors are made per page, in order, before any section is dropped or merged. An explicit
anchor (kramdown's ``{#id}``, an HTML heading's ``id``) is the heading's anchor whatever the rule. A heading keeps
the set: which generator made the site is not known, and where two rules differ both anchors are the heading's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

RULES = ("github", "kramdown", "mkdocs")  # Docusaurus uses github-slugger: the github rule

_GITHUB_DROP = re.compile(r"[^\w\- ]")
_KRAMDOWN_LEAD = re.compile(r"^[^a-zA-Z]+")
_KRAMDOWN_DROP = re.compile(r"[^a-zA-Z0-9 -]")
_MKDOCS_DROP = re.compile(r"[^\w\s-]")
_MKDOCS_JOIN = re.compile(r"[-\s]+")
_MKDOCS_NUMBERED = re.compile(r"^(.*)_([0-9]+)$")


def github(text: str) -> str:
    """github-slugger: lower case, anything but letters, digits, ``_``, ``-`` and spaces dropped, a space a ``-``."""
    return _GITHUB_DROP.sub("", text.lower()).replace(" ", "-")


def kramdown(text: str) -> str:
    """kramdown's auto_ids: leading non-letters dropped, then anything but ASCII letters, digits, spaces and ``-``;
    spaces as ``-``; ``section`` when nothing is left."""
    s = _KRAMDOWN_DROP.sub("", _KRAMDOWN_LEAD.sub("", text)).replace(" ", "-").lower()
    return s or "section"


def mkdocs(text: str) -> str:
    """Python-Markdown's toc slugify: accents folded to ASCII, punctuation dropped, runs of spaces and ``-`` one
    ``-``."""
    s = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _MKDOCS_JOIN.sub("-", _MKDOCS_DROP.sub("", s).strip().lower())


def _github_numbered(slug: str, seen: dict[str, int]) -> str:
    base = slug
    while slug in seen:
        seen[base] += 1
        slug = f"{base}-{seen[base]}"
    seen[slug] = 0
    return slug


def _kramdown_numbered(slug: str, seen: dict[str, int]) -> str:
    if slug in seen:
        seen[slug] += 1
        return f"{slug}-{seen[slug]}"
    seen[slug] = 0
    return slug


def _mkdocs_numbered(slug: str, seen: dict[str, int]) -> str:
    while slug in seen or not slug:
        m = _MKDOCS_NUMBERED.match(slug)
        slug = f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"
    seen[slug] = 0
    return slug


_RULES = {"github": (github, _github_numbered), "kramdown": (kramdown, _kramdown_numbered),
          "mkdocs": (mkdocs, _mkdocs_numbered)}


def page_anchors(headings: Sequence[tuple[str, str]]) -> list[list[str]]:
    """Each heading's anchors, for a page's ``(heading text, explicit anchor or "")`` in page order: the explicit
    anchor first, then each rule's (numbered as that rule numbers a repeat on the page), without repeats."""
    seen: dict[str, dict[str, int]] = {rule: {} for rule in RULES}
    out: list[list[str]] = []
    for text, explicit in headings:
        anchors = [explicit] if explicit else []
        if not explicit:  # a generator numbers only the anchors it makes itself
            for rule in RULES:
                slug, numbered = _RULES[rule]
                anchors.append(numbered(slug(text), seen[rule]))
        out.append(list(dict.fromkeys(a for a in anchors if a)))
    return out
