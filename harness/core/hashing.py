"""Hashes that identify what produced a record: files, texts, and canonical JSON.

Every fingerprint and cache key is SHA-256 over canonical JSON (sorted keys, no
spaces, numbers normalised), so the same request spelled two ways (``0`` and
``0.0``, a base URL with and without its trailing ``/``) is one key.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def text_hash(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def file_hash(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def normalise(value: Any) -> Any:
    """Numbers by value, not spelling: ``0``, ``0.0`` and ``False`` stay apart only where they differ in kind.

    Every call's cache key and row go through this (the messages, the params: about twenty values a call), so the
    plain JSON types are tested by exact type first, before the ``isinstance`` chain subclasses need: in a profile of
    the engine at 500 calls in flight the chain was the largest single item of grace's own CPU per call."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): normalise(v) for k, v in value.items()}
    if kind is list:
        return [normalise(v) for v in value]
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return value


def normalise_url(url: str | None) -> str | None:
    """``HTTP://Host:8000/v1/`` and ``http://host:8000/v1`` name one endpoint."""
    if not url:
        return None
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        url = f"{scheme.lower()}://{host.lower()}{slash}{path}"
    return url.rstrip("/")


def canonical_json(fields: Any) -> str:
    return json.dumps(normalise(fields), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_hash(fields: Any, length: int | None = None) -> str:
    digest = hashlib.sha256(canonical_json(fields).encode("utf-8")).hexdigest()
    return digest[:length] if length else digest
