"""Which KB articles hold a stretch of a source page, found by shared text alone: the truth a reference is checked
against, computed apart from grace's code (it reads an article's ID, source and text, nothing grace derived).

A page is read as its words (``\\w+``, case folded) with their character offsets. An article of that page owns a
word of the page when one of the article's 6-word runs occurs exactly once on the page and covers it: grace moves
and merges text between articles, but a run that occurs once on the page can only have come from that place. A
stretch of the page (a section under a heading, a chunk, a quote, the whole page) is held by the articles owning
any of its words. Words no article owns (a dropped link list, markup) hold nothing, so a stretch made only of them
is held by no article: a reference to it must stay unmapped.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

_WORD = re.compile(r"\w+")
RUN = 6
FILL = 40  # at most this many words between two of an article's own: a longer stretch (a dropped table of contents)


def words(text: str) -> list[tuple[int, int, str]]:
    """(start, end, folded word) of every word of ``text``."""
    return [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(text)]


@dataclass
class Page:
    """One source page and which article owns each of its words."""

    raw: str
    tokens: list[tuple[int, int, str]] = field(default_factory=list)
    owners: list[set[str]] = field(default_factory=list)

    @classmethod
    def of(cls, raw: str, articles: Iterable[tuple[str, str]]) -> Page:
        """``articles``: (ID, text) of the articles built from this page."""
        page = cls(raw, words(raw))
        seq = [w for _, _, w in page.tokens]
        where: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i in range(len(seq) - RUN + 1):
            where[tuple(seq[i:i + RUN])].append(i)
        page.owners = [set() for _ in seq]
        found = []  # per article: its runs' places on the page, and the (article index, page place) of the unique ones
        for aid, text in articles:
            theirs = [w for _, _, w in words(text)]
            places = [where.get(tuple(theirs[i:i + RUN]), []) for i in range(len(theirs) - RUN + 1)]
            # a run next to none of the article's other runs in the same place is chance ("the GSA IT Service Desk.
            # For" of one article, "the GSA IT Service Desk for new hires" of another): at least two in a row
            places = [[p for p in at if (i > 0 and p - 1 in places[i - 1])
                       or (i + 1 < len(places) and p + 1 in places[i + 1])] for i, at in enumerate(places)]
            found.append((aid, places, [(i, at[0]) for i, at in enumerate(places) if len(at) == 1]))
        claimed: set[int] = set()
        for aid, _, unique in found:
            for _, p in unique:
                claimed.add(p)
                page.own(p, aid)
        # a run the page has twice (a paragraph repeated): the place between the article's unique runs before and
        # after it, not claimed by another article; articles with the most unique runs choose first
        for aid, places, unique in sorted(found, key=lambda f: -len(f[2])):
            for i, at in enumerate(places):
                if len(at) < 2:
                    continue
                before = [p for j, p in unique if j < i]
                after = [p for j, p in unique if j > i]
                lo, hi = (before[-1] if before else -1), (after[0] if after else len(seq))
                fit = [p for p in at if lo < p < hi and p not in claimed]
                if len(fit) == 1 or (fit and not unique):
                    claimed.add(fit[0])
                    page.own(fit[0], aid)
        page.fill()
        return page

    def own(self, place: int, aid: str) -> None:
        """A run matched at ``place``: its words but the first and the last, which may be chance (an article's
        "for all. ## Our values" matches the page's "for all. ## Our history" on "our")."""
        for k in range(place + 1, place + RUN - 1):
            self.owners[k].add(aid)

    def fill(self) -> None:
        """A short stretch no article's run covers (a template's words, a word at a run's end) between two words the
        same article owns is that article's: grace keeps a section's text in order."""
        owned = [i for i, o in enumerate(self.owners) if o]
        for i, j in zip(owned, owned[1:], strict=False):
            if i + 1 < j <= i + FILL + 1:
                both = self.owners[i] & self.owners[j]
                for k in range(i + 1, j):
                    self.owners[k] = set(both)

    def held(self, start: int, end: int) -> set[str]:
        """The articles owning any word within characters ``start``..``end`` of the page."""
        out: set[str] = set()
        for (a, b, _), who in zip(self.tokens, self.owners, strict=True):
            if a >= start and b <= end:
                out |= who
        return out

    def all_articles(self) -> set[str]:
        return set().union(*self.owners) if self.owners else set()
