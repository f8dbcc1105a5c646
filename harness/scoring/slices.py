"""The report's two views of a run that depend on who asks and what about: permissions and category slices.

Both are added to a built :class:`~harness.run_folder.report.Report` from the scorer's tallies, and both
are absent from runs that do not use them, so an ordinary run's report.json is what it was:

- Permissions: when the KB gives some article an ``audience``, ``report.permissions`` says how many responses
  were checked (their asker's groups known), each model gets its ``forbidden_citation_rate``, and a warning says
  when no (or not every) response could be checked. Without an audience in the KB the outcome
  ``forbidden_citation`` cannot occur and is not listed in the outcome counts.
- Categories: when the gold file has a ``category`` column, each model gets its accuracy per category (computed as
  the overall accuracy), with a 95% Wilson score interval over the category's questions. Not the overall
  accuracy's bootstrap: a category is often a handful of questions, where a percentile bootstrap collapses to a
  point (4 of 4 right: [100%, 100%]) and claims a certainty the data does not give; Wilson's interval is valid
  from one question up and meets the bootstrap's on large categories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.run_folder.report import CategoryScore, Permissions, Report
from harness.scoring.outcomes import OUTCOME_CODE
from harness.scoring.tallies import RunTally
from harness.stats.wilson import wilson_interval
from kb_builder.gold import GROUPS, GoldQuestion

FORBIDDEN = "forbidden_citation"


def restricted_articles(articles: Sequence) -> dict[str, frozenset[str]]:
    """The KB's articles with an audience: ID -> the groups that may see it (the scorer's ``audiences``)."""
    return {a.id: frozenset(a.audience) for a in articles if getattr(a, "audience", None)}


def add_permissions(report: Report, run: RunTally, audiences: Mapping[str, frozenset[str]]) -> None:
    """``report.permissions``, each model's ``forbidden_citation_rate`` and the warnings; without audiences, the
    outcome counts lose the ``forbidden_citation`` that cannot occur."""
    if not audiences:
        for m in report.models.values():
            m.outcomes = {k: v for k, v in m.outcomes.items() if k != FORBIDDEN}
            m.strict_outcomes = {k: v for k, v in m.strict_outcomes.items() if k != FORBIDDEN}
        return
    n_checked, n = run.checked, run.rows
    report.permissions = Permissions(restricted_articles=len(audiences), checked=n_checked, unchecked=n - n_checked)
    code = OUTCOME_CODE[FORBIDDEN]
    for name, t in zip(run.models, run.tallies, strict=True):
        m = report.models.get(name)
        if m is None:
            continue
        if t.checked:
            m.forbidden_citation_rate = round(int(t.outcomes[code]) / t.n, 6)
    where = f"the asker's groups: a '{GROUPS}' column in the gold file, ';'-separated, or user_groups on the responses"
    if not n_checked:
        report.warnings.append(f"the KB gives {len(audiences)} article(s) an audience, but no response says who asked: "
                               f"no citation was checked for permission (forbidden_citation); give {where}")
    elif n_checked < n:
        report.warnings.append(f"{n - n_checked} of {n} responses do not say who asked: their "
                               f"citations were not checked for permission (forbidden_citation); give {where}")


def add_categories(report: Report, run: RunTally, questions: Sequence[GoldQuestion], bootstrap: int) -> None:
    """``report.categories`` and each ranked model's accuracy per category, when the gold file has categories."""
    cats = [g.category for g in questions]
    if all(c is None for c in cats) or report.unlabelled is not None:
        return
    names = list(dict.fromkeys(c for c in cats if c is not None))
    code = {c: i for i, c in enumerate(names)}
    cat_of_q = np.array([code.get(c, -1) for c in cats], dtype=np.int64)
    slices: dict[str, dict[str, CategoryScore]] = {name: {} for name in report.models}
    for ci, cat in enumerate(names):
        in_cat = cat_of_q == ci
        for name, t in zip(run.models, run.tallies, strict=True):
            if name not in slices:
                continue
            rows = int(t.q_n[in_cat].sum())
            if not rows:
                continue
            answered = int(np.count_nonzero(t.q_n[in_cat]))
            accuracy = round(int(t.q_hits[in_cat].sum()) / rows, 6)
            # --bootstrap 0 means "no intervals" for every figure of the report, this one too
            interval = wilson_interval(accuracy, answered) if bootstrap > 0 else None
            slices[name][cat] = CategoryScore(n=rows, n_questions=answered, accuracy=accuracy, accuracy_ci95=interval)
    report.categories = names
    for name, block in slices.items():
        report.models[name].categories = block
