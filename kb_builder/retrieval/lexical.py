"""Lexical retrievers, offline: ``bm25f`` (the default for new KBs) and ``bm25`` (KBs built before it).

``bm25`` scores the article's title twice plus its text as one bag of words with
bm25s's defaults (k1 1.2, 33 stop words). KBs whose manifest names it keep it, so
their rankings do not move under them.

``bm25f`` (Robertson et al., 2004) scores the title (the ``Page > Section``
breadcrumb) and the text as two fields: each field's term counts are normalised
by that field's own length, weighted (title 3, text 1) and added before the
saturation, so a breadcrumb word counts like three text words without a long
article drowning it. Tuned on the sample handbook and the Helvia Playbook-RAG
queries, checked on ClapNQ (docs/how-to/build-a-kb.md, "Retrieval quality"):

- ``k1 = 4``: employees ask long, wordy questions; a low k1 saturates after one
  occurrence, so an article that mentions many of the question's words once beats
  the one that is *about* its key word. Recall was flat for k1 3 to 5.
- stop words: the NLTK list (bm25s's ``STOPWORDS_EN_PLUS``: "how", "my", "do",
  "can"...) minus words that carry meaning in policies ("off", "over", "before",
  "after", "own", "not"...), so "time off" and "look after" still match.
- title ``b = 0.3``: breadcrumbs are short and similar in length; normalising them
  fully would punish a precise three-level breadcrumb against a one-word one.

Both read each article in its language (:mod:`kb_builder.language`: Snowball stems,
stop words and question words per language, character bigrams for scripts without
spaces) and a question in each of the KB's languages; an English KB's terms are
exactly the ones these settings were tuned with.

Tried and dropped (no gain on any benchmark, or a loss): blending in the score of
the whole page or section the article belongs to, and pseudo-relevance feedback
(RM3-style query expansion: it cost ClapNQ 11 points of recall@1).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from kb_builder import language as lang
from kb_builder.kb_dir import KbDir
from kb_builder.kb_records import Article
from kb_builder.retrieval import Hit

K1, WEIGHTS, BS = 4.0, (3.0, 1.0), (0.3, 0.75)  # bm25f's settings (module docstring); part of the index's name
_SETTINGS = hashlib.sha256(repr((K1, WEIGHTS, BS, lang.NO_SPACE, sorted(lang.MEANINGFUL_EN))).encode()).hexdigest()[:8]


def article_languages(articles: list[Article], default: str = lang.DEFAULT_LANGUAGE) -> list[str]:
    """Each article's language: its own (a mixed KB records one per article), else the KB's."""
    return [getattr(a, "language", None) or default for a in articles]


class BM25Retriever:
    name = "bm25"
    lexical = True  # scores 0 where no word is shared, and pads its ranking with those (see HybridRetriever)

    def __init__(self, articles: list[Article], k1: float = 1.2, b: float = 0.75, language: str = lang.DEFAULT_LANGUAGE):
        import bm25s

        self._bm25s = bm25s
        self.ids = [a.id for a in articles]
        langs = article_languages(articles, language)
        self.languages = list(dict.fromkeys(langs))
        corpus = [f"{a.title}\n{a.title}\n{a.text}" for a in articles]
        self.model = bm25s.BM25(k1=k1, b=b)
        if self.languages == ["en"]:  # exactly what English KBs were always indexed with: their rankings stay put
            self._stem = lang.stemmer("en")
            tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stem, show_progress=False)
            self.model.index(tokens, show_progress=False)
            self._vocab = tokens.vocab
        else:
            docs = [lang.terms(text, la) for text, la in zip(corpus, langs, strict=True)]
            self.model.index([d or [""] for d in docs], show_progress=False)
            self._vocab = {t for d in docs for t in d}

    def _query_tokens(self, queries: list[str]) -> list[list[str]]:
        if self.languages == ["en"]:
            return self._bm25s.tokenize(queries, stopwords="en", stemmer=self._stem, show_progress=False,
                                        return_ids=False)
        return [lang.query_terms(q, self.languages) for q in queries]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = max(1, min(k, len(self.ids)))
        # unknown words would raise inside bm25s; drop them (they cannot match anyway)
        q = [[t for t in toks if t in self._vocab] for toks in self._query_tokens(queries)]
        out: list[list[Hit]] = []
        for toks in q:
            if not toks:
                out.append([Hit(self.ids[i], 0.0) for i in range(k)])
                continue
            scores = self.model.get_scores(toks)
            order = top_k(scores, k)
            out.append([Hit(self.ids[i], float(scores[i])) for i in order])
        return out


class BM25FRetriever:
    """Field-weighted BM25 over title and text; see the module docstring for the settings and why.

    The index is an article x term impact matrix, kept by term (CSC arrays), so a
    query's score is the sum of its terms' columns: a few numpy slices, no scipy.
    :meth:`for_kb` saves it in the KB folder (``index/``, named by the KB hash and
    these settings) and loads it next time instead of rebuilding it on every
    ``run``, ``search``, ``eval`` and ``annotate``.
    """

    name = "bm25f"
    lexical = True

    def __init__(self, ids: list[str], vocab: dict[str, int], languages: list[str], indptr: np.ndarray,
                 rows: np.ndarray, impact: np.ndarray):
        self.ids, self.vocab, self.languages = ids, vocab, languages
        self._indptr, self._rows, self._data = indptr, rows, impact

    k1 = K1
    settings = _SETTINGS

    @staticmethod
    def _doc_terms(text: str, language: str) -> list[str]:
        return lang.terms(text, language)

    @classmethod
    def build(cls, articles: list[Article], *, k1: float | None = None, weights: tuple[float, float] = WEIGHTS,
              bs: tuple[float, float] = BS, language: str = lang.DEFAULT_LANGUAGE) -> BM25FRetriever:
        """The index of ``articles``, each read in its own language (``language``, the KB's, where it records none)."""
        from scipy import sparse

        k1 = cls.k1 if k1 is None else k1
        langs = article_languages(articles, language)
        fields = [[cls._doc_terms(a.title, la) for a, la in zip(articles, langs, strict=True)],
                  [cls._doc_terms(a.text, la) for a, la in zip(articles, langs, strict=True)]]
        vocab: dict[str, int] = {}
        for field in fields:
            for toks in field:
                for t in toks:
                    vocab.setdefault(t, len(vocab))
        n, v = len(articles), max(1, len(vocab))
        pseudo = sparse.csr_matrix((n, v))  # weighted, length-normalised term frequency summed over fields
        seen = sparse.csr_matrix((n, v), dtype=bool)
        for toks_per_doc, weight, b in zip(fields, weights, bs, strict=True):
            rows, cols, counts = [], [], []
            for i, toks in enumerate(toks_per_doc):
                for t, c in Counter(toks).items():
                    rows.append(i)
                    cols.append(vocab[t])
                    counts.append(c)
            tf = sparse.csr_matrix((np.asarray(counts, dtype=np.float64), (rows, cols)), shape=(n, v))
            lengths = np.array([len(t) for t in toks_per_doc], dtype=np.float64)
            norm = 1.0 - b + b * lengths / (lengths.mean() or 1.0)
            pseudo = pseudo + weight * sparse.diags(1.0 / np.where(norm > 0, norm, 1.0)) @ tf
            seen = seen + (tf > 0)
        df = np.asarray(seen.sum(axis=0)).ravel()
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))  # Lucene's idf: never negative
        pseudo = pseudo.tocsr()
        pseudo.data = pseudo.data / (k1 + pseudo.data)
        impact = (pseudo @ sparse.diags(idf)).tocsc()
        impact.sort_indices()
        return cls([a.id for a in articles], vocab, list(dict.fromkeys(langs)), impact.indptr.astype(np.int64),
                   impact.indices.astype(np.int32), impact.data.astype(np.float64))

    @classmethod
    def for_kb(cls, kb: Any) -> BM25FRetriever:
        """The KB's index from its folder when it matches the KB and these settings; else built (and saved)."""
        language = kb_language(kb)
        langs = sorted(set(article_languages(kb.articles, language)))
        settings = cls.settings if langs == ["en"] else hashlib.sha256((cls.settings + repr(langs)).encode()).hexdigest()[:8]
        path = KbDir(kb.path).index / f"{cls.name}-{kb.kb_hash[:16]}-{settings}.npz"
        if path.is_file():
            try:
                return cls._load(path)
            except (OSError, ValueError, KeyError):
                pass  # damaged or from another numpy: rebuilt below, and replaced
        index = cls.build(kb.articles, language=language)
        index._save(path)
        return index

    def _save(self, path: Path) -> None:
        """Atomic, and optional: a read-only KB folder still answers, it just builds the index each time."""
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            with tmp.open("wb") as fh:
                np.savez(fh, ids=np.array(self.ids, dtype=str), terms=np.array(terms, dtype=str),
                         languages=np.array(self.languages, dtype=str), indptr=self._indptr, rows=self._rows,
                         impact=self._data)
            os.replace(tmp, path)
            for old in path.parent.glob(f"{self.name}-*.npz"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass

    @classmethod
    def _load(cls, path: Path) -> BM25FRetriever:
        with np.load(path, allow_pickle=False) as z:
            terms = z["terms"].tolist()
            return cls(z["ids"].tolist(), {t: i for i, t in enumerate(terms)}, z["languages"].tolist(),
                       z["indptr"], z["rows"], z["impact"])

    def _tokens(self, text: str) -> list[str]:
        return lang.query_terms(text, self.languages)

    def query_matrix(self, queries: list[str]) -> Any:
        """Each query's counts of the index's terms (a scipy CSR matrix, queries x terms): with
        :meth:`term_matrix`, ``Q @ T`` scores many queries at once (lint asks one per article)."""
        from scipy import sparse

        indptr, cols, vals = [0], [], []
        for q in queries:
            for t, c in Counter(t for t in self._tokens(q) if t in self.vocab).items():
                cols.append(self.vocab[t])
                vals.append(float(c))
            indptr.append(len(cols))
        return sparse.csr_matrix((np.asarray(vals, dtype=np.float64), np.asarray(cols, dtype=np.int64),
                                  np.asarray(indptr, dtype=np.int64)), shape=(len(queries), len(self.vocab)))

    def term_matrix(self) -> Any:
        """The impact matrix by term (terms x articles, CSR): the arrays :meth:`search_many` reads, no copy."""
        from scipy import sparse

        return sparse.csr_matrix((self._data, self._rows, self._indptr), shape=(len(self.vocab), len(self.ids)))

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = max(1, min(k, len(self.ids)))
        out: list[list[Hit]] = []
        scores = np.empty(len(self.ids), dtype=np.float64)
        for q in queries:
            scores.fill(0.0)
            for t, c in Counter(t for t in self._tokens(q) if t in self.vocab).items():
                j = self.vocab[t]
                a, b = self._indptr[j], self._indptr[j + 1]
                scores[self._rows[a:b]] += c * self._data[a:b]
            # a query sharing no word with the KB scores 0 everywhere: padded in KB order, like bm25
            order = top_k(scores, k)
            out.append([Hit(self.ids[i], float(scores[i])) for i in order])
        return out


class Char4Retriever(BM25FRetriever):
    """BM25F over character 4-grams of the words (:func:`kb_builder.language.char_ngrams`) instead of their stems.

    Pieces of words match where whole stems do not: German compounds, French and German inflections Snowball
    leaves apart, typos. Alone it is uneven; fused with ``bm25f`` (``bm25f+char4``) it found more held-out French
    and German questions than ``bm25f`` on every setting tried, and is the default for those languages
    (docs/how-to/languages.md). ``k1 = 1.2``: a word gives several grams, so they saturate sooner than stems; chosen on
    the tuning parts. Title and text fields as ``bm25f``.
    """

    name = "char4"
    k1 = 1.2
    settings = hashlib.sha256(repr((name, k1, WEIGHTS, BS, lang.NO_SPACE)).encode()).hexdigest()[:8]

    @staticmethod
    def _doc_terms(text: str, language: str) -> list[str]:
        return lang.char_ngrams(text, language)

    def _tokens(self, text: str) -> list[str]:
        return lang.query_ngrams(text, self.languages)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-scores, kind="stable")[:k]``, ties to the lower index, without sorting every article: only
    the scores at least as high as the ``k``-th best are sorted (lint asks a question per article: sorting all of
    them each time was quadratic in the KB). Scores of 0 (no word in common) pad in KB order, as the sort has it."""
    n = len(scores)
    if k >= n or n <= 256:
        return np.argsort(-scores, kind="stable")[:k]
    if scores.min() < 0:  # never for BM25; the general way
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
        return cand[np.argsort(-scores[cand], kind="stable")[:k]]
    pos = np.flatnonzero(scores)  # usually a few: most articles share no word with a question
    if len(pos) > k:
        vals = scores[pos]
        pos = pos[vals >= np.partition(vals, len(pos) - k)[len(pos) - k]]
    best = pos[np.argsort(-scores[pos], kind="stable")][:k]
    if len(best) < k:
        best = np.r_[best, np.flatnonzero(scores == 0)[:k - len(best)]]
    return best


def kb_language(kb: Any) -> str:
    """The language a KB's articles are read in when they record none: the manifest's, else English (a KB built
    before languages were recorded keeps the rankings it had)."""
    manifest = getattr(kb, "manifest", None)
    return getattr(manifest, "language", None) or lang.DEFAULT_LANGUAGE
