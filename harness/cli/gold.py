"""``grace gold generate``: draft a gold set from the KB for a person to review (see :mod:`annotations.generate`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.call_options import call_options, model_calls, redact_option
from harness.core.errors import WorkFailed

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "gold": "Draft a gold set from the KB: generated questions to review.",
}


_path = click.Path(path_type=Path)


@click.group("gold")
def gold() -> None:
    """Draft gold questions from the KB; a person accepts them in `grace annotate`."""


@gold.command("generate")
@click.argument("kb_dir", type=_path)
@click.option("--model", "-m", required=True, help="PROVIDER:MODEL that writes the questions (openai:..., anthropic:..., google:...).")
@click.option("--per-article", default=3, show_default=True, type=click.IntRange(1, 20), help="Questions asked for per article.")
@click.option("--out", "-o", required=True, type=_path, help="Draft CSV to write (status=draft; not gold until accepted).")
@click.option("--refusals", default=0, show_default=True, type=click.IntRange(0, 200),
              help="must_refuse questions to ask for: workplace topics no article covers.")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, 50),
              help="Retrieved articles the labeler checks each question against.")
@click.option("--labeler", help="PROVIDER:MODEL that checks each question against its neighbours [default: --model]; "
              "baseline:top1 checks offline against the top retrieved article only.")
@click.option("--template", default=None, help="Generator template: built-in name or file path [default: generator.v1 "
              "in the KB's language when grace has it (generator.v1.fr); the labeler's follows the KB's language].")
@click.option("--dry-run", is_flag=True, help="Estimate calls, tokens and cost; call nothing (and need no API key).")
@click.option("--force", is_flag=True, help="Replace an --out file that is not an untouched draft (kept as NAME.bak).")
@call_options("calls")
@redact_option
@click.option("--seed", type=int, default=0, show_default=True,
              help="Another seed asks the generator again (new cache entries) and samples other titles for a big KB.")
def generate(kb_dir, model, per_article, out, refusals, k, labeler, template, dry_run, force, seed, **call) -> None:
    """Write N questions per article (and M refusals) with an LLM, check them, and save a draft to review.

    Questions that copy their article's wording are rejected; each other one is
    checked by the labeler against its top-k retrieved articles: kept citing its
    source (plus any article that answers it equally), or dropped as ambiguous.
    The model options (--max-tokens, --json-mode, --timeout, --base-url,
    --api-key-env) apply to --model and --labeler alike.
    Then review the draft (nothing in it is gold until accepted):

    \b
      grace annotations validate DRAFT.csv --kb KB
      grace annotate KB --from-gold DRAFT.csv
    """
    from rich.console import Console

    from harness.workflows.gold import generate_gold

    console = Console(stderr=True)
    draft = generate_gold(kb_dir, model, out, per_article=per_article, refusals=refusals, k=k, labeler=labeler,
                          template=template, seed=seed, dry_run=dry_run, force=force, calls=model_calls(call),
                          console=console)
    result = draft.result
    if result is None:
        return
    if draft.redaction is not None:
        from harness.privacy.redactor import summary_line

        click.echo(f"--redact-pii: {summary_line(draft.redaction)}; counts -> {draft.redaction_file}", err=True)
    kept = len(result.records)
    click.echo(f"{kept} draft question(s) -> {out}" + ("" if kept else " (nothing kept: see the counts above)"))
    click.echo(f"next: grace annotations validate {out} --kb {kb_dir}; grace annotate {kb_dir} --from-gold {out}")
    why = result.failure()
    if why:
        raise WorkFailed(f"{why}; run the same command again to retry the failed calls")
    failed = sum(st.errors for st in result.stats.values())
    if failed:  # last: a partial failure exits 0, and this count is what a CI log should end on
        click.echo(f"{failed} call(s) failed; run the same command again to retry them", err=True)
