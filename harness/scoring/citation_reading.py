"""Which KB articles an answer cites, for a model whose citations are read as references or scored several at a time.

A GRACE prompt asks for ``[ID: 17]``, and :mod:`harness.scoring.extraction` reads it. A shipped system cites its
own documents (paths, URLs, titles, quotes, its own index IDs) by footnotes and a source list, often several per
answer (issue 39). Its :class:`~harness.run_folder.run_records.CitationSettings` choose how it is read:

* ``reads = "ids"``: GRACE's extraction exactly as for a prompt (each cited ID an article, or an invalid one).
* ``reads = "references"``: the markers and source list (:func:`harness.scoring.markers.read_markers`), GRACE's
  canonical ``[ID: x]`` in the text (an article ID still) and the structured citations the system returned; each
  reference resolved onto KB articles by :class:`kb_builder.references.Resolver` (the KB's sources, headings,
  titles and text, the user's mapping file and rewrite rules). A structured citation or canonical ID that is
  exactly a KB ID is that article; a marker's number is never one. A reference that resolves to nothing stays
  *unmapped*, with the resolver's reason. Resolutions are cached per distinct reference string: a bot cites the
  same few hundred documents a million times.

A quoted span attached to a citation (a quote in the sentence its marker ends, or a reference that is itself a
quote) is checked to occur in the cited article, with case, spaces, punctuation and quote marks folded: no model
is needed to tell a made-up quote. Bad input (a marker with no source, a list longer than its markers, a range
too long) is named problem codes on the reading, never an exception.

Read as references, an answer's strict reading (``strict_cited_ids``, ``strict_outcome``) cites what the lenient
one does, with only the exact refusal sentence counted as a refusal: a system has no prompt format to be held to.

The reader is built once per model in the scoring process and handed to each scoring worker: it pickles without
its resolver and cache, which each worker builds again on first use (the KB's articles, mapping and rules travel).
The spot-check's claim-level judging reads answers with the same class (:meth:`CitationReading.claims`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, NamedTuple

from harness.core.citation_text import CANONICAL, SENTENCE_END, WORD, folded_words, is_canonical_id
from harness.run_folder.run_records import CitationSettings
from harness.scoring.extraction import extract_both, given_citations
from harness.scoring.markers import citation_units, read_markers
from harness.scoring.outcomes import Rules, forbidden_ids
from harness.scoring.refusal import is_lenient_refusal, is_strict_refusal
from kb_builder.references import Resolution, Resolver, read_mapping, read_rewrites

QUOTE_MIN_WORDS = 3  # a quoted span of fewer words is a term or a name ("Hybrid"), not a claim to check
_CACHE_MAX = 200_000  # distinct references remembered per model: bounded on hostile output (every one unique)
_QUOTED = re.compile(r'"([^"\n]{1,1000})"|\u201c([^\u201c\u201d\n]{1,1000})\u201d|\u00ab([^\u00ab\u00bb\n]{1,1000})\u00bb'
                     r'|\u201e([^\u201e\u201c\u201d\n]{1,1000})[\u201c\u201d]')
_NOT_AN_ID = "not a KB article ID"
_QUOTE_CHAR = re.compile('["\u201c\u00ab\u201e]')  # what opens a quoted span (_QUOTED)
_QUOTES = "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e`"


def _words(text: str) -> str:
    """``text`` as its words, folded as the resolver's article texts are (citation_text): " l4 and l5 10 "."""
    return " " + " ".join(folded_words(text)) + " "


class ReadCitation(NamedTuple):
    """One citation of an answer: the reference as given, and what it resolved to (a tuple: a million answers)."""

    reference: str
    articles: tuple[str, ...]  # the KB articles it resolved to; () when unmapped
    how: str | None  # kb_builder.references.HOW, or None when unmapped
    note: str  # why unmapped (or which rule mapped it)
    quote: str | None  # the quoted span attached to it, if any
    quote_found: bool | None  # the quote occurs in a cited article; None: no quote, or nothing to look in
    sentences: tuple[tuple[int, int], ...]  # spans in CitationReading.body of the sentences its markers end
    warning: str | None = None  # a named problem of the reference (kb_builder.references.WARNINGS), mapped or not

    def as_dict(self) -> dict[str, Any]:
        """What ``scores.jsonl`` holds of it (:class:`~harness.run_folder.scores.CitedReference`)."""
        return {"reference": self.reference, "articles": list(self.articles), "how": self.how, "note": self.note,
                "quote": self.quote, "quote_found": self.quote_found}


class CitationReading(NamedTuple):
    """One answer read: its citations in order of first appearance, its refusal, and the problems found."""

    body: str  # the answer without its source list and footnote definitions (the whole text when read as IDs)
    citations: tuple[ReadCitation, ...]
    refused: bool  # the lenient reading's refusal
    strict_refused: bool  # the prompt's exact refusal sentence
    rule: str  # harness.scoring.extraction.RULES: json for structured citations, lenient for markers, none
    strict_ids: tuple[str, ...]  # the strict reading's cited IDs (reads = ids); the cited articles otherwise
    problems: tuple[str, ...]  # harness.scoring.markers.PROBLEMS codes, distinct, in order

    def cited_ids(self) -> list[str]:
        """The distinct KB articles the citations resolved to, in order."""
        return list(dict.fromkeys(a for c in self.citations for a in c.articles))

    def unmapped(self) -> int:
        """Citations that resolved to no KB article."""
        return sum(not c.articles for c in self.citations)

    def claims(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(sentence, the articles cited by it)`` per sentence a marker ends, in body order; an answer whose
        citations carry no marker (structured citations only) is one claim: its whole body, citing them all."""
        spans: dict[tuple[int, int], list[str]] = {}
        for c in self.citations:
            for span in c.sentences:
                spans.setdefault(span, []).extend(c.articles)
        if not spans:
            ids = tuple(self.cited_ids())
            return [(self.body.strip(), ids)] if self.body.strip() and self.citations else []
        return [(self.body[a:b], tuple(dict.fromkeys(ids))) for (a, b), ids in sorted(spans.items())]


class CitationFigures(NamedTuple):
    """One answer's citation figures (see :func:`citation_figures`); None where not defined."""

    precision: float | None
    recall: float | None
    f1: float | None
    hit: bool | None
    correct: float | None
    coverage: float | None
    page_precision: float | None = None  # the same two figures with each article read as its source page
    page_recall: float | None = None


ANY_OF, ALL_OF = "any", "all"  # kb_builder.gold.CITATIONS_NEEDED: the gold's listed articles as alternatives or all
# the rule report.json states beside the figures (models[m].citations.rule) and docs/concepts/citations.md explains
SET_RULE = ("precision: per citation, right when one of the articles it resolves to is an acceptable one (a page or "
            "a chunk resolving to several articles counts once, right if it holds an answer; unmapped: a miss), over "
            "the citations made; recall: per answerable question, by its citations_needed: any (the default) 1 when "
            "one acceptable article is cited, all: the share of the listed articles cited; page level: the same with "
            "every article read as its source document")


def citation_figures(reading: CitationReading | None, cited: Sequence[str], expected: Collection[str],
                     answerable: bool, retrieved: Collection[str] | None,
                     audiences: Mapping[str, Collection[str]] | None = None,
                     groups: Collection[str] | None = None, needed: str = ANY_OF,
                     page_of: Mapping[str, str] | None = None,
                     expected_pages: Collection[str] | None = None) -> CitationFigures:
    """Per answer, by the gold's acceptable set E and its citations (each resolving to a set of articles, the
    union C): precision, the share of its citations whose set meets E (an unmapped one a miss: the docs' "share of
    its citations that answer the question"); recall by ``needed``: "any" (E lists alternatives, GRACE's reading)
    1 when C meets E, else 0; "all" (every listed article is required) |C∩E| / |E|; F1; hit: C meets E ("any") or
    holds E ("all"); those four only for an answerable question, and precision only when it cites. The page
    figures are precision and recall again with each article read as its page (``page_of``: article -> its source
    document; an article not in it is a page of its own; ``expected_pages``: E's pages, if known). ``correct``: the share of citations that exist
    (resolve), are reachable by the asker (not forbidden) and are supported (no quote missing from the article);
    coverage |C∩R| / |R| for the retrieved set R, when known. ``reading`` None: a failed call (recall 0)."""
    citations = reading.citations if reading is not None else ()
    precision = recall = f1 = page_precision = page_recall = None
    hit = None
    if answerable:
        right = 0
        for c in citations:
            for a in c.articles:
                if a in expected:
                    right += 1
                    break
        found = 0
        for a in cited:
            if a in expected:
                found += 1
        every = needed == ALL_OF
        hit = found == len(expected) if every else found > 0
        recall = (found / len(expected) if every else float(found > 0)) if expected else 0.0
        if citations:
            precision = right / len(citations)
        f1 = 0.0 if not precision or not recall else 2 * precision * recall / (precision + recall)
        if page_of is not None:
            page_precision, page_recall = _page_figures(citations, cited, expected, every, page_of, expected_pages)
    correct = None
    if citations:
        check = bool(audiences) and groups is not None
        good = 0
        for c in citations:
            if c.articles and c.quote_found is not False and not (check and forbidden_ids(c.articles, audiences, groups)):
                good += 1
        correct = good / len(citations)
    coverage = None
    if citations and retrieved:
        shown = set(retrieved)
        coverage = len(shown.intersection(cited)) / len(shown)
    return CitationFigures(precision, recall, f1, hit, correct, coverage, page_precision, page_recall)


def _page_figures(citations: Sequence[ReadCitation], cited: Sequence[str], expected: Collection[str], every: bool,
                  page_of: Mapping[str, str], pages: Collection[str] | None = None) -> tuple[float | None, float]:
    """Precision and recall with each article read as its source page (see :func:`citation_figures`). Plain loops:
    a generator costs a frame a row, and this runs on every answer of a million."""
    get = page_of.get
    if pages is None:
        pages = {get(a, a) for a in expected}
    right = 0
    for c in citations:
        for a in c.articles:
            if get(a, a) in pages:
                right += 1
                break
    found = set()
    for a in cited:
        page = get(a, a)
        if page in pages:
            found.add(page)
    recall = (len(found) / len(pages) if every else float(bool(found))) if pages else 0.0
    return (right / len(citations) if citations else None), recall


class CitationReader:
    """Reads one model's answers as its :class:`CitationSettings` say; build once per model, call :meth:`read`.

    ``articles`` are the KB's (``KB.articles``), ``kb_ids`` their IDs. A mapping file or rewrite rules with an
    error raise ``GraceError`` here (file, line and the fix), before any answer is read.
    """

    def __init__(self, articles: Sequence[Any], settings: CitationSettings, kb_ids: Collection[str]) -> None:
        self.settings = settings
        self.references = settings.reads == "references"
        self.multi = settings.scoring == "multi"
        self.rules = Rules(multi=self.multi, references=self.references)  # what decide_outcome judges by
        self.kb_ids = frozenset(kb_ids)
        self.mapping = read_mapping(settings.map, self.kb_ids) if settings.map and self.references else {}
        self.rewrites = read_rewrites(settings.rewrite.items(), origin="[models.citations] rewrite") \
            if self.references else []
        self._articles = list(articles) if self.references else []
        # each article's page (its source document; an imported article without one is a page of its own)
        self.page_of = {a.id: getattr(a, "source", None) or a.id for a in articles}
        self._resolver: Resolver | None = None
        self._cache: dict[str, Resolution] = {}
        self._unplaced_cache: dict[tuple[str, bool], ReadCitation] = {}
        self._retrieved: dict[str, tuple[str, ...]] = {}  # a retrieval list's reference: its articles
        self._pages: dict[frozenset[str], frozenset[str]] = {}  # a gold's articles: their pages

    def __getstate__(self) -> dict[str, Any]:
        """A worker gets the articles, mapping and rules, and builds the resolver and its cache again."""
        return {**self.__dict__, "_resolver": None, "_cache": {}, "_unplaced_cache": {}, "_retrieved": {},
                "_pages": {}}

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self._articles, dict(self.mapping), list(self.rewrites))
        return self._resolver

    def expected_pages(self, expected: frozenset[str]) -> frozenset[str]:
        """The pages of a gold's articles (per distinct gold: a run asks the same questions again and again)."""
        found = self._pages.get(expected)
        if found is None:
            found = self._pages[expected] = frozenset(self.page_of.get(a, a) for a in expected)
        return found

    def resolve(self, reference: str, as_id: bool = False) -> Resolution:
        """One reference (cached per distinct string); ``as_id``: a KB ID given as data is that article."""
        if as_id and reference in self.kb_ids:
            return Resolution(reference, (reference,), "id")
        found = self._cache.get(reference)
        if found is None:
            found = self.resolver.resolve(reference)
            if len(self._cache) < _CACHE_MAX:
                self._cache[reference] = found
        return found

    def resolve_retrieved(self, references: Iterable[str]) -> list[str]:
        """A system's own retrieval list (``system_retrieved``) as the distinct KB articles it resolves to."""
        if not isinstance(references, list | tuple):
            references = list(references)
        get = self._retrieved.get
        found = [get(ref) for ref in references]  # each reference's articles, remembered per distinct string
        if None in found:
            found = [f if f is not None else self._retrieved_articles(ref) for f, ref in zip(found, references, strict=True)]
        return list(dict.fromkeys(chain.from_iterable(found)))

    def _retrieved_articles(self, ref: str) -> tuple[str, ...]:
        articles = (ref,) if ref in self.kb_ids else self.resolve(ref).articles
        if len(self._retrieved) < _CACHE_MAX:
            self._retrieved[ref] = articles
        return articles

    def read(self, text: str, citations: Sequence[str] | None = None,
             refusal_langs: Iterable[str] | None = ()) -> CitationReading:
        """Read one answer (``citations``: the structured citations the system returned, if any);
        ``refusal_langs``: whose refusal paraphrases to look for besides English (None: every language's)."""
        if not self.references:
            return self._read_ids(text, citations, refusal_langs)
        given = [str(c) for c in citations] if citations is not None else None
        reading = read_markers(text, given)
        body = reading.body
        kb = self.kb_ids
        canonical = "[ID: " in body
        if not reading.markers and not canonical:
            # no marker and no [ID: x]: the structured citations (or the list), each read alike every time
            read = tuple(self._unplaced(ref, ref in kb and given is not None and ref in given)
                         for ref in reading.cited_references)
            return self._reading(text, body, read, given, refusal_langs, reading.problems)
        as_ids = set(kb.intersection(given)) if given else set()
        # reference -> the sentence spans its markers end, in order of first appearance
        order: dict[str, list[tuple[int, int]]] = {}
        quotes: dict[str, list[str]] = {}
        quoting = _QUOTE_CHAR.search(body) is not None
        if canonical:  # GRACE's [ID: x] among the markers: placed in text order with them
            found: list[tuple[int, str, tuple[int, int] | None]] = []  # (position, reference, sentence span)
            for m in reading.markers:
                span = (m.sentence_start, m.sentence_end)
                found.extend((m.start, ref, span) for ref in m.references if ref is not None)
            canon = [m for m in CANONICAL.finditer(body) if is_canonical_id(m.group(1))]
            # each from where its citation unit starts: "days. (see [ID: 4])" cites "days."
            for m, (at, _) in zip(canon, citation_units(body, [m.span() for m in canon]), strict=True):
                as_ids.add(m.group(1))
                found.append((m.start(), m.group(1), _sentence_of(body, at)))
            if not reading.markers:
                found.extend((len(body) + 1, ref, None) for ref in reading.cited_references)
            found.sort(key=lambda f: f[0])
            for _, ref, span in found:
                spans = order.setdefault(ref, [])
                if span is not None and span not in spans:
                    spans.append(span)
        else:  # the markers are in text order already
            for m in reading.markers:
                span = (m.sentence_start, m.sentence_end)
                for ref in m.references:
                    if ref is not None:
                        spans = order.get(ref)
                        if spans is None:
                            order[ref] = [span]
                        elif span not in spans:
                            spans.append(span)
        if quoting:
            for m in reading.markers:
                said = _quotes(body[m.sentence_start:m.sentence_end])
                if said:
                    for ref in m.references:
                        if ref is not None:
                            kept = quotes.setdefault(ref, [])
                            for q in said:
                                if q not in kept:
                                    kept.append(q)
        read = tuple(self._citation(ref, ref in as_ids, tuple(spans), quotes.get(ref)) for ref, spans in order.items())
        return self._reading(text, body, read, given, refusal_langs, reading.problems)

    def _reading(self, text: str, body: str, read: tuple[ReadCitation, ...], given: list[str] | None,
                 refusal_langs: Iterable[str] | None, problems: Sequence[Any]) -> CitationReading:
        strict_refused = bool(text) and is_strict_refusal(text)
        refused = strict_refused or (bool(text) and is_lenient_refusal(text, cites=bool(read),
                                                                       languages=refusal_langs))
        rule = "json" if given is not None else ("lenient" if read else "none")
        ids = tuple(dict.fromkeys(chain.from_iterable(c.articles for c in read))) if read else ()
        return CitationReading(body, read, refused, strict_refused, rule, ids,
                               tuple(dict.fromkeys(p.code for p in problems)) if problems else ())

    def _unplaced(self, ref: str, as_id: bool) -> ReadCitation:
        """A citation no marker places (a structured citation, a listed source): the same for every answer, so
        kept per reference (bounded like the resolutions)."""
        key = (ref, as_id)
        found = self._unplaced_cache.get(key)
        if found is None:
            found = self._citation(ref, as_id, (), None)
            if len(self._unplaced_cache) < _CACHE_MAX:
                self._unplaced_cache[key] = found
        return found

    def _citation(self, ref: str, as_id: bool, spans: tuple[tuple[int, int], ...],
                  said: list[str] | None) -> ReadCitation:
        res = self.resolve(ref, as_id)
        quote = " \u2026 ".join(said) if said else None
        if quote is None and res.how == "quote":  # the reference is itself a quote of the article
            quote = ref.strip().strip(_QUOTES).strip()
        found = None
        if quote is not None and res.articles:
            texts = self.resolver.texts
            wanted = said or [quote]
            found = all(any(_words(q) in f" {texts.get(a, '')} " for a in res.articles) for q in wanted)
        return ReadCitation(ref, res.articles, res.how, res.note, quote, found, spans, res.warning)

    def _read_ids(self, text: str, citations: Sequence[str] | None,
                  refusal_langs: Iterable[str] | None) -> CitationReading:
        """GRACE's reading, exactly as the scorer does it for a prompt; each cited ID an article or invalid."""
        if citations is None:
            ext, strict = extract_both(text, self.kb_ids, refusal_langs)
        else:
            ext, strict = given_citations(text, list(citations), refusal_langs)
        read = tuple(ReadCitation(c, (c,), "id", "", None, None, ()) if c in self.kb_ids
                     else ReadCitation(c, (), None, _NOT_AN_ID, None, None, ()) for c in ext.cited_ids)
        return CitationReading(text, read, ext.refused, strict.refused, ext.rule, tuple(strict.cited_ids), ())


def _quotes(sentence: str) -> list[str]:
    """The quoted spans of a sentence long enough to be a claim (QUOTE_MIN_WORDS words or more)."""
    out: list[str] = []
    for m in _QUOTED.finditer(sentence):
        span = next(g for g in m.groups() if g is not None).strip()
        if len(WORD.findall(span)) >= QUOTE_MIN_WORDS:
            out.append(span)
    return out


def _sentence_of(body: str, at: int) -> tuple[int, int]:
    """The sentence a marker at ``at`` ends: the one it sits in, or the one before when it follows a full stop
    (``at``: where its citation unit starts, so "days. (see [ID: 4])" follows one)."""
    before = body[:at].rstrip()
    if before and SENTENCE_END.match(before[-1]):
        before = before[:-1]
    start = 0
    for m in SENTENCE_END.finditer(before):
        start = m.end()
    end_match = SENTENCE_END.search(body, at)
    end = end_match.end() if end_match else len(body)
    if body[:at].rstrip() != before:  # it follows a full stop: that sentence ends there
        end = len(body[:at].rstrip())
    while start < end and body[start].isspace():
        start += 1
    return start, max(start, min(end, len(body)))
