"""``grace spotcheck``: fact-check correct-citation answers, calibrate the judge, test the judge."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.call_options import call_options, redact_option
from harness.core.errors import GraceError, WorkFailed
from harness.rundir import RunDir
from harness.spotcheck.judge import DEFAULT_MAX_TOKENS


def _judge(spec_text: str, template: str | None, call: dict, mode: str = "segments", ready: bool = True):
    """The judge from the command's options (see :func:`harness.runner.model_options.ready_model`), with the
    template ``--template`` names; without one, none yet: ``grace spotcheck run`` takes ``mode``'s built-in one
    (``claims.v1``, ``judge.v1``) in the KB's language once it has read the KB (:meth:`Judge.in_language`)."""
    from harness.cli.call_options import model_options
    from harness.spotcheck.judge import make_judge
    from harness.spotcheck.judging import Judge, mode_template

    spec, provider = make_judge(spec_text, model_options(call), call.get("prices"), ready=ready)
    return Judge(spec, provider, mode_template(mode, template) if template else None)


def mode_option(fn):
    return click.option("--mode", type=click.Choice(["claims", "segments"]), default="claims", show_default=True,
                        help="claims: the judge splits each answer into atomic claims and gives each supported, "
                        "partial or unsupported with its evidence (about 2 calls per answer); segments: one "
                        "yes/no per citation segment, no extraction call (the cheaper, coarser check).")(fn)


def _settings(concurrency: int, max_attempts: int, no_cache: bool, console=None, redact_pii: bool = False):
    from harness.privacy import make_redactor
    from harness.spotcheck.judging import JudgeSettings

    if concurrency < 1 or max_attempts < 1:
        raise GraceError("--concurrency and --max-attempts must be 1 or more")
    def show(label: str, done: int, total: int) -> None:
        console.file.write(f"\r{label}: {done}/{total} judge calls" + ("\n" if done == total else ""))
        console.file.flush()

    progress = show if console is not None and console.is_terminal else None
    return JudgeSettings(concurrency=concurrency, max_attempts=max_attempts, read_cache=not no_cache, progress=progress,
                         redactor=make_redactor(redact_pii, console))


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
    from harness.spotcheck.pipeline import SpotcheckOptions, run_spotcheck

    if take_all and sample is not None:
        raise GraceError("give --sample N or --all, not both")
    console = Console()
    judge = _judge(judge_spec, template, call, mode, ready=not dry_run)
    opts = SpotcheckOptions(sample=None if take_all else (50 if sample is None else sample), seed=seed, repeats=repeats,
                            bootstrap=bootstrap, models=tuple(models), mode=mode, scope=scope, quality=quality,
                            gold=gold)
    settings = _settings(call["concurrency"], call["max_attempts"], call["no_cache"], console, redact_pii)
    if dry_run:
        from annotations.model_calls import print_estimates
        from harness.spotcheck.pipeline import estimate_spotcheck

        print_estimates(console, estimate_spotcheck(run_or_scores, kb_dir, judge, opts, settings))
        return
    spot = run_spotcheck(run_or_scores, kb_dir, judge, opts, settings, console)
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
    asked = sum(v["n_verdicts"] + v["n_failed_calls"] + (v.get("n_extraction_failed") or 0)
                for v in spot["models"].values())
    readable = sum(v["n_verdicts"] - v["n_unreadable"] for v in spot["models"].values())
    if asked and not readable:
        raise WorkFailed(f"the judge {jb['name']} gave no usable verdict for any of the {asked} segment(s) it was "
                         f"asked about ({calls['errors']} call(s) failed); run the same command again to retry")
    if calls["errors"]:  # last: a partial failure exits 0, and this count is what a CI log should end on
        console.print(f"[yellow]{calls['errors']} judge call(s) failed; run the same command again to retry them[/]")


@spotcheck.command("calibrate")
@click.argument("human_csv", type=click.Path(path_type=Path))
@click.argument("judge_json", type=click.Path(path_type=Path))
@click.option("--show", type=int, default=10, show_default=True, help="Disagreements to print.")
def calibrate_cmd(human_csv: Path, judge_json: Path, show: int) -> None:
    """Compare the judge's verdicts (JUDGE_JSON = spotcheck.json) with human labels (HUMAN_CSV)."""
    from rich.console import Console

    from harness.core.outputs import check_output_file
    from harness.spotcheck.calibration import calibrate

    check_output_file(RunDir(judge_json.parent).calibration, {"human labels": human_csv, "judge verdicts": judge_json},
                      owned=True, option="the calibration file")
    console = Console()
    c = calibrate(human_csv, judge_json, console)
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
def meta_eval_cmd(judge_spec, template, cases, out, show, force, mode, quality_cases, no_quality, **call) -> None:
    """Run the judge on hand-written cases with known verdicts; report its pass rate per failure mode.

    Two sets: support verdicts (46 cases: a changed number, a swapped entity, ...), and answer quality, GroUSE's
    seven failure modes (an incomplete answer, irrelevant information, an unfaithful answer, a wrong citation,
    useless information in a refusal, positive acceptance, negative rejection), each graded by the --quality judge.
    """
    import json

    from rich.console import Console
    from rich.table import Table

    from harness.core.files import atomic_write_text
    from harness.core.outputs import check_output_file
    from harness.spotcheck.meta_eval import load_cases, run_meta_eval

    if out is not None:
        check_output_file(out, {"cases file": cases, "quality cases file": quality_cases}, force=force)
    console = Console()
    judge = _judge(judge_spec, template, call, mode).in_language(mode, None)  # the cases are English
    settings = _settings(call["concurrency"], call["max_attempts"], call["no_cache"], console)
    result = run_meta_eval(judge, load_cases(cases), settings)
    table = Table("Failure mode", "Expected", "Cases", "Passed", "Pass rate",
                  title=f"Judge meta-eval ({mode}): {judge.spec.name}")
    for mode, v in result["per_mode"].items():
        table.add_row(mode, "/".join(v["expected"]), str(v["cases"]), str(v["passed"]), _pct(v["pass_rate"], v["cases"]))
    table.add_row("all", "", str(result["cases"]), str(result["passed"]), _pct(result["pass_rate"], result["cases"]),
                  style="bold")
    console.print(table)
    console.print(f"unsupported caught {_pct(result['unsupported_caught'], result['n_unsupported'])}, "
                  f"supported accepted {_pct(result['supported_accepted'], result['n_supported'])}")
    if result["unreadable"]:
        console.print(f"[yellow]{result['unreadable']} of {result['cases']} verdicts unreadable, even asked again with a "
                      "stricter instruction; they count as failed cases[/]")
    for f in result["failures"][:show]:
        console.print(f"- {f['id']} ({f['failure_mode']}): expected {'supported' if f['expected_supported'] else 'unsupported'}, "
                      f"got {f['supported']}: {f['explanation'][:140]}")
    if not no_quality:
        from harness.spotcheck.quality import load_quality_cases, load_quality_template, run_quality_meta_eval

        q = run_quality_meta_eval(judge, load_quality_template(), load_quality_cases(quality_cases), settings)
        result["quality"] = q
        table = Table("GroUSE failure mode", "Cases", "Passed", "Pass rate",
                      title=f"Answer-quality meta-eval: {judge.spec.name}")
        for m, v in q["per_mode"].items():
            table.add_row(m, str(v["cases"]), str(v["passed"]), _pct(v["pass_rate"], v["cases"]))
        table.add_row("all", str(q["cases"]), str(q["passed"]), _pct(q["pass_rate"], q["cases"]), style="bold")
        console.print(table)
        for f in q["failures"][:show]:
            console.print(f"- {f['id']} ({f['failure_mode']}): expected {f['expect']}, got {f['got']}")
    if out:
        atomic_write_text(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        console.print(f"meta-eval -> {out}")
    if result["cases"] and result["unreadable"] == result["cases"]:
        raise WorkFailed(f"the judge {judge.spec.name} gave no readable verdict on any of the {result['cases']} cases")
