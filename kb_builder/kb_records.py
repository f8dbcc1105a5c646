"""Typed, versioned records for the KB files (``articles.jsonl``, ``manifest.json``).

The KB directory is a contract other tools rely on; ``schema_version`` lets a later
grace read an older KB or refuse it with a clear message instead of guessing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

KB_FORMAT_VERSION = 1


class Article(BaseModel):
    """One self-contained article: the unit a model must cite."""

    model_config = ConfigDict(extra="allow")

    id: str
    title: str
    text: str
    source: str | None = None
    heading_path: list[str] = Field(default_factory=list)
    tokens: int | None = None
    content_hash: str | None = None
    language: str | None = None  # ISO 639-1, on the articles of a KB that mixes languages (else the manifest's)

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

    format_version: int = KB_FORMAT_VERSION
    kb_hash: str
    embedder: str = "bm25"
    article_count: int
    token_stats: dict[str, float] = Field(default_factory=dict)
    next_id: int | None = None
    retired_ids: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    built_with: str | None = None
    built_at: str | None = None
    max_tokens: int | None = None
    # ISO 639-1 (detected or --language); None: built before languages were recorded, read as English
    language: str | None = None
    languages: dict[str, int] = Field(default_factory=dict)  # articles per language (several: a mixed KB)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def kb_content_hash(articles: list[Article]) -> str:
    """Order-independent hash of every article's id, title and text."""
    h = hashlib.sha256()
    for a in sorted(articles, key=lambda a: a.id):
        h.update(json.dumps([a.id, a.title, a.text], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]
