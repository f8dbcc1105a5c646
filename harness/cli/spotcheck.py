"""``grace spotcheck``: fact-check correct-citation answers, calibrate the judge, test the judge."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.call_options import call_options
from harness.core.errors import GraceError, WorkFailed
from harness.rundir import RunDir
from harness.spotcheck.judge import DEFAULT_MAX_TOKENS


def _judge(spec_text: str, template: str | None, call: dict):
    """The judge from the command's options (see :func:`harness.runner.model_options.ready_model`)."""
    from harness.cli.call_options import model_options
    from harness.spotcheck.judge import load_judge_template, make_judge
    from harness.spotcheck.judging import Judge

    spec, provider = make_judge(spec_text, model_options(call), call.get("prices"))
    return Judge(spec, provider, load_judge_template(template))


def _settings(concurrency: int, max_attempts: int, no_cache: bool, console=None):
    from harness.spotcheck.judging import JudgeSettings

    if concurrency < 1 or max_attempts < 1:
        raise GraceError("--concurrency and --max-attempts must be 1 or more")
    def show(label: str, done: int, total: int) -> None:
        console.file.write(f"\r{label}: {done}/{total} judge calls" + ("\n" if done == total else ""))
        console.file.flush()

    progress = show if console is not None and console.is_terminal else None
    return JudgeSettings(concurrency=concurrency, max_attempts=max_attempts, read_cache=not no_cache, progress=progress)


def _pct(x, n: int | None = None) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" + (f" (n={n})" if n is not None else "")


def judge_options(fn):
    fn = call_options("judge calls", "Do not read the response cache (verdicts are still recorded in it; "
                      "judgements already in RUN/spotcheck/ are reused).", max_tokens_default=DEFAULT_MAX_TOKENS)(fn)
    fn = click.option("--template", default=None, help="Judge prompt template: built-in name (judge.v1) or file path.")(fn)
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
def run_cmd(run_or_scores, kb_dir, judge_spec, template, sample, take_all, seed, repeats, models, bootstrap,
            **call) -> None:
    """Sample correct-citation hits of RUN_OR_SCORES (a scored run folder) and fact-check each segment."""
    from rich.console import Console
    from rich.table import Table

    from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI
    from harness.spotcheck.pipeline import SpotcheckOptions, run_spotcheck

    if take_all and sample is not None:
        raise GraceError("give --sample N or --all, not both")
    console = Console()
    judge = _judge(judge_spec, template, call)
    opts = SpotcheckOptions(sample=None if take_all else (50 if sample is None else sample), seed=seed, repeats=repeats,
                            bootstrap=bootstrap, models=tuple(models))
    settings = _settings(call["concurrency"], call["max_attempts"], call["no_cache"], console)
    spot = run_spotcheck(run_or_scores, kb_dir, judge, opts, settings, console)
    jb = spot["judge"]
    mark = (f"[green]calibrated[/] (kappa {jb['kappa']:.2f}, n={jb['n']})" if jb["calibrated"] and jb.get("kappa") is not None
            else "[yellow]judge not calibrated[/]")
    console.print(f"Spot-check judge: {jb['name']}, {jb['label']}; {mark}; max_tokens {jb.get('max_tokens')}")
    table = Table(title="Correct-citation answers, fact-checked (95% CIs; n = checked answers; "
                        f"no interval below n={MIN_ANSWERS_FOR_CI})")
    table.add_column("Model", no_wrap=True)
    for name in ("Hits", "Checked", "Segs", "Groundedness", "Halluc. rate", "Halluc. risk"):
        table.add_column(name, justify="right")
    for m, v in spot["models"].items():
        shown = v["display"]
        table.add_row(m, str(v["hits"]), str(v["n"]), str(v["n_segments"]), shown["groundedness"],
                      shown["hallucination_rate"], shown["hallucination_risk"])
    console.print(table)
    if spot["variance"]["max_spread"] is not None:
        console.print(f"judge run-to-run spread over {repeats} repeats: up to {100 * spot['variance']['max_spread']:.1f} "
                      "points of groundedness; smaller differences between models are noise")
    calls = spot["judge_calls"]
    cost = "unknown" if calls["cost_usd"] is None else f"${calls['cost_usd']:.4f}"
    console.print(f"judge calls: {calls['calls']} made, {calls['cached']} cached, {calls['reused_from_file']} reused, "
                  f"{calls['decided_without_judge']} decided without the judge (quotes), {calls['errors']} failed, "
                  f"{calls['retried']} asked again for an unreadable verdict; cost {cost}")
    for w in spot["warnings"] + calls["aborted"]:
        console.print(f"[yellow]{w}[/]")
    run_dir = RunDir(spot["run"]["path"])
    console.print(f"spotcheck -> {run_dir.spotcheck}; for human labels: {run_dir.review_csv}")
    if spot.get("_report_html"):
        console.print(f"report: {spot['_report_html']}")
    asked = sum(v["n_verdicts"] + v["n_failed_calls"] for v in spot["models"].values())
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
def meta_eval_cmd(judge_spec, template, cases, out, show, force, **call) -> None:
    """Run the judge on hand-written cases with known verdicts; report its pass rate per failure mode."""
    import json

    from rich.console import Console
    from rich.table import Table

    from harness.core.files import atomic_write_text
    from harness.core.outputs import check_output_file
    from harness.spotcheck.meta_eval import load_cases, run_meta_eval

    if out is not None:
        check_output_file(out, {"cases file": cases}, force=force)
    console = Console()
    judge = _judge(judge_spec, template, call)
    settings = _settings(call["concurrency"], call["max_attempts"], call["no_cache"], console)
    result = run_meta_eval(judge, load_cases(cases), settings)
    table = Table("Failure mode", "Expected", "Cases", "Passed", "Pass rate", title=f"Judge meta-eval: {judge.spec.name}")
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
    if out:
        atomic_write_text(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        console.print(f"meta-eval -> {out}")
    if result["cases"] and result["unreadable"] == result["cases"]:
        raise WorkFailed(f"the judge {judge.spec.name} gave no readable verdict on any of the {result['cases']} cases")
