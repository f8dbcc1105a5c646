"""Group names (an article's ``audience``, the asker's ``groups`` / ``user_groups``), read alike on every side.

The permission check compares an asker's groups with an article's audience by
name. Each side comes from a different file (the KB's articles, the gold CSV's
``groups`` column, a responses file's or an audit log's ``user_groups``), so
each reader must make a name the same way, or ``" hr "`` from a log is not the
``hr`` of an article and a citation allowed to HR reads as a leak. This module is
that one way: surrounding whitespace removed, blank names dropped, duplicates
dropped (first kept); case counts (``HR`` is not ``hr``), as in the docs.
"""

from __future__ import annotations

from collections.abc import Iterable


def group_names(names: Iterable[str]) -> list[str]:
    """``[" hr ", "staff", "hr", ""]`` -> ``["hr", "staff"]``: every reader of group names calls this."""
    return list(dict.fromkeys(n.strip() for n in names if n.strip()))
