"""``grace kb edit``: one curation action on a KB from the command line (for CI and bulk work), or the list of them.

Registered on the ``grace kb`` group by :mod:`harness.cli.kb`; the work is :func:`harness.workflows.kb_edits.edit_kb`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.core.errors import GraceError


def _read_text(path: str) -> str:
    if path == "-":
        return click.get_text_stream("stdin").read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GraceError(f"--text: {path}: file not found (give a file holding the new text, or - for stdin)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GraceError(f"--text: {path}: cannot read it as UTF-8 text ({exc})") from None


def _describe(e) -> str:
    what = {
        "title": lambda: f"article {e.articles[0]} retitled {e.title!r}",
        "text": lambda: f"article {e.articles[0]}: new text ({len(e.text or '')} characters)",
        "split": lambda: f"article {e.articles[0]} split at paragraph {e.at} into {' and '.join(e.parts)} "
                         f"({e.articles[0]} retired)",
        "merge": lambda: f"article {e.articles[1]} merged into {e.articles[0]} ({e.articles[1]} retired)",
        "distinct": lambda: f"articles {e.articles[0]} and {e.articles[1]} marked distinct: {e.reason}",
        "undo": lambda: f"action {e.undoes} undone ({', '.join(e.articles)})",
    }[e.action]()
    return f"{e.seq}. {what}  [{e.author}, {e.time}]"


@click.command("edit")
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.option("--title", "title", nargs=2, metavar="ID TITLE", help="Give article ID a new title.")
@click.option("--text", "text", nargs=2, metavar="ID FILE", help="Replace article ID's text with FILE's (- : stdin).")
@click.option("--split", "split_id", metavar="ID", help="Split article ID in two (with --at).")
@click.option("--at", "at", type=int, metavar="N", help="With --split: the paragraph (1-based) the second part starts "
              "with; 'grace kb show KB ID' shows the paragraphs (blocks between blank lines).")
@click.option("--titles", "titles", nargs=2, metavar="FIRST SECOND", help="With --split: the parts' titles "
              "(default: TITLE (part 1 of 2), TITLE (part 2 of 2)).")
@click.option("--merge", "merge", nargs=2, metavar="KEEP OTHER",
              help="Merge OTHER into KEEP: KEEP keeps its ID and both texts, OTHER is retired (merged_into KEEP).")
@click.option("--merged-title", help="With --merge: the merged article's title (default: KEEP's).")
@click.option("--distinct", "distinct", nargs=2, metavar="A B",
              help="Mark two articles as answering different questions (with --why): lint stops reporting the pair.")
@click.option("--undo", is_flag=True, help="Undo the last action (or --seq N).")
@click.option("--seq", "seq", type=int, help="With --undo: the action to undo (numbers from --list).")
@click.option("--why", "why", help="Why (required with --distinct; recorded with any action).")
@click.option("--author", help="Who is recorded (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--list", "list_edits", is_flag=True, help="List the KB's curation actions and conflicts, then exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the saved action (or, with --list, all) as JSON.")
def edit(kb_dir: Path, title, text, split_id, at, titles, merge, merged_title, distinct, undo, seq, why, author,
         list_edits, as_json) -> None:
    """Curate a KB: retitle, rewrite, split or merge articles, mark a pair distinct, undo.

    Each action is saved to KB/curation.jsonl and applied to the KB at once; `grace kb build` re-applies them after a
    rebuild. Exit codes: 0 saved, 2 bad input (unknown or retired ID, no such paragraph, a merge with itself).
    """
    from harness.workflows import kb_edits as workflow

    if list_edits:
        edits, conflicts = workflow.curation_edits(kb_dir)
        if as_json:
            click.echo(json.dumps({"edits": [e.model_dump(mode="json", exclude={"before_articles", "after_articles"})
                                             for e in edits],
                                   "conflicts": [c.model_dump(mode="json") for c in conflicts]}, ensure_ascii=False,
                                  indent=2))
            return
        undone = {e.undoes for e in edits if e.action == "undo"}
        for e in edits:
            click.echo(_describe(e) + ("  (undone)" if e.seq in undone else ""))
        if not edits:
            click.echo(f"{kb_dir}: no curation actions")
        for c in conflicts:
            click.echo(f"conflict: action {c.seq} ({c.action} of {', '.join(c.articles)}): {c.reason}")
        return
    if at is not None and split_id is None:
        raise GraceError("--at goes with --split ID")
    if split_id is not None and at is None:
        raise GraceError(f"--split {split_id}: give --at N, the paragraph the second part starts with")
    if seq is not None and not undo:
        raise GraceError("--seq goes with --undo")
    job = workflow.KbEdit(
        author=author, reason=why,
        title=tuple(title) if title else None,
        text=(text[0], _read_text(text[1])) if text else None,
        split=(split_id, at) if split_id is not None else None, split_titles=list(titles) if titles else None,
        merge=tuple(merge) if merge else None, merged_title=merged_title,
        distinct=tuple(distinct) if distinct else None,
        undo=undo, undo_seq=seq)
    saved = workflow.edit_kb(kb_dir, job)
    if as_json:
        click.echo(saved.model_dump_json(exclude={"before_articles", "after_articles"}))
    else:
        click.echo(f"saved: {_describe(saved)}")
