"""``grace gate``'s checks: thresholds and noise-aware regression rules over typed reports, for CI.

Each check is a (passed, sentence) pair: the sentences are what a CI log shows,
so the rule and its numbers are said in words (which bound, which CI). The
command line (``harness/cli/gate.py``) only parses fractions and prints.

Gates fail closed: every figure a check reads (in the report and in the
baseline) must be a number between 0 and 1 as written in the file, and a CI
null or ``[low, high]``. NaN compares false with everything, so a NaN accuracy
passed ``--max-drop``; a hand-edited ``"0.5"`` or ``true`` is read as a number
by the typed report. Any of them, or a figure a check asked for by name that is
missing, is bad input (exit 2) naming the file, the model and the figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.reports.gate_funnel import check_funnel
from harness.run_folder.report import ModelReport, Report, as_written, field_name


@dataclass
class GateResult:
    checks: list[tuple[bool, str]] = field(default_factory=list)  # (passed, what was checked, in words)
    notes: list[str] = field(default_factory=list)  # checks skipped, and why

    @property
    def failed(self) -> list[str]:
        return [msg for ok, msg in self.checks if not ok]


@dataclass
class _Read:
    """One report.json: typed, and as written (where a figure is checked before the typed value is trusted)."""

    path: Path
    report: Report
    data: dict[str, Any]

    def _bad(self, where: str, found: str, wanted: str, needed_by: str, fix: str) -> GraceError:
        return GraceError(f"{self.path}: {where} is {found}, not {wanted}, so {needed_by} cannot be checked; {fix} "
                          "(or correct the figure in the file)")

    def rate(self, keys: tuple[str, ...], needed_by: str, fix: str, *, optional: bool = False) -> float | None:
        """The figure at ``keys`` (under ``models`` or ``spotcheck``), a number within 0..1 as written; None
        when it is null or missing and ``optional`` (a check ``--baseline`` runs unasked skips it)."""
        value = _at(self.data, keys)
        if optional and (value is None or value is _MISSING):
            return None
        if not _is_rate(value):
            raise self._bad(field_name(keys), _found(value), "a fraction between 0 and 1", needed_by, fix)
        return float(value)

    def ci(self, keys: tuple[str, ...], needed_by: str, fix: str) -> None:
        """The CI at ``keys``: null (none was computed) or ``[low, high]``, two fractions with low <= high."""
        value = _at(self.data, keys)
        if value is None or value is _MISSING:
            return
        if not (isinstance(value, list) and len(value) == 2 and all(map(_is_rate, value)) and value[0] <= value[1]):
            raise self._bad(field_name(keys), _found(value), "null or [low, high] (fractions, low <= high)", needed_by,
                            fix)


_MISSING = object()


def _at(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _is_rate(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            and 0.0 <= value <= 1.0)


def _found(value: Any) -> str:
    """What the file holds, said so a reader finds it: missing, null, NaN, the string "0.5", true, 1.5."""
    if value is _MISSING:
        return "missing"
    return ("the string " if isinstance(value, str) else "") + as_written(value)


def load_report(path: Path, *, current: bool = True) -> _Read:
    """A report.json (or the folder holding it), read and checked by its owner, with the JSON it was read from.
    ``current`` (the report gated, not a baseline): refused when its run folder's answers are not the ones it was
    scored from (``RunDir.report_out_of_date``)."""
    from harness.run_folder.file_names import REPORT
    from harness.run_folder.report import read_report_data
    from harness.run_folder.run_dir import RunDir

    file = RunDir(path).report if path.is_dir() else path
    read = _Read(file, *read_report_data(file))
    stale = RunDir(file.parent).report_out_of_date(read.report) if current and file.name == REPORT else None
    if stale:  # a gate must never pass on figures of answers that are no longer the run's
        raise GraceError(stale)
    return read


def _fraction(name: str, value: float | None) -> None:
    """A threshold given through the Python API: the CLI's own type refuses anything but 0..1 already."""
    if value is not None and not _is_rate(value):
        raise GraceError(f"{name} must be a fraction between 0 and 1 (0.85), not {value!r}")


def _pick(report: Report, path: Path, wanted: tuple[str, ...]) -> list[str]:
    for name in wanted:
        if name not in report.models:
            raise GraceError(f"{path}: no model {name!r} in the report; it has {', '.join(report.models) or 'none'}")
    return list(wanted) or [m.model for m in report.ranked()]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def check_model(
    m: ModelReport, min_accuracy: float | None, max_invalid: float | None, base: ModelReport | None, max_drop: float,
    max_forbidden: float | None = None,
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
    if max_forbidden is not None:
        rate = m.forbidden_citation_rate
        n = round(rate * m.n)
        ok = rate <= max_forbidden
        out.append((ok, f"{name}: forbidden-citation rate {_pct(rate)} ({n} of {m.n} responses cited an article the "
                        f"asker may not see) {'<=' if ok else '>'} maximum {_pct(max_forbidden)}"))
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


def _check_permissions(read: _Read, name: str) -> None:
    """A forbidden-citation threshold needs the report to have checked this model's citations for permission: a
    KB with no audience, or no asker groups, gives no rate, and the gate says which (exit 2), never passes."""
    permissions = read.report.permissions
    if permissions is None:
        raise GraceError(f"{read.path}: no permission check in this report (the KB gives no article an audience), so "
                         "--max-forbidden-rate cannot be checked; give the restricted articles an 'audience' (grace kb "
                         "build --articles) and the gold questions the asker's 'groups', then score again")
    if _at(read.data, ("models", name, "forbidden_citation_rate")) in (None, _MISSING):
        raise GraceError(f"{read.path}: no response of {name!r} says who asked (the gold file's 'groups' column, or "
                         "user_groups on the responses), so its citations were not checked for permission and "
                         "--max-forbidden-rate cannot be checked; give the groups and score again")
    read.rate(("models", name, "forbidden_citation_rate"), "--max-forbidden-rate", _SCORE_FIX)


def _spot_models(read: _Read, option: str) -> dict[str, Any]:
    """The report's spot-check figures per model; a report without a spot-check cannot answer a hallucination
    threshold, and says how to get one (exit 2, like any input that cannot be checked)."""
    if read.report.spotcheck is None:
        raise GraceError(f"{read.path}: no spot-check in this report, so there is no hallucination rate to check "
                         f"({option}); run 'grace spotcheck run {read.path.parent} --judge MODEL' first")
    return read.report.spotcheck.models


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


_SCORE_FIX = "re-run 'grace score'"
# grace gate's citation thresholds: option -> the CitationScores figure it reads, and its words
CITATION_GATES = {"--min-citation-precision": ("precision", "citation precision"),
                  "--min-citation-recall": ("recall", "citation recall"),
                  "--min-citation-f1": ("f1", "citation F1")}


def check_citations(read: _Read, name: str, minimums: dict[str, float | None]) -> list[tuple[bool, str]]:
    """The citation thresholds of one model (report.json ``models[name].citations``). A model with no citation
    figures (read as GRACE IDs: one article ID per answer) cannot answer them: bad input naming it, never a pass."""
    asked = {option: value for option, value in minimums.items() if value is not None}
    if not asked:
        return []
    options = ", ".join(asked)
    m = read.report.models[name]
    if m.citations is None:
        raise GraceError(f"{read.path}: {name!r} has no citation figures (its citations are read as GRACE article IDs, "
                         f"one per answer: its accuracy is its figure), so {options} cannot be checked; gate it with "
                         "--min-accuracy, pick the models read as references with --model, or score it with "
                         "[models.citations] scoring = \"multi\"")
    out = []
    for option, threshold in asked.items():
        figure, words = CITATION_GATES[option]
        keys = ("models", name, "citations", figure)
        value = read.rate(keys, option, _SCORE_FIX)
        read.ci(("models", name, "citations", f"{figure}_ci95"), option, _SCORE_FIX)
        bounds = getattr(m.citations, f"{figure}_ci95")
        interval = f" [95% CI {_pct(bounds[0])}-{_pct(bounds[1])}]" if bounds else ""
        ok = value >= threshold
        over = m.citations.n_citing if figure == "precision" else m.citations.n_answers
        out.append((ok, f"{name}: {words} {_pct(value)}{interval} (over {over} answers) {'>=' if ok else '<'} minimum "
                        f"{_pct(threshold)}"))
    return out
_SPOT_FIX = "re-run 'grace spotcheck run'"


def check_gate(report_path: Path, *, min_accuracy: float | None = None, max_invalid_rate: float | None = None,
               baseline: Path | None = None, max_drop: float | None = None,
               max_hallucination_rate: float | None = None, max_hallucination_rise: float | None = None,
               max_forbidden_rate: float | None = None, min_citation_precision: float | None = None,
               min_citation_recall: float | None = None, min_citation_f1: float | None = None,
               models: tuple[str, ...] = (), max_tool_calls: float | None = None,
               min_gold_found: float | None = None) -> GateResult:
    """Every check of ``grace gate`` on ``report_path`` (a report.json or its folder), against ``baseline``.

    Every figure a check reads is checked first, as written (:class:`_Read`); a check that was asked for by
    name (``--max-hallucination-rise``) and has no figure to read is an error too, where the regression
    checks that ``--baseline`` alone runs are skipped with a note."""
    for option, value in (("--min-accuracy", min_accuracy), ("--max-invalid-rate", max_invalid_rate),
                          ("--max-drop", max_drop), ("--max-hallucination-rate", max_hallucination_rate),
                          ("--max-hallucination-rise", max_hallucination_rise),
                          ("--max-forbidden-rate", max_forbidden_rate),
                          ("--min-citation-precision", min_citation_precision),
                          ("--min-citation-recall", min_citation_recall), ("--min-citation-f1", min_citation_f1),
                          ("--min-gold-found", min_gold_found)):
        _fraction(option, value)
    citation_minimums = {"--min-citation-precision": min_citation_precision,
                         "--min-citation-recall": min_citation_recall, "--min-citation-f1": min_citation_f1}
    if max_drop is not None and baseline is None:
        raise GraceError("--max-drop needs --baseline OLD/report.json to compare against")
    if max_hallucination_rise is not None and baseline is None:
        raise GraceError("--max-hallucination-rise needs --baseline OLD/report.json to compare against")
    if (min_accuracy is None and max_invalid_rate is None and baseline is None and max_hallucination_rate is None
            and max_forbidden_rate is None and not any(v is not None for v in citation_minimums.values())
            and max_tool_calls is None and min_gold_found is None):
        raise GraceError("nothing to check: give --min-accuracy, --max-invalid-rate, --max-forbidden-rate, "
                         "--max-hallucination-rate, --min-citation-precision, --min-citation-recall, "
                         "--min-citation-f1, --max-tool-calls, --min-gold-found and/or --baseline")
    if max_tool_calls is not None and (not math.isfinite(max_tool_calls) or max_tool_calls < 0):
        raise GraceError(f"--max-tool-calls must be 0 or more, not {max_tool_calls}")
    out = GateResult()
    new = load_report(report_path)
    report = new.report
    names = _pick(report, new.path, models)
    old = load_report(baseline, current=False) if baseline is not None else None
    for read, which in ((new, "the report"), (old, "the baseline")):  # a CI log says a quick run is one
        if read is not None and read.report.sample is not None:
            out.notes.append(f"{which} is of a sample, {read.report.sample.describe()} (grace run --sample): its "
                             "figures and intervals are over those questions only")
    for read in (new, old):
        if read is not None and read.report.unlabelled is not None and (min_accuracy is not None or read is old):
            raise GraceError(f"{read.path}: its questions carry no label (a questions file, or imported logs without --gold), so it has "
                             f"no accuracy for {'--min-accuracy' if read is new else '--baseline'} to check; label "
                             "the questions and run (or import) again with the gold file (the label-free checks: "
                             "--max-invalid-rate, --max-forbidden-rate, --max-hallucination-rate)")
    rise_asked = max_hallucination_rise is not None
    if max_hallucination_rate is not None or rise_asked:
        spots = _spot_models(new, "--max-hallucination-rate" if max_hallucination_rate is not None
                             else "--max-hallucination-rise")
    else:
        spots = report.spotcheck.models if report.spotcheck is not None else {}
    base_spots: dict[str, Any] | None = None  # None: no spot-check in the baseline to compare with
    if old is not None and rise_asked:
        base_spots = _spot_models(old, "--max-hallucination-rise")
    elif old is not None and spots and old.report.spotcheck is not None:
        base_spots = old.report.spotcheck.models
    if base_spots is not None and _judged_by(old.report) != _judged_by(report):
        differ = (f"the two spot-checks differ in judge, template, mode or scope ({' / '.join(map(str, _judged_by(report)))}"
                  f" vs {' / '.join(map(str, _judged_by(old.report)))})")
        if rise_asked:
            raise GraceError(f"{differ}, so their hallucination rates cannot be compared (--max-hallucination-rise); "
                             f"spot-check {old.path.parent} with the report's judge, or drop --max-hallucination-rise")
        out.notes.append(f"{differ}; hallucination regression check skipped")
        base_spots = None
    regression = "--max-drop" if max_drop is not None else "the regression check (--baseline)"
    hal_regression = "--max-hallucination-rise" if rise_asked else "the hallucination regression check (--baseline)"
    for name in names:
        base = None
        if old is not None:
            base = old.report.models.get(name)
            if base is None:
                if name in models:
                    raise GraceError(f"{old.path}: no model {name!r} in the baseline report; "
                                     f"it has {', '.join(old.report.models) or 'none'}")
                out.notes.append(f"{name}: not in the baseline report; regression check skipped")
        if min_accuracy is not None:
            new.rate(("models", name, "accuracy"), "--min-accuracy", _SCORE_FIX)
        if max_invalid_rate is not None:
            new.rate(("models", name, "invalid_citation_rate"), "--max-invalid-rate", _SCORE_FIX)
        if max_forbidden_rate is not None:
            _check_permissions(new, name)
        if base is not None:
            new.rate(("models", name, "accuracy"), regression, _SCORE_FIX)
            old.rate(("models", name, "accuracy"), regression, _SCORE_FIX)
            old.ci(("models", name, "accuracy_ci95"), regression, _SCORE_FIX)
        out.checks += check_model(report.models[name], min_accuracy, max_invalid_rate, base, max_drop or 0.0,
                                  max_forbidden_rate)
        out.checks += check_citations(new, name, citation_minimums)
        out.checks += check_funnel(new, name, max_tool_calls, min_gold_found)

        spot, rate = spots.get(name), ("spotcheck", "models", name, "hallucination_rate")
        if spot is None:
            if max_hallucination_rate is not None or (rise_asked and base is not None):
                raise GraceError(f"{new.path}: no spot-check figures for {name!r} (spot-checked: "
                                 f"{', '.join(spots) or 'none'}); spot-check it, or pick models with --model")
            continue
        if max_hallucination_rate is not None:
            new.rate(rate, "--max-hallucination-rate", _SPOT_FIX)
        compared = None
        if base is not None and base_spots is not None and name not in base_spots:
            if rise_asked:
                raise GraceError(f"{old.path}: no spot-check figures for {name!r} in the baseline (spot-checked: "
                                 f"{', '.join(base_spots) or 'none'}), so --max-hallucination-rise cannot be checked; "
                                 "spot-check it there, or pick models with --model")
            out.notes.append(f"{name}: not in the baseline's spot-check; hallucination regression check skipped")
        elif base is not None and base_spots is not None:
            now = new.rate(rate, hal_regression, _SPOT_FIX, optional=not rise_asked)
            then = old.rate(rate, hal_regression, _SPOT_FIX, optional=not rise_asked)
            old.ci(("spotcheck", "models", name, "hallucination_rate_ci95"), hal_regression, _SPOT_FIX)
            if now is None or then is None:
                out.notes.append(f"{name}: no hallucination rate in the {'report' if now is None else 'baseline'}; "
                                 "hallucination regression check skipped")
            else:
                compared = base_spots[name]
        if max_hallucination_rate is not None or compared is not None:
            out.checks += check_hallucination(name, spot, max_hallucination_rate, compared,
                                              max_hallucination_rise or 0.0)
    return out
