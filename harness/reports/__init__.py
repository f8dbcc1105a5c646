"""Reports for a scored run: terminal leaderboard, ``leaderboard.md`` and ``report.html``.

Everything is derived from ``OUT_DIR/report.json`` (plus ``scores.jsonl``, the
responses file and the KB when present), so a report can be rewritten at any
time without calling a model or re-scoring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_reports(out_dir: Path, kb: Any = None, console: Any = None, gold: Any = None) -> dict[str, Path]:
    """Write ``leaderboard.md`` and ``report.html`` into ``out_dir``; print the leaderboard if given a console.

    ``kb`` is a loaded KB, a KB folder, or None (then the KB path recorded in
    ``report.json`` is tried, for article titles). ``gold`` is the gold set
    already read (``grace run`` has it), else the file report.json names is read for the question texts.
    """
    from harness.core.files import atomic_write_text
    from harness.reports.inputs import load_inputs
    from harness.reports.markdown import render_markdown
    from harness.reports.page import render_html
    from harness.run_folder.run_dir import RunDir

    run = RunDir(out_dir)
    if not run.path.is_dir():  # before the lock, which would create it
        from harness.core.errors import GraceError

        raise GraceError(f"{run.path}: no such folder; give the folder 'grace run' or 'grace score' wrote "
                         "(it holds report.json)")
    with run.lock():
        inputs = load_inputs(run.path, kb, gold)
        written = {"markdown": run.leaderboard_md, "html": run.report_html}
        atomic_write_text(written["markdown"], _encodable(render_markdown(inputs)))
        atomic_write_text(written["html"], _encodable(render_html(inputs)))
    if console is not None:
        from harness.reports.terminal import print_leaderboard

        print_leaderboard(inputs, console, written["html"])
    return written


def _encodable(text: str) -> str:
    """JSON allows lone surrogates ("\\ud800") that UTF-8 cannot encode; bad bytes must not stop the report."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


__all__ = ["write_reports"]
