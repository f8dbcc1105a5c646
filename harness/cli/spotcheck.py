"""``grace spotcheck``: fact-check correct-citation answers, calibrate the judge, test the judge."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.call_options import call_options, model_calls, redact_option
from harness.core.errors import GraceError, WorkFailed
from harness.run_folder.run_dir import RunDir
from harness.spotcheck.judge_prompt import DEFAULT_MAX_TOKENS

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "spotcheck": "Fact-check correct-citation answers for hallucination.",
}


def mode_option(fn):
    return click.option("--mode", type=click.Choice(["claims", "segments"]), default="claims", show_default=True,
                        help="claims: the judge splits each answer into atomic claims and gives each supported, "
                        "partial or unsupported with its evidence (about 2 calls per answer); segments: one "
                        "yes/no per citation segment, no extraction call (the cheaper, coarser check).")(fn)


def _pct(x, n: int | None = None) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" + (f" (n={n})" if n is not None else "")


def judge_options(fn):
    fn = call_options("judge calls", "Do not read the response cache (verdicts are still recorded in it; "
                      "judgements already in RUN/spotcheck/ are reused).", max_tokens_default=DEFAULT_MAX_TOKENS)(fn)
    fn = click.option("--template", default=None, help="Judge prompt template: built-in name or file path [default: "
                      "claims.v1 for --mode claims, judge.v1 for segments, in the KB's language when grace has it "
                      "(claims.v1.fr)].")(fn)
    return click.option("--judge", "judge_spec", required=True,
                        help="Judge model PROVIDER:MODEL (openai:gpt-4o-mini, anthropic:..., google:...), or "
                        "baseline:lexical offline.")(fn)


@click.group()
def spotcheck() -> None:
    """Fact-check correct-citation answers for hallucination, and measure how far the judge can be trusted."""


@spotcheck.command("run")
@click.argument("run_or_scores", type=click.Path(path_type=Path))
@click.option("--kb", "kb_dir", type=click.Path(path_type=Path), default=None, help="KB folder [default: the one report.json names].")
@judge_options
@click.option("--sample", type=int, default=None, help="Hits checked per model, stratified by cited article [default: 50].")
@click.option("--all", "take_all", is_flag=True, help="Check every hit instead of a sample.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for the sample and the bootstrap.")
@click.option("--repeats", type=int, default=1, show_default=True, help="Judge passes, to measure the judge's run-to-run spread.")
@click.option("--model", "-m", "models", multiple=True, help="Only these answering models (repeatable).")
@click.option("--bootstrap", type=int, default=2000, show_default=True, help="Bootstrap resamples for the 95% CIs.")
@mode_option
@click.option("--scope", type=click.Choice(["hits", "answered", "all"]), default="hits", show_default=True,
              help="Which answers are checked: hits (correct citations), answered (every answer that is not a "
              "refusal, whatever it cites), all (refusals too).")
@click.option("--quality", is_flag=True, help="Also grade each checked answer GroUSE-style against its gold article: "
              "relevancy, completeness, faithfulness (1-5) and usefulness (one more call per answer).")
@click.option("--gold", type=click.Path(path_type=Path), default=None,
              help="Gold CSV for --quality's questions [default: the one report.json names].")
@redact_option
@click.option("--dry-run", is_flag=True, help="Print the judge calls, tokens and cost it would take; call nothing.")
def run_cmd(run_or_scores, kb_dir, judge_spec, template, sample, take_all, seed, repeats, models, bootstrap,
            mode, scope, quality, gold, redact_pii, dry_run, **call) -> None:
    """Sample correct-citation hits of RUN_OR_SCORES (a scored run folder) and fact-check each segment."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI
    from harness.spotcheck.pipeline import SpotcheckOptions
    from harness.workflows.spotcheck import spotcheck_run

    if take_all and sample is not None:
        raise GraceError("give --sample N or --all, not both")
    console = Console()
    opts = SpotcheckOptions(sample=None if take_all else (50 if sample is None else sample), seed=seed, repeats=repeats,
                            bootstrap=bootstrap, models=tuple(models), mode=mode, scope=scope, quality=quality,
                            gold=gold)
    done = spotcheck_run(run_or_scores, judge_spec, kb=kb_dir, template=template, options=opts,
                         calls=model_calls({**call, "redact_pii": redact_pii}), dry_run=dry_run, console=console)
    if done.estimates is not None:
        from harness.runner.model_options import print_estimates

        print_estimates(console, done.estimates)
        return
    spot = done.result
    jb = spot["judge"]
    mark = (f"[green]calibrated[/] (kappa {jb['kappa']:.2f}, n={jb['n']})" if jb["calibrated"] and jb.get("kappa") is not None
            else "[yellow]judge not calibrated[/]")
    console.print(f"Spot-check judge: {jb['name']}, {jb['label']}; {mark}; template {jb['template']}; "
                  f"max_tokens {jb.get('max_tokens')}")
    what = {"hits": "Correct-citation answers", "answered": "Answers (refusals left out)",
            "all": "Answers and refusals"}[scope]
    table = Table(title=f"{what}, fact-checked by {mode} (95% CIs; n = checked answers; "
                        f"no interval below n={MIN_ANSWERS_FOR_CI})")
    table.add_column("Model", no_wrap=True)
    columns = (("Claims", "Faithfulness", "Partial", "Halluc. rate", "Halluc. risk", "Coverage") if mode == "claims"
               else ("Segs", "Groundedness", "Halluc. rate", "Halluc. risk", "Coverage"))
    for name in ("In scope", "Checked", *columns):
        table.add_column(name, justify="right")
    for m, v in spot["models"].items():
        shown = v["display"]
        risk = shown["hallucination_risk"] if scope == "hits" else "-"
        cells = ([str(v["n_claims"]), shown["faithfulness"], shown["partial_rate"]] if mode == "claims"
                 else [str(v["n_segments"]), shown["groundedness"]])
        table.add_row(m, str(v["hits"]), str(v["n"]), *cells, shown["hallucination_rate"], risk,
                      shown.get("coverage", "-"))
    console.print(table)
    if quality:
        q = Table(title="Answer quality, GroUSE-style (mean grade 1-5; usefulness: share of refusals whose extra "
                        "information helps; n = answers each grade applies to)")
        for name in ("Model", "Relevancy", "Completeness", "Faithfulness", "Usefulness", "Refusals", "Unreadable"):
            q.add_column(name, justify="left" if name == "Model" else "right")
        def cell(g: dict, k: str, pct: bool = False) -> str:
            if g.get(k) is None:
                return f"- (n={g.get(f'{k}_n', 0)})"
            return (f"{100 * g[k]:.0f}%" if pct else f"{g[k]:.2f}") + f" (n={g.get(f'{k}_n', 0)})"

        for m, v in spot["models"].items():
            g = v.get("quality") or {}
            q.add_row(m, cell(g, "relevancy"), cell(g, "completeness"), cell(g, "faithfulness"),
                      cell(g, "usefulness", True), str(g.get("n_refusals", 0)), str(g.get("n_unreadable", 0)))
        console.print(q)
    if spot.get("citation_support"):
        check = spot["citation_support"]
        kappa = check["meta_eval"].get("kappa")
        c = Table(title="Citation support, per cited sentence (models citing several sources; 95% CIs; n = checked "
                        f"answers; judge kappa on the multi-citation cases: "
                        f"{'n/a' if kappa is None else format(kappa, '.2f')}, n={check['meta_eval']['n']})")
        for name in ("Model", "Sentences", "Citations", "Support recall", "Citation precision", "Misattributed",
                     "Unsupported", "Unresolved"):
            c.add_column(name, justify="left" if name == "Model" else "right")
        for m, v in spot["models"].items():
            cs = v.get("citation_support")
            if cs:
                shown = cs["display"]
                c.add_row(m, str(cs["n_sentences"]), str(cs["n_citations"]), shown["support_recall"],
                          shown["citation_precision"], shown["misattributed_rate"], shown["unsupported_rate"],
                          str(cs["n_unresolved_citations"]))
        console.print(c)
    if spot["variance"]["max_spread"] is not None:
        console.print(f"judge run-to-run spread over {repeats} repeats: up to {100 * spot['variance']['max_spread']:.1f} "
                      "points of groundedness; smaller differences between models are noise")
    calls = spot["judge_calls"]
    cost = "unknown" if calls["cost_usd"] is None else f"${calls['cost_usd']:.4f}"
    console.print(f"judge calls: {calls['calls']} made, {calls['cached']} cached, {calls['reused_from_file']} reused, "
                  f"{calls['decided_without_judge']} decided without the judge (quotes), {calls['errors']} failed, "
                  f"{calls['retried']} asked again for an unreadable verdict; cost {cost}")
    if spot.get("redaction"):
        from harness.privacy.redactor import RedactionRecord, summary_line

        # printed as plain text: the note names the extra, grace-eval[pii], which Rich markup would read as a tag
        console.print(Text(f"--redact-pii: {summary_line(RedactionRecord(**spot['redaction']))}"), highlight=False)
    for w in spot["warnings"] + calls["aborted"]:
        console.print(f"[yellow]{w}[/]")
    run_dir = RunDir(spot["run"]["path"])
    console.print(f"spotcheck -> {run_dir.spotcheck}; for human labels: {run_dir.path / spot['review_csv']}")
    if spot.get("_report_html"):
        console.print(f"report: {spot['_report_html']}")
    if done.failure():
        raise WorkFailed(done.failure())
    if calls["errors"]:  # last: a partial failure exits 0, and this count is what a CI log should end on
        console.print(f"[yellow]{calls['errors']} judge call(s) failed; run the same command again to retry them[/]")


@spotcheck.command("calibrate")
@click.argument("human_csv", type=click.Path(path_type=Path))
@click.argument("judge_json", type=click.Path(path_type=Path))
@click.option("--show", type=int, default=10, show_default=True, help="Disagreements to print.")
def calibrate_cmd(human_csv: Path, judge_json: Path, show: int) -> None:
    """Compare the judge's verdicts (JUDGE_JSON = spotcheck.json) with human labels (HUMAN_CSV)."""
    from rich.console import Console

    from harness.workflows.spotcheck import calibrate_judge

    console = Console()
    c = calibrate_judge(human_csv, judge_json, console=console)
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    console.print(f"judge {c['judge']} vs {c['n']} human labels: kappa {fmt(c['kappa'])}, agreement {fmt(c['agreement'])}, "
                  f"precision(unsupported) {fmt(c['precision_unsupported'])}, recall(unsupported) {fmt(c['recall_unsupported'])}")
    if c.get("kappa_per_class"):
        per = ", ".join(f"{k} {fmt(v['kappa'])} (human {v['human']}, judge {v['judge']})"
                        for k, v in c["kappa_per_class"].items())
        console.print(f"claims: kappa over the three classes {fmt(c['kappa_multiclass'])}; per class: {per}")
    if c["n_unmatched"] or c["n_stale"]:
        console.print(f"[yellow]{c['n_unmatched']} label(s) match no judged segment, {c['n_stale']} have changed text; left out[/]")
    for d in c["disagreements"][:show]:
        console.print(f"- {d['model']} {d['question_id']} #{d['segment_index']}: human {d['human']}, judge {d['judge']}: "
                      f"{d['segment_text'][:120]!r}")
    if len(c["disagreements"]) > show:
        console.print(f"... {len(c['disagreements']) - show} more in {RunDir(judge_json.parent).calibration.name}")
    console.print(f"calibration -> {RunDir(judge_json.parent).calibration}")


@spotcheck.command("meta-eval")
@judge_options
@click.option("--cases", type=click.Path(path_type=Path), default=None, help="Cases JSONL [default: the built-in set].")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the full result as JSON here.")
@click.option("--show", type=int, default=5, show_default=True, help="Failed cases to print.")
@click.option("--force", is_flag=True, help="Replace an existing --out file (the old one is kept as NAME.bak).")
@mode_option
@click.option("--quality-cases", type=click.Path(path_type=Path), default=None,
              help="Answer-quality cases JSONL [default: the built-in GroUSE-style set, 21 cases in 7 failure modes].")
@click.option("--no-quality", is_flag=True, help="Only the support cases (skip the answer-quality cases).")
@click.option("--citation-cases", type=click.Path(path_type=Path), default=None,
              help="Multi-citation cases JSONL (own / other / none) [default: the built-in set, in claims mode].")
@click.option("--no-citations", is_flag=True, help="Skip the multi-citation cases.")
def meta_eval_cmd(judge_spec, template, cases, out, show, force, mode, quality_cases, no_quality, citation_cases,
                  no_citations, **call) -> None:
    """Run the judge on hand-written cases with known verdicts; report its pass rate per failure mode.

    Three sets: support verdicts (46 cases: a changed number, a swapped entity, ...); answer quality, GroUSE's
    seven failure modes (an incomplete answer, irrelevant information, an unfaithful answer, a wrong citation,
    useless information in a refusal, positive acceptance, negative rejection), each graded by the --quality judge;
    and, in claims mode, multi-citation answers whose sentences are supported by their own citation, only by the
    answer's other cited article, or by none (kappa over the three labels).
    """
    from rich.console import Console
    from rich.table import Table

    from harness.workflows.spotcheck import meta_eval_judge

    console = Console()
    done = meta_eval_judge(judge_spec, template=template, mode=mode, cases=cases, quality_cases=quality_cases,
                           quality=not no_quality, out=out, force=force, calls=model_calls(call), console=console,
                           citations=False if no_citations else None, citation_cases=citation_cases)
    judge, result = done.judge, done.result
    table = Table("Failure mode", "Expected", "Cases", "Passed", "Pass rate",
                  title=f"Judge meta-eval ({mode}): {judge.spec.name}")
    for mode, v in result["per_mode"].items():
        table.add_row(mode, "/".join(v["expected"]), str(v["cases"]), str(v["passed"]), _pct(v["pass_rate"], v["cases"]))
    table.add_row("all", "", str(result["cases"]), str(result["passed"]), _pct(result["pass_rate"], result["cases"]),
                  style="bold")
    console.print(table)
    console.print(f"unsupported caught {_pct(result['unsupported_caught'], result['n_unsupported'])}, "
                  f"supported accepted {_pct(result['supported_accepted'], result['n_supported'])}, "
                  f"kappa {'n/a' if result['kappa'] is None else format(result['kappa'], '.2f')} "
                  f"(n={result['kappa_n']} readable verdicts)")
    if result["unreadable"]:
        console.print(f"[yellow]{result['unreadable']} of {result['cases']} verdicts unreadable, even asked again with a "
                      "stricter instruction; they count as failed cases[/]")
    for f in result["failures"][:show]:
        console.print(f"- {f['id']} ({f['failure_mode']}): expected {'supported' if f['expected_supported'] else 'unsupported'}, "
                      f"got {f['supported']}: {f['explanation'][:140]}")
    if not no_quality:
        q = result["quality"]
        table = Table("GroUSE failure mode", "Cases", "Passed", "Pass rate",
                      title=f"Answer-quality meta-eval: {judge.spec.name}")
        for m, v in q["per_mode"].items():
            table.add_row(m, str(v["cases"]), str(v["passed"]), _pct(v["pass_rate"], v["cases"]))
        table.add_row("all", str(q["cases"]), str(q["passed"]), _pct(q["pass_rate"], q["cases"]), style="bold")
        console.print(table)
        for f in q["failures"][:show]:
            console.print(f"- {f['id']} ({f['failure_mode']}): expected {f['expect']}, got {f['got']}")
    if "citations" in result:
        c = result["citations"]
        table = Table("Label", "Expected", "Judge said", "Agreed", title=f"Multi-citation meta-eval: {judge.spec.name}")
        for label, v in c["per_label"].items():
            table.add_row(label, str(v["expected"]), str(v["judge"]), str(v["passed"]))
        console.print(table)
        console.print(f"citation support labels (own / other / none): agreement "
                      f"{_pct(c['agreement'], c['n'])}, kappa {'n/a' if c['kappa'] is None else format(c['kappa'], '.2f')}"
                      f" (n={c['n']} sentences of {c['cases']} cases; {c.get('misread_cases', 0)} of "
                      f"{c.get('written_cases', 0)} answers as written misread)")
        for f in c["failures"][:show]:
            console.print(f"- {f['case']}: expected {f['expected']}, got {f['judge']}: {f['sentence'][:120]}"
                          + (f" ({f['reading'][:200]})" if f.get("reading") else ""))
    if out:
        console.print(f"meta-eval -> {out}")
    if done.failure():
        raise WorkFailed(done.failure())
