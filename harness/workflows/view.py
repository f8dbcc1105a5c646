"""The viewer workflows of ``grace view``: serve runs in a local web app, or export one as static files."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

__all__ = ["export_view", "view"]

log = logging.getLogger("grace")


def view(paths: Sequence[str | Path] = (".",), *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
         cache_dir: str | Path | None = None) -> None:
    """Serve ``grace view`` over the runs under ``paths`` (run folders, or folders holding them) until Ctrl-C.

    Read-only on the run folders: each run's index is kept in grace's cache folder (``cache_dir``), built in
    a child process while the Runs and Leaderboard pages already answer, and rebuilt when the run changes.
    Bound to 127.0.0.1 unless ``host`` says otherwise (then the URL carries a token).
    """
    from harness.viewer import open_viewer
    from harness.web import listen, serve

    app, indexer = open_viewer(list(paths), cache_dir)
    try:
        server, url, token = listen(app, host, port)
        log.info(f"{len(app.runs)} run(s): {', '.join(app.order)}")
        serve(server, url, host if token else None, not open_browser, "read these runs")
    finally:
        indexer.stop()


def export_view(run: str | Path, out: str | Path, *, force: bool = False, cache_dir: str | Path | None = None) -> Path:
    """Write a static, self-contained copy of ``grace view`` for one run into the folder ``out``.

    ``out/index.html`` opens from ``file://`` with no server: the same grid, filters, question pages and the
    comparisons of the run's models. Runs up to ``harness.viewer.export.MAX_ANSWERS`` answers; a bigger one is
    refused with a message. Returns the path of ``index.html``. A folder that is not empty needs ``force``; then
    only the files an earlier export wrote (``out/.grace-export.json`` lists them with their hashes) are replaced
    or removed, any other file at a name the export writes (or one of its files edited since) is kept as
    ``NAME.bak``, and a symbolic link that leads out of ``out`` is refused (``GraceError``).
    """
    from harness.viewer.export import export

    return export(Path(run), Path(out), force=force, cache_dir=cache_dir)
