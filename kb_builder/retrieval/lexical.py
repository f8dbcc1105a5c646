"""BM25 over article title + text, the offline default.

Titles carry the breadcrumb (``Leave > Sick leave``), so they are repeated once to
weigh them above body text, as a human skimming a handbook would.
"""

from __future__ import annotations

import numpy as np

from kb_builder.records import Article
from kb_builder.retrieval import Hit


def _stemmer():
    try:
        import Stemmer  # PyStemmer, optional: improves recall on plurals and verb forms

        return Stemmer.Stemmer("english").stemWords
    except ImportError:
        return None


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
