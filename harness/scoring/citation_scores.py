"""A model's citation figures in ``report.json`` (``models[m].citations``) and the paired F1 tests between models.

Only for a model with :class:`~harness.run_folder.run_records.CitationSettings` (read as references, or scored
several citations per answer): the row pass keeps each answer's precision, recall, F1, hit, cit_correct and
coverage in columns (:mod:`harness.scoring.row_pass`), the tallies sum them per model and question
(:mod:`harness.scoring.tallies`), and this module reduces them per model, with 95% intervals over questions (the
means' by a bootstrap, :mod:`harness.stats.bootstrap`, one set of resamples per set of questions; the hit rate, a
share, by Wilson's score interval as accuracy's), and
compares every two multi-citation models on per-question F1 (paired sign-flip test, Holm-corrected, as
``pairwise`` compares accuracy). A GRACE model gets none of this, so its report is what it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from harness.core.hashing import file_hash
from harness.run_folder.report import CitationPair, CitationScores, Report
from harness.run_folder.run_records import CitationSettings
from harness.scoring.citation_reading import SET_RULE
from harness.scoring.markers import PROBLEMS
from harness.scoring.row_pass import HOW_CODE, UNMAPPED_HOW
from harness.scoring.significance import holm, paired_sign_flips
from harness.scoring.spilled import Series
from harness.scoring.tallies import RunTally
from harness.stats.bootstrap import ALPHA, bootstrap_cis
from harness.stats.wilson import wilson_interval
from kb_builder.gold import GoldQuestion
from kb_builder.references import WARNINGS

_HOW_NAMES = {**{i: how for how, i in HOW_CODE.items()}, UNMAPPED_HOW: "unmapped"}


def read_as_grace(settings: CitationSettings | None) -> bool:
    """No settings, or single citations read as IDs: GRACE's own reading and scoring, figures as they always were."""
    return settings is None or (settings.reads == "ids" and settings.scoring == "single")


def _mean(values: Series) -> float | None:
    return round(float(values.mean()), 6) if values.n else None


def _array_mean(values: np.ndarray) -> float | None:
    return round(float(values.mean()), 6) if values.size else None


def add_citation_scores(report: Report, run: RunTally, questions: Sequence[GoldQuestion],
                        settings: Mapping[str, CitationSettings], seed: int, bootstrap: int) -> None:
    """Each such model's ``citations`` block, ``report.citation_pairwise``, and warnings on unmapped references."""
    if not run.tallies or run.tallies[0].citations is None:
        return
    nq = len(questions)
    f1_by_model: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    intervals: dict[bytes, list[tuple[CitationScores, str, np.ndarray]]] = {}
    for name, t in zip(run.models, run.tallies, strict=True):
        s = settings.get(name)
        c = t.citations
        if name not in report.models or read_as_grace(s) or c is None:
            continue
        block = CitationScores(
            scoring=s.scoring, reads=s.reads, n_answers=c.n_answerable, n_citing=c.n_citing,
            n_citations=c.n_citations, n_unmapped=c.n_unmapped,
            by_how={how: n for i, how in _HOW_NAMES.items() if (n := int(c.how[i]))},
            precision=_mean(c.precision), precision_ci95=None,
            recall=_mean(c.recall), recall_ci95=None,
            f1=_mean(c.f1), f1_ci95=None,
            hit_rate=round(c.hit_sum / c.n_answerable, 6) if c.n_answerable else None, hit_rate_ci95=None,
            cit_correct=_mean(c.correct), coverage=_mean(c.coverage),
            page_precision=_mean(c.page_precision), page_recall=_mean(c.page_recall), rule=SET_RULE,
            quotes_checked=c.quotes_checked, quotes_missing=c.quotes_missing,
            marker_problems={code: n for i, code in enumerate(PROBLEMS) if (n := int(c.problems[i]))},
            reference_warnings={name: n for i, name in enumerate(WARNINGS) if (n := int(c.warnings[i]))},
        )
        if c.n_answerable:  # per question: the mean over its answers (repeats), as accuracy's
            answered = np.flatnonzero(c.q_answerable)
            f1, recall, page_recall = (x[answered] / c.q_answerable[answered] for x in (c.q_f1, c.q_recall,
                                                                                           c.q_page_recall))
            intervals.setdefault(answered.tobytes(), []).extend([(block, "recall_ci95", recall), (block, "f1_ci95", f1),
                                                                 (block, "page_recall_ci95", page_recall)])
            # the hit rate is a share of questions (hit or not): Wilson's interval, as accuracy's
            block.hit_rate_ci95 = wilson_interval(block.hit_rate, int(answered.size)) if bootstrap > 0 else None
            f1_by_model[name] = answered, f1
        if c.n_citing:
            answered = np.flatnonzero(c.q_citing)
            intervals.setdefault(answered.tobytes(), []).extend([
                (block, "precision_ci95", c.q_precision[answered] / c.q_citing[answered]),
                (block, "page_precision_ci95", c.q_page_precision[answered] / c.q_citing[answered])])
        report.models[name].citations = block
        _warn(report, name, block, s)
    # one bootstrap per set of questions: every series over the same questions on the same resamples
    for jobs in intervals.values():
        for (block, field, _), ci in zip(jobs, bootstrap_cis([x for _, _, x in jobs], bootstrap, seed), strict=True):
            setattr(block, field, ci)
    multi = [name for name in report.leaderboard if name in f1_by_model and settings[name].scoring == "multi"]
    if len(multi) >= 2 and bootstrap > 0 and report.unlabelled is None:
        report.citation_pairwise = _pairs(multi, f1_by_model, nq, seed, bootstrap)


def _pairs(names: list[str], f1: dict[str, tuple[np.ndarray, np.ndarray]], nq: int, seed: int,
           bootstrap: int) -> list[CitationPair]:
    """Every two multi models on the answerable questions both answered: mean per-question F1 and a paired test."""
    full = {}
    for name, (answered, rate) in f1.items():
        v = np.full(nq, np.nan)
        v[answered] = rate
        full[name] = v
    rows, columns = [], []
    for x, y in combinations(names, 2):
        both = ~np.isnan(full[x]) & ~np.isnan(full[y])
        rows.append({"a": x, "b": y, "n": int(both.sum()), "f1_a": _array_mean(full[x][both]) or 0.0,
                     "f1_b": _array_mean(full[y][both]) or 0.0})
        columns.append(np.where(both, full[x] - full[y], np.nan))
    for row, p in zip(rows, paired_sign_flips(np.stack(columns, axis=1), bootstrap, seed), strict=True):
        row["p_value"] = p
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_value"] = round(row["p_value"], 8)
        row["p_adjusted"] = round(adjusted, 8)
        row["significant"] = adjusted < ALPHA
    return [CitationPair(**r) for r in rows]


def _warn(report: Report, name: str, block: CitationScores, s: CitationSettings) -> None:
    if block.n_unmapped:
        report.warnings.append(
            f"{name}: {block.n_unmapped} of {block.n_citations} citation(s) resolved to no KB article (each counts as "
            "a miss; every line's citations say why): check them with 'grace kb resolve KB REF...' and give a "
            "mapping file or rewrite rules")
    for kind, n in block.reference_warnings.items():  # named, so the fix is told apart from a plain unmapped one
        report.warnings.append(f"{name}: {n} citation(s) {kind}: {WARNINGS[kind]} (each line's citations name the "
                               "reference and why; check them with 'grace kb resolve KB REF...')")
    errors = {code: n for code, n in block.marker_problems.items() if PROBLEMS[code] == "error"}
    if errors:
        shown = ", ".join(f"{code} {n}" for code, n in errors.items())
        report.warnings.append(f"{name}: answers whose citation markers or source lists could not all be read "
                               f"({shown}); see marker_problems in scores.jsonl")
    odd = {code: n for code, n in block.marker_problems.items() if PROBLEMS[code] == "warning"}
    if odd:  # read as far as it goes (an uncited entry is not counted), but the answer is not as it claims
        shown = ", ".join(f"{code} {n}" for code, n in odd.items())
        report.warnings.append(f"{name}: answers whose source list does not match their citations ({shown}); "
                               "an entry named uncited_entry is not counted as cited (one no marker points to; an "
                               "answer with no marker cites its whole list, or only the citations it returned as "
                               "data); see marker_problems in scores.jsonl")
    if s.map and s.map_hash:
        try:
            now = file_hash(s.map)
        except OSError:
            now = None
        if now is not None and now != s.map_hash:
            report.warnings.append(f"{name}: the mapping file {s.map} changed since the run recorded it; "
                                   "these figures use it as it is now")
