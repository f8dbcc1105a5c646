"""KB lint: the article problems that make GRACE's citation scores wrong, worst first.

GRACE judges a model by the article it cites, so the KB must hold one topic per
article, each complete on its own. Two kinds of fault break that silently:

* **confusable pairs**: two articles a question could be answered by equally
  well; a "wrong citation" between them may be a right answer. Found by
  lexical similarity (TF-IDF cosine of the text, and of the titles' last
  breadcrumb part), by the KB's own embeddings when it has them on disk, and,
  given a scored run, by the pairs the models actually swap.
* **not self-contained**: an article that leans on text elsewhere ("as
  mentioned above", "the following" with nothing following, a body opening on
  "This policy" or on a bare list or table), or a heading with no body. The
  phrases are read in each article's language ("comme indiqué ci-dessus", "wie
  oben beschrieben": :mod:`kb_builder.lint_phrases`) and in English.
* **navigation**: a page's "See also" / "Related pages" heading (in any of the
  languages :data:`kb_builder.splitting.NAVIGATION_HEADINGS` knows) left in an
  article's text, where it heads the topic's own text, or an article that is only
  links: neither answers a question.

Plus the plain faults: too short, over the KB's token budget (an imported KB
records none, so the build default), duplicate titles, titles with markup, HTML
entities or URLs. Every finding names its articles and what to do;
``grace kb lint KB --json`` gives them to CI.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kb_builder.kb_dir import KbDir
from kb_builder.language import NO_SPACE, bigrams, stop_words
from kb_builder.lint_phrases import Phrases, phrases
from kb_builder.retrieval.lexical import kb_language
from kb_builder.similar_pairs import (
    BLOCK_WORK,
    PER_ROW,
    row_blocks,
    row_dots,
    row_work,
    similar_pairs,
    top_per_row,
    without_common,
    work_budget_for,
)
from kb_builder.splitting import DEFAULT_MAX_TOKENS, names_navigation

if TYPE_CHECKING:
    from kb_builder.store import KB

SEVERITY = {"error": 0, "warning": 1, "info": 2}
# worst first within a severity: what corrupts scores, then what makes answers incomplete, then cosmetics
KIND_ORDER = ["swapped_in_run", "confusable", "empty", "not_self_contained", "navigation", "over_budget", "too_short",
              "duplicate_title", "title_markup"]
CONFUSABLE_AT = 0.62  # combined similarity; tuned on the Helvia map, the TTS handbook and the sample handbook
NEAR_DUPLICATE_AT = 0.85
MIN_TOKENS = 40  # below this an article rarely answers anything on its own
OVER_BUDGET_ERROR = 8  # this many budgets long is a whole document left unsplit: citing it pins down nothing
TITLE_QUERY_CLOSE = 0.9  # another article scoring this share of an article's own title query: same topic
TITLE_QUERY_TEXT = 0.3  # ... and sharing this much of its text (TF-IDF cosine)
SWAPS_AT = 2  # wrong citations between the same two articles (either way) that make a pair worth a look

# letters of any script: "données" is one word, not "donn" and "es"; a run of Chinese, Thai... kept apart
_WORD = re.compile(rf"[{NO_SPACE}]+|(?:(?![{NO_SPACE}])[^\W_])+")
_NO_SPACE = re.compile(f"[{NO_SPACE}]")
_STOP = frozenset("""a an the of to in on at by for from with into about as and or but if so is are was were be been being
do does did has have had it its this that these those there here i me my we our you your he she they them their who what
when where why how which can could may might must should would will shall not no any some all each per than then also
only more most such""".split())
_PART = re.compile(r"\(part (\d+) of \d+\)\s*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*(\d+)[.)]\s")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|\|)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_HEADING_TEXT = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)[\s#]*$")
# a line that is a link and nothing else (in a list or not): markdown, or a bare or <angled> URL
_LINK_LINE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\[[^\]]*\]\([^)]*\)|<?(?:https?://|www\.)\S+?>?)\s*[.,;]?\s*$",
                        re.IGNORECASE)
_LINK_IN = re.compile(r"\]\(|https?://|www\.\w", re.IGNORECASE)
NAV_LINE_WORDS = 6  # a line this short that only names navigation ("See also:") is a heading in plain text
_ENTITY = re.compile(r"&(?:[a-zA-Z]{2,8}|#\d{2,5}|#x[0-9a-fA-F]{2,4});")
_URL = re.compile(r"https?://|www\.\w", re.IGNORECASE)
_MARKUP = re.compile(r"\]\(|</?[a-zA-Z][^>]*>|(?:\*\*|__|`)\S|\S(?:\*\*|__|`)")


@dataclass
class Finding:
    kind: str
    severity: str  # error | warning | info
    articles: list[str]
    message: str
    score: float = 0.0  # orders findings of one kind: higher is worse

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "score"}


@dataclass
class LintReport:
    kb: str
    articles: int
    findings: list[Finding] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what lint left out to stay within its budget
    # the pairs a person marked distinct (grace kb edit --distinct), left out of the findings: articles, author,
    # reason, time, seq; and how many findings they silenced
    distinct: list[dict[str, Any]] = field(default_factory=list)
    silenced: int = 0

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(f.kind for f in self.findings)
        return {k: c[k] for k in KIND_ORDER if c[k]}

    def summary(self) -> str:
        """One line for ``grace kb build``."""
        if not self.findings:
            return "lint: no problems found"
        names = {"swapped_in_run": "pair(s) swapped in the run", "confusable": "confusable pair(s)",
                 "empty": "empty article(s)", "not_self_contained": "not self-contained",
                 "navigation": "with navigation left in",
                 "over_budget": "over the token budget", "too_short": "too short",
                 "duplicate_title": "duplicate title(s)", "title_markup": "title(s) with markup"}
        return "lint: " + ", ".join(f"{n} {names[k]}" for k, n in self.counts.items())

    def as_json(self) -> dict[str, Any]:
        return {"kb": self.kb, "articles": self.articles, "counts": self.counts, "notices": self.notices,
                "findings": [f.as_dict() for f in self.findings], "distinct": self.distinct, "silenced": self.silenced}


def text_words(text: str, stop: frozenset[str] = frozenset()) -> list[str]:
    out = []
    for w in _WORD.findall(text.lower()):
        if _NO_SPACE.match(w):  # no spaces between its words: its character bigrams, as retrieval reads it
            out.extend(b for b in bigrams(w) if b not in stop)
            continue
        if w in _STOP or w in stop or len(w) < 2:
            continue
        out.append(w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def tfidf_rows(docs: Iterable[list[str]]) -> Any:
    """Rows L2-normalised TF-IDF (sublinear tf), as a scipy CSR matrix; built in typed arrays (a 50 MB KB has
    millions of (article, word) cells: Python lists of them took hundreds of MB)."""
    from array import array

    from scipy import sparse

    vocab: dict[str, int] = {}
    indptr, cols, vals = array("q", [0]), array("q"), array("d")
    for words in docs:
        for w, c in Counter(words).items():
            cols.append(vocab.setdefault(w, len(vocab)))
            vals.append(1.0 + math.log(c))
        indptr.append(len(cols))
    n = len(indptr) - 1
    m = sparse.csr_matrix((np.frombuffer(vals, dtype=np.float64), np.frombuffer(cols, dtype=np.int64),
                           np.frombuffer(indptr, dtype=np.int64)), shape=(n, max(1, len(vocab))))
    m.sum_duplicates()
    df = np.bincount(m.indices, minlength=m.shape[1])
    m = m @ sparse.diags(np.log((1 + n) / (1 + df)) + 1.0)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return (sparse.diags(1.0 / np.where(norms == 0, 1.0, norms)) @ m).tocsr()


def _text_tfidf(kb: KB) -> Any:
    """The articles' texts as TF-IDF rows, the KB's languages' stop words left out."""
    stop = kb_stop_words(kb)
    return tfidf_rows(text_words(a.text, stop) for a in kb.articles)


def _last_part(title: str) -> str:
    return title.rsplit(">", 1)[-1]


def _stored_embeddings(kb: KB) -> np.ndarray | None:
    """The KB's own vectors when a file covers every article (never embeds: lint makes no call)."""
    folder = KbDir(kb.path).embeddings
    hashes = [a.content_hash or a.compute_hash() for a in kb.articles]
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        try:
            with np.load(path, allow_pickle=False) as data:
                by_hash = dict(zip(data["hashes"].tolist(), data["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            continue
        if all(h in by_hash for h in hashes):
            m = np.stack([by_hash[h] for h in hashes]).astype(np.float64)
            return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return None


def confusable_pairs(kb: KB, at: float = CONFUSABLE_AT, notices: list[str] | None = None,
                     text: Any = None) -> list[Finding]:
    """Pairs whose text and titles are so alike that a question could be answered by either (each article's
    closest few: :func:`kb_builder.similar_pairs.similar_pairs`, which says in ``notices`` what it left out).
    ``text``: the articles' :func:`_text_tfidf`, when the caller has it."""
    arts = kb.articles
    if len(arts) < 2:
        return []
    stop = kb_stop_words(kb)
    text = _text_tfidf(kb) if text is None else text
    # candidates by text alone: each article's closest several, of which the titles then keep the closest few
    found = similar_pairs(text, at - 0.3, per_row=4 * PER_ROW)
    if notices is not None and found.notice:
        notices.append(found.notice)
    if not len(found.rows):
        return []
    title = tfidf_rows([text_words(_last_part(a.title), stop) for a in arts])
    title_sims = row_dots(title, title, found.rows, found.cols)
    dense = _stored_embeddings(kb)
    out = []
    for i, j, t, ti in zip(found.rows.tolist(), found.cols.tolist(), found.sims.tolist(), title_sims.tolist(),
                           strict=True):
        score = 0.75 * t + 0.25 * ti
        emb = float(dense[i] @ dense[j]) if dense is not None else None
        if emb is not None:
            score = max(score, 0.5 * score + 0.5 * emb)
        if score < at:
            continue
        a, b = arts[i], arts[j]
        dup = score >= NEAR_DUPLICATE_AT
        how = f"text {t:.2f}, titles {ti:.2f}" + (f", embeddings {emb:.2f}" if emb is not None else "")
        advice = ("near duplicates: merge them into one article" if dup else
                  "merge them, sharpen their titles and texts so each owns its topic, or list both in "
                  "expected_citations where either answers")
        out.append(Finding("confusable", "error" if dup else "warning", [a.id, b.id],
                           f"{a.id} '{a.title}' and {b.id} '{b.title}' are {score:.0%} alike ({how}); {advice}",
                           score))
    return _closest_few(out, notices)


def _closest_few(found: list[Finding], notices: list[str] | None) -> list[Finding]:
    """Each article's ``PER_ROW`` most alike partners (a pair stays when it is among either article's): a KB of
    near copies gets a finding per copy, not one per pair of them (a 20-word handbook of 27,000 articles had
    hundreds of millions)."""
    ranked = sorted(found, key=lambda f: (-f.score, f.articles))
    taken: Counter = Counter()
    seen: Counter = Counter()
    out = []
    for f in ranked:
        a, b = f.articles
        if taken[a] < PER_ROW or taken[b] < PER_ROW:
            out.append(f)
            taken[a] += 1
            taken[b] += 1
        seen[a] += 1
        seen[b] += 1
    over = sum(1 for k, n in seen.items() if n > taken[k])
    if over and notices is not None:
        notices.append(f"{over:,} article(s) are alike to more than {PER_ROW} others: each lists its {PER_ROW} "
                       "closest")
    return out


def _title_hits(kb: KB, k: int, notices: list[str] | None) -> list[list[tuple[str, float]]]:
    """Each article's title searched in the KB (bm25f): its ``k`` best (id, score) with a score above 0, ties to
    the earlier article, as ``search_many`` ranks them. All titles at once, a block of them at a time, within the
    budget :mod:`kb_builder.similar_pairs` keeps: over it, the most common words are left out of the titles (they
    weigh least in BM25) and ``notices`` says so."""
    arts = kb.articles
    retriever = kb.retriever("bm25f")
    queries = retriever.query_matrix([_last_part(a.title) for a in arts])
    terms = retriever.term_matrix()
    df = np.diff(terms.indptr).astype(np.float64)
    budget = work_budget_for(len(arts), None)
    work_per_term = np.bincount(queries.indices, minlength=len(df)) * df  # titles holding it x its articles
    queries, dropped, _ = without_common(queries, df, work_per_term, budget)
    if dropped and notices is not None:
        notices.append(f"lint searched the KB for each article's title without the {dropped:,} most common words "
                       f"of the KB (to keep it within its budget of {budget:.2g} steps): a title made of them "
                       "finds nothing")
    out: list[list[tuple[str, float]]] = [[] for _ in arts]
    for s, e in row_blocks(row_work(queries, df), BLOCK_WORK):
        prod = queries[s:e] @ terms
        rows = np.repeat(np.arange(s, e), np.diff(prod.indptr))
        keep = prod.data > 0
        r, c, v, _ = top_per_row(rows[keep], prod.indices[keep].astype(np.int64), prod.data[keep], k)
        for i, j, x in zip(r.tolist(), c.tolist(), v.tolist(), strict=True):
            out[i].append((arts[j].id, x))
    return out


def title_query_pairs(kb: KB, close: float = TITLE_QUERY_CLOSE, text: Any = None,
                      notices: list[str] | None = None) -> list[Finding]:
    """Pairs a question about one article's topic retrieves together: its own title, asked as a question,
    ranks the other article first or within ``close`` of it (same topic, other words, e.g. one process
    written for two kinds of worker)."""
    arts = kb.articles
    if len(arts) < 3:
        return []
    hits = _title_hits(kb, 3, notices)
    # stop words count here, as the threshold was set (English KBs have none left out: the same matrix)
    text = tfidf_rows(text_words(a.text) for a in arts) if text is None or kb_stop_words(kb) else text
    row = {a.id: i for i, a in enumerate(arts)}
    seen: set[tuple[str, str]] = set()
    out = []
    for a, hs in zip(arts, hits, strict=True):
        scores = dict(hs)
        own = scores.get(a.id)
        if not own or own <= 0 or len(text_words(_last_part(a.title))) < 2:
            continue  # a one-word title ("Overview", "Resources") is no question
        for hid, hscore in hs:
            pair = tuple(sorted((a.id, hid)))
            if hid == a.id or pair in seen or hscore < close * own:
                continue
            if float(text[row[a.id]].multiply(text[row[hid]]).sum()) < TITLE_QUERY_TEXT:
                continue  # the titles meet but the texts are about different things
            seen.add(pair)
            b = kb.by_id[hid]
            ahead = f", so {b.id} ranks first" if hscore > own else ""
            out.append(Finding("confusable", "warning", list(pair),
                               f"{a.id} '{a.title}' and {b.id} '{b.title}': searching the KB for {a.id}'s title "
                               f"'{_last_part(a.title).strip()}' gives {b.id} {hscore / own:.0%} of the retrieval "
                               f"score {a.id} itself gets{ahead} (bm25f), so a question on this topic may retrieve "
                               "either; sharpen their titles and texts so each owns its topic, or list both in "
                               "expected_citations where either answers", min(hscore / own, 1.0) * 0.8))
    return out


def swapped_pairs(kb: KB, scores: Iterable[dict[str, Any]]) -> list[Finding]:
    """Pairs the models confuse in a scored run (its ``scores.jsonl`` rows): gold expects one article, a model
    cites the other. The caller reads the run folder: the KB builder knows no run folders."""
    swaps: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in scores:
        if row.get("outcome") != "wrong_citation":
            continue
        expected, cited = row.get("expected_citations") or [], row.get("cited_ids") or []
        for e in expected:
            for c in cited:
                if c != e and c in kb.by_id and e in kb.by_id:
                    swaps[tuple(sorted((e, c)))][row.get("model", "?")] += 1
    out = []
    for (a, b), by_model in swaps.items():
        n = sum(by_model.values())
        if n < SWAPS_AT:
            continue
        models = ", ".join(f"{m} {k}" for m, k in by_model.most_common(3))
        out.append(Finding("swapped_in_run", "error", [a, b],
                           f"models cited {a} '{kb.by_id[a].title}' for {b} '{kb.by_id[b].title}' or the other way "
                           f"{n} time(s) ({models}): if either answers, list both in expected_citations; "
                           "otherwise sharpen the two articles", float(n)))
    return out


def _body_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _cut_list(title: str, body: list[str]) -> bool:
    """The body starts mid-list or mid-table: a later part of a split section, a numbered list that does not
    start at 1, or table rows with no header. A list right under its heading is introduced by the heading."""
    first = body[0]
    if not _LIST_OR_TABLE.match(first):
        return False
    part = _PART.search(title)
    if part and int(part.group(1)) > 1:
        return True
    numbered = _NUMBERED.match(first)
    if numbered:
        return int(numbered.group(1)) > 1
    if first.lstrip().startswith("|"):
        return not (len(body) > 1 and _TABLE_RULE.match(body[1]))
    return False


def _leans_elsewhere(a: Any, body: list[str], rules: list[Phrases]) -> str | None:
    """Why the article is not self-contained (in its language's phrases, then English's), or None."""
    first = body[0].strip()
    for r in rules:
        if leans := r.leans.search(a.text):
            return f"refers to text elsewhere (\"{leans.group(0)}\")"
    for r in rules:
        if (m := r.opens.match(first)) and m.group(1).lower().rstrip("s")[:5] not in a.title.lower():
            return f"opens with \"{m.group(0)}\", and the title does not say which"
    if _cut_list(a.title, body):
        return "opens with a list or table cut from its introduction"
    for r in rules:
        if r.announces.search(body[-1]):
            return "ends announcing \"the following\" with nothing following"
    return None


def _navigation(lines: list[str], body: list[str]) -> str | None:
    """What of a page's navigation the article holds, in words, or None: a heading such as "See also" or
    "Voir aussi" (its links dropped by the build, it heads the topic's own text), or nothing but links."""
    for n, line in enumerate(lines, 1):
        m = _HEADING_TEXT.match(line)
        # a plain line ("See also:", "**Further reading**") is navigation only over links: "More information" can
        # introduce text of the topic's own
        over_links = n < len(lines) and bool(_LINK_LINE.match(lines[n]) or _LINK_IN.search(lines[n]))
        name = m.group(1) if m else line if len(line.split()) <= NAV_LINE_WORDS and over_links else ""
        if name and names_navigation(name):
            return (f"holds the heading '{name.strip().strip('#*_: ').strip()}' (non-blank line {n}), a page's "
                    "navigation, not part of this topic: remove it (and the links under it, if any)")
    if all(_LINK_LINE.match(line) for line in body):
        return "holds only links (a page's navigation): nothing in it answers a question; drop it or give it its text"
    return None


def kb_stop_words(kb: KB) -> frozenset[str]:
    """The KB's languages' stop words, so "de", "la", "der" do not make every pair of articles look alike."""
    langs = set(kb.manifest.languages or {}) | {kb_language(kb)}
    return frozenset().union(*(stop_words(la) for la in langs if la != "en"))


def article_findings(kb: KB) -> list[Finding]:
    budget = kb.manifest.max_tokens
    if budget:
        whose, fix = f"the KB's budget of {budget}", "split it"
    else:  # imported from pre-split articles (--articles, kb index): nothing split them, so check them all the same
        budget = DEFAULT_MAX_TOKENS
        whose = (f"the default build budget of {budget} (no token budget was recorded: the KB was imported from "
                 "pre-split articles)")
        fix = ("split the article in the articles file and build again, or rebuild from the documents "
               "(grace kb build SOURCE --out KB), which splits to --max-tokens")
    out: list[Finding] = []
    titles: dict[str, list[str]] = defaultdict(list)
    kb_lang = kb_language(kb)
    for a in kb.articles:
        titles[" ".join(a.title.lower().split())].append(a.id)
        lines = _body_lines(a.text)
        body = [line for line in lines if not _HEADING.match(line)]
        if not body:
            out.append(Finding("empty", "error", [a.id], f"{a.id} '{a.title}': a heading with no body; give it its "
                               "text or drop it", 1.0))
            continue
        nav = _navigation(lines, body)
        if nav:
            out.append(Finding("navigation", "warning", [a.id], f"{a.id} '{a.title}' {nav}", 1.0))
        why = _leans_elsewhere(a, body, phrases(a.language or kb_lang))
        if why:
            out.append(Finding("not_self_contained", "warning", [a.id], f"{a.id} '{a.title}' {why}; a model shown "
                               "only this article cannot answer from it: make it complete on its own", 1.0))
        tokens = a.tokens or 0
        if tokens > budget:
            out.append(Finding("over_budget", "error" if tokens > OVER_BUDGET_ERROR * budget else "warning", [a.id],
                               f"{a.id} '{a.title}': {tokens} tokens, over {whose}; {fix}", tokens / budget))
        elif tokens < MIN_TOKENS:
            out.append(Finding("too_short", "warning", [a.id], f"{a.id} '{a.title}': {tokens} tokens; too short to "
                               "answer a question on its own: merge it with its section or expand it",
                               1 - tokens / MIN_TOKENS))
        marks = [name for name, rx in (("HTML entities", _ENTITY), ("a URL", _URL), ("markup", _MARKUP))
                 if rx.search(a.title)]
        if marks:
            clean = html.unescape(a.title)
            out.append(Finding("title_markup", "info", [a.id], f"{a.id} title '{a.title}' has {' and '.join(marks)}; "
                               f"models cite and users read it: write it as plain text ('{clean[:80]}')", 1.0))
    for ids in titles.values():
        if len(ids) > 1:
            t = kb.by_id[ids[0]].title
            out.append(Finding("duplicate_title", "warning", ids, f"{len(ids)} articles are titled '{t}' "
                               f"({', '.join(ids[:6])}); give each a title that says what it alone answers",
                               float(len(ids))))
    return out


def lint_kb(kb: KB, scores: Iterable[dict[str, Any]] | None = None) -> LintReport:
    """Every finding on ``kb`` (and the pairs a scored run's ``scores`` rows swap), worst first."""
    notices: list[str] = []
    text = _text_tfidf(kb)
    lexical = confusable_pairs(kb, notices=notices, text=text)
    pairs = {tuple(f.articles) for f in lexical}
    findings = (lexical + [f for f in title_query_pairs(kb, text=text, notices=notices) if tuple(f.articles) not in pairs]
                + article_findings(kb))
    if scores is not None:
        findings = swapped_pairs(kb, scores) + findings
    findings.sort(key=lambda f: (SEVERITY[f.severity], KIND_ORDER.index(f.kind), -f.score, f.articles))
    report = LintReport(str(kb.path), len(kb.articles), findings, notices)
    _leave_out_distinct(kb, report)
    return report


PAIR_KINDS = ("swapped_in_run", "confusable", "duplicate_title")  # what marking two articles distinct settles


def _leave_out_distinct(kb: KB, report: LintReport) -> None:
    """Drop the pair findings a person settled (``grace kb edit --distinct``), keeping who said so and why."""
    from kb_builder.curation_records import distinct_marks

    marks = distinct_marks(Path(kb.path)) if kb.path is not None else {}
    if not marks:
        return
    live = set(kb.by_id)
    report.distinct = [{"articles": e.articles, "author": e.author, "reason": e.reason, "time": e.time, "seq": e.seq}
                       for pair, e in marks.items() if pair <= live]
    kept = without_distinct(report.findings, marks)
    report.silenced = len(report.findings) - len(kept)
    report.findings = kept


def without_distinct(findings: list[Finding], marked: Collection[frozenset[str]]) -> list[Finding]:
    """The findings less the pair findings (``PAIR_KINDS``) of two articles a person marked distinct: lint's
    report and the curation app's live worklist leave out the same ones."""
    return [f for f in findings if not (f.kind in PAIR_KINDS and len(f.articles) == 2 and frozenset(f.articles) in marked)]
