"""``grace run``: ask every model every gold question, from the same retrieved articles."""

from __future__ import annotations

from pathlib import Path

import click

from harness.core.errors import GraceError


@click.command()
@click.option("--kb", "kb_dir", required=True, type=click.Path(path_type=Path), help="KB folder (articles.jsonl).")
@click.option("--gold", "gold_path", required=True, type=click.Path(path_type=Path), help="Gold CSV.")
@click.option("--model", "-m", "models", multiple=True, help="PROVIDER:MODEL, repeatable (openai:, anthropic:, google:, baseline:).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Leaderboard TOML listing models, parameters and prices.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Run folder; re-running the same command resumes it.")
@click.option("--k", "k", type=int, default=None, help="Articles retrieved per question [default: 3].")
@click.option("--repeats", type=int, default=None, help="Calls per question, to measure run-to-run variance [default: 1].")
@click.option("--concurrency", type=int, default=None, help="Parallel calls per model [default: 8].")
@click.option("--rpm", type=float, default=None, help="Requests per minute cap per model.")
@click.option("--tpm", type=float, default=None, help="Tokens per minute cap per model.")
@click.option("--timeout", type=float, default=None, help="Seconds per call before it counts as a timeout [default: 60].")
@click.option("--max-attempts", type=int, default=None, help="Attempts per call (retries on 429/5xx/timeouts) [default: 6].")
@click.option("--no-cache", is_flag=True, help="Do not read the response cache (answers are still recorded in it).")
@click.option("--template", default=None, help="Prompt template: built-in name or file path.")
@click.option("--output-mode", type=click.Choice(["inline", "json"]), default=None, help="Citation format asked for [default: inline].")
@click.option("--temperature", type=float, default=None, help="Generation temperature for models without one in the config.")
@click.option("--max-tokens", type=int, default=None, help="Max output tokens for models without one in the config.")
@click.option("--threshold", type=float, default=None, help="Retrieval-score threshold for baseline:threshold (else fitted on a calibration split).")
@click.option("--prices", type=click.Path(path_type=Path), default=None, help="JSON {model: [input, output]} USD per 1M tokens.")
@click.option("--embedder", default=None, help="Retriever override (default: the KB's).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for calibration splits and bootstrap.")
@click.option("--dry-run", is_flag=True, help="Make no calls: print calls, estimated tokens and cost per model.")
@click.option("--no-score", is_flag=True, help="Only collect responses; do not score or report.")
def run(kb_dir, gold_path, models, config_path, out, k, repeats, concurrency, rpm, tpm, timeout, max_attempts,
        no_cache, template, output_mode, temperature, max_tokens, threshold, prices, embedder, seed, dry_run, no_score) -> None:
    """Retrieve the top-k articles for every gold question and ask each model to answer with one citation."""
    from rich.console import Console
    from rich.table import Table

    from harness.prompts import load_template
    from harness.providers import parse_model_spec
    from harness.runner.config import load_config
    from harness.runner.pricing import load_prices
    from harness.runner.session import (
        RESPONSES, RunSettings, calibrate_threshold, check_same_run, compact_responses, estimate,
        finished_keys, new_run_info, plan_jobs, retrieve_all, write_run_info,
    )
    from kb_builder.gold import read_gold
    from kb_builder.store import load_kb

    console = Console(stderr=False)
    specs, run_cfg = load_config(config_path) if config_path else ([], {})
    specs += [parse_model_spec(m) for m in models]
    if not specs:
        raise GraceError("no models: give --model PROVIDER:MODEL (e.g. baseline:top1) or --config leaderboard.toml")
    names = [s.name for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise GraceError(f"model(s) named twice: {', '.join(sorted(dupes))}; give each a distinct name in the config")
    def pick(flag, key: str, default: int) -> int:
        return flag if flag is not None else run_cfg.get(key, default)  # 0 is a value, not "unset"

    settings = RunSettings(
        k=pick(k, "k", 3),
        repeats=pick(repeats, "repeats", 1),
        concurrency=pick(concurrency, "concurrency", 8),
        read_cache=not no_cache,
        max_attempts=pick(max_attempts, "max_attempts", 6),
        seed=seed,
    )
    if min(settings.k, settings.repeats, settings.concurrency, settings.max_attempts) < 1:
        raise GraceError("--k, --repeats, --concurrency and --max-attempts must be 1 or more")
    price_table = load_prices(prices)
    for s in specs:
        if temperature is not None:
            s.params.setdefault("temperature", temperature)
        if max_tokens is not None:
            s.params.setdefault("max_tokens", max_tokens)
        s.rpm, s.tpm = s.rpm or rpm, s.tpm or tpm
        if timeout:
            s.timeout_s = timeout
        if s.price_input_per_mtok is None and s.model in price_table:
            s.price_input_per_mtok, s.price_output_per_mtok = price_table[s.model]
        if s.provider == "baseline" and s.model == "threshold" and threshold is not None:
            s.options.setdefault("threshold", threshold)
    tmpl = load_template(template or run_cfg.get("template"), output_mode or run_cfg.get("output_mode", "inline"))
    kb = load_kb(kb_dir)
    questions = read_gold(gold_path)
    unknown = sorted({c for q in questions for c in q.expected_citations if c not in kb.by_id})
    if unknown:
        raise GraceError(f"{gold_path}: expected_citations name article(s) not in the KB: {', '.join(unknown[:10])}")
    retrieved = retrieve_all(kb, questions, settings.k, embedder)
    for s in specs:
        if s.provider == "baseline" and s.model == "threshold":
            calibrate_threshold(s, questions, retrieved, settings)
    out.mkdir(parents=True, exist_ok=True)
    info = new_run_info(kb, gold_path, questions, tmpl, specs, settings, embedder)
    check_same_run(out, info)
    done, failed_before = finished_keys(out / RESPONSES)
    plans = plan_jobs(specs, questions, retrieved, done, settings)

    if dry_run:
        from harness.runner.cache import ResponseCache

        cache = ResponseCache() if settings.use_cache else None
        rows = estimate(plans, tmpl, kb.kb_hash, cache, settings.read_cache)
        table = Table("model", "calls", "cached", "input tokens", "output tokens (est.)", "cost USD (est.)", title="Dry run: no calls made")
        for r in rows:
            cost = "unknown price" if r["cost_usd_est"] is None else f"{r['cost_usd_est']:.4f}"
            table.add_row(r["model"], str(r["calls"]), str(r["cached"]), f"{r['input_tokens']:,}", f"{r['output_tokens_est']:,}", cost)
        console.print(table)
        return

    write_run_info(out, info)
    todo = sum(len(p.jobs) for p in plans)
    if done or failed_before:
        console.print(f"resuming {out}: {len(done)} responses already done, {failed_before} failed call(s) to retry, {todo} to do")
    interrupted = False
    try:
        _run_with_progress(plans, tmpl, kb.kb_hash, out, settings, console)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        from datetime import datetime, timezone

        order = [s.name for s in specs]
        compact_responses(out / RESPONSES, order, [q.question_id for q in questions])
        info.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        info.status = "interrupted" if interrupted else "finished"
        info.counts = {p.spec.name: {"planned": p.stats.total, "done": p.stats.done, "cached": p.stats.cached,
                                     "errors": p.stats.errors, "aborted": p.stats.aborted} for p in plans}
        write_run_info(out, info)
    if interrupted:
        raise KeyboardInterrupt
    for p in plans:
        if p.stats.aborted:
            console.print(f"[red]{p.stats.aborted}[/]")
    errors = sum(p.stats.errors for p in plans)
    if errors:
        console.print(f"[yellow]{errors} call(s) failed after retries; they are recorded as error rows and "
                      "retried when you run the same command again[/]")
    console.print(f"responses -> {out / RESPONSES}")
    if not no_score:
        from harness.scoring import score_responses

        score_responses(out / RESPONSES, gold_path, kb, out, seed=seed)  # the KB loaded above, not read again
        from harness.reports import write_reports

        write_reports(out, kb=kb, console=console)


def _run_with_progress(plans, tmpl, kb_hash, out, settings, console) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.runner.session import run_engine

    width = max(len(p.spec.name) for p in plans) if plans else 10
    columns = [TextColumn(f"{{task.description:<{min(width, 30)}}}"), BarColumn(bar_width=16), MofNCompleteColumn(),
               TextColumn("{task.fields[info]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False, disable=not plans) as bar:
        tasks = {id(p): bar.add_task(p.spec.name[:30], total=len(p.jobs) or 1, completed=0 if p.jobs else 1, info="") for p in plans}

        def update(plan) -> None:
            st = plan.stats
            cost = f"${st.cost_usd:.4f}" + ("" if st.cost_known else "+?")
            info = f"err {st.errors}  cached {st.cached}  tok {st.input_tokens + st.output_tokens:,}  {cost}"
            bar.update(tasks[id(plan)], completed=st.done, info=info)

        run_engine(plans, tmpl, kb_hash, out, settings, on_update=update)
