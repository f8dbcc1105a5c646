"""Stable article IDs, because gold labels point at them.

An ID is tied to an article's place (source file, heading path, part), not its
text: editing a policy keeps its ID (reported as *changed*), a new section gets
the next number, and a removed ID is retired for good (``next_id`` only grows),
so an old gold label can never silently point at a different article.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kb_builder.documents.cleanup import clean_title
from kb_builder.kb_records import Article


def article_key(source: str | None, heading_path: list[str], part: int) -> str:
    return json.dumps([source or "", heading_path, part], ensure_ascii=False)


def loose_key(source: str | None, heading_path: list[str], part: int) -> str:
    """An article's place with its headings reduced to letters and digits.

    A heading that only lost markup, an entity or a link target (older grace
    kept ``Phishing (https://...)`` in heading paths) is the same heading: its
    article keeps its ID.
    """
    path = ["".join(ch for ch in clean_title(h).casefold() if ch.isalnum()) for h in heading_path]
    return article_key(source, path, part)


@dataclass
class IdChanges:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def assign_ids(
    new: list[Article],
    old: list[Article] | None,
    next_id: int | None,
    retired: list[str],
) -> tuple[IdChanges, int, list[str]]:
    """Set ``id`` on every new article in place; returns (changes, next_id, retired IDs).

    An article takes the ID of the old one at the same place; failing that, of an
    old one left over at the same place modulo markup (see ``loose_key``); failing
    that, a new number, handed out in article order.
    """
    changes = IdChanges()
    old = old or []
    old_by_key = {article_key(a.source, a.heading_path, _part(a)): a for a in old}
    numeric = [int(a.id) for a in old if a.id.isdigit()] + [int(r) for r in retired if r.isdigit()]
    counter = max([next_id or 1, *(n + 1 for n in numeric)])
    taken: set[str] = set()
    seen_keys: dict[str, int] = {}
    matched: list[Article | None] = []
    for art in new:
        key = article_key(art.source, art.heading_path, _part(art))
        # two sections with the same heading path in one file: number the repeats
        n = seen_keys.get(key, 0)
        seen_keys[key] = n + 1
        if n:
            key = key + f"#{n}"
            art.heading_path = [*art.heading_path[:-1], f"{art.heading_path[-1]} ({n + 1})"] if art.heading_path else art.heading_path
        prev = old_by_key.get(key)
        if prev is not None and prev.id not in taken:
            taken.add(prev.id)
            matched.append(prev)
        else:
            matched.append(None)
    if None in matched and len(taken) < len(old):
        left: dict[str, list[Article]] = {}
        for a in old:
            if a.id not in taken:
                left.setdefault(loose_key(a.source, a.heading_path, _part(a)), []).append(a)
        for i, art in enumerate(new):
            if matched[i] is None and (same := left.get(loose_key(art.source, art.heading_path, _part(art)))):
                matched[i] = same.pop(0)
                taken.add(matched[i].id)
    for art, prev in zip(new, matched, strict=True):
        if prev is not None:
            art.id = prev.id
            if prev.content_hash and prev.content_hash != art.content_hash:
                changes.changed.append(art.id)
            else:
                changes.unchanged += 1
        else:
            art.id = str(counter)
            counter += 1
            changes.added.append(art.id)
            taken.add(art.id)
    gone = [a.id for a in old if a.id not in taken]
    changes.removed = gone
    return changes, counter, sorted(set(retired) | set(gone), key=lambda x: (len(x), x))


def _part(a: Article) -> int:
    return int(getattr(a, "part", 0) or 0)
