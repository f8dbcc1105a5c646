"""Typed, versioned records for the KB files (``articles.jsonl``, ``manifest.json``).

The KB directory is a contract other tools rely on; ``format_version`` lets a later
grace read an older KB or refuse it with a clear message instead of guessing.

Format 2 added where each built article came from (``spans``, ``headings``): a KB of format 1, or
articles without them (imported, hand-written), still load; references to their headings are then
resolved by heading path, as before (:mod:`kb_builder.references` says so).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.core.group_names import group_names

KB_FORMAT_VERSION = 2


class _Place(BaseModel):
    """Characters ``start`` to ``end`` (end excluded) of a source document: of its file's text as read, newlines as
    ``\\n`` (of the text grace extracted, for PDF and DOCX)."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=0)  # the first character (from 0); of a heading: where its heading line starts
    end: int = Field(ge=0)  # the character after the last; of a heading: where the text a link to it leads to ends
    # the document, when not the article's own ``source`` (an article merged by hand with one of another document)
    source: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> _Place:
        if self.end < self.start:
            raise ValueError(f"it ends ({self.end}) before it starts ({self.start})")
        return self


class Span(_Place):
    """Text of a source document an article holds."""


class SourceHeading(_Place):
    """A heading of the source document whose text an article holds, and the anchors a link to it may use.

    ``start``: where its heading line starts; ``end``: where the text a link to it leads to ends (the next heading;
    for a heading with no text of its own, only sub-headings under it, the end of its sub-tree)."""

    text: str  # as a reader sees it (no markup)
    level: int = Field(ge=1, le=6)  # its depth: 1 for a page title (#, <h1>) to 6
    # its explicit anchor ({#id}, an HTML id) if any, else the anchors the site generators grace knows make of it
    # on its page (kb_builder.anchors: GitHub/Docusaurus, kramdown, MkDocs), without repeats
    anchors: list[str] = Field(default_factory=list)


class Article(BaseModel):
    """One self-contained article: the unit a model must cite."""

    model_config = ConfigDict(extra="allow")

    id: str  # the article's ID: what a model cites and a gold label names; kept when the article is rebuilt
    title: str  # the title a model sees; built articles: document title > headings ("(part N of M)" when split)
    text: str  # the article's body, as a model sees it
    # the document it was built from, relative to the source folder; absent for imported articles without one
    source: str | None = None
    # the headings above the article in its document, outermost first (the document title excluded)
    heading_path: list[str] = Field(default_factory=list)
    # length of title and text in tokens (cl100k, or a close approximation when tiktoken's file is absent)
    tokens: int | None = None
    # first 16 hex digits of the SHA-256 of title, newline, text; embeddings and caches key on it
    content_hash: str | None = None
    language: str | None = None  # ISO 639-1, on the articles of a KB that mixes languages (else the manifest's)
    # the groups that may see the article; None (absent): everyone. A citation of it for an asker in none of these
    # groups is a forbidden_citation (harness.scoring.outcomes)
    audience: list[str] | None = None
    # where its text is in its source document, in document order (kb_builder.provenance); None (absent): not known
    # (an imported or hand-written article, or a KB built before format 2)
    spans: list[Span] | None = None
    # every heading whose line its text holds (a section cut into parts: the first part), in document order;
    # None (absent): not known, as for spans
    headings: list[SourceHeading] | None = None

    @field_validator("audience", mode="before")
    @classmethod
    def _groups(cls, value: object) -> object:
        """A list of group names, each a non-empty string; said in words, since the reader shows this message."""
        return check_audience(value)

    def compute_hash(self) -> str:
        """Hash of what a model sees (title + text): embeddings and caches key on it."""
        return text_hash(self.title + "\n" + self.text)

    def to_line(self) -> dict[str, Any]:
        data = self.model_dump(exclude_none=True)
        # keep the three contract fields first so the file reads well by eye
        return {"id": data.pop("id"), "title": data.pop("title"), "text": data.pop("text"), **data}


class Manifest(BaseModel):
    """What a KB is and how it was made; ``kb_hash`` names this exact content."""

    model_config = ConfigDict(extra="allow")

    # version of the KB file format; a grace refuses a KB newer than the one it reads
    format_version: int = KB_FORMAT_VERSION
    kb_hash: str  # 16 hex digits of a SHA-256 over every article's ID, title and text, in any order: names this content
    # the retriever that ranks articles (bm25, bm25f, char4, openai:MODEL, st:MODEL, use, A+B fused...)
    embedder: str = "bm25"
    article_count: int  # number of articles in articles.jsonl
    # article length in tokens: min, p5, median, mean, p95, max and total
    token_stats: dict[str, float] = Field(default_factory=dict)
    # the number the next new article gets as its ID (only grows); null for a KB imported from a file
    next_id: int | None = None
    retired_ids: list[str] = Field(default_factory=list)  # IDs of removed articles: never given to another article
    # the documents the articles were built from, relative to the source folder, sorted
    sources: list[str] = Field(default_factory=list)
    built_with: str | None = None  # the grace that wrote the manifest, e.g. "grace 1.2.0"
    built_at: str | None = None  # when the manifest was written: ISO 8601 date and time, UTC, to the second
    # the token budget documents were split to (--max-tokens); null for a KB imported from a file
    max_tokens: int | None = None
    # ISO 639-1 (detected or --language); None: built before languages were recorded, read as English
    language: str | None = None
    languages: dict[str, int] = Field(default_factory=dict)  # articles per language (several: a mixed KB)
    # how documents were cut into articles when not by headings (semantic, llm:PROVIDER:MODEL); a rebuild keeps it.
    # Absent: headings
    splitter: str | None = Field(None, exclude_if=lambda v: v is None)
    # the last curation action (its seq in curation.jsonl) the articles hold: a reader finding a later action on file
    # knows a curation stopped half-way and applies it. Absent: no curation (or written by an older grace)
    curation_seq: int | None = Field(None, exclude_if=lambda v: v is None)


def check_audience(value: object) -> list[str] | None:
    """An article's ``audience`` as given: None, or a non-empty list of group names (each stripped). Raises
    ``ValueError`` saying what is wrong and how to write it (the article readers add the file and line)."""
    if value is None:
        return None
    example = '["hr", "managers"]'
    if not isinstance(value, list):
        raise ValueError(f"audience must be a list of group names such as {example}, got {value!r}")
    groups = []
    for g in value:
        if not isinstance(g, str) or not g.strip():
            raise ValueError(f"audience must be a list of group names (non-empty strings) such as {example}; "
                             f"{g!r} is not one")
        groups.append(g.strip())
    if not groups:
        raise ValueError("audience is an empty list: leave it out for an article everyone may see, or name the "
                         f"groups that may, such as {example}")
    return group_names(groups)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def kb_content_hash(articles: list[Article]) -> str:
    """Order-independent hash of every article's id, title and text."""
    h = hashlib.sha256()
    for a in sorted(articles, key=lambda a: a.id):
        h.update(json.dumps([a.id, a.title, a.text], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]
