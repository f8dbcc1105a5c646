"""``grace annotate`` (the labelling web app) and ``grace annotations agree|validate|stats``."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from harness.core.errors import GraceError

_path = click.Path(path_type=Path)


@click.command("annotate")
@click.argument("kb_dir", type=_path)
@click.option("--questions", "-q", type=_path, help="CSV with question_id, question; or a text file, one per line.")
@click.option("--from-gold", type=_path, help="Review or correct an existing gold CSV (shows its labels).")
@click.option("--out", "-o", type=_path, help="Gold CSV to write (and resume). Default with --from-gold: that file.")
@click.option("--annotator", help="Name recorded on every label (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any other address than localhost requires the printed token.")
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Print the URL only.")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, 50), help="Candidates shown.")
@click.option("--embedder", help="Retriever for candidates (default: the KB's own, e.g. bm25).")
def annotate(kb_dir, questions, from_gold, out, annotator, host, port, no_browser, k, embedder) -> None:
    """Label questions with the KB article that answers them, in a local web app.

    Every label is written to OUT at once (write-then-rename), so closing the browser
    or stopping the server loses nothing; running the same command again resumes.
    """
    from annotations.server import AnnotationApp
    from annotations.state import AnnotationSession, default_annotator
    from kb_builder.store import load_kb

    if out is None:
        if from_gold is None:
            raise GraceError("give --out GOLD.csv: the file labels are saved to (it is resumed if it exists)")
        out = from_gold
    if questions is None and from_gold is None and not out.exists():
        raise GraceError("give --questions Q.csv (or Q.txt, one question per line) or --from-gold GOLD.csv")
    kb = load_kb(kb_dir)
    retriever, search_retriever = _retrievers(kb, embedder)
    session = AnnotationSession.open(
        kb, out, questions=questions, from_gold=from_gold, annotator=annotator or default_annotator()
    )
    try:
        server, url, token = _listen(AnnotationApp(session, retriever, k=k, search_retriever=search_retriever), host, port)
        p = session.progress()
        click.echo(
            f"{p['total']} questions ({p['labelled']} labelled, {p['skipped']} skipped); "
            f"KB {kb.path} ({len(kb.articles)} articles, candidates by {getattr(retriever, 'name', '?')})"
        )
        click.echo(f"saving every label to {out}")
        _serve(server, url, host if token else None, no_browser)
        p = session.progress()
        click.echo(f"\nstopped; {p['labelled']}/{p['total']} labelled, saved in {out}")
    finally:
        session.close()


def _listen(app, host: str, port: int):
    """A server for ``app``, its URL, and the token it demands (bound beyond localhost)."""
    import secrets

    from annotations.server import make_server, needs_token, url_for

    token = secrets.token_urlsafe(18) if needs_token(host) else None
    try:
        server = make_server(app, host, port, token)
    except OSError as exc:
        raise GraceError(f"cannot listen on {host}:{port} ({exc.strerror}); try --port 0") from None
    return server, url_for(host, server.server_address[1], token), token


def _serve(server, url: str, open_host: str | None, no_browser: bool) -> None:
    """Print the URL, open it, and serve until Ctrl-C or ``kill`` (every change is already saved)."""
    if open_host:
        click.echo(
            f"listening on {open_host}: anyone with this URL (it holds the token) can label; "
            "from another machine use this host's name or address in it"
        )
    click.echo(f"open {url}   (Ctrl-C to stop)")
    sys.stdout.flush()
    if not no_browser:
        import webbrowser

        webbrowser.open(url)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it like Ctrl-C: labels are already saved
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _retrievers(kb, embedder: str | None):
    """The KB's retriever for candidates; BM25 for the search box (instant, exact words)."""
    try:
        retriever = kb.retriever(embedder)
    except GraceError as exc:
        if (embedder or kb.manifest.embedder) == "bm25":
            raise
        raise GraceError(f"{exc}\n(or pass --embedder bm25 to label with lexical candidates)") from None
    if getattr(retriever, "name", "") == "bm25":
        return retriever, retriever
    from kb_builder.retrieval.lexical import BM25Retriever

    return retriever, BM25Retriever(kb.articles)


@click.group("annotations")
def annotations() -> None:
    """Check, compare and summarise gold labels; review a spot-check by hand."""


@annotations.command("review")
@click.argument("run_dir", type=_path)
@click.option("--kb", "kb_dir", type=_path, help="KB the answers cite (default: the one the spot-check used).")
@click.option("--gold", type=_path, help="Gold CSV, for the question text (default: the one the run names).")
@click.option("--out", "-o", type=_path, help="CSV to save labels to (default: RUN_DIR/spotcheck_review.csv, "
              "which 'grace spotcheck calibrate' reads); another file keeps a second reviewer's labels apart.")
@click.option("--reviewer", help="Name recorded on every label (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any other address than localhost requires the printed token.")
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Print the URL only.")
def review(run_dir, kb_dir, gold, out, reviewer, host, port, no_browser) -> None:
    """Review a spot-check by hand: mark each answer segment supported or not by its cited article.

    Shows the question, the answer with its segments highlighted and the cited article
    beside it, the best-matching passage marked; not the judge's verdict. Every mark is
    written to the CSV at once (write-then-rename); running the command again resumes.
    Then measure the judge against the labels:

    \b
      grace spotcheck calibrate RUN_DIR/spotcheck_review.csv RUN_DIR/spotcheck.json
    """
    from annotations.review_app import ReviewApp
    from annotations.review_session import ReviewSession
    from annotations.review_sources import RunSources
    from annotations.state import default_annotator
    from harness.rundir import RunDir
    from kb_builder.store import load_kb

    sources = RunSources.find(run_dir, kb_dir=kb_dir, gold=gold)
    kb = load_kb(sources.kb_dir, write_missing=False)
    out = out or sources.review_csv
    session = ReviewSession.open(sources.review_csv, out, reviewer=reviewer or default_annotator())
    try:
        app = ReviewApp(session, sources, kb)
        server, url, token = _listen(app, host, port)
        p = session.progress()
        click.echo(f"{p['answers']} answers, {p['segments']} segments ({p['reviewed']} reviewed); "
                   f"KB {kb.path} ({len(kb.articles)} articles)")
        for w in app.warnings:
            click.echo(f"warning: {w}", err=True)
        click.echo(f"saving every mark to {out}")
        _serve(server, url, host if token else None, no_browser)
        p = session.progress()
        where = f"saved in {out}" if out.exists() else f"nothing marked, {out} not written"
        click.echo(f"\nstopped; {p['reviewed']}/{p['segments']} segments reviewed, {where}")
        if p["reviewed"]:
            click.echo(f"next: grace spotcheck calibrate {out} {RunDir(sources.run_dir).spotcheck}")
    finally:
        session.close()


@annotations.command("agree")
@click.argument("files", nargs=-1, required=True, type=_path)
@click.option("--merge", type=_path, help="Write an adjudication CSV with every annotator's label side by side.")
@click.option("--kb", "kb_dir", type=_path, help="KB to show article titles in the disagreement list.")
@click.option("--limit", default=50, show_default=True, help="Disagreements listed (0 = all).")
def agree(files, merge, kb_dir, limit) -> None:
    """Agreement between annotators: Cohen's kappa (two) or Fleiss' kappa (three or more)."""
    from annotations import agreement

    if len(files) < 2:
        raise GraceError("give two or more annotation CSVs to compare")
    titles = _titles(kb_dir)
    result = agreement.compare_files(list(files))
    click.echo(agreement.render(result, titles, limit=limit))
    if merge:
        agreement.write_merge(result, merge, titles)
        click.echo(f"adjudication sheet: {merge} ({len(result.disagreements)} to adjudicate)")


@annotations.command("validate")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB the gold set cites.")
@click.option("--old-kb", type=_path, help="The KB the labels were made on, to name retired IDs by title.")
@click.option("-k", "--k", "k", default=10, show_default=True, help="Retrieval depth for the 'never surfaced' check.")
@click.option("--embedder", help="Retriever for that check (default: the KB's own).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(gold, kb_dir, old_kb, k, embedder, as_json) -> None:
    """Check a gold CSV against its KB; exit 1 when it has errors."""
    from annotations import validate as v

    report = v.validate_gold(gold, kb_dir, old_kb=old_kb, k=k, embedder=embedder)
    click.echo(report.model_dump_json(indent=2) if as_json else v.render(report))
    if report.errors:
        sys.exit(1)


@annotations.command("stats")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB, to find articles no question cites.")
@click.option("--by", "column", help="Category column to count (default: 'category' if present).")
@click.option("--limit", default=20, show_default=True, help="Rows per table (0 = all).")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(gold, kb_dir, column, limit, as_json) -> None:
    """Questions per article, coverage gaps, and category counts."""
    from annotations import stats as s

    st = s.gold_stats(gold, kb_dir, column=column)
    click.echo(st.model_dump_json(indent=2) if as_json else s.render(st, limit=limit))


def _titles(kb_dir: Path | None) -> dict[str, str]:
    if kb_dir is None:
        return {}
    from kb_builder.store import load_kb

    return {a.id: a.title for a in load_kb(kb_dir).articles}
