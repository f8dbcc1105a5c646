"""Map the references a system prints (its own source paths, URLs, titles, quotes, index IDs) onto KB articles.

Shipped bots cite their own documents, not grace's article IDs: ``payroll/pay-and-compensation.html#Annual
performance bonus``, a URL, a title, a quoted sentence, or a chunk ID of their own index. Read as an article ID,
each is an invalid citation, and a footnote ``[1]`` read as article 1 is a silent wrong figure. This module
resolves one reference string by the KB's own records (ID, source path, heading path, title, text) and by what
the user gives (a ``their_id,article_id`` file, path rewrite rules), and keeps HOW each was resolved so a score
can be checked. It never guesses: a reference that resolves to nothing, or to several articles equally, is
unmapped (with the candidates, when there are some), and a bare number is an article ID only when the caller
says the system cites by KB ID.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from harness.core.errors import GraceError, where

# How a reference was resolved, most direct first; the resolver tries them in this order and the first that
# finds any article decides (so a path never falls through to a looser reading).
HOW = ("mapping", "id", "rewrite", "source+heading", "source", "title", "quote")

# A quote maps when it has at least this many words and this share of its word 3-grams occur in one article (and
# no other article scores as high). Chosen on the sample KB (benchmarks/references.py, docs/measurements.md): 3-word
# quotes map to the wrong article, 4 and more do not (6 leaves a margin); a quote retyped with one word in eight
# changed keeps about 60% of its 3-word runs, so 0.5 maps it, while a sentence from another KB stays unmapped.
MIN_QUOTE_WORDS = 6
MIN_QUOTE_OVERLAP = 0.5
_SHINGLE = 3

_ID = re.compile(r"^\[?\s*ID(?:\s*[:#]\s*|\s+)([A-Za-z0-9_.-]+)\s*\]?$", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_EXTENSIONS = (".html", ".htm", ".md", ".markdown", ".txt", ".pdf", ".docx", ".rst")
_PART = re.compile(r"\s*\(part \d+ of \d+\)$")
_QUOTES = "\"'“”‘’«»`"


@dataclass(frozen=True)
class Resolution:
    """One reference and what it maps to: ``articles`` (IDs) and ``how``, or unmapped with a ``note`` saying why."""

    reference: str
    articles: tuple[str, ...] = ()
    how: str | None = None  # one of HOW; None: unmapped
    note: str = ""  # why unmapped (or which rule mapped it)
    candidates: tuple[str, ...] = ()  # the articles an ambiguous reference matched equally

    @property
    def mapped(self) -> bool:
        return bool(self.articles)

    def as_dict(self) -> dict:
        return {"reference": self.reference, "articles": list(self.articles), "how": self.how,
                "note": self.note, "candidates": list(self.candidates)}


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def slug(text: str) -> str:
    """A heading as an anchor: ``Annual performance bonus`` and ``#annual-performance-bonus`` both read the same."""
    return "-".join(_WORD.findall(_fold(unquote(text)).replace("_", " ")))


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


def _words(text: str) -> list[str]:
    return _WORD.findall(_fold(text))


def _shingles(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + _SHINGLE]) for i in range(max(len(words) - _SHINGLE + 1, 0))}


@dataclass
class Rewrite:
    """A path/URL rewrite rule: a reference starting with ``prefix`` is read with it replaced by ``replacement``."""

    prefix: str
    replacement: str


@dataclass
class Resolver:
    """Resolves references against one KB's articles; build once, call :meth:`resolve` per reference."""

    articles: Sequence[object]
    mapping: dict[str, str] = field(default_factory=dict)  # their_id -> article ID (see read_mapping)
    rewrites: list[Rewrite] = field(default_factory=list)
    bare_ids: bool = False  # the system cites by KB ID: a bare ``17`` is article 17
    min_quote_words: int = MIN_QUOTE_WORDS
    min_quote_overlap: float = MIN_QUOTE_OVERLAP

    def __post_init__(self) -> None:
        self.by_id = {a.id: a for a in self.articles}
        self.documents: dict[tuple[str, ...], list] = defaultdict(list)
        self.titles: dict[str, list[str]] = defaultdict(list)
        self.last_titles: dict[str, list[str]] = defaultdict(list)
        self.index: dict[tuple[str, ...], set[str]] = defaultdict(set)
        self.texts: dict[str, str] = {}
        for a in self.articles:
            if a.source:
                self.documents[_doc_key(a.source)].append(a)
            self.titles[_fold(a.title)].append(a.id)
            self.last_titles[_fold(heading(a))].append(a.id)
            words = _words(a.title + " " + a.text)
            self.texts[a.id] = " ".join(words)
            for s in _shingles(words):
                self.index[s].add(a.id)
        unknown = sorted({v for v in self.mapping.values() if v not in self.by_id})
        if unknown:
            raise GraceError(f"the mapping names article(s) not in the KB: {', '.join(unknown[:10])}")

    # -- the readings, in HOW order -------------------------------------------------------------------------

    def resolve(self, reference: str) -> Resolution:
        ref = reference.strip()
        if not ref:
            return Resolution(reference, note="empty reference")
        if ref in self.mapping:
            return Resolution(reference, (self.mapping[ref],), "mapping", note=f"{ref} -> {self.mapping[ref]}")
        m = _ID.match(ref)
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
                        return Resolution(reference, found.articles, "rewrite", note=f"{note}; {found.how}")
                    return Resolution(reference, note=f"{note}; {found.note}", candidates=found.candidates)
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
        return Resolution(reference, found.articles, found.how, found.note, found.candidates)

    def resolve_many(self, references: Iterable[str]) -> list[Resolution]:
        return [self.resolve(r) for r in references]

    @staticmethod
    def _pathlike(ref: str) -> bool:
        path = ref.partition("#")[0]
        if not path or any(c.isspace() for c in path):
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
        if anchor:
            want = slug(anchor)
            hits = [a for a in articles if a.heading_path and slug(heading(a)) == want]
            if not hits:  # a parent heading: the articles under it
                hits = [a for a in articles if any(slug(h) == want for h in a.heading_path)]
            if len(hits) == 1:
                return Resolution(ref, (hits[0].id,), "source+heading")
            if hits:
                return Resolution(ref, note=f"heading {anchor!r} spans {len(hits)} articles",
                                  candidates=tuple(a.id for a in hits))
            return Resolution(ref, note=f"no heading {anchor!r} in {articles[0].source}")
        if len(articles) == 1:
            return Resolution(ref, (articles[0].id,), "source")
        return Resolution(ref, note=f"{articles[0].source} has {len(articles)} articles: add its heading (#anchor)",
                          candidates=tuple(a.id for a in articles))

    def _title(self, ref: str) -> Resolution | None:
        text = _fold(ref.strip(_QUOTES))
        for table in (self.titles, self.last_titles):
            ids = table.get(text)
            if ids and len(ids) == 1:
                return Resolution(ref, (ids[0],), "title")
            if ids:
                return Resolution(ref, note=f"{len(ids)} articles have this title", candidates=tuple(ids))
        return None

    def _quote(self, ref: str) -> Resolution | None:
        words = _words(ref.strip(_QUOTES))
        if len(words) < self.min_quote_words:
            return None
        shingles = _shingles(words)
        counts: dict[str, int] = defaultdict(int)
        for s in shingles:
            for aid in self.index.get(s, ()):
                counts[aid] += 1
        if not counts:
            return None
        joined = " ".join(words)
        exact = [aid for aid in counts if joined in self.texts[aid]]
        if len(exact) == 1:
            return Resolution(ref, (exact[0],), "quote", note="exact text")
        if len(exact) > 1:
            return Resolution(ref, note=f"the quote occurs in {len(exact)} articles", candidates=tuple(exact))
        best = max(counts.values())
        share = best / len(shingles)
        if share < self.min_quote_overlap:
            return None
        top = [aid for aid, n in counts.items() if n == best]
        if len(top) > 1:
            return Resolution(ref, note=f"the quote matches {len(top)} articles equally", candidates=tuple(top))
        return Resolution(ref, (top[0],), "quote", note=f"{share:.0%} of its 3-word runs")


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
                 max_rows: int = MAX_MAPPING_ROWS) -> dict[str, str]:
    """A ``their_id,article_id`` CSV (a header row of those names is optional) as a dict, checked row by row:
    an unknown article ID, a duplicate or a conflicting row, a byte that is not UTF-8, a file over ``max_bytes``
    or ``max_rows`` is a ``GraceError`` naming the file and line. Read streaming: never held whole."""
    path = Path(path)
    known = known_ids if isinstance(known_ids, set | frozenset | dict) else set(known_ids)
    if not path.is_file():
        raise GraceError(f"{path}: no such mapping file (give a CSV of their_id,article_id rows)")
    size = path.stat().st_size
    if size > max_bytes:
        raise GraceError(f"{path}: the mapping file is {size / (1 << 20):,.0f} MB, over the {max_bytes >> 20} MB a "
                         "their_id,article_id file may be (is this the right file?)")
    out: dict[str, str] = {}
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
                raise GraceError(f"{where(path, n)}: expected 2 columns their_id,article_id, got {len(row)}")
            theirs, ours = row[0].strip(), row[1].strip()
            if rows == 1 and (theirs.casefold(), ours.casefold()) == ("their_id", "article_id"):
                continue
            if not theirs or not ours:
                raise GraceError(f"{where(path, n)}: an empty their_id or article_id")
            if ours not in known:
                raise GraceError(f"{where(path, n)}: article {ours!r} is not in the KB (their_id {theirs!r})")
            if theirs in out:
                kind = "duplicate" if out[theirs] == ours else f"conflicting (line {lines[theirs]} maps it to {out[theirs]!r})"
                raise GraceError(f"{where(path, n)}: {kind} row for their_id {theirs!r}: keep one row per their_id")
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
