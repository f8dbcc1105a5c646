"""``grace kb``: build, index, show, search, evaluate and lint a knowledge base."""

from __future__ import annotations

import json
import logging
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import click

from harness.cli.call_options import call_options, model_calls, redact_option
from harness.cli.kb_curate import curate
from harness.cli.kb_edit import edit
from harness.core.errors import GraceError
from harness.core.outputs import check_output_file
from kb_builder.references import WARNINGS
from kb_builder.splitting import DEFAULT_MAX_TOKENS, DEFAULT_MIN_TOKENS

SHOWN_ARTICLES = 10  # of a reference that maps to several articles, listed by title

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "kb": "Build, index, search and evaluate a knowledge base.",
}


log = logging.getLogger("grace")


def _console():
    from rich.console import Console

    return Console()


def _parse_ks(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise GraceError(f"-k {text!r}: give whole numbers separated by commas, e.g. 1,3,5") from None
    if not ks or min(ks) < 1:
        raise GraceError(f"-k {text!r}: every k must be 1 or more")
    return ks


def _languages(manifest) -> str:
    """``fr`` or ``en 120, fr 14 (mixed: each article read in its own)``, with what grace does with the language."""
    from kb_builder.language import DEFAULT_LANGUAGE, describe

    main = manifest.language or DEFAULT_LANGUAGE
    if len(manifest.languages) > 1:
        counts = ", ".join(f"{k} {v}" for k, v in manifest.languages.items())
        return f"{counts} (mixed: each article is read in its own language)"
    return f"{main} ({describe(main)})"


@click.group()
def kb() -> None:
    """Build, index, show, search and evaluate a knowledge base."""


@kb.command()
@click.argument("source", required=False, type=click.Path(path_type=Path))
@click.option("--out", "-o", "out", required=True, type=click.Path(path_type=Path), help="KB folder to write (rebuilding into it keeps IDs).")
@click.option("--articles", "articles_file", type=click.Path(path_type=Path), help="Pre-split articles (.jsonl, .csv or .json) instead of documents.")
@click.option("--max-tokens", default=DEFAULT_MAX_TOKENS, show_default=True, help="Token budget per article (tiktoken cl100k).")
@click.option("--min-tokens", default=DEFAULT_MIN_TOKENS, show_default=True, help="Sections below this merge with their parent.")
@click.option("--embedder", default=None, help="bm25f (default for a new KB; bm25f+char4 for French and German; a rebuild keeps the KB's own) | bm25 | char4 | use | openai[:MODEL@DIMS] | st[:MODEL] | hybrid[:DENSE] | A+B[+C] to fuse several, e.g. bm25f+char4+use.")
@click.option("--language", default="auto", show_default=True, help="The articles' language (ISO 639-1: fr, de, el, zh...), or auto to detect it per article.")
@click.option("--no-lint", is_flag=True, help="Skip the lint the build ends with (run `grace kb lint KB` later).")
@click.option("--json", "as_json", is_flag=True, help="Print what was built as JSON on stdout (articles, ID changes, "
              "curation re-applied and in conflict); the rest goes to stderr.")
@click.option("--splitter", default=None, metavar="headings|semantic|llm:PROVIDER:MODEL",
              help="Where articles are cut: headings (a new KB's default; a rebuild keeps the KB's own) at the "
              "documents' headings; semantic (offline) also at topic changes in text without headings; "
              "llm:PROVIDER:MODEL a model finds them and titles the parts (cached and priced; --dry-run estimates).")
@click.option("--dry-run", is_flag=True, help="With --splitter llm:..., print the model's calls, tokens and cost; "
              "build nothing.")
@call_options("topic-splitter calls", skip=("--max-tokens",))
@redact_option
def build(source: Path | None, out: Path, articles_file: Path | None, max_tokens: int, min_tokens: int, embedder: str | None,
          language: str, no_lint: bool, as_json: bool, splitter: str | None, dry_run: bool, **call) -> None:
    """Turn a folder or file of documents (Markdown, HTML, text, PDF, DOCX) into a KB of articles."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.workflows import kb as workflow
    from kb_builder.build import chosen_splitter
    from kb_builder.documents import discover

    if source is None and articles_file is None:
        raise GraceError("give a SOURCE folder or file, or --articles FILE")
    console = _console()
    if as_json:
        from rich.console import Console

        console = Console(stderr=True)
    calls = model_calls({**call, "max_tokens": None})  # --max-tokens is the articles' budget here, not the model's
    if dry_run:
        from harness.runner.model_options import print_estimates

        print_estimates(console, [workflow.build_kb(source, out, articles_file=articles_file, max_tokens=max_tokens,
                                                    min_tokens=min_tokens, splitter=splitter, calls=calls,
                                                    dry_run=True)])
        return
    total = len(discover(source)) if source is not None and articles_file is None else 1
    # a model's calls show their own bar (one live display at a time); documents are then split in a second
    asks = chosen_splitter(out, splitter).startswith("llm:") and articles_file is None
    with (nullcontext() if asks else Progress(TextColumn("building KB"), BarColumn(), MofNCompleteColumn(),
                                              TimeElapsedColumn(), console=console, transient=True)) as bar:
        task = bar.add_task("docs", total=total) if bar else None
        result = workflow.build_kb(source, out, articles_file=articles_file, max_tokens=max_tokens, min_tokens=min_tokens,
                              embedder=embedder, language=language,
                              progress=(lambda: bar.advance(task)) if bar else None,
                              splitter=splitter, calls=calls, console=console)
    m = result.kb.manifest
    ts = m.token_stats
    console.print(
        f"[bold]{m.article_count}[/] articles from {result.documents} document(s) in {result.seconds:.2f}s -> {out}\n"
        f"language: {_languages(m)}; retriever: {m.embedder}\n"
        f"tokens per article: min {ts.get('min')}, median {ts.get('median')}, p95 {ts.get('p95')}, max {ts.get('max')}"
        + (f"  (budget {max_tokens})\n" if articles_file is None else "  (pre-split: no budget applied)\n")
        +
        f"changes: {len(result.changes.added)} added, {len(result.changes.changed)} changed, "
        f"{len(result.changes.removed)} removed, {result.changes.unchanged} unchanged"
    )
    if result.changes.removed:
        console.print(f"removed IDs (retired, never reused): {', '.join(result.changes.removed[:30])}")
    for s in result.skipped:
        console.print(f"[yellow]skipped:[/] {s}")
    _print_splitter(console, result)
    if result.curation is not None:
        _print_curation(console, result.curation, out)
    if as_json:
        click.echo(json.dumps(_build_json(result, out), ensure_ascii=False, indent=2))
    if no_lint:
        console.print(f"lint: skipped (--no-lint); run `grace kb lint {out}` to check the KB", highlight=False)
        return
    with console.status(f"linting {m.article_count:,} articles"):
        report = workflow.lint_kb(result.kb)
    console.print(report.summary() + ("" if not report.findings else f"; run `grace kb lint {out}` for details"),
                  highlight=False)
    for notice in report.notices:
        console.print(f"[yellow]note:[/] {notice}", highlight=False)


def _print_splitter(console, result) -> None:
    """The splitter used, when not headings; for llm:, its calls and the texts split by semantic instead."""
    if result.splitter == "headings":
        return
    line = f"splitter: {result.splitter}"
    c = result.model_calls
    if c is not None:
        cost = "unknown price (--prices FILE)" if c.get("cost_usd") is None else f"${c['cost_usd']:.4f}"
        line += f"; {c.get('calls', 0)} call(s), {c.get('cached', 0)} cached, {c.get('errors', 0)} failed, {cost}"
    console.print(line, highlight=False)
    if result.fallbacks:
        console.print(f"[yellow]{len(result.fallbacks)} text(s) split by semantic instead[/]: the model's answer "
                      "could not be read (or its call failed; run again to retry):", highlight=False)
        for f in result.fallbacks[:20]:
            console.print(f"  {f}", markup=False, highlight=False)
        if len(result.fallbacks) > 20:
            console.print(f"  ... and {len(result.fallbacks) - 20} more", highlight=False)


kb.add_command(edit)  # grace kb edit: curation from the command line (harness.cli.kb_edit)
kb.add_command(curate)  # grace kb curate: the curation web app (harness.cli.kb_curate)


@kb.command()
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.option("--run", "run_dir", type=click.Path(path_type=Path), help="A scored run folder: also list the article pairs its models swap.")
@click.option("--json", "as_json", is_flag=True, help='Print {"findings": [{"kind", "severity", "articles", "message"}]} for CI.')
@click.option("--strict", is_flag=True, help="Exit 1 when there is any error or warning (info findings do not count).")
@click.option("--limit", default=20, show_default=True, help="Findings shown per kind (all with --json).")
@click.option("--show-distinct", is_flag=True, help="Also list the pairs marked distinct (grace kb edit --distinct), "
              "which lint leaves out, with who marked them and why.")
def lint(kb_dir: Path, run_dir: Path | None, as_json: bool, strict: bool, limit: int, show_distinct: bool) -> None:
    """Find confusable and non-self-contained articles and other KB faults, worst first.

    Exit codes: 0 when linted (findings or not), 1 with --strict and an error or
    warning, 2 on bad input (no KB, a run folder without scores).
    """
    from rich.table import Table

    from harness.workflows import kb as workflow
    from kb_builder.lint import KIND_ORDER

    report = workflow.lint_kb(kb_dir, run_dir)
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        console = _console()
        console.print(f"{report.articles} articles in {kb_dir}: {report.summary()}", highlight=False)
        for notice in report.notices:
            console.print(f"[yellow]note:[/] {notice}", highlight=False)
        for kind in KIND_ORDER:
            found = [f for f in report.findings if f.kind == kind]
            if not found:
                continue
            table = Table("severity", "articles", "what and what to do", title=f"{kind} ({len(found)})",
                          title_justify="left", show_lines=False)
            for f in found[:limit]:
                table.add_row(f.severity, ", ".join(f.articles), f.message)
            console.print(table)
            if len(found) > limit:
                console.print(f"... and {len(found) - limit} more (--limit, or --json for all)", highlight=False)
        if report.distinct and not show_distinct:
            console.print(f"{len(report.distinct)} pair(s) marked distinct left out (--show-distinct lists them)",
                          highlight=False)
        elif report.distinct:
            table = Table("articles", "marked by", "why", title=f"marked distinct ({len(report.distinct)})",
                          title_justify="left")
            for d in report.distinct:
                table.add_row(", ".join(d["articles"]), f"{d['author']} ({d['time'][:10]})", d["reason"] or "")
            console.print(table)
    if strict and any(f.severity != "info" for f in report.findings):
        raise SystemExit(1)


@kb.command()
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.option("--embedder", default=None, help="Re-index with this embedder (default: the manifest's).")
def index(kb_dir: Path, embedder: str | None) -> None:
    """Create a missing manifest and embeddings for a KB folder (e.g. a hand-written articles.jsonl)."""
    from harness.workflows import kb as workflow

    kb_, embedded = workflow.index_kb(kb_dir, embedder)
    extra = f", {embedded} article(s) embedded" if embedded is not None else ""
    _console().print(f"{len(kb_.articles)} articles indexed with {kb_.manifest.embedder}{extra}; kb_hash {kb_.kb_hash}")


@kb.command()
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.argument("article_id", required=False)
def show(kb_dir: Path, article_id: str | None) -> None:
    """List articles with token counts, or show one article."""
    from rich.table import Table

    from harness.workflows import kb as workflow

    kb_ = workflow.load_kb(kb_dir)
    console = _console()
    if article_id:
        art = kb_.by_id.get(article_id)
        if art is None:
            raise GraceError(f"no article {article_id!r} in {kb_dir} ({len(kb_.articles)} articles; 'grace kb show {kb_dir}' lists them)")
        console.print(f"[bold][ID: {art.id}] {art.title}[/]  ({art.tokens} tokens, source {art.source or '-'})\n")
        console.print(art.text, markup=False, highlight=False)
        return
    table = Table("ID", "Title", "Tokens", "Source")
    for a in kb_.articles:
        table.add_row(a.id, a.title, str(a.tokens), a.source or "")
    console.print(table)
    console.print(f"{len(kb_.articles)} articles, kb_hash {kb_.kb_hash}, embedder {kb_.manifest.embedder}, language "
                  f"{_languages(kb_.manifest)}", highlight=False)


@kb.command()
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.argument("query", required=False)
@click.option("-k", "k", default=3, show_default=True, type=click.IntRange(1, None), help="Articles ranked per query.")
@click.option("--queries", type=click.Path(path_type=Path), help="CSV with question_id, question (other columns ignored).")
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write JSONL: one line per question with ranked ids and scores.")
@click.option("--embedder", default=None, help="Override the KB's embedder.")
@click.option("--force", is_flag=True, help="Replace an existing --out file (the old one is kept as NAME.bak).")
def search(kb_dir: Path, query: str | None, k: int, queries: Path | None, out: Path | None, embedder: str | None,
           force: bool) -> None:
    """Rank articles for one QUERY, or for every question in --queries."""
    from rich.table import Table

    from harness.workflows import kb as workflow
    from kb_builder.gold import read_questions
    from kb_builder.store import kb_files

    if not query and not queries:
        raise GraceError("give a QUERY or --queries FILE")
    if out is not None:
        check_output_file(out, {"questions file": queries, "KB": kb_files(kb_dir)}, force=force)
    kb_ = workflow.load_kb(kb_dir)
    if k > len(kb_.articles):
        n = len(kb_.articles)
        log.warning(f"k {k} is more than the KB's {n} articles; {'showing' if query else 'searching'} all {n}")
        k = n
    console = _console()
    if query:
        hits = workflow.search(kb_, query, k, embedder)
        table = Table("Rank", "ID", "Score", "Title")
        for i, h in enumerate(hits, 1):
            table.add_row(str(i), h.id, f"{h.score:.3f}", kb_.by_id[h.id].title)
        console.print(table)
        return
    qs = read_questions(queries)
    results = workflow.search(kb_, [q.question for q in qs], k, embedder)
    rows = [(q.question_id, [(h.id, h.score) for h in hits]) for q, hits in zip(qs, results, strict=True)]
    if out:
        from kb_builder.retrieval.files import write_retrieved

        n = write_retrieved(out, rows)
        console.print(f"{n} questions searched (k={k}) -> {out} (grace run --retrieved reads it)")
    else:
        for qid, hits in rows:
            click.echo(json.dumps({"question_id": qid, "retrieved": [{"id": i, "score": round(s, 6)} for i, s in hits]},
                                  ensure_ascii=False))


@kb.command()
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.argument("references", nargs=-1, required=True)
@click.option("--map", "mapping", type=click.Path(path_type=Path), help="CSV of their_id,article_id rows: the "
              "system's own IDs (chunk IDs, URLs...) and the KB article(s) each names (several: 12;13).")
@click.option("--rewrite", "rewrites", multiple=True, metavar="PREFIX=REPLACEMENT", help="Read a reference starting "
              "with PREFIX with it replaced (e.g. https://wiki.example.com/=docs/); repeat for several.")
@click.option("--ids", "bare_ids", is_flag=True, help="The system cites by KB ID: a bare number is that article "
              "(without it, `1` is never read as article 1).")
@click.option("--json", "as_json", is_flag=True, help="One JSON line per reference.")
def resolve(kb_dir: Path, references: tuple[str, ...], mapping: Path | None, rewrites: tuple[str, ...],
            bare_ids: bool, as_json: bool) -> None:
    """Show which KB article(s) each of a system's REFERENCES maps to, and how, or why it is unmapped.

    A reference maps to every article whose text holds what it points to: one article, several (a section cut
    into parts, a quote running over two articles) or a page's articles.
    """
    from harness.workflows import kb as workflow

    kb_ = workflow.load_kb(kb_dir)
    found = workflow.resolve_references(kb_, list(references), mapping=mapping, rewrites=rewrites, bare_ids=bare_ids)
    if as_json:
        for r in found:
            click.echo(json.dumps(r.as_dict(), ensure_ascii=False))
        return
    for r in found:
        click.echo(r.reference)
        if r.mapped:
            how = f"({r.how}{': ' + r.note if r.note else ''})"
            if len(r.articles) == 1:
                a = r.articles[0]
                click.echo(f"  -> {a} {kb_.by_id[a].title}  {how}")
            else:
                kind = "a page" if r.scope == "page" else "several articles"
                click.echo(f"  -> {kind}, {len(r.articles)} articles  {how}")
                for a in r.articles[:SHOWN_ARTICLES]:
                    click.echo(f"     {a} {kb_.by_id[a].title}")
                if len(r.articles) > SHOWN_ARTICLES:
                    click.echo(f"     and {len(r.articles) - SHOWN_ARTICLES} more (--json lists them all)")
        else:
            also = f"; candidates {', '.join(r.candidates[:10])}" if r.candidates else ""
            click.echo(f"  -> unmapped ({r.note}{also})")
        if r.warning:
            click.echo(f"  warning {r.warning}: {WARNINGS[r.warning]}")
    n = sum(r.mapped for r in found)
    kinds = Counter(r.scope for r in found if r.mapped)
    split = ", ".join(f"{kinds[s]} to {label}" for s, label in (("article", "one article"), ("several", "several"),
                                                                 ("page", "a page")) if kinds[s])
    click.echo(f"{n} of {len(found)} reference(s) mapped" + (f" ({split})" if split else "")
               + f", {len(found) - n} unmapped")


@kb.command(name="eval")
@click.argument("kb_dir", type=click.Path(path_type=Path))
@click.option("--gold", required=True, type=click.Path(path_type=Path), help="Gold CSV (question_id, question, expected_citations, must_refuse, ...).")
@click.option("-k", "ks", default="1,3,5", show_default=True, help="Cut-offs, comma separated.")
@click.option("--embedder", "embedders", multiple=True,
              help="Retriever to evaluate (default: the KB's); repeat to compare several side by side, e.g. --embedder bm25 --embedder bm25f.")
@click.option("--show-misses", default=20, show_default=True, help="How many missed questions to list per retriever.")
@click.option("--bootstrap", default=2000, show_default=True, help="Bootstrap resamples of questions for MRR's 95% interval (recall@k, a share, gets Wilson's); 0: no intervals.")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap resamples.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Also write the results (per retriever, with intervals and misses) to this JSON file.")
@click.option("--retrieved", "retrieved_file", type=click.Path(path_type=Path), help="Also evaluate your own retriever's rankings (grace kb search --out format).")
@click.option("--rerank", default=None, help="Also evaluate each retriever reranked by PROVIDER:MODEL (an LLM; cached and priced) or cross-encoder[:MODEL].")
@click.option("--rerank-depth", default=20, show_default=True, help="Candidates the reranker reads per question.")
@click.option("--force", is_flag=True, help="Replace an existing --json file (the old one is kept as NAME.bak).")
def eval_cmd(kb_dir: Path, gold: Path, ks: str, embedders: tuple[str, ...], show_misses: int, bootstrap: int, seed: int,
             json_out: Path | None, retrieved_file: Path | None, rerank: str | None, rerank_depth: int,
             force: bool) -> None:
    """Recall@k and MRR of retrieval on the answerable gold questions, one row per retriever."""
    from rich.table import Table
    from rich.text import Text

    from harness.core.files import atomic_write_text
    from harness.workflows import kb as workflow
    from kb_builder.retrieval.evaluate import rows_to_json
    from kb_builder.store import kb_files

    if json_out is not None:
        check_output_file(json_out, {"gold CSV": gold, "KB": kb_files(kb_dir), "retrieved file": retrieved_file},
                          force=force, option="--json")
    result = workflow.eval_retrieval(kb_dir, gold, ks=_parse_ks(ks), embedders=embedders, retrieved=retrieved_file,
                                rerank=rerank, rerank_depth=rerank_depth, bootstrap=bootstrap, seed=seed)
    rows, questions, kl, reranked = result.rows, result.questions, result.ks, result.reranked
    console = _console()
    n_ans = sum(not g.must_refuse for g in questions)
    names = ", ".join(r.spec for r in rows)
    console.print(f"Retrieval ({names}) on {n_ans} answerable questions ({len(questions) - n_ans} must_refuse not counted)"
                  + (f"; 95% bootstrap intervals over questions ({bootstrap} resamples, seed {seed})" if bootstrap else ""))

    def cell(value: float, ci: list[float] | None) -> str:
        return f"{value:.3f}" + (f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else "")

    failed = any(row.error for row in rows)
    table = Table()
    table.add_column("retriever")
    for k in kl:
        table.add_column(f"recall@{k}", justify="right")
    table.add_column("MRR", justify="right")
    table.add_column("seconds", justify="right")
    if failed:
        table.add_column("not run because")
    for row in rows:
        if row.result is None:
            table.add_row(row.spec, *["-"] * (len(kl) + 2), Text(row.error or "", style="yellow"))
            continue
        r = row.result
        table.add_row(row.spec, *[cell(r.recall[k], r.recall_ci.get(k)) for k in kl], cell(r.mrr, r.mrr_ci),
                      f"{r.seconds:.2f}", *([""] if failed else []))
    console.print(table)
    for r in reranked:
        if r.summary is not None:
            c = r.summary.calls
            cost = "unknown price" if c.get("cost_usd") is None else f"${c['cost_usd']:.4f}"
            console.print(f"{r.name}: {c.get('calls', 0)} call(s), {c.get('cached', 0)} cached, {cost}; "
                          f"{r.summary.kept_order} ranking(s) unreadable (retriever order kept)", highlight=False)
    for row in rows:
        res = row.result
        if res is None or not res.misses or not show_misses:
            continue
        mt = Table(title=f"{row.spec}: missed in top {max(res.ks)} ({len(res.misses)})", show_lines=False)
        mt.add_column("question_id")
        mt.add_column("question")
        mt.add_column("expected")
        mt.add_column("retrieved")
        for g, got in res.misses[:show_misses]:
            mt.add_row(g.question_id, g.question, ";".join(g.expected_citations), ",".join(got))
        console.print(mt)
    if json_out:
        atomic_write_text(json_out, json.dumps({"kb": str(kb_dir), "gold": str(gold), "ks": kl, "bootstrap": bootstrap,
                                                "seed": seed, "retrievers": rows_to_json(rows)}, indent=2) + "\n")
        console.print(f"results -> {json_out}")


def _print_curation(console, replay, out: Path) -> None:
    """The curation a rebuild re-applied, and every edit it could not (never dropped silently)."""
    from kb_builder.kb_dir import KbDir

    n = len(replay.conflicts)
    console.print(f"curation: {len(replay.applied)} edit(s) re-applied"
                  + (f", [red]{n} in conflict[/] (listed in {KbDir(out).conflicts})" if n else ""),
                  highlight=False)
    for c in replay.conflicts:
        console.print(f"  conflict: action {c.seq} ({c.action} of {', '.join(c.articles)}, by {c.author}): {c.reason}",
                      markup=False, highlight=False)


def _build_json(result, out: Path) -> dict:
    c, cur = result.changes, result.curation
    return {"kb": str(out), "articles": result.kb.manifest.article_count, "documents": result.documents,
            "kb_hash": result.kb.kb_hash, "skipped": result.skipped,
            "changes": {"added": c.added, "changed": c.changed, "removed": c.removed, "unchanged": c.unchanged},
            "curation": {"applied": cur.applied if cur else [],
                         "conflicts": [x.model_dump(mode="json") for x in cur.conflicts] if cur else []}}
