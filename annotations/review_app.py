"""The spot-check review page's API: one answer at a time, its segments, and the articles they cite.

Served by grace's one web server core, like ``grace annotate`` (:mod:`harness.web`:
token and Host checks, CSP, static files). Answer and article text are untrusted; they
leave here as JSON strings cut into pieces, and the page builds text nodes from them.
The judge's verdict is never sent: a reviewer who sees it anchors on it.
"""

from __future__ import annotations

from annotations.review_session import ReviewSession, check_label, key_of
from annotations.review_sources import RunSources, answer_pieces, locate
from annotations.server import STATIC
from annotations.state import LabelRejected
from harness.core.citation_text import ANY_ID_MARKER
from harness.run_folder.file_names import CLAIMS_REVIEW_CSV
from kb_builder.retrieval import passages


class ReviewApp:
    name = "grace annotations review"
    page = "review.html"
    static = STATIC
    post_paths = ("/api/review/label",)

    def __init__(self, session: ReviewSession, sources: RunSources, kb, shared: ReviewApp | None = None):
        """``shared``: another person's app on the same run and KB (a team's), whose word index and answers this
        one uses instead of building its own."""
        self.session, self.sources, self.kb = session, sources, kb
        self.words = shared.words if shared is not None else passages.KBWords(kb)
        self._id_words = self.words.terms("id ids")
        if shared is None:
            sources.load_answers({rows[0].key[:3] for rows in session.answers})
        self.claims = sources.review_csv.name == CLAIMS_REVIEW_CSV
        self.warnings = list(sources.warnings) if shared is None else list(shared.warnings)
        if shared is None and sources.kb_hash and sources.kb_hash != kb.manifest.kb_hash:
            self.warnings.append(f"KB {kb.path} is not the one the segments were judged against "
                                 f"(hash {kb.manifest.kb_hash}, judged on {sources.kb_hash})")

    # -- routes ------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        if path == "/api/review/state":
            return self.state()
        if path.startswith("/api/review/item/"):
            return self.item(int(path.rsplit("/", 1)[1]))
        if path == "/api/review/article":
            one = lambda name: (query.get(name) or [""])[0]  # noqa: E731
            return self.article(int(one("item")), int(one("seg")), one("id"))
        return None

    def post(self, path: str, body) -> dict | None:
        return self.label(body) if path == "/api/review/label" else None

    # -- API ---------------------------------------------------------------------------------------

    def state(self) -> dict:
        return {
            "progress": self.session.progress(),
            "reviewer": self.session.reviewer,
            "out": str(self.session.out),
            "run": str(self.sources.run_dir),
            "kb": {"path": str(self.kb.path), "articles": len(self.kb.articles), "kb_hash": self.kb.manifest.kb_hash},
            "warnings": self.warnings,
            "claims": self.claims,  # a claims review: a third label, partial
        }

    def item(self, i: int) -> dict:
        total = len(self.session.answers)
        if not 0 <= i < total:
            raise LookupError(f"answer index {i} out of range (0..{total - 1})")
        segs = self.session.answer(i)
        model, qid, rep = self.session.answers[i][0].key[:3]
        answer = self.sources.answers.get((model, qid, rep))
        spans = locate(answer, [s["text"] for s in segs]) if answer is not None else [None] * len(segs)
        for s, span in zip(segs, spans, strict=True):
            s["located"] = span is not None
        cited = list(dict.fromkeys(c for s in segs for c in s["citations"]))
        return {
            "index": i,
            "total": total,
            "model": model,
            "question_id": qid,
            "repeat": rep,
            "question": self.sources.questions.get(qid),
            "answer": None if answer is None else answer_pieces(answer, spans),
            "segments": segs,
            "articles": [self._head(a) for a in cited],
            "status": self.session.status(i),
        }

    def article(self, i: int, seg: int, article_id: str) -> dict:
        """The article in full, with the passage that best matches segment ``seg`` of answer ``i`` flagged."""
        if not 0 <= i < len(self.session.answers):
            raise LookupError(f"answer index {i} out of range")
        rows = self.session.answers[i]
        if not 0 <= seg < len(rows):
            raise LookupError(f"segment {seg} out of range (0..{len(rows) - 1})")
        art = self.kb.by_id.get(article_id)
        if art is None:
            raise LookupError(f"article {article_id!r} is not in the KB {self.kb.path}")
        text = rows[seg].values.get("segment_text", "")
        language = self.words.of(art.id)
        # "[ID: 17]": the answer's citations are not its words
        terms = self.words.terms(ANY_ID_MARKER.sub(" ", text)) - self._id_words
        if not passages.match_spans(art.text, terms, language):  # no shared word: flag no passage, not the first lines
            terms = frozenset()
        # words marked inside the passage only: across a whole article a long claim's words are noise
        pieces = [[t, m if inside else 0, inside]
                  for t, m, inside in passages.article_segments(art.text, terms, language)]
        return {**self._head(article_id), "segments": pieces}

    def label(self, body: dict) -> dict:
        if not isinstance(body, dict):
            raise LabelRejected("expected a JSON object")
        key, supported, note = key_of(body), body.get("supported"), body.get("note")
        check_label(supported, note, self.claims)
        seg = self.session.save(key, supported=supported, note=note)
        return {"segment": seg, "progress": self.session.progress()}

    # -- helpers -----------------------------------------------------------------------------------

    def _head(self, article_id: str) -> dict:
        art = self.kb.by_id.get(article_id)
        if art is None:
            return {"id": article_id, "in_kb": False, "title": "", "breadcrumb": [], "source": ""}
        crumb = [p for p in (art.heading_path or []) if p and p not in art.title]
        return {"id": art.id, "in_kb": True, "title": art.title, "breadcrumb": crumb, "source": art.source or ""}
