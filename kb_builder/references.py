"""Map the references a system prints (its own source paths, URLs, titles, quotes, index IDs) onto KB articles.

Shipped bots cite their own documents, not grace's article IDs: ``payroll/pay-and-compensation.html#Annual
performance bonus``, a URL, a title, a quoted sentence, or a chunk ID of their own index. Read as an article ID,
each is an invalid citation, and a footnote ``[1]`` read as article 1 is a silent wrong figure. This module
resolves one reference string by the KB's own records (ID, source path, the document spans and headings each
article holds, title, text) and by what the user gives (a ``their_id,article_id`` file, path rewrite rules), and
keeps HOW each was resolved so a score can be checked.

A reference points into a document, and maps to every article whose text holds what it points to: a heading's
anchor to the article its section was folded into, or to all the parts of a section cut in several; a page to the
page's articles; a quote or a chunk of text to the articles it overlaps. So a :class:`Resolution` is a set, and
says which kind (``scope``: one article, several, a page). It never guesses: a reference that points nowhere, or
at one of several places it cannot tell apart (an anchor two headings share, a quote two articles hold), is
unmapped, with the candidates and a named warning, and a bare number is an article ID only when the caller says
the system cites by KB ID. A KB that records no positions (built by an older grace, or imported) maps headings
by its articles' heading paths, as grace did before, and says so.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from harness.core.citation_text import ID_REFERENCE, WORD, fold, folded_words
from harness.core.errors import GraceError, where

# How a reference was resolved, most direct first; the resolver tries them in this order and the first that
# finds any article decides (so a path never falls through to a looser reading).
HOW = ("mapping", "id", "rewrite", "source+heading", "source", "title", "quote")

# A quote maps when it has at least this many words and this share of its word 3-grams occur in the articles it
# maps to. Chosen on the sample KB (benchmarks/references.py, docs/measurements.md): 3-word quotes map to the wrong
# article, 4 and more do not (6 leaves a margin); a quote retyped with one word in eight changed keeps about 60% of
# its 3-word runs, so 0.5 maps it, while a sentence from another KB stays unmapped.
MIN_QUOTE_WORDS = 6
MIN_QUOTE_OVERLAP = 0.5
# A quote or chunk that runs over the end of one article into the next maps to both: an article is one of those it
# overlaps when it holds a run of this many of the quote's consecutive 3-grams (6 words) that no article chosen
# before holds, on the same page. Chosen on the TTS handbook's chunks (benchmarks/references.py, docs/measurements.md):
# runs of 2 add articles that merely share a stock phrase, longer ones leave a chunk's last lines out.
MIN_QUOTE_RUN = 4
# ... and the quote is unmapped when another page's articles hold this share of what the chosen ones hold: the same
# text is on two pages (a policy copied from one to the other)
ELSEWHERE_SHARE = 0.9
_SHINGLE = 3
# A page maps to its articles up to this many; a larger page names no answer a citation could be checked against
# (cite its headings). TTS's largest page has 52.
MAX_PAGE_ARTICLES = 100

Scope = Literal["article", "several", "page"]
SCOPES: tuple[Scope, ...] = ("article", "several", "page")
# named problems of a reference (Resolution.warning): what to fix, never a guess past it
WARNINGS = {
    "ambiguous-anchor": "the anchor matches headings whose text is in different articles: which one is meant is "
                        "not known",
    "page-too-large": f"the page holds more than {MAX_PAGE_ARTICLES} articles: a citation of it names no answer",
    "ambiguous-text": "the quoted text is in several articles word for word: which one is meant is not known",
    "no-positions": "the KB records no heading positions for this document (built before grace recorded them, or "
                    "imported): headings are read by the articles' heading paths, and one folded into another "
                    "article, or cut into parts, is not found; rebuild the KB",
}

_EXTENSIONS = (".html", ".htm", ".md", ".markdown", ".txt", ".pdf", ".docx", ".rst")
_PART = re.compile(r"\s*\(part \d+ of \d+\)$")
_QUOTES = "\"'“”‘’«»`"


@dataclass(frozen=True, slots=True)  # slots: a scorer makes one per citation, a million a run
class Resolution:
    """One reference and what it maps to: the set of ``articles`` (KB IDs, in KB order) whose text holds what it
    points to, ``how`` and what kind of set (``scope``), or unmapped with a ``note`` saying why.

    ``scope``: ``"article"`` (one article), ``"several"`` (a section, quote or mapped ID whose text is in several
    articles: all of them hold what it points to), ``"page"`` (a page: its articles); None when unmapped.
    ``warning``: a named problem (a key of WARNINGS), mapped or not.
    """

    reference: str
    articles: tuple[str, ...] = ()
    how: str | None = None  # one of HOW; None: unmapped
    note: str = ""  # why unmapped (or which rule mapped it)
    candidates: tuple[str, ...] = ()  # the articles an ambiguous reference matched equally
    scope: Scope | None = None  # derived from ``articles`` when not given: one is "article", more "several"
    warning: str | None = None  # a key of WARNINGS

    def __post_init__(self) -> None:
        if self.articles:
            if self.scope is None:
                object.__setattr__(self, "scope", "article" if len(self.articles) == 1 else "several")
        elif self.scope is not None:
            object.__setattr__(self, "scope", None)

    @property
    def mapped(self) -> bool:
        return bool(self.articles)

    def as_dict(self) -> dict:
        return {"reference": self.reference, "articles": list(self.articles), "how": self.how, "scope": self.scope,
                "note": self.note, "candidates": list(self.candidates), "warning": self.warning}


def slug(text: str) -> str:
    """A heading as an anchor: ``Annual performance bonus`` and ``#annual-performance-bonus`` both read the same."""
    return "-".join(WORD.findall(fold(unquote(text)).replace("_", " ")))


def _doc_key(path: str) -> tuple[str, ...]:
    """A document path as comparable segments: lower case, no extension, no trailing ``index``."""
    path = unquote(path).replace("\\", "/").strip("/").casefold()
    for ext in _EXTENSIONS:
        if path.endswith(ext):
            path = path[: -len(ext)]
            break
    parts = tuple(p for p in path.split("/") if p and p != ".")
    if len(parts) > 1 and parts[-1] in ("index", "readme"):
        parts = parts[:-1]
    return parts


def heading(article: object) -> str:
    """The article's own heading (its title's last part when it has none), without a split's "(part N of M)"."""
    last = article.heading_path[-1] if article.heading_path else article.title.rpartition(" > ")[2]
    return _PART.sub("", last)


def _shingles(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + _SHINGLE]) for i in range(max(len(words) - _SHINGLE + 1, 0))}


@dataclass
class Rewrite:
    """A path/URL rewrite rule: a reference starting with ``prefix`` is read with it replaced by ``replacement``."""

    prefix: str
    replacement: str


@dataclass
class _Located:
    """A document's text as the KB holds it: each article's spans of it, and the headings inside them."""

    source: str
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, article ID)
    headings: list[tuple[object, str]] = field(default_factory=list)  # (kb_records.SourceHeading, article ID)


@dataclass
class Resolver:
    """Resolves references against one KB's articles; build once, call :meth:`resolve` per reference."""

    articles: Sequence[object]
    # their_id -> the article ID(s) it names (see read_mapping; a plain ID string is one article)
    mapping: dict[str, str | tuple[str, ...]] = field(default_factory=dict)
    rewrites: list[Rewrite] = field(default_factory=list)
    bare_ids: bool = False  # the system cites by KB ID: a bare ``17`` is article 17
    min_quote_words: int = MIN_QUOTE_WORDS
    min_quote_overlap: float = MIN_QUOTE_OVERLAP
    min_quote_run: int = MIN_QUOTE_RUN
    elsewhere_share: float = ELSEWHERE_SHARE
    max_page_articles: int = MAX_PAGE_ARTICLES

    def __post_init__(self) -> None:
        self.by_id = {a.id: a for a in self.articles}
        self.order = {a.id: i for i, a in enumerate(self.articles)}
        self.documents: dict[tuple[str, ...], list] = defaultdict(list)
        self.located: dict[tuple[str, ...], _Located] = {}
        self.titles: dict[str, list[str]] = defaultdict(list)
        self.last_titles: dict[str, list[str]] = defaultdict(list)
        self.index: dict[tuple[str, ...], set[str]] = defaultdict(set)
        self.texts: dict[str, str] = {}
        for a in self.articles:
            if a.source:
                self.documents[_doc_key(a.source)].append(a)
            for sp in getattr(a, "spans", None) or ():
                doc = sp.source or a.source
                if doc:
                    self._located(doc).spans.append((sp.start, sp.end, a.id))
            for h in getattr(a, "headings", None) or ():
                doc = h.source or a.source
                if doc:
                    self._located(doc).headings.append((h, a.id))
            self.titles[fold(a.title)].append(a.id)
            self.last_titles[fold(heading(a))].append(a.id)
            words = folded_words(a.title + " " + a.text)
            self.texts[a.id] = " ".join(words)
            for s in _shingles(words):
                self.index[s].add(a.id)
        for key, loc in self.located.items():  # an article merged by hand with another document's: of both pages
            have = {a.id for a in self.documents[key]}
            self.documents[key] += [self.by_id[aid] for aid in dict.fromkeys(aid for _, _, aid in loc.spans)
                                    if aid not in have]
            loc.headings.sort(key=lambda h: h[0].start)
        mapping: dict[str, tuple[str, ...]] = {}
        for theirs, ours in self.mapping.items():
            mapping[theirs] = (ours,) if isinstance(ours, str) else tuple(ours)
        self.mapping = mapping
        unknown = sorted({v for ids in mapping.values() for v in ids if v not in self.by_id})
        if unknown:
            raise GraceError(f"the mapping names article(s) not in the KB: {', '.join(unknown[:10])}")

    def _located(self, source: str) -> _Located:
        key = _doc_key(source)
        if key not in self.located:
            self.located[key] = _Located(source)
        return self.located[key]

    def _sorted(self, ids: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(set(ids), key=lambda aid: self.order.get(aid, 0)))

    # -- the readings, in HOW order -------------------------------------------------------------------------

    def resolve(self, reference: str) -> Resolution:
        ref = reference.strip()
        if not ref:
            return Resolution(reference, note="empty reference")
        if ref in self.mapping:
            ids = self.mapping[ref]
            return Resolution(reference, ids, "mapping", note=f"{ref} -> {';'.join(ids)}")
        m = ID_REFERENCE.match(ref)
        if m and m.group(1) in self.by_id:  # an explicit KB ID: [ID: 17], ID: 17
            return Resolution(reference, (m.group(1),), "id")
        if self.bare_ids and ref in self.by_id:  # only when the system cites by KB ID: never a footnote number
            return Resolution(reference, (ref,), "id")
        for rule in self.rewrites:
            if ref.startswith(rule.prefix):
                found = self._source(rule.replacement + ref[len(rule.prefix):])
                if found is not None:
                    note = f"{rule.prefix} -> {rule.replacement}"
                    if found.mapped:
                        return replace(found, reference=reference, how="rewrite",
                                       note=f"{note}; {found.how}" + (f": {found.note}" if found.note else ""))
                    return replace(found, reference=reference, note=f"{note}; {found.note}")
        pathlike = self._pathlike(ref)
        found = self._source(ref) if pathlike else None
        if found is None:
            found = self._title(ref)
        if found is None and not pathlike:  # a path's or URL's words are no quote: its anchor's words would map it
            found = self._quote(ref)
        if found is None:
            why = "no KB document at this path" if self._pathlike(ref) else \
                "a bare number is a KB ID only when the system cites by KB ID" if ref.isdigit() else "no article matches"
            return Resolution(reference, note=why)
        return replace(found, reference=reference)

    def resolve_many(self, references: Iterable[str]) -> list[Resolution]:
        return [self.resolve(r) for r in references]

    @staticmethod
    def _pathlike(ref: str) -> bool:
        path = ref.partition("#")[0]
        if not any(c.isalnum() for c in path) or any(c.isspace() for c in path):
            return False  # a path has no spaces before its anchor; a sentence with a slash is a quote
        return "/" in ref or "#" in ref or "://" in ref or ref.casefold().split("#")[0].endswith(_EXTENSIONS)

    def _source(self, ref: str) -> Resolution | None:
        """A document path or URL, optionally ``#anchor``; None when no KB document matches the path."""
        parts = urlsplit(ref) if "://" in ref else None
        path, _, anchor = (parts.path, "", parts.fragment) if parts else ref.partition("#")
        key = _doc_key(path)
        if not key:
            return None
        # The reference's path names a document whole, or ends with a document's folder-and-name path (a URL or a
        # site adds a host and a prefix). A root-level document (one segment: about.md) matches only a reference
        # that is exactly its path: every website has an /about, so a URL ending in that one segment says nothing
        # about which site it is (a rewrite rule for the site's prefix makes it so). A bare file name
        # (pay-and-compensation.html) may name a deeper document, but a URL never matches by a part of its path.
        url = parts is not None
        docs = [k for k in self.documents if (k == key and not (url and len(k) == 1)) or (len(k) > 1 and key[-len(k):] == k)]
        if not docs and not url:
            docs = [k for k in self.documents if k[-len(key):] == key]
        if not docs and url and any(k[-1] == key[-1] for k in self.documents):
            return Resolution(ref, note=f"no KB document has the path {path!r} (a document of the same name is not "
                                        "enough: add a rewrite rule for this site's prefix to map its URLs)")
        if not docs:  # not a KB document: the title and quote readings still try (a quote may hold a URL)
            return None
        longest = max(len(k) for k in docs)
        docs = [k for k in docs if len(k) == longest]
        if len(docs) > 1:
            ids = tuple(a.id for k in docs for a in self.documents[k])
            return Resolution(ref, note=f"{len(docs)} documents match {path!r}", candidates=ids)
        articles = self.documents[docs[0]]
        name = articles[0].source or "/".join(docs[0])
        if not anchor:
            return self._page(ref, name, articles)
        loc = self.located.get(docs[0])
        if loc is None or not loc.spans:
            return self._by_heading_path(ref, name, articles, anchor)
        return self._anchor(ref, name, loc, articles, anchor)

    def _page(self, ref: str, name: str, articles: list) -> Resolution:
        if len(articles) == 1:
            return Resolution(ref, (articles[0].id,), "source")
        if len(articles) > self.max_page_articles:
            return Resolution(ref, note=f"{name} is a page of {len(articles)} articles, more than the "
                                        f"{self.max_page_articles} a page's citation maps to: cite its headings "
                                        "(#anchor)", warning="page-too-large")
        return Resolution(ref, self._sorted(a.id for a in articles), "source", scope="page",
                          note=f"the page's {len(articles)} articles")

    def _anchor(self, ref: str, name: str, loc: _Located, articles: list, anchor: str) -> Resolution:
        """The articles holding the text a heading's anchor leads to (its section, or a bare heading's sub-tree)."""
        said = unquote(anchor).strip()
        found = [(h, aid) for h, aid in loc.headings if said in h.anchors]
        if not found:  # a heading's text as the anchor (path#Annual performance bonus)
            want = slug(said)
            found = [(h, aid) for h, aid in loc.headings if slug(h.text) == want]
        if not found:
            fallback = self._by_heading_path(ref, name, articles, anchor, quiet=True)
            if fallback.mapped:
                return fallback
            return Resolution(ref, note=f"no heading with the anchor {anchor!r} in {name} (of the "
                                        f"{len(loc.headings)} headings its articles hold; a section too short or "
                                        "only links is left out of the KB)", candidates=fallback.candidates)
        places = {h.start: h for h, _ in found}
        held = {start: self._held(loc, h.start, h.end) for start, h in places.items()}
        if len(set(map(frozenset, held.values()))) > 1:
            heads = "; ".join(f"{h.text!r} (character {h.start})" for h in places.values())
            return Resolution(ref, note=f"the anchor {anchor!r} matches {len(places)} headings of {name}: {heads}",
                              candidates=self._sorted(aid for ids in held.values() for aid in ids),
                              warning="ambiguous-anchor")
        h = next(iter(places.values()))
        ids = next(iter(held.values()))
        if not ids:
            return Resolution(ref, note=f"the text under heading {h.text!r} of {name} is in no article (a section "
                                        "too short or only links is left out of the KB)")
        note = f"the text under heading {h.text!r} is in {len(ids)} articles" if len(ids) > 1 else ""
        return Resolution(ref, ids, "source+heading", note=note)

    def _held(self, loc: _Located, start: int, end: int) -> tuple[str, ...]:
        """The articles holding any of characters ``start``..``end`` of the document (a bare heading line: the one
        holding it)."""
        if end <= start:
            end = start + 1
        return self._sorted(aid for a, b, aid in loc.spans if a < end and b > start)

    def _by_heading_path(self, ref: str, name: str, articles: list, anchor: str, quiet: bool = False) -> Resolution:
        """The rule of a KB without positions: the article whose own heading is the anchor, else those under it."""
        want = slug(anchor)
        hits = [a for a in articles if a.heading_path and slug(heading(a)) == want]
        if not hits:  # a parent heading: the articles under it
            hits = [a for a in articles if any(slug(h) == want for h in a.heading_path)]
        warning = None if quiet else "no-positions"
        said = "" if quiet else " (the KB records no heading positions for this document: rebuild it to map " \
                                "headings folded into another article or cut into parts)"
        if len(hits) == 1:
            return Resolution(ref, (hits[0].id,), "source+heading", note=("heading path" + said).strip(),
                              warning=warning)
        if hits and quiet:
            return Resolution(ref, self._sorted(a.id for a in hits), "source+heading",
                              note=f"the {len(hits)} articles under heading {anchor!r}")
        if hits:
            return Resolution(ref, note=f"heading {anchor!r} spans {len(hits)} articles{said}",
                              candidates=tuple(a.id for a in hits), warning=warning)
        return Resolution(ref, note=f"no heading {anchor!r} in {name}{said}", warning=warning)

    def _title(self, ref: str) -> Resolution | None:
        text = fold(ref.strip(_QUOTES))
        for table in (self.titles, self.last_titles):
            ids = table.get(text)
            if ids and len(ids) == 1:
                return Resolution(ref, (ids[0],), "title")
            if ids:
                return Resolution(ref, note=f"{len(ids)} articles have this title", candidates=tuple(ids))
        return None

    def _quote(self, ref: str) -> Resolution | None:
        """The articles a quote (or a chunk of text) overlaps: the one holding most of its 3-word runs, then each
        holding a run of :attr:`min_quote_run` more of them that no article chosen before holds, while they hold
        :attr:`min_quote_overlap` of it in all. Text that several articles hold word for word is unmapped."""
        words = folded_words(ref.strip(_QUOTES))
        if len(words) < self.min_quote_words:
            return None
        grams = [tuple(words[i:i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)]
        holds: dict[str, set[int]] = defaultdict(set)
        for i, g in enumerate(grams):
            for aid in self.index.get(g, ()):
                holds[aid].add(i)
        if not holds:
            return None
        joined = " ".join(words)
        every = set(range(len(grams)))
        exact = [aid for aid, at in holds.items() if at == every and joined in self.texts[aid]]
        if len(exact) == 1:
            return Resolution(ref, (exact[0],), "quote", note="exact text")
        if len(exact) > 1:
            return Resolution(ref, note=f"the quote occurs in {len(exact)} articles", candidates=self._sorted(exact),
                              warning="ambiguous-text")
        chosen: list[str] = []
        covered: set[int] = set()
        pages: set[str | None] = set()
        while True:
            best: list[tuple[int, str, frozenset[int]]] = []
            for aid, at in holds.items():
                new = at - covered
                if aid in chosen or not new:
                    continue
                if chosen and (_longest_run(new) < self.min_quote_run or not pages & self._pages(aid)):
                    continue  # a quote is of one page: what it runs over into is the same page's next article
                best.append((len(new), aid, frozenset(new)))
            if not best:
                break
            top = max(n for n, _, _ in best)
            tied = [(aid, new) for n, aid, new in best if n == top]
            if len({new for _, new in tied}) < len(tied):  # two articles hold the same words: which one is not known
                if not chosen:
                    return Resolution(ref, note=f"the quote matches {len(tied)} articles equally",
                                      candidates=self._sorted(aid for aid, _ in tied), warning="ambiguous-text")
                break
            aid, new = min(tied, key=lambda t: self.order[t[0]])
            chosen.append(aid)
            covered |= new
            pages |= self._pages(aid)
        share = len(covered) / len(grams)
        if not chosen or share < self.min_quote_overlap:
            return None
        elsewhere = self._also_elsewhere(holds, chosen, covered)
        if elsewhere:
            return Resolution(ref, note=f"the quote's text is also in {elsewhere[0]!r} word for word",
                              candidates=self._sorted([*chosen, *elsewhere[1]]), warning="ambiguous-text")
        parts = "" if len(chosen) == 1 else f" in {len(chosen)} articles"
        return Resolution(ref, self._sorted(chosen), "quote", note=f"{share:.0%} of its 3-word runs{parts}")

    def _pages(self, aid: str) -> set[str | None]:
        a = self.by_id[aid]
        return {a.source, *(sp.source for sp in getattr(a, "spans", None) or () if sp.source)}

    def _also_elsewhere(self, holds: dict[str, set[int]], chosen: list[str], covered: set[int]
                        ) -> tuple[str, list[str]] | None:
        """Another page whose articles hold (in runs) nearly all the quote's words the chosen ones hold: the text is
        on two pages, and which one is meant is not known."""
        mine = set().union(*(self._pages(aid) for aid in chosen))
        other: dict[str | None, set[int]] = defaultdict(set)
        who: dict[str | None, list[str]] = defaultdict(list)
        for aid, at in holds.items():
            if aid in chosen:
                continue
            runs = _in_runs(at, self.min_quote_run)
            if runs:
                for page in self._pages(aid) - mine:
                    other[page] |= runs
                    who[page].append(aid)
        for page, at in other.items():
            if len(at & covered) >= self.elsewhere_share * len(covered):
                return str(page), who[page]
        return None


def _in_runs(positions: set[int], least: int) -> set[int]:
    """The positions that are part of a run of at least ``least`` consecutive ones."""
    out: set[int] = set()
    run: list[int] = []
    for p in sorted(positions):
        if run and p != run[-1] + 1:
            if len(run) >= least:
                out.update(run)
            run = []
        run.append(p)
    if len(run) >= least:
        out.update(run)
    return out


def _longest_run(positions: set[int]) -> int:
    best = run = 0
    prev = None
    for p in sorted(positions):
        run = run + 1 if prev is not None and p == prev + 1 else 1
        best = max(best, run)
        prev = p
    return best


# A mapping file is the user's, not grace's: read a line at a time, with limits, so a wrong file (a 2 GB export, a
# log given by mistake) is a clear error rather than memory spent. A chunk index of a large KB has some hundred
# thousand IDs; the limits leave ten times that.
MAX_MAPPING_BYTES = 256 << 20
MAX_MAPPING_ROWS = 2_000_000
MAX_MAPPING_CELL = 4096  # characters of one ID: a path or URL is far shorter; a longer cell is a wrong file


def _utf8_lines(fh, path: Path, max_bytes: int):
    """The file's lines as text, each decoded on its own so a bad byte is named by its line (a UTF-8 sequence
    never spans a newline), and the bytes read counted against ``max_bytes`` (a file may grow while read)."""
    read = 0
    for n, raw in enumerate(fh, 1):
        read += len(raw)
        if read > max_bytes:
            raise GraceError(f"{where(path, n)}: the mapping file is over {max_bytes >> 20} MB; a their_id,article_id "
                             "file is far smaller (is this the right file?)")
        if len(raw) > 4 * MAX_MAPPING_CELL:
            raise GraceError(f"{where(path, n)}: a line of {len(raw):,} bytes; a their_id,article_id row is far "
                             "shorter (is this the right file?)")
        try:
            yield raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise GraceError(f"{where(path, n)}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the mapping as "
                             "UTF-8 CSV") from None


def read_mapping(path: str | Path, known_ids: Iterable[str], *, max_bytes: int = MAX_MAPPING_BYTES,
                 max_rows: int = MAX_MAPPING_ROWS) -> dict[str, tuple[str, ...]]:
    """A ``their_id,article_id`` CSV (a header row of those names is optional) as a dict of their ID -> the article
    ID(s) it names. A row may name several articles, separated by ``;`` as gold labels list them (``chunk-17,12;13``:
    a chunk whose text is in two articles). Checked row by row: an unknown article ID, a duplicate or a conflicting
    row, a byte that is not UTF-8, a file over ``max_bytes`` or ``max_rows`` is a ``GraceError`` naming the file and
    line. Read streaming: never held whole."""
    path = Path(path)
    known = known_ids if isinstance(known_ids, set | frozenset | dict) else set(known_ids)
    if not path.is_file():
        raise GraceError(f"{path}: no such mapping file (give a CSV of their_id,article_id rows)")
    size = path.stat().st_size
    if size > max_bytes:
        raise GraceError(f"{path}: the mapping file is {size / (1 << 20):,.0f} MB, over the {max_bytes >> 20} MB a "
                         "their_id,article_id file may be (is this the right file?)")
    out: dict[str, tuple[str, ...]] = {}
    lines: dict[str, int] = {}
    with path.open("rb") as fh:
        reader = csv.reader(_utf8_lines(fh, path, max_bytes))
        rows = 0
        while True:
            n = reader.line_num + 1  # where the row starts (a quoted cell may run over several lines)
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise GraceError(f"{where(path, n)}: not a CSV row ({exc})") from None
            if not row or all(not c.strip() for c in row):
                continue
            if max(len(c) for c in row) > MAX_MAPPING_CELL:
                raise GraceError(f"{where(path, n)}: an ID over {MAX_MAPPING_CELL:,} characters (a quoted cell "
                                 "left open?)")
            rows += 1
            if rows > max_rows:
                raise GraceError(f"{where(path, n)}: more than {max_rows:,} rows; a mapping names each of the "
                                 "system's own IDs once (is this the right file?)")
            if len(row) != 2:
                raise GraceError(f"{where(path, n)}: expected 2 columns their_id,article_id, got {len(row)} (several "
                                 "articles go in one cell, separated by ';': chunk-17,12;13)")
            theirs, cell = row[0].strip(), row[1].strip()
            if rows == 1 and (theirs.casefold(), cell.casefold()) == ("their_id", "article_id"):
                continue
            ours = tuple(x.strip() for x in cell.split(";"))
            if not theirs or not cell:
                raise GraceError(f"{where(path, n)}: an empty their_id or article_id")
            if any(not x for x in ours):
                raise GraceError(f"{where(path, n)}: an empty article ID in {cell!r} (separate several with ';': "
                                 "12;13)")
            for x in ours:
                if x not in known:
                    raise GraceError(f"{where(path, n)}: article {x!r} is not in the KB (their_id {theirs!r}): "
                                     "correct the ID (see the KB's articles.jsonl) or drop the row")
            ours = tuple(dict.fromkeys(ours))
            if theirs in out:
                kind = "duplicate" if set(out[theirs]) == set(ours) else \
                    f"conflicting (line {lines[theirs]} maps it to {';'.join(out[theirs])!r})"
                raise GraceError(f"{where(path, n)}: {kind} row for their_id {theirs!r}: keep one row per their_id "
                                 "(one row may name several articles: 12;13)")
            out[theirs] = ours
            lines[theirs] = n
    return out


def read_rewrites(rules: Iterable[tuple[str, str] | str], origin: str = "rewrite rules") -> list[Rewrite]:
    """Rewrite rules as data: ``(prefix, replacement)`` pairs or ``PREFIX=REPLACEMENT`` strings; a duplicate or
    conflicting prefix is a ``GraceError`` naming the rule."""
    out: list[Rewrite] = []
    seen: dict[str, str] = {}
    for i, rule in enumerate(rules, 1):
        if isinstance(rule, str):
            if "=" not in rule:
                raise GraceError(f"{origin} #{i} {rule!r}: write it as PREFIX=REPLACEMENT")
            prefix, _, replacement = rule.partition("=")
        else:
            prefix, replacement = rule
        if not prefix:
            raise GraceError(f"{origin} #{i}: an empty prefix would rewrite every reference")
        if prefix in seen:
            kind = "duplicate" if seen[prefix] == replacement else "conflicting"
            raise GraceError(f"{origin} #{i}: {kind} rule for prefix {prefix!r}: keep one")
        seen[prefix] = replacement
        out.append(Rewrite(prefix, replacement))
    return sorted(out, key=lambda r: -len(r.prefix))  # the most specific prefix first
