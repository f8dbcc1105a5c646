"""``grace run``: ask every model every gold question, from the same retrieved articles."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from harness.exports import TARGETS

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "run": "Ask models to answer gold questions from retrieved articles.",
}


@click.command()
@click.option("--kb", required=True, type=click.Path(path_type=Path), help="KB folder (articles.jsonl).")
@click.option("--gold", required=True, type=click.Path(path_type=Path), help="Gold CSV; or a CSV of questions "
              "alone (question_id, question): asked and reported without accuracy, with what the models agree on.")
@click.option("--machine-gold", "machine_gold", type=click.Path(path_type=Path), default=None, help="Machine labels "
              "for every question (a suggestions CSV from 'grace annotations suggest', or a gold-format CSV of model "
              "or LLM labels): every question of it is asked, --gold is the human-labelled random subset ('grace "
              "annotations sample'), and the report adds prediction-powered (PPI++) accuracy, refusal calibration "
              "and model differences over every question.")
@click.option("--model", "-m", "models", multiple=True, help="PROVIDER:MODEL, repeatable (openai:, anthropic:, google:, azure:, vertex:, bedrock:, a preset such as ollama: or openrouter:, litellm:, baseline:, or a plugin's: see grace providers).")
@click.option("--config", type=click.Path(path_type=Path), help="Leaderboard TOML listing models, parameters and prices; its [run] table sets defaults for these options.")
@click.option("--citations", "citations", multiple=True, metavar="MODEL=SCORING[:READS]", help="How a model's citations are read and scored (repeatable): SCORING single or multi (several per answer: citation precision, recall, F1), READS ids or references (its own paths, URLs, titles, quotes mapped onto articles). Default: python: and http: systems multi:references, prompt models GRACE's reading. A map file and rewrite rules: the config's [models.citations].")
@click.option("--search", "search", multiple=True, metavar="MODEL[=MAX_TOOL_CALLS]", help="The model searches the KB itself (repeatable): it gets the tools search_kb(query, k) and open_article(id) over the KB's retriever instead of the top k in its prompt, and the runner runs its loop up to MAX_TOOL_CALLS calls per question [default: --max-tool-calls]. The config's [models.search] sets the same per model.")
@click.option("--max-tool-calls", "max_tool_calls", type=int, default=None, help="Tool calls per question of every model that searches, unless its own settings say; then it is asked to answer without tools [default: 6].")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path), help="Run folder; re-running the same command resumes it.")
@click.option("-k", "--k", "k", type=int, default=None, help="Articles retrieved per question [default: 3; at most the KB's size].")
@click.option("--repeats", type=int, default=None, help="Calls per question, to measure run-to-run variance [default: 1].")
@click.option("--concurrency", type=int, default=None, help="Parallel calls per model [default: 8].")
@click.option("--rpm", type=float, default=None, help="Requests per minute cap per model.")
@click.option("--tpm", type=float, default=None, help="Tokens per minute cap per model.")
@click.option("--timeout", type=float, default=None, help="Seconds per call before it counts as a timeout [default: 60, or 300 for a server on this machine or network].")
@click.option("--max-attempts", type=int, default=None, help="Attempts per call (retries on 429/5xx/timeouts) [default: 6].")
@click.option("--no-cache", is_flag=True, help="Do not read the response cache (answers are still recorded in it).")
@click.option("--template", default=None, help="Prompt template: built-in name or file path.")
@click.option("--output-mode", type=click.Choice(["inline", "json"]), default=None, help="Citation format asked for [default: inline].")
@click.option("--temperature", type=float, default=None, help="Generation temperature for models without one in the config.")
@click.option("--max-tokens", type=int, default=None, help="Max output tokens for models without one in the config [default: 1024]; answers cut off by it are counted in the report.")
@click.option("--threshold", type=float, default=None, help="Retrieval-score threshold for baseline:threshold (else cross-fitted over 5 folds of the gold questions).")
@click.option("--prices", type=click.Path(path_type=Path), default=None, help="JSON {model: [input, output]} USD per 1M tokens.")
@click.option("--price-server-hour", "price_server_hour", multiple=True, metavar="[MODEL=]USD", help="What one server of a self-hosted model costs an hour (repeatable): USD for every model on this machine or network without its own price, MODEL=USD for one (over its config's price_server_hour). The report then prices its questions by its servers' time.")
@click.option("--embedder", default=None, help="Retriever override (default: the KB's).")
@click.option("--rerank", default=None, help="Reorder each question's top candidates before the top-k are shown: PROVIDER:MODEL (an LLM; cached and priced like any call) or cross-encoder[:MODEL] (local, optional extra).")
@click.option("--rerank-depth", type=int, default=None, help="Candidates the reranker reads per question [default: 20].")
@click.option("--retrieved", type=click.Path(path_type=Path), default=None, help="JSONL of ranked article IDs per question (grace kb search --out, or your own retriever's): use its top-k instead of grace's retrieval.")
@click.option("--retrieved-map", "retrieved_map", type=click.Path(path_type=Path), default=None, help="CSV of their_id,article_id rows: the --retrieved file ranks your retriever's own documents (chunk IDs, paths, URLs), each mapped onto a KB article (through this file, then by the KB's paths and titles); an ID that maps to none is left out, counted and named.")
@click.option("--seed", type=int, default=None, help="Seed for the calibration folds and the bootstrap [default: 0].")
@click.option("--sample", type=int, default=None, metavar="N", help="Ask only N of the gold questions, a draw seeded by "
              "--seed (within each gold category in proportion, one at least, when the gold file has categories): a "
              "quick try before the full run. The gold set stays the file's, so grace compare and trends put the run "
              "beside the full runs; run.json records the draw and the report says \"30 of 90 questions\".")
@click.option("--batch", is_flag=True, help="Send the calls through each provider's batch API at half price (openai, azure, anthropic, google; other models run in real time). Run the same command again to collect.")
@click.option("--wait", is_flag=True, help="With --batch: poll until every batch has ended, instead of exiting after submitting.")
@click.option("--poll-interval", type=float, default=None, help="Seconds between batch status checks [default: 30].")
@click.option("--cancel-batches", is_flag=True, help="With --batch: cancel the folder's open batches and submit nothing new; what they answered is still collected.")
@click.option("--dry-run", is_flag=True, help="Make no calls (and need no API key): print calls, estimated tokens and cost per model (with --batch: the saving).")
@click.option("--no-score", is_flag=True, help="Only collect responses; do not score or report.")
@click.option("--redact-pii", is_flag=True, help="Replace emails, phones, IBANs, cards, national IDs, IP addresses and "
              "(with grace-eval[pii]) person names in every prompt with placeholders before it is sent or cached; "
              "run.json counts them per type.")
@click.option("--log-to", "log_to", multiple=True, type=click.Choice(list(TARGETS)),
              help="Once the run is scored, export it here too (repeatable): mlflow, wandb, inspect or parquet, as "
              "'grace export' does; where to from the config's [export.TARGET] table or the target's own variables "
              "(MLFLOW_TRACKING_URI, WANDB_PROJECT, WANDB_MODE). A failed export never fails the run: it is reported "
              "and retried with 'grace export RUN --retry'.")
def run(**options) -> int:
    """Retrieve the top-k articles for every gold question and ask each model to answer with one citation.

    Each option is a keyword of the Python API's grace.run() under the same name.
    Exits 1 when a model was stopped early (key refused, endpoint unreachable)
    or has no usable answer at all (every call failed); its calls are on file as
    error rows and are asked again next time. Some failed calls: exit 0, counted last.
    """
    from rich.console import Console
    from rich.text import Text

    from harness.run_folder.run_dir import RunDir
    from harness.workflows import run as workflow

    console = Console(stderr=False)
    with _kill_as_ctrl_c():
        result = workflow.run(**options, progress=True, console=console)
    if options["dry_run"]:
        console.print(dry_run_table(result.estimates or []))
        return 0
    out = options["out"]
    console.print(f"responses -> {RunDir(out).responses}" if options["no_score"] else f"run folder -> {out}",
                  highlight=False)
    info = RunDir(out).read_run_info()
    if info is not None and info.redaction is not None:
        from harness.privacy.redactor import summary_line

        # plain text: the note names the extra, grace-eval[pii], which Rich markup would read as a tag
        console.print(Text(f"--redact-pii: {summary_line(info.redaction)}; counts in run.json"),
                      highlight=False)
    for reason in result.stopped.values():
        console.print(Text(reason, style="red"))
    for model, why in result.unanswered.items():  # Text: a model name is never read as markup or an :emoji:
        console.print(Text(f"{model}: no usable answer ({why})", style="red"))
    for attempt in result.exports:  # a failed export is said, with the command that retries it; the exit stays
        if attempt.ok:
            console.print(Text(f"exported to {attempt.target}: {attempt.exported.location}"), highlight=False)
        else:
            console.print(Text(f"export to {attempt.target} failed: {attempt.error}\nthe run and its results are "
                               f"kept; export it again with: {attempt.retry} (or: grace export {out} --retry)",
                               style="red"), highlight=False)
    if result.suggestions is not None:
        console.print(Text(labelling_summary(result.suggestions, options), style="yellow"), highlight=False,
                      soft_wrap=True)
    if result.errors:  # last: a partial failure still exits 0, and this count is what a CI log should end on
        console.print(f"[yellow]{result.errors} call(s) failed; they are recorded as error rows and "
                      "retried when you run the same command again[/]", highlight=False)
    return 0 if result.ok else 1


def labelling_summary(suggestions: list, options: dict) -> str:
    """What a run of unlabelled questions tells a labeller: how often the models agree, and the next command."""
    n = len(suggestions)
    agreed = sum(s.usable for s in suggestions)
    weak = sum(s.usable and s.flag == "weak" for s in suggestions)
    split = sum(s.flag == "split" for s in suggestions)
    few = n - agreed - split
    from collections import Counter

    cited = Counter(a for s in suggestions if s.usable and not s.must_refuse for a in s.citations)
    refusals = sum(s.usable and s.must_refuse for s in suggestions)
    top = ", ".join(f"{a} x{k}" for a, k in cited.most_common(3))
    spread = (f"; agreed labels: {refusals} refusal(s), {sum(cited.values())} citation(s) of {len(cited)} article(s)"
              + (f" (most: {top})" if top else "")) if agreed else ""
    return (f"no labels, so no accuracy: the models agree on a label for {agreed} of {n} question(s)"
            f"{f' ({weak} weakly)' if weak else ''}, split on {split}, too few votes on {few}{spread}. Pre-label "
            f"from them: grace annotations suggest {options['gold']} --kb {options['kb']} --run {options['out']} "
            "--out suggestions.csv")


@contextmanager
def _kill_as_ctrl_c() -> Iterator[None]:
    """``kill`` (SIGTERM) stops the run as Ctrl-C does, so run.json records how the command ended (its calls, its
    replicas); the handler before is put back after (a program that called this from its main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def dry_run_table(estimates: list[dict]):
    """Calls, tokens and cost per model; with batch models, what the same calls would cost in real time."""
    from rich.table import Table

    def usd(value: float | None) -> str:
        return "unknown price" if value is None else f"{value:.4f}"

    batched = any(r.get("batch") for r in estimates)
    columns = ["model", "calls", "cached", "input tokens", "output tokens (est.)", "cost USD (est.)"]
    if batched:
        columns += ["real-time USD (est.)", "saved"]
    table = Table(*columns, title="Dry run: no calls made")
    for r in estimates:
        cached = str(r["cached"]) + (f" (+{r['in_batches']} in open batches)" if r.get("in_batches") else "")
        cells = [r["model"] + (" (batch)" if r.get("batch") else ""), str(r["calls"]), cached,
                 f"{r['input_tokens']:,}", f"{r['output_tokens_est']:,}", usd(r["cost_usd_est"])]
        if batched:
            real, cost = r.get("real_time_cost_usd_est"), r["cost_usd_est"]
            saved = "" if not r.get("batch") or real is None or cost is None else (
                f"{real - cost:.4f} ({(real - cost) / real:.0%})" if real else "0")
            cells += [usd(real), saved]
        table.add_row(*cells)
    return table
