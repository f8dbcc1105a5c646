"""Lexical retrievers, offline: ``bm25f`` (the default for new KBs) and ``bm25`` (KBs built before it).

``bm25`` scores the article's title twice plus its text as one bag of words with
bm25s's defaults (k1 1.2, 33 stop words). KBs whose manifest names it keep it, so
their rankings do not move under them.

``bm25f`` (Robertson et al., 2004) scores the title (the ``Page > Section``
breadcrumb) and the text as two fields: each field's term counts are normalised
by that field's own length, weighted (title 3, text 1) and added before the
saturation, so a breadcrumb word counts like three text words without a long
article drowning it. Tuned on the sample handbook and the Helvia Playbook-RAG
queries, checked on ClapNQ (README, "Retrieval quality"):

- ``k1 = 4``: employees ask long, wordy questions; a low k1 saturates after one
  occurrence, so an article that mentions many of the question's words once beats
  the one that is *about* its key word. Recall was flat for k1 3 to 5.
- stop words: the NLTK list (bm25s's ``STOPWORDS_EN_PLUS``: "how", "my", "do",
  "can"...) minus words that carry meaning in policies ("off", "over", "before",
  "after", "own", "not"...), so "time off" and "look after" still match.
- title ``b = 0.3``: breadcrumbs are short and similar in length; normalising them
  fully would punish a precise three-level breadcrumb against a one-word one.

Tried and dropped (no gain on any benchmark, or a loss): blending in the score of
the whole page or section the article belongs to, and pseudo-relevance feedback
(RM3-style query expansion: it cost ClapNQ 11 points of recall@1).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from kb_builder.records import Article
from kb_builder.retrieval import Hit

_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's and scikit-learn's pattern: words of two or more characters
# function words that still carry meaning in a policy question: kept out of the stop list
_MEANINGFUL = frozenset("""off out up down over under above below against between during after before until
again further once few more most own same only very no nor not all any both each other some than too""".split())
K1, WEIGHTS, BS = 4.0, (3.0, 1.0), (0.3, 0.75)  # bm25f's settings (module docstring); part of the index's name
_SETTINGS = hashlib.sha256(repr((K1, WEIGHTS, BS, _TOKEN.pattern, sorted(_MEANINGFUL))).encode()).hexdigest()[:8]
INDEX_DIR = "index"  # in the KB folder: derived data, rebuilt when missing


def _stemmer():
    try:
        import Stemmer  # PyStemmer, optional: improves recall on plurals and verb forms

        return Stemmer.Stemmer("english").stemWords
    except ImportError:
        return None


def _stop_words() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS) - _MEANINGFUL


class BM25Retriever:
    name = "bm25"

    def __init__(self, articles: list[Article], k1: float = 1.2, b: float = 0.75):
        import bm25s

        self._bm25s = bm25s
        self.ids = [a.id for a in articles]
        self._stem = _stemmer()
        corpus = [f"{a.title}\n{a.title}\n{a.text}" for a in articles]
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stem, show_progress=False)
        self.model = bm25s.BM25(k1=k1, b=b)
        self.model.index(tokens, show_progress=False)
        self._vocab = tokens.vocab

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = max(1, min(k, len(self.ids)))
        q = self._bm25s.tokenize(queries, stopwords="en", stemmer=self._stem, show_progress=False, return_ids=False)
        # unknown words would raise inside bm25s; drop them (they cannot match anyway)
        q = [[t for t in toks if t in self._vocab] for toks in q]
        out: list[list[Hit]] = []
        for toks in q:
            if not toks:
                out.append([Hit(self.ids[i], 0.0) for i in range(k)])
                continue
            scores = self.model.get_scores(toks)
            order = np.argsort(-scores, kind="stable")[:k]
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

    def __init__(self, ids: list[str], vocab: dict[str, int], stop: frozenset[str], indptr: np.ndarray,
                 rows: np.ndarray, impact: np.ndarray):
        self.ids, self.vocab, self._stop = ids, vocab, stop
        self._indptr, self._rows, self._data = indptr, rows, impact
        self._stem = _stemmer()

    @classmethod
    def build(cls, articles: list[Article], *, k1: float = K1, weights: tuple[float, float] = WEIGHTS,
              bs: tuple[float, float] = BS) -> BM25FRetriever:
        from scipy import sparse

        stop, stem = _stop_words(), _stemmer()
        fields = [[_tokens(a.title, stop, stem) for a in articles], [_tokens(a.text, stop, stem) for a in articles]]
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
        return cls([a.id for a in articles], vocab, stop, impact.indptr.astype(np.int64),
                   impact.indices.astype(np.int32), impact.data.astype(np.float64))

    @classmethod
    def for_kb(cls, kb: Any) -> BM25FRetriever:
        """The KB's index from its folder when it matches the KB and these settings; else built (and saved)."""
        path = Path(kb.path) / INDEX_DIR / f"bm25f-{kb.kb_hash[:16]}-{_SETTINGS}.npz"
        if path.is_file():
            try:
                return cls._load(path)
            except (OSError, ValueError, KeyError):
                pass  # damaged or from another numpy: rebuilt below, and replaced
        index = cls.build(kb.articles)
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
                         stop=np.array(sorted(self._stop), dtype=str), indptr=self._indptr, rows=self._rows,
                         impact=self._data)
            os.replace(tmp, path)
            for old in path.parent.glob("bm25f-*.npz"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass

    @classmethod
    def _load(cls, path: Path) -> BM25FRetriever:
        with np.load(path, allow_pickle=False) as z:
            terms = z["terms"].tolist()
            return cls(z["ids"].tolist(), {t: i for i, t in enumerate(terms)}, frozenset(z["stop"].tolist()),
                       z["indptr"], z["rows"], z["impact"])

    def _tokens(self, text: str) -> list[str]:
        return _tokens(text, self._stop, self._stem)

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = max(1, min(k, len(self.ids)))
        out: list[list[Hit]] = []
        scores = np.empty(len(self.ids), dtype=np.float64)
        for q in queries:
            scores.fill(0.0)
            for t, c in Counter(t for t in _tokens(q, self._stop, self._stem) if t in self.vocab).items():
                j = self.vocab[t]
                a, b = self._indptr[j], self._indptr[j + 1]
                scores[self._rows[a:b]] += c * self._data[a:b]
            # a query sharing no word with the KB scores 0 everywhere: padded in KB order, like bm25
            order = np.argsort(-scores, kind="stable")[:k]
            out.append([Hit(self.ids[i], float(scores[i])) for i in order])
        return out


def _tokens(text: str, stop: frozenset[str], stem: Any) -> list[str]:
    words = [w for w in _TOKEN.findall(text.lower()) if w not in stop]
    return stem(words) if stem else words
