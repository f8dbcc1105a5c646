"""Starting an app the same way from every command: listen, print the URL, open a browser, serve until stopped."""

from __future__ import annotations

import secrets
import signal
import sys

import click

from harness.core.errors import GraceError
from harness.web.server import WebApp, make_server, needs_token, url_for


def listen(app: WebApp, host: str, port: int):
    """A server for ``app``, its URL, and the token it demands (bound beyond localhost)."""
    token = secrets.token_urlsafe(18) if needs_token(host) else None
    try:
        server = make_server(app, host, port, token)
    except OSError as exc:
        raise GraceError(f"cannot listen on {host}:{port} ({exc.strerror}); try --port 0") from None
    return server, url_for(host, server.server_address[1], token), token


def serve(server, url: str, open_host: str | None, no_browser: bool, what: str = "use the app") -> None:
    """Print the URL, open it, and serve until Ctrl-C or ``kill`` (the apps save every change as it is made).

    ``open_host``: the address when bound beyond localhost (the URL then holds the token, and says so)."""
    if open_host:
        click.echo(f"listening on {open_host}: anyone with this URL (it holds the token) can {what}; "
                   "from another machine use this host's name or address in it")
    click.echo(f"open {url}   (Ctrl-C to stop)")
    sys.stdout.flush()
    if not no_browser:
        import webbrowser

        webbrowser.open(url)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it like Ctrl-C
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
