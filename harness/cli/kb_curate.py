"""``grace kb curate``: fix what ``grace kb lint`` finds, in a local web app (a subcommand of :mod:`harness.cli.kb`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.call_options import call_options, model_calls, redact_option
from harness.kb_curate.proposals import OUTPUT_TOKENS


@click.command("curate")
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.option("--propose-with", default="baseline:heuristic", show_default=True, metavar="PROVIDER:MODEL",
              help="Who proposes fixes: a model (openai:gpt-4o-mini, ...; cached and priced) or baseline:heuristic "
              "(offline: the section's lead put first, a merge of both texts, a split at the largest topic shift).")
@click.option("--author", help="Name recorded on every action (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--run", "run", type=click.Path(path_type=Path), help="A scored run: also list the pairs its models swap.")
@click.option("--template", default=None, help="Proposal prompt template (default: proposal.v1 in the KB's language).")
@click.option("--dry-run", is_flag=True, help="Print what proposing a fix for every finding would cost, and exit.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any other address than localhost requires the printed token.")
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Print the URL only.")
@click.option("--reviewers", help="A team session: who approves changes (dana,erin); each person named opens their "
              "own link (printed once, with their key), and a curator's actions wait for a reviewer's approval.")
@click.option("--curators", help="With --reviewers: who may propose changes (default: anyone named).")
@click.option("--new-key", "new_keys", metavar="NAMES", help="With --reviewers: give these people (bob,dana) a new "
              "personal link; their old one stops working.")
@call_options("proposal calls", max_tokens_default=OUTPUT_TOKENS)
@redact_option
def curate(kb_dir: Path, propose_with: str, author: str | None, run: Path | None, template: str | None,
           dry_run: bool, host: str, port: int, no_browser: bool, reviewers: str | None, curators: str | None,
           new_keys: str | None, **kwargs) -> None:
    """Work through lint's findings (confusable pairs, articles not self-contained...) in a local web app: edit,
    split, merge, mark distinct, undo, or accept a model's proposed fix. Every action is saved to
    KB/curation.jsonl at once, and 'grace kb build' re-applies it after a rebuild from the sources."""
    from rich.console import Console

    from harness.web import listen, serve
    from harness.workflows.curate_app import open_curating, propose_fixes
    from kb_builder.kb_dir import KbDir

    calls = model_calls(kwargs)
    if dry_run:
        from harness.runner.model_options import print_estimates

        rows = propose_fixes(kb_dir, propose_with, calls=calls, dry_run=True, template=template)
        print_estimates(Console(), rows)
        return
    with open_curating(kb_dir, propose_with=propose_with, calls=calls, author=author, run=run,
                       template=template, console=Console(stderr=True), reviewers=reviewers,
                       curators=curators, new_keys=new_keys) as opened:
        for note in opened.notes:
            click.echo(note)
        server, url, token = listen(opened.app, host, port)
        if opened.app.review is not None:
            from harness.web.credentials import personal_link

            for name in dict.fromkeys([*(opened.app.curators or []), *opened.app.reviewers]):
                key = opened.new_keys.get(name)
                click.echo(f"  {name}: " + (personal_link(url, name, key) if key else "the link printed when their "
                                            f"key was issued (lost? restart with --new-key {name})"))
            if opened.new_keys:
                click.echo("each link holds its person's secret key, shown only now: send each person their own")
        who = "its person's name (their link's)" if opened.app.review is not None else opened.app.author
        click.echo(f"saving every action to {KbDir(opened.curation.path).curation} as {who}")
        serve(server, url, host if token else None, no_browser, "edit this KB")
        app = opened.app
        click.echo(f"\nstopped; {len(app.findings)} finding(s) left of {app.started_with}, "
                   f"{len(opened.curation.active())} action(s) in force")
