"""``grace gate``'s checks: thresholds and noise-aware regression rules over typed reports, for CI.

Each check is a (passed, sentence) pair: the sentences are what a CI log shows,
so the rule and its numbers are said in words (which bound, which CI). The
command line (``harness/cli/gate.py``) only parses fractions and prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.rundir.report import ModelReport, Report


@dataclass
class GateResult:
    checks: list[tuple[bool, str]] = field(default_factory=list)  # (passed, what was checked, in words)
    notes: list[str] = field(default_factory=list)  # checks skipped, and why

    @property
    def failed(self) -> list[str]:
        return [msg for ok, msg in self.checks if not ok]


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


def check_gate(report_path: Path, *, min_accuracy: float | None = None, max_invalid_rate: float | None = None,
               baseline: Path | None = None, max_drop: float | None = None,
               max_hallucination_rate: float | None = None, max_hallucination_rise: float | None = None,
               models: tuple[str, ...] = ()) -> GateResult:
    """Every check of ``grace gate`` on ``report_path`` (a report.json or its folder), against ``baseline``."""
    if max_drop is not None and baseline is None:
        raise GraceError("--max-drop needs --baseline OLD/report.json to compare against")
    if max_hallucination_rise is not None and baseline is None:
        raise GraceError("--max-hallucination-rise needs --baseline OLD/report.json to compare against")
    if min_accuracy is None and max_invalid_rate is None and baseline is None and max_hallucination_rate is None:
        raise GraceError("nothing to check: give --min-accuracy, --max-invalid-rate, --max-hallucination-rate "
                         "and/or --baseline")
    out = GateResult()
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
            out.notes.append("the two spot-checks differ in judge, template, mode or scope "
                             f"({' / '.join(map(str, _judged_by(report)))} vs "
                             f"{' / '.join(map(str, _judged_by(base_report)))}); hallucination regression check skipped")
    for name in names:
        base = None
        if base_report is not None:
            base = base_report.models.get(name)
            if base is None:
                if name in models:
                    raise GraceError(f"{baseline}: no model {name!r} in the baseline report; "
                                     f"it has {', '.join(base_report.models) or 'none'}")
                out.notes.append(f"{name}: not in the baseline report; regression check skipped")
        out.checks += check_model(report.models[name], min_accuracy, max_invalid_rate, base, max_drop or 0.0)
        spot = spots.get(name)
        if spot is None or spot.hallucination_rate is None:
            if max_hallucination_rate is not None:
                raise GraceError(f"{report_path}: no spot-check figures for {name!r} (spot-checked: "
                                 f"{', '.join(spots) or 'none'}); spot-check it, or pick models with --model")
            continue
        out.checks += check_hallucination(name, spot, max_hallucination_rate,
                                       base_spots.get(name) if base is not None else None,
                                       max_hallucination_rise or 0.0)
    return out
