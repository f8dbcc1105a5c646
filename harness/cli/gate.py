"""``grace gate OUT_DIR/report.json``: pass/fail thresholds for CI (exit 1 on failure)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.core.errors import GraceError

if TYPE_CHECKING:
    from harness.rundir.report import ModelReport, Report


class Fraction(click.ParamType):
    """0.85 or 85%."""

    name = "fraction"

    def convert(self, value: Any, param, ctx) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            self.fail(f"{value!r} is not a fraction (give 0.85 or 85%)", param, ctx)
        if not 0.0 <= x <= 1.0:
            self.fail(f"{value!r} is outside 0..1 (give 0.85 or 85%)", param, ctx)
        return x


def load_report(path: Path) -> Report:
    """A report.json (or the folder holding it), read and checked by its owner."""
    from harness.rundir import RunDir
    from harness.rundir.report import read_report

    return read_report(RunDir(path).report if path.is_dir() else path)


def _pick(report: Report, path: Path, wanted: tuple[str, ...]) -> list[str]:
    for name in wanted:
        if name not in report.models:
            raise GraceError(f"{path}: no model {name!r} in the report; it has {', '.join(report.models) or 'none'}")
    return list(wanted) or [m.model for m in report.ranked()]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def check_model(
    m: ModelReport, min_accuracy: float | None, max_invalid: float | None, base: ModelReport | None, max_drop: float
) -> list[tuple[bool, str]]:
    """Every check for one model as (passed, sentence); the sentences are what CI logs show."""
    out: list[tuple[bool, str]] = []
    name, acc = m.model, m.accuracy
    if min_accuracy is not None:
        ok = acc >= min_accuracy
        out.append((ok, f"{name}: accuracy {_pct(acc)} {'>=' if ok else '<'} minimum {_pct(min_accuracy)}"))
    if max_invalid is not None:
        rate = m.invalid_citation_rate
        ok = rate <= max_invalid
        out.append((ok, f"{name}: invalid-citation rate {_pct(rate)} {'<=' if ok else '>'} maximum {_pct(max_invalid)}"))
    if base is not None:
        old = base.accuracy
        ci = base.accuracy_ci95
        drop = old - acc
        beyond_drop = drop > max_drop
        if ci:
            below_ci = acc < ci[0]
            noise = f"baseline 95% CI {_pct(ci[0])}-{_pct(ci[1])}"
        else:
            below_ci = True
            noise = "baseline has no CI, so the drop alone decides"
        regressed = beyond_drop and below_ci
        if regressed:
            msg = (f"{name}: regression: accuracy {_pct(acc)} vs baseline {_pct(old)} dropped {_pct(drop)} "
                   f"(> allowed {_pct(max_drop)}) and is below the {noise}")
        elif beyond_drop:
            msg = (f"{name}: accuracy {_pct(acc)} vs baseline {_pct(old)} dropped {_pct(drop)}, within noise "
                   f"({noise})")
        else:
            change = 100 * (acc - old) + 0.0
            msg = f"{name}: accuracy {_pct(acc)} vs baseline {_pct(old)} (change {change:+.1f} points, allowed drop {_pct(max_drop)})"
        out.append((not regressed, msg))
    return out


def _spot_models(report: Report, path: Path) -> dict[str, Any]:
    """The report's spot-check figures per model; a report without a spot-check cannot answer a hallucination
    threshold, and says how to get one (exit 2, like any input that cannot be checked)."""
    if report.spotcheck is None:
        raise GraceError(f"{path}: no spot-check in this report, so there is no hallucination rate to check; run "
                         f"'grace spotcheck run {path.parent if path.suffix else path} --judge MODEL' first")
    return report.spotcheck.models


def _judged_by(report: Report) -> tuple[Any, ...]:
    """What makes two hallucination rates comparable: the same judge, template, mode and scope."""
    s = report.spotcheck
    return (s.judge.get("name"), s.judge.get("template_hash"), s.mode or "segments", s.scope or "hits") if s else ()


def check_hallucination(name: str, spot: Any, max_rate: float | None, base: Any, max_rise: float) -> list[tuple[bool, str]]:
    """The hallucination checks of one model, as :func:`check_model`'s: a ceiling, and a regression beyond noise."""
    out: list[tuple[bool, str]] = []
    rate, n = spot.hallucination_rate, spot.hallucination_rate_n or spot.n
    if max_rate is not None:
        ok = rate <= max_rate
        out.append((ok, f"{name}: hallucination rate {_pct(rate)} (n={n} checked answers) {'<=' if ok else '>'} "
                        f"maximum {_pct(max_rate)}"))
    if base is not None and base.hallucination_rate is not None:
        old, ci = base.hallucination_rate, base.hallucination_rate_ci95
        rise = rate - old
        beyond_rise = rise > max_rise
        if ci:
            above_ci = rate > ci[1]
            noise = f"baseline 95% CI {_pct(ci[0])}-{_pct(ci[1])}"
        else:
            above_ci = True
            noise = "baseline has no CI (too few checked answers), so the rise alone decides"
        regressed = beyond_rise and above_ci
        if regressed:
            msg = (f"{name}: regression: hallucination rate {_pct(rate)} vs baseline {_pct(old)} rose {_pct(rise)} "
                   f"(> allowed {_pct(max_rise)}) and is above the {noise}")
        elif beyond_rise:
            msg = f"{name}: hallucination rate {_pct(rate)} vs baseline {_pct(old)} rose {_pct(rise)}, within noise ({noise})"
        else:
            msg = (f"{name}: hallucination rate {_pct(rate)} vs baseline {_pct(old)} (change {100 * rise + 0.0:+.1f} "
                   f"points, allowed rise {_pct(max_rise)})")
        out.append((not regressed, msg))
    return out


@click.command("gate")
@click.argument("report_path", metavar="REPORT", type=click.Path(path_type=Path))
@click.option("--min-accuracy", type=Fraction(), default=None, help="Fail below this accuracy (0.85 or 85%).")
@click.option("--max-invalid-rate", type=Fraction(), default=None,
              help="Fail above this share of invalid citations (IDs not in the KB).")
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="An earlier report.json to compare against (regression check).")
@click.option("--max-drop", type=Fraction(), default=None,
              help="Accuracy drop from the baseline tolerated before it counts (default 0; needs --baseline).")
@click.option("--max-hallucination-rate", type=Fraction(), default=None,
              help="Fail above this share of spot-checked answers with an unsupported claim (needs a spot-check in "
              "the report: 'grace spotcheck run').")
@click.option("--max-hallucination-rise", type=Fraction(), default=None,
              help="Hallucination-rate rise from the baseline tolerated before it counts (default 0; needs --baseline).")
@click.option("--model", "models", multiple=True,
              help="Check only this model (repeatable; default: every model in the report).")
def gate(report_path: Path, min_accuracy, max_invalid_rate, baseline: Path | None, max_drop, max_hallucination_rate,
         max_hallucination_rise, models: tuple[str, ...]) -> None:
    """Fail (exit 1) when a scored run misses its thresholds; exit 0 when all checks pass.

    REPORT is OUT_DIR/report.json (or OUT_DIR). Each selected model must have
    accuracy >= --min-accuracy and invalid-citation rate <= --max-invalid-rate.

    \b
    Regression rule (with --baseline): a model fails only when its accuracy
    is BOTH more than --max-drop below the baseline's accuracy AND below the
    lower bound of the baseline's 95% bootstrap CI. A drop inside the
    baseline's CI is noise and passes. Models absent from the baseline are
    reported and skipped unless named with --model.

    
    Hallucination: --max-hallucination-rate F fails a model whose spot-check
    hallucination rate (answers with an unsupported claim) is above F. With
    --baseline, when both reports were spot-checked by the same judge, template,
    mode and scope, a model fails only when its rate rose by more than
    --max-hallucination-rise AND is above the upper bound of the baseline's 95% CI.

    Exit codes: 0 all checks passed, 1 a check failed, 2 bad input (missing
    file, not a grace report, unknown model, no spot-check for a hallucination threshold).
    """
    if max_drop is not None and baseline is None:
        raise GraceError("--max-drop needs --baseline OLD/report.json to compare against")
    if max_hallucination_rise is not None and baseline is None:
        raise GraceError("--max-hallucination-rise needs --baseline OLD/report.json to compare against")
    if min_accuracy is None and max_invalid_rate is None and baseline is None and max_hallucination_rate is None:
        raise GraceError("nothing to check: give --min-accuracy, --max-invalid-rate, --max-hallucination-rate "
                         "and/or --baseline")
    report = load_report(report_path)
    names = _pick(report, report_path, models)
    base_report = load_report(baseline) if baseline is not None else None
    spots = _spot_models(report, report_path) if max_hallucination_rate is not None else (
        report.spotcheck.models if report.spotcheck is not None else {})
    base_spots: dict[str, Any] = {}
    if base_report is not None and spots and base_report.spotcheck is not None:
        if _judged_by(base_report) == _judged_by(report):
            base_spots = base_report.spotcheck.models
        else:
            click.echo("note  the two spot-checks differ in judge, template, mode or scope "
                       f"({' / '.join(map(str, _judged_by(report)))} vs {' / '.join(map(str, _judged_by(base_report)))}); "
                       "hallucination regression check skipped")
    results: list[tuple[bool, str]] = []
    for name in names:
        base = None
        if base_report is not None:
            base = base_report.models.get(name)
            if base is None:
                if name in models:
                    raise GraceError(f"{baseline}: no model {name!r} in the baseline report; "
                                     f"it has {', '.join(base_report.models) or 'none'}")
                click.echo(f"note  {name}: not in the baseline report; regression check skipped")
        results += check_model(report.models[name], min_accuracy, max_invalid_rate, base, max_drop or 0.0)
        spot = spots.get(name)
        if spot is None or spot.hallucination_rate is None:
            if max_hallucination_rate is not None:
                raise GraceError(f"{report_path}: no spot-check figures for {name!r} (spot-checked: "
                                 f"{', '.join(spots) or 'none'}); spot-check it, or pick models with --model")
            continue
        results += check_hallucination(name, spot, max_hallucination_rate,
                                       base_spots.get(name) if base is not None else None,
                                       max_hallucination_rise or 0.0)
    for ok, msg in results:
        click.echo(f"{'PASS' if ok else 'FAIL'}  {msg}")
    failed = [msg for ok, msg in results if not ok]
    if failed:
        click.echo(f"gate failed: {len(failed)} of {len(results)} check(s) failed", err=True)
        sys.exit(1)  # not click's Exit: grace's main() runs click with standalone_mode=False
    click.echo(f"gate passed: {len(results)} check(s)")
