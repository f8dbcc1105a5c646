"""Stable article IDs, because gold labels point at them.

An ID is tied to an article's place (source file, heading path, part), not its
text: editing a policy keeps its ID (reported as *changed*), a new section gets
the next number, and a removed ID is retired for good (``next_id`` only grows),
so an old gold label can never silently point at a different article.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kb_builder.records import Article


def article_key(source: str | None, heading_path: list[str], part: int) -> str:
    return json.dumps([source or "", heading_path, part], ensure_ascii=False)


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
    """Set ``id`` on every new article in place; returns (changes, next_id, retired IDs)."""
    changes = IdChanges()
    old = old or []
    old_by_key = {article_key(a.source, a.heading_path, int(getattr(a, "part", 0) or 0)): a for a in old}
    numeric = [int(a.id) for a in old if a.id.isdigit()] + [int(r) for r in retired if r.isdigit()]
    counter = max([next_id or 1, *(n + 1 for n in numeric)])
    taken: set[str] = set()
    seen_keys: dict[str, int] = {}
    for art in new:
        key = article_key(art.source, art.heading_path, int(getattr(art, "part", 0) or 0))
        # two sections with the same heading path in one file: number the repeats
        n = seen_keys.get(key, 0)
        seen_keys[key] = n + 1
        if n:
            key = key + f"#{n}"
            art.heading_path = [*art.heading_path[:-1], f"{art.heading_path[-1]} ({n + 1})"] if art.heading_path else art.heading_path
        prev = old_by_key.get(key)
        if prev is not None and prev.id not in taken:
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
