"""The local web app behind ``grace annotate``: a small JSON API plus three static files.

Stdlib ``ThreadingHTTPServer`` only, so annotating needs no extra install and no
network. The KB is untrusted text: the API returns it as JSON data and the page
builds text nodes from it. Bound to 127.0.0.1 the server also checks the ``Host``
header (a web page cannot reach it through DNS rebinding); bound anywhere else,
every request must carry the ``?token=`` printed at start-up. A request that
changes anything is refused when a browser says it comes from another origin's
page (``Origin``), and a body whose ``Content-Length`` is not a plain, modest
number of bytes is refused before it is read.

Questions are addressed by their place in the session's walk (all questions, or the
``--only`` subset, in ``--order``). Each question comes with its suggestion, if any
(label, support, votes, source, flag, reason, and the suggested articles' titles);
saving a label needs nothing more from the page: the session decides its provenance.
"""

from __future__ import annotations

import hmac
import json
import re
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from annotations import passages
from annotations.state import AnnotationSession, LabelRejected
from kb_builder.retrieval import Hit

STATIC = Path(__file__).parent / "static"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
MAX_BODY = 1 << 20
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class AnnotationApp:
    """What the API answers, independent of HTTP (the tests call it directly too).

    The handler is shared with the spot-check review (:mod:`annotations.review_app`): an app
    names its page, answers ``get(path, query)`` and ``post(path, body)`` (``None``: no such
    route), and lists ``post_paths`` so a bad POST is refused before its body is read.
    """

    page = "index.html"
    post_paths = ("/api/label",)

    def __init__(self, session: AnnotationSession, retriever, *, k: int = 10, search_retriever=None):
        self.session, self.kb, self.k = session, session.kb, k
        self.retriever = retriever
        self.search_retriever = search_retriever or retriever
        self._cache: dict[str, list[Hit]] = {}
        self._cache_lock = threading.Lock()
        walk = set(session.view_ids())
        texts = list(dict.fromkeys(r.question for r in session.records if r.question_id in walk))
        if texts:  # one batch: a dense retriever embeds all questions in a few calls, not one per click
            for text, hits in zip(texts, self.retriever.search_many(texts, k), strict=True):
                self._cache[text] = self._useful(hits)

    # -- routes ------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        if path == "/api/state":
            return self.state()
        if path.startswith("/api/question/"):
            return self.question(int(path.rsplit("/", 1)[1]))
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
        terms = passages.query_terms(rec.question)
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
        terms = passages.query_terms(query)
        hits = [h for h in self.search_retriever.search_many([query], k)[0] if h.score > 0]
        if query in self.kb.by_id:  # typing an article ID jumps straight to it
            hits = [Hit(query, float("inf"))] + [h for h in hits if h.id != query][: k - 1]
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
            "segments": passages.article_segments(art.text, passages.query_terms(query)),
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
        rec = self.session.save(
            body["question_id"],
            status=str(body.get("status", "")),
            expected_citations=cites,
            must_refuse=bool(body.get("must_refuse", False)),
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
        return {
            "id": art.id,
            "title": art.title,
            "breadcrumb": self._breadcrumb(art),
            "source": art.source or "",
            "score": None if score is None or score == float("inf") else round(score, 3),
            "title_segments": passages.segments(art.title, terms),
            "snippet": passages.passage_snippet(art.text, terms),
        }


def make_handler(app, *, token: str | None, port_ref: list[int]):
    class Handler(BaseHTTPRequestHandler):
        server_version = "grace-annotate"
        sys_version = ""

        def log_message(self, fmt: str, *args) -> None:  # quiet: the terminal shows the URL only
            pass

        # -- guards --------------------------------------------------------------------------------

        def _allowed(self, query: dict) -> bool:
            if token is not None:
                given = (query.get("token") or [""])[0]
                return hmac.compare_digest(given.encode(), token.encode())
            host = (self.headers.get("Host") or "").strip().lower()
            name = re.sub(r":\d+$", "", host).strip("[]")
            return name in LOCAL_HOSTS and host.endswith(f":{port_ref[0]}")

        def _same_origin(self) -> bool:
            """Browsers name the page behind a request in ``Origin``: another site's script (or a sandboxed one,
            ``null``) must not save labels through the annotator's browser. No ``Origin``: not a browser's
            cross-site request, and the Host check or token guards it."""
            origin = self.headers.get("Origin")
            if origin is None:
                return True
            host = (self.headers.get("Host") or "").strip().lower()
            return host.endswith(f":{port_ref[0]}") and origin.strip().lower() == f"http://{host}"

        def _refuse_change(self, url) -> bool:
            """Answers 403 (and returns True) when a request that changes state fails a guard."""
            if not self._allowed(parse_qs(url.query)):
                self._error(HTTPStatus.FORBIDDEN, "forbidden: open the URL printed by grace annotate")
            elif not self._same_origin():
                self._error(HTTPStatus.FORBIDDEN, "forbidden: a page of another origin cannot change anything here")
            else:
                return False
            return True

        def _send(self, status: int, body: bytes, ctype: str, cache: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "max-age=60" if cache else "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, data: dict) -> None:
            self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json")

        def _error(self, status: int, message: str) -> None:
            self._json(status, {"error": message})

        # -- routes --------------------------------------------------------------------------------

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if not self._allowed(query):
                return self._error(HTTPStatus.FORBIDDEN, "forbidden: open the URL printed by grace annotate")
            path = url.path
            try:
                if path in ("/", f"/{app.page}"):
                    return self._static(app.page)
                if path.startswith("/static/"):
                    return self._static(path.removeprefix("/static/"))
                if path == "/favicon.ico":
                    return self._send(204, b"", "image/x-icon")
                data = app.get(path, query)
                if data is not None:
                    return self._json(200, data)
            except (LookupError, ValueError) as exc:
                return self._error(HTTPStatus.NOT_FOUND, str(exc))
            return self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            if self._refuse_change(url):
                return
            if url.path not in app.post_paths:
                return self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: {url.path}")
            # JSON only: a cross-site HTML form cannot send it without a CORS preflight we never grant
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                return self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
            length = _content_length(self.headers.get("Content-Length"))
            if length is None:
                return self._error(HTTPStatus.BAD_REQUEST, "Content-Length must be a number of bytes")
            if length > MAX_BODY:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large")
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                return self._json(200, app.post(url.path, body))
            except json.JSONDecodeError:
                return self._error(HTTPStatus.BAD_REQUEST, "body is not valid JSON")
            except LabelRejected as exc:  # a subclass may carry its own status (409: the file changed)
                return self._error(getattr(exc, "status", HTTPStatus.BAD_REQUEST), str(exc))
            except OSError as exc:  # the disk refused the write: say so, the page keeps the label
                return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"could not save: {exc}")

        def _no_such_method(self) -> None:
            if not self._refuse_change(urlsplit(self.path)):
                self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"{self.command} is not supported here")

        do_PUT = do_DELETE = do_PATCH = _no_such_method

        def _static(self, name: str) -> None:
            files = {p.name: p for p in STATIC.iterdir() if p.is_file()}
            if name not in files:  # a fixed list of names: no path from the URL reaches the disk
                return self._error(HTTPStatus.NOT_FOUND, f"no such file: {name}")
            p = files[name]
            body = p.read_bytes()
            page = p.suffix == ".html"
            if page:
                body = body.replace(b"__TOKEN_QUERY__", f"?token={token}".encode() if token else b"")
            self._send(200, body, _TYPES.get(p.suffix, "application/octet-stream"), cache=not page)

    return Handler


def _content_length(value: str | None) -> int | None:
    """The body's length in bytes; None when the header is not plain digits (a sign, hex, a word)."""
    value = (value or "0").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def make_server(app, host: str = "127.0.0.1", port: int = 0, token: str | None = None):
    """A ready (not yet serving) server; ``server.server_address[1]`` is the port when 0 was asked."""
    port_ref = [port]
    cls = _ThreadingHTTPServer6 if ":" in host else ThreadingHTTPServer
    server = cls((host, port), make_handler(app, token=token, port_ref=port_ref))
    server.daemon_threads = True
    port_ref[0] = server.server_address[1]
    return server


class _ThreadingHTTPServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def needs_token(host: str) -> bool:
    return host not in LOCAL_HOSTS


def url_for(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
