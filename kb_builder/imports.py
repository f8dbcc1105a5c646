"""Pre-split articles a team curated itself: JSONL, CSV or JSON (``--articles``).

JSON may be a list of articles or any nesting of objects holding them (a
knowledge map with topics that hold articles): every object in an array with a
title and a text/body is an article, and one filed twice counts once. Articles without an ``id`` are numbered in file order.

An article's ``audience`` (the groups that may see it; absent: everyone) is a list of group names in JSON and
JSONL, and in CSV an ``audience`` column with the groups separated by ``;`` (an empty cell: everyone).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.files import read_text_checked
from harness.core.group_names import group_names
from kb_builder.kb_records import Article, check_audience
from kb_builder.store import read_articles

_TEXT_KEYS = ("text", "body", "content")
AUDIENCE = "audience"
GROUP_SEP = ";"


def split_groups(cell: str) -> list[str] | None:
    """A CSV cell of groups, ``"hr; managers"`` -> ``["hr", "managers"]``; an empty cell -> None (everyone)."""
    return group_names((cell or "").split(GROUP_SEP)) or None


def _audience(value: object, place: str) -> list[str] | None:
    """An audience as a JSON file gives it (a list, or a string of ``;``-separated groups), checked."""
    if isinstance(value, str):
        value = split_groups(value)
    try:
        return check_audience(value)
    except ValueError as exc:
        raise GraceError(f"{place}: {exc}") from None


def _from_json(path: Path) -> list[Article]:
    try:
        data = json.loads(read_text_checked(path))
    except json.JSONDecodeError as exc:
        raise GraceError(f"{where(path, exc.lineno)}: not valid JSON ({exc.msg})") from None
    found: list[dict] = []
    seen: set[tuple[str, str]] = set()

    def walk(x, in_list: bool):
        if isinstance(x, dict):
            # articles live in arrays; a lone object with title/body is schema or metadata (a column map)
            if in_list and "title" in x and any(isinstance(x.get(k), str) and x.get(k).strip() for k in _TEXT_KEYS):
                text = next(x[k] for k in _TEXT_KEYS if isinstance(x.get(k), str) and x[k].strip())
                key = (str(x["title"]).strip(), text.strip())
                if key not in seen:  # one article filed under two topics is still one article
                    seen.add(key)
                    found.append(x)
                return
            for v in x.values():
                walk(v, False)
        elif isinstance(x, list):
            for v in x:
                walk(v, True)

    walk(data, isinstance(data, list))
    if not found:
        raise GraceError(f"{path}: no articles found (objects with 'title' and 'text' or 'body')")
    use_ids = all("id" in f for f in found) and len({str(f["id"]) for f in found}) == len(found)
    out = []
    for n, f in enumerate(found, 1):
        text = next(f[k] for k in _TEXT_KEYS if isinstance(f.get(k), str) and f[k].strip())
        extra = {k: v for k, v in f.items()
                 if k not in ("id", "title", AUDIENCE, *_TEXT_KEYS) and isinstance(v, str | int | float | bool)}
        aid, title = str(f["id"]) if use_ids else str(n), str(f["title"]).strip()
        audience = _audience(f.get(AUDIENCE), f"{path}: article {aid!r} ({title!r})")
        out.append(Article(id=aid, title=title, text=text.strip(), audience=audience, **extra))
    return out


def _from_csv(path: Path) -> list[Article]:
    cols, rows = read_csv_rows(path)
    missing = [c for c in ("id", "title", "text") if c not in cols]
    if missing:
        raise GraceError(f"{where(path, 1)}: missing column(s) {', '.join(missing)}; need id, title, text")
    out, seen = [], {}
    for line, row in rows:
        aid, title, text = row["id"].strip(), row["title"].strip(), row["text"].strip()
        if not (aid or title or text):
            continue
        if not aid or not text:
            raise GraceError(f"{where(path, line)}: each article needs an id and a text")
        if aid in seen:
            raise GraceError(f"{where(path, line)}: duplicate article id {aid!r} (first on line {seen[aid]})")
        seen[aid] = line
        extra = {k: v for k, v in row.items() if k not in ("id", "title", "text", AUDIENCE) and v}
        audience = split_groups(row.get(AUDIENCE) or "")
        if audience and any(ch in row[AUDIENCE] for ch in "[]{}\""):
            raise GraceError(f"{where(path, line)}: audience {row[AUDIENCE]!r}: write the groups as plain names "
                             f"separated by '{GROUP_SEP}' (hr{GROUP_SEP}managers), not as JSON")
        out.append(Article(id=aid, title=title or aid, text=text, audience=audience, **extra))
    if not out:
        raise GraceError(f"{path}: no articles in the file")
    return out


def read_article_file(path: Path) -> list[Article]:
    if not path.exists():
        raise GraceError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return read_articles(path)
    if suffix == ".csv":
        return _from_csv(path)
    if suffix == ".json":
        return _from_json(path)
    raise GraceError(f"{path}: --articles takes .jsonl, .csv or .json")
