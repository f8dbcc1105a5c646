"""The server core shared by grace's local web apps: one HTTP server, its guards and headers, shared assets.

``grace annotate`` and ``grace annotations review`` (:mod:`annotations`) and
``grace view`` (:mod:`harness.viewer`) each write an app object (its page, its
static folder, its JSON routes); :func:`make_server` serves it with the same
Host, token and Origin checks, body limits and security headers, and
:func:`listen` / :func:`serve` start it the same way from every command.
``static/common.js`` (API calls, a DOM builder that only makes text nodes, and
the work pages' shell: keys, help, prev/next, auto-advance, the "saved" toast) and
``static/base.css`` are served to every app. A team's apps add who is who
(:mod:`harness.web.credentials`: each person's own key, kept hashed) and one
decision with a stale check (:mod:`harness.web.decisions`). Needs only the standard library
and ``harness.core``, so any stage may use it.
"""

from harness.web.run import listen, serve
from harness.web.server import CSP, HEADERS, Raw, Rejected, WebApp, make_server, needs_token, url_for

__all__ = ["CSP", "HEADERS", "Raw", "Rejected", "WebApp", "listen", "make_server", "needs_token", "serve", "url_for"]
