"""The local web app behind ``grace annotate``: a small JSON API plus its static page.

Served by grace's one web server core (:mod:`harness.web`: Host and token checks,
Origin check on changes, body limits, CSP and the other headers, shared assets).
The KB is untrusted text: the API returns it as JSON data and the page builds
text nodes from it.

Questions are addressed by their place in the session's walk (all questions, or the
``--only`` subset, in ``--order``). Each question comes with its suggestion, if any
(label, support, votes, source, flag, reason, and the suggested articles' titles);
saving a label needs nothing more from the page: the session decides its provenance.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import unquote

from annotations.state import AnnotationSession, LabelRejected
from kb_builder.retrieval import Hit, passages

STATIC = Path(__file__).parent / "static"


class AnnotationApp:
    """What the API answers, independent of HTTP (the tests call it directly too).

    A :class:`harness.web.WebApp`, like the spot-check review (:mod:`annotations.review_app`)
    and ``grace view``: it names its page and static folder, answers ``get(path, query)``
    and ``post(path, body)`` (``None``: no such route), and lists ``post_paths``.
    """

    name = "grace annotate"
    page = "index.html"
    static = STATIC
    post_paths = ("/api/label",)

    def __init__(self, session: AnnotationSession, retriever, *, k: int = 10, search_retriever=None, shared=None):
        """``shared``: another app of the same KB and retriever (a team's, one per person) whose word index and
        candidate cache this one uses, so each question is retrieved once for the whole team."""
        self.session, self.kb, self.k = session, session.kb, k
        self.retriever = retriever
        self.search_retriever = search_retriever or search_box_retriever(self.kb, retriever)
        if shared is not None:
            self.search_retriever, self.words = shared.search_retriever, shared.words
            self._cache, self._cache_lock = shared._cache, shared._cache_lock
        else:
            self.words = passages.KBWords(self.kb)
            self._cache: dict[str, list[Hit]] = {}
            self._cache_lock = threading.Lock()
        walk = set(session.view_ids())
        with self._cache_lock:
            texts = list(dict.fromkeys(r.question for r in session.records
                                       if r.question_id in walk and r.question not in self._cache))
        if texts:  # one batch: a dense retriever embeds all questions in a few calls, not one per click
            for text, hits in zip(texts, self.retriever.search_many(texts, k), strict=True):
                with self._cache_lock:
                    self._cache[text] = self._useful(hits)

    # -- routes ------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        if path == "/api/state":
            return self.state()
        if path.startswith("/api/question/"):
            return self.question(int(path.rsplit("/", 1)[1]))
        if path.startswith("/api/record/"):  # the label alone, no retrieval: what another tab polls for
            return {"record": self.session.record(int(path.rsplit("/", 1)[1])).to_json()}
        if path == "/api/search":
            k = int((query.get("k") or ["0"])[0] or 0)
            return self.search((query.get("q") or [""])[0], k or None)
        if path.startswith("/api/article/"):
            return self.article(unquote(path.removeprefix("/api/article/")), (query.get("q") or [""])[0])
        return None

    def post(self, path: str, body) -> dict | None:
        return self.label(body) if path == "/api/label" else None

    # -- API ---------------------------------------------------------------------------------------

    def state(self) -> dict:
        m = self.kb.manifest
        return {
            "progress": self.session.progress(),
            "statuses": self.session.statuses(),
            "question_ids": self.session.view_ids(),
            "review": bool(self.session.audit),  # --only: an audit's list, not the whole file
            "annotator": self.session.annotator,
            "out": str(self.session.out),
            "kb": {"path": str(self.kb.path), "articles": len(self.kb.articles), "kb_hash": m.kb_hash},
            "retriever": getattr(self.retriever, "name", "?"),
            "k": self.k,
        }

    def question(self, i: int) -> dict:
        rec = self.session.record(i)  # LookupError when out of range
        terms = self.words.terms(rec.question)
        hits = self._candidates(rec.question)
        shown = {h.id for h in hits}
        return {
            "index": i,
            "total": len(self.session.view_ids()),
            "record": rec.to_json(),
            "suggestion": self._suggestion(rec.question_id, terms),
            "audit": list(self.session.audit.get(rec.question_id, [])),
            "candidates": [self._card(h.id, h.score, terms) for h in hits],
            # a current label retrieval missed is still shown, so a review can see and keep it
            "chosen_elsewhere": [
                self._card(c, None, terms) for c in rec.expected_citations if c not in shown and c in self.kb.by_id
            ],
        }

    def search(self, query: str, k: int | None = None) -> dict:
        query = query.strip()[:500]
        k = max(1, min(k or self.k, 50))
        if not query:
            return {"query": query, "results": []}
        terms = self.words.terms(query)
        hits = search_hits(self.kb, self.search_retriever, query, k)
        return {"query": query, "results": [self._card(h.id, h.score, terms) for h in hits]}

    def article(self, article_id: str, query: str = "") -> dict:
        art = self.kb.by_id.get(article_id)
        if art is None:
            raise LookupError(f"no article with id {article_id!r}")
        return {
            "id": art.id,
            "title": art.title,
            "breadcrumb": self._breadcrumb(art),
            "source": art.source or "",
            "segments": passages.article_segments(art.text, self.words.terms(query), self.words.of(art.id)),
        }

    def label(self, body: dict) -> dict:
        if not isinstance(body, dict) or not isinstance(body.get("question_id"), str):
            raise LabelRejected("expected a JSON object with question_id")
        cites = body.get("expected_citations") or []
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            raise LabelRejected("expected_citations must be a list of article IDs")
        texts = {f: body.get(f) for f in ("question", "expected_answer", "notes")}
        if any(v is not None and not isinstance(v, str) for v in texts.values()):
            raise LabelRejected("question, expected_answer and notes must be strings")
        needed = body.get("citations_needed")
        if needed is not None and not isinstance(needed, str):
            raise LabelRejected("citations_needed must be 'any' or 'all'")
        rec = self.session.save(
            body["question_id"],
            status=str(body.get("status", "")),
            expected_citations=cites,
            must_refuse=bool(body.get("must_refuse", False)),
            citations_needed=needed,
            **texts,
        )
        return {"record": rec.to_json(), "progress": self.session.progress()}

    # -- helpers -----------------------------------------------------------------------------------

    def _suggestion(self, question_id: str, terms: frozenset[str]) -> dict | None:
        s = self.session.suggestion(question_id)
        if s is None:
            return None
        return s.to_json() | {
            "citations": s.citations,
            "must_refuse": s.must_refuse,
            "articles": [self._card(c, None, terms) for c in s.citations if c in self.kb.by_id],
        }

    def _candidates(self, text: str) -> list[Hit]:
        with self._cache_lock:
            hits = self._cache.get(text)
        if hits is None:  # the annotator edited the question: retrieve for the new wording
            hits = self._useful(self.retriever.search_many([text], self.k)[0])
            with self._cache_lock:
                self._cache[text] = hits
        return hits

    def _useful(self, hits: list[Hit]) -> list[Hit]:
        """BM25 pads a query sharing no word with the KB with score-0 articles: not candidates."""
        if getattr(self.retriever, "name", "") in ("bm25", "bm25f"):
            return [h for h in hits if h.score > 0]
        return hits

    @staticmethod
    def _breadcrumb(art) -> list[str]:
        """The headings above the article, minus those its title already spells out."""
        return [p for p in (art.heading_path or []) if p and p not in art.title]

    def _card(self, article_id: str, score: float | None, terms: frozenset[str]) -> dict:
        art = self.kb.by_id[article_id]
        language = self.words.of(art.id)
        return {
            "id": art.id,
            "title": art.title,
            "breadcrumb": self._breadcrumb(art),
            "source": art.source or "",
            "score": None if score is None or score == float("inf") else round(score, 3),
            "title_segments": passages.segments(art.title, terms, language),
            "snippet": passages.passage_snippet(art.text, terms, language),
        }


def search_hits(kb, retriever, query: str, k: int) -> list[Hit]:
    """The search box's answer to ``query``: the ``k`` best articles with any match, an article's ID first (typing
    an ID jumps straight to it). Shared by the labelling page and the reviewer's queue."""
    hits = [h for h in retriever.search_many([query], k)[0] if h.score > 0]
    if query in kb.by_id:
        hits = [Hit(query, float("inf"))] + [h for h in hits if h.id != query][: k - 1]
    return hits


def search_box_retriever(kb, retriever):
    """The search box's retriever: lexical (instant, exact words), the KB's own when it is, else its ``bm25f``.

    Either reads the KB in its language(s), as ``grace run`` does: the box once kept
    an English BM25 of its own beside the KB's index, so a French KB's "rémunération"
    found nothing and its "les", "de", "la" found every article.
    """
    if getattr(retriever, "name", "") in ("bm25", "bm25f"):
        return retriever
    return kb.retriever("bm25f")
