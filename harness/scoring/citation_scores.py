"""A model's citation figures in ``report.json`` (``models[m].citations``) and the paired F1 tests between models.

Only for a model with :class:`~harness.run_folder.run_records.CitationSettings` (read as references, or scored
several citations per answer): the row pass keeps each answer's precision, recall, F1, hit, cit_correct and
coverage in columns (:mod:`harness.scoring.row_pass`), and this module reduces them per model, with 95%
intervals over questions (the means' by a bootstrap, :mod:`harness.core.bootstrap`, one set of resamples per set of
questions; the hit rate, a share, by Wilson's score interval as accuracy's), and
compares every two multi-citation models on per-question F1 (paired sign-flip test, Holm-corrected, as
``pairwise`` compares accuracy). A GRACE model gets none of this, so its report is what it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from harness.core.bootstrap import ALPHA, bootstrap_cis
from harness.core.hashing import file_hash
from harness.core.wilson import wilson_interval
from harness.run_folder.report import CitationPair, CitationScores, Report
from harness.run_folder.run_records import CitationSettings
from harness.scoring.markers import PROBLEMS
from harness.scoring.row_pass import HOW_CODE, PROBLEM_BIT, UNMAPPED_HOW
from harness.scoring.significance import holm, paired_sign_flips, per_question
from kb_builder.gold import GoldQuestion

_HOW_NAMES = {**{i: how for how, i in HOW_CODE.items()}, UNMAPPED_HOW: "unmapped"}


def read_as_grace(settings: CitationSettings | None) -> bool:
    """No settings, or single citations read as IDs: GRACE's own reading and scoring, figures as they always were."""
    return settings is None or (settings.reads == "ids" and settings.scoring == "single")


def _mean(values: np.ndarray) -> float | None:
    return round(float(values.mean()), 6) if values.size else None


def add_citation_scores(report: Report, a: Mapping[str, np.ndarray], models: list[str],
                        questions: Sequence[GoldQuestion], settings: Mapping[str, CitationSettings],
                        seed: int, bootstrap: int) -> None:
    """Each such model's ``citations`` block, ``report.citation_pairwise``, and warnings on unmapped references."""
    if "cit_f1" not in a:
        return
    nq = len(questions)
    answerable_q = np.array([not g.must_refuse and bool(g.expected_citations) for g in questions], dtype=bool)
    f1_by_model: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    intervals: dict[bytes, list[tuple[CitationScores, str, np.ndarray]]] = {}
    for mi, name in enumerate(models):
        s = settings.get(name)
        if name not in report.models or read_as_grace(s):
            continue
        sel = np.flatnonzero(a["model"] == mi)
        q = a["q"][sel]
        answerable = answerable_q[q]
        made = a["n_citations"][sel]
        citing = made > 0
        precise = answerable & citing
        block = CitationScores(
            scoring=s.scoring, reads=s.reads, n_answers=int(answerable.sum()), n_citing=int(precise.sum()),
            n_citations=int(made.sum()), n_unmapped=int(a["n_unmapped"][sel].sum()),
            by_how={how: n for i, how in _HOW_NAMES.items() if (n := int(a[f"how_{i}"][sel].sum()))},
            precision=_mean(a["cit_precision"][sel][precise]), precision_ci95=None,
            recall=_mean(a["cit_recall"][sel][answerable]), recall_ci95=None,
            f1=_mean(a["cit_f1"][sel][answerable]), f1_ci95=None,
            hit_rate=_mean(a["cit_hit"][sel][answerable].astype(np.float64)), hit_rate_ci95=None,
            cit_correct=_mean(_known(a["cit_correct"][sel])), coverage=_mean(_known(a["coverage"][sel])),
            quotes_checked=int(a["quotes_checked"][sel].sum()), quotes_missing=int(a["quotes_missing"][sel].sum()),
            marker_problems={code: n for code, bit in PROBLEM_BIT.items()
                             if (n := int(((a["problems"][sel] & bit) != 0).sum()))},
        )
        if answerable.any():
            rows = sel[answerable]
            answered, f1 = per_question(a["q"][rows], a["cit_f1"][rows], nq)
            recall = per_question(a["q"][rows], a["cit_recall"][rows].astype(np.float64), nq)[1]
            intervals.setdefault(answered.tobytes(), []).extend([(block, "recall_ci95", recall), (block, "f1_ci95", f1)])
            # the hit rate is a share of questions (hit or not): Wilson's interval, as accuracy's
            block.hit_rate_ci95 = wilson_interval(block.hit_rate, int(answered.size)) if bootstrap > 0 else None
            f1_by_model[name] = answered, f1
        if precise.any():
            rows = sel[precise]
            answered, precision = per_question(a["q"][rows], a["cit_precision"][rows], nq)
            intervals.setdefault(answered.tobytes(), []).append((block, "precision_ci95", precision))
        report.models[name].citations = block
        _warn(report, name, block, s)
    # one bootstrap per set of questions: every series over the same questions on the same resamples
    for jobs in intervals.values():
        for (block, field, _), ci in zip(jobs, bootstrap_cis([x for _, _, x in jobs], bootstrap, seed), strict=True):
            setattr(block, field, ci)
    multi = [name for name in report.leaderboard if name in f1_by_model and settings[name].scoring == "multi"]
    if len(multi) >= 2 and bootstrap > 0 and report.unlabelled is None:
        report.citation_pairwise = _pairs(multi, f1_by_model, nq, seed, bootstrap)


def _known(values: np.ndarray) -> np.ndarray:
    return values[~np.isnan(values)]


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
        rows.append({"a": x, "b": y, "n": int(both.sum()), "f1_a": _mean(full[x][both]) or 0.0,
                     "f1_b": _mean(full[y][both]) or 0.0})
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
