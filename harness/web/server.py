"""The one HTTP server behind grace's local web apps (``grace annotate``, ``grace annotations review``, ``grace view``).

Stdlib ``ThreadingHTTPServer``: an app here serves one person on one machine, a
few requests a second, so the only things a framework would add are routing
(a dozen ``if`` lines per app) and a dependency; the parts that matter (the
guards below) are grace's own either way. Nothing needs a network or Node.

Every response carries the same headers: a strict Content-Security-Policy (no
inline script or style, nothing from another origin, no framing), ``nosniff``,
no referrer, no caching of pages or data. Model output and KB text are hostile:
they leave the server only as JSON strings (or SVG an app escaped), and the
pages put them into text nodes (``static/common.js``'s ``el``).

Guards, in order, on every request:

- **Host.** Bound to a loopback address the ``Host`` header must name a local
  host and this port, so a web page cannot reach the app through DNS rebinding.
  Bound anywhere else every request must carry the ``?token=`` printed at start-up.
- **Origin.** A request that changes anything (POST, PUT, DELETE, PATCH) is
  refused when a browser says it comes from another origin's page.
- **Body.** POST takes ``application/json`` only (a cross-site form cannot send
  it without a preflight that is never granted), with a ``Content-Length`` of
  plain digits (else 400) and at most ``MAX_BODY`` bytes (else 413), checked
  before a byte of the body is read.

Static files come from a fixed list of names (the app's folder, then the shared
``static/`` here): no path from the URL reaches the disk.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import parse_qs, urlsplit

from harness.core.errors import GraceError

log = logging.getLogger("grace")

SHARED_STATIC = Path(__file__).parent / "static"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
MAX_BODY = 1 << 20
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
KEY_HEADER = "X-Grace-Key"  # a person's key (harness.web.credentials), when not in the URL
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}


class Rejected(ValueError):
    """A request the app refuses, with the status the page gets and a message it shows (400 unless a subclass
    says otherwise, e.g. 409 when the file changed under the server)."""

    status = HTTPStatus.BAD_REQUEST
    details: dict[str, Any] = {}  # more for the page, beside "error" (an instance's own, set by a subclass)


class Raw(NamedTuple):
    """A non-JSON answer from an app's ``get`` (an SVG plot): bytes and their type."""

    body: bytes
    content_type: str


class WebApp(Protocol):
    """What an app gives the server: its page, its own static folder and its routes.

    ``get(path, query)`` and ``post(path, body)`` answer a JSON-able dict (or a
    :class:`Raw`), or ``None`` for no such route; ``LookupError`` is a 404,
    :class:`Rejected` its own status, ``GraceError`` a 400 with its message.
    ``post_paths`` lists the POST routes so a bad one is refused before its body is read. A team's app
    (``keyed = True``) gets a POST's key too, ``post(path, body, key)`` (:mod:`harness.web.credentials`); a GET's
    is in its query.
    """

    name: str  # "grace annotate": named in the 403 message
    page: str  # the HTML file served at /
    static: Path  # the app's own assets; the shared ones are served too
    post_paths: tuple[str, ...]

    def get(self, path: str, query: dict[str, list[str]]) -> dict | Raw | None: ...

    def post(self, path: str, body: Any) -> dict | None: ...


def _static_files(app: WebApp) -> dict[str, Path]:
    """Name -> file, the app's own first: the only files the server ever reads from disk."""
    files = {p.name: p for p in SHARED_STATIC.iterdir() if p.is_file()}
    files.update({p.name: p for p in Path(app.static).iterdir() if p.is_file()})
    return files


def make_handler(app: WebApp, *, token: str | None, port_ref: list[int]):
    files = _static_files(app)
    forbidden = f"forbidden: open the URL printed by {app.name}"

    class Handler(BaseHTTPRequestHandler):
        server_version = "grace"
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
            ``null``) must not change anything through the user's browser. No ``Origin``: not a browser's
            cross-site request, and the Host check or token guards it."""
            origin = self.headers.get("Origin")
            if origin is None:
                return True
            host = (self.headers.get("Host") or "").strip().lower()
            return host.endswith(f":{port_ref[0]}") and origin.strip().lower() == f"http://{host}"

        def _refuse_change(self, url) -> bool:
            """Answers 403 (and returns True) when a request that changes state fails a guard."""
            if not self._allowed(parse_qs(url.query)):
                self._error(HTTPStatus.FORBIDDEN, forbidden)
            elif not self._same_origin():
                self._error(HTTPStatus.FORBIDDEN, "forbidden: a page of another origin cannot change anything here")
            else:
                return False
            return True

        # -- answers -------------------------------------------------------------------------------

        def _send(self, status: int, body: bytes, ctype: str, cache: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for name, value in HEADERS.items():
                self.send_header(name, value)
            self.send_header("Cache-Control", "max-age=60" if cache else "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            if isinstance(data, Raw):
                return self._send(status, data.body, data.content_type)
            self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json")

        def _error(self, status: int, message: str) -> None:
            self._json(status, {"error": message})

        def _answer(self, call, missing: int = HTTPStatus.NOT_FOUND) -> None:
            """Run an app call and answer with its result or the error it raised, never a traceback.

            ``missing``: the status of a ``LookupError`` or ``ValueError`` (404 for a read, 400 for a change)."""
            try:
                data = call()
            except Rejected as exc:  # its message, and what it says beside it (a stale decision: the state now)
                return self._json(exc.status, {"error": str(exc), **exc.details})
            except GraceError as exc:
                return self._error(HTTPStatus.BAD_REQUEST, str(exc))
            except (LookupError, ValueError) as exc:
                return self._error(missing, str(exc))
            except OSError as exc:  # the disk refused a read or a write: say so; the page keeps its state
                return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"could not read or write a file: {exc}")
            except Exception as exc:  # a bug: one line in the terminal and on the page, the server goes on
                log.warning(f"{app.name}: {self.command} {urlsplit(self.path).path} failed: {exc!r}")
                return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {exc!r}")
            if data is None:
                return self._error(HTTPStatus.NOT_FOUND, f"no such page: {urlsplit(self.path).path}")
            self._json(200, data)

        # -- routes --------------------------------------------------------------------------------

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if not self._allowed(query):
                return self._error(HTTPStatus.FORBIDDEN, forbidden)
            path = url.path
            if path in ("/", f"/{app.page}"):
                return self._static(app.page)
            if path.startswith("/static/"):
                return self._static(path.removeprefix("/static/"))
            if path == "/favicon.ico":
                return self._send(204, b"", "image/x-icon")
            if self.headers.get(KEY_HEADER) and not query.get("cred"):
                query["cred"] = [self.headers[KEY_HEADER]]
            self._answer(lambda: app.get(path, query))

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            if self._refuse_change(url):
                return
            if url.path not in app.post_paths:
                return self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: {url.path}")
            # JSON only: a cross-site HTML form cannot send it without a CORS preflight we never grant
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                return self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
            length = content_length(self.headers.get("Content-Length"))
            if length is None:
                return self._error(HTTPStatus.BAD_REQUEST, "Content-Length must be a number of bytes")
            if length > MAX_BODY:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large")
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except (json.JSONDecodeError, UnicodeDecodeError):
                return self._error(HTTPStatus.BAD_REQUEST, "body is not valid JSON")
            if getattr(app, "keyed", False):  # a team's app: the person is the one whose key the request carries
                key = (parse_qs(url.query).get("cred") or [""])[0] or self.headers.get(KEY_HEADER) or None
                return self._answer(lambda: app.post(url.path, body, key), HTTPStatus.BAD_REQUEST)
            self._answer(lambda: app.post(url.path, body), HTTPStatus.BAD_REQUEST)

        def _no_such_method(self) -> None:
            if not self._refuse_change(urlsplit(self.path)):
                self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"{self.command} is not supported here")

        do_PUT = do_DELETE = do_PATCH = _no_such_method

        def _static(self, name: str) -> None:
            p = files.get(name)
            if p is None:  # a fixed list of names: no path from the URL reaches the disk
                return self._error(HTTPStatus.NOT_FOUND, f"no such file: {name}")
            body = p.read_bytes()
            page = p.suffix == ".html"
            if page:
                body = body.replace(b"__TOKEN_QUERY__", f"?token={token}".encode() if token else b"")
            self._send(200, body, TYPES.get(p.suffix, "application/octet-stream"), cache=not page)

    return Handler


def content_length(value: str | None) -> int | None:
    """The body's length in bytes; None when the header is not plain digits (a sign, hex, a word)."""
    value = (value or "0").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def make_server(app: WebApp, host: str = "127.0.0.1", port: int = 0, token: str | None = None):
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
