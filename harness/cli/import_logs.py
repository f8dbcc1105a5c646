"""``grace import-logs LOGS.jsonl --kb KB [--gold GOLD.csv] --out RUN``: production answers into a scored run."""

from __future__ import annotations

from pathlib import Path

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "import-logs": "Import a production audit log as a run: score, report, view and compare it.",
}

SHOWN_PROBLEMS = 20  # malformed lines and unmatched records printed; the files list them all


@click.command("import-logs")
@click.argument("logs", type=click.Path(path_type=Path))
@click.option("--kb", "kb_dir", required=True, type=click.Path(path_type=Path),
              help="KB folder the deployed system answered from.")
@click.option("--out", "-o", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Run folder to write (responses.jsonl, run.json, scores, reports).")
@click.option("--gold", "gold_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Gold CSV: match the logs' questions by ID or text and score them. Without it, only the figures "
                   "that need no label (invalid and unshown citations, refusal rate, latency, tokens, cost).")
@click.option("--map", "fields", multiple=True, metavar="FIELD=PATH",
              help="Where a field is in your log lines, as JMESPath (repeatable): --map question=query "
                   "--map answer=response.text --map citations='sources[*].id'.")
@click.option("--mapping", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A TOML file of FIELD = \"PATH\" lines (the same as --map, which wins over it).")
@click.option("--citations", type=click.Choice(["single", "multi"]), default="multi", show_default=True,
              help="How citations are scored: multi (several per answer: citation precision, recall, F1, and "
                   "whether it cites a right article) or single (one per answer, as a GRACE prompt).")
@click.option("--reads", type=click.Choice(["ids", "references"]), default="references", show_default=True,
              help="How citations are read: references (markers, source lists, and each reference, a path, URL, "
                   "title, quote or your own ID, mapped onto KB articles) or ids (as KB article IDs).")
@click.option("--citation-map", "citation_map", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A CSV of their_id,article_id rows: your system's own document or chunk IDs -> KB articles.")
@click.option("--rewrite", "rewrite", multiple=True, metavar="PREFIX=REPLACEMENT",
              help="Read a reference starting with PREFIX with REPLACEMENT instead, before mapping it (repeatable): "
                   "--rewrite https://hr.example.com/docs/=payroll/.")
@click.option("--default-model", default="production", show_default=True,
              help="The model of a record that names none.")
@click.option("--max-line-mb", default=4.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="A log line longer than this (MB) is set aside unread, in RUN/malformed.jsonl.")
@click.option("--force", is_flag=True, help="Replace a run already in --out (its responses kept as .bak).")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option("--bootstrap", "n_bootstrap", default=2000, show_default=True,
              help="Bootstrap resamples for the 95% intervals of means (a share such as accuracy gets Wilson's interval); 0: no intervals.")
def import_logs(logs: Path, kb_dir: Path, out_dir: Path, gold_path: Path | None, fields: tuple[str, ...],
                mapping: Path | None, citations: str, reads: str, citation_map: Path | None,
                rewrite: tuple[str, ...], default_model: str, max_line_mb: float, force: bool, seed: int,
                n_bootstrap: int) -> None:
    """Import a production audit log (JSON Lines) as a run folder, then score and report it.

    \b
    Each line is one answer: question, question_id, model, answer, error,
    citations, retrieved_ids, user, user_groups, prompt_hash, latency_ms,
    input_tokens, output_tokens, cost_usd, timestamp (only question and an
    answer, or an error, are required). Each distinct model becomes a model of
    the run; the same question answered again by the same model, a repeat.

    With --gold, records are matched to gold questions by ID, else by text
    (case, spacing, punctuation and Unicode forms aside); the ones that match
    none are listed in RUN/unmatched.jsonl. Lines that are not JSON, have no
    question, hold a wrong type or a number out of range, nest deeper than
    100 levels or are longer than --max-line-mb are listed with their line
    numbers in RUN/malformed.jsonl; the rest is imported. The log is read a
    line at a time: its size is not limited by memory.
    """
    from rich.console import Console
    from rich.text import Text

    from harness.workflows.import_logs import import_logs as workflow

    console = Console()
    soft = not console.is_terminal
    result = workflow(logs, kb_dir, out_dir, gold=gold_path, fields=fields, mapping=mapping,
                      default_model=default_model, max_line_bytes=max(1, int(max_line_mb * (1 << 20))), force=force,
                      seed=seed, bootstrap=n_bootstrap, console=console, citations=citations, reads=reads,
                      citation_map=citation_map, rewrite=rewrite)
    models = ", ".join(f"{m} ({n:,})" for m, n in result.models.items())
    console.print(Text(f"imported {result.imported:,} of {result.records:,} records from {logs} -> {out_dir}: "
                       f"{result.questions:,} questions, models {models}"), soft_wrap=soft)
    if result.labelled:
        console.print(Text(f"matched to the gold questions: {result.matched_by_id:,} by ID, "
                           f"{result.matched_by_text:,} by text"), soft_wrap=soft)
    folder = result.run.path
    if result.n_malformed:
        console.print(Text(f"{result.n_malformed:,} malformed line(s), not imported (all in "
                           f"{folder / 'malformed.jsonl'}):", style="yellow"), soft_wrap=soft)
        for p in result.malformed[:SHOWN_PROBLEMS]:
            console.print(Text(f"  {logs}:{p.line}: {p.problem}"), soft_wrap=soft)
        _more(console, result.n_malformed, soft)
    if result.n_unmatched:
        console.print(Text(f"{result.n_unmatched:,} record(s) match no gold question, not scored (all in "
                           f"{folder / 'unmatched.jsonl'}):", style="yellow"), soft_wrap=soft)
        for u in result.unmatched[:SHOWN_PROBLEMS]:
            console.print(Text(f"  {logs}:{u.line}: {u.question[:80]!r}: {u.reason}"), soft_wrap=soft)
        _more(console, result.n_unmatched, soft)
    report = result.run.report
    for warning in report.warnings if report is not None else []:
        console.print(Text("warning: ", style="yellow") + Text(warning), soft_wrap=soft)


def _more(console, n: int, soft: bool) -> None:
    from rich.text import Text

    if n > SHOWN_PROBLEMS:
        console.print(Text(f"  ... and {n - SHOWN_PROBLEMS:,} more"), soft_wrap=soft)
