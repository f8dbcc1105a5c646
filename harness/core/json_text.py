"""JSON objects inside a model's reply: the whole text, a fenced block, or one embedded in prose.

Models asked for JSON still wrap it in ```json fences or a sentence of preamble;
every reader of model JSON (the judge, the labeler, the generator) looks for
objects the same way, in this order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _candidates(text: str) -> Iterator[Any]:
    for m in _FENCE.finditer(text):
        yield m.group(1).strip()
    yield text.strip()
    decoder, start = json.JSONDecoder(), text.find("{")
    while start != -1:
        try:
            yield decoder.raw_decode(text, start)[0]
        except ValueError:
            pass
        start = text.find("{", start + 1)


def json_objects(text: str | None) -> Iterator[dict[str, Any]]:
    """Every JSON object found in ``text``, fenced blocks first, then the whole text, then embedded ones."""
    for cand in _candidates(text or ""):
        if isinstance(cand, str):
            try:
                cand = json.loads(cand)
            except ValueError:
                continue
        if isinstance(cand, dict):
            yield cand


def first_json_object(text: str | None) -> dict[str, Any] | None:
    return next(json_objects(text), None)
