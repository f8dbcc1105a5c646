"""``grace annotations sample``: draw the questions humans label, at random, and record the draw.

A prediction-powered leaderboard (``grace score --gold HUMAN --machine-gold MACHINE``) corrects machine labels
by their error on a subset of questions humans labelled; the correction is unbiased only if that subset is a
random draw from all the questions, fixed before anyone saw a label. So the subset is drawn here, seeded, and
the draw is written down (``SUBSET.draw.json``, :mod:`kb_builder.gold_draw`): the scorer finds it and checks
that the human labels are the drawn questions.

A uniform draw picks ``n`` questions with equal chance. A stratified one (``--by category``) draws within each
value of a column: each stratum gets its share of ``n`` (at least two, so its own error can be measured), and
the record keeps each stratum's share of the questions, which the scorer weighs the strata by.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.core.clock import now
from harness.core.errors import GraceError, where
from harness.core.files import csv_text
from harness.core.hashing import file_hash
from harness.core.version import __version__
from kb_builder.gold import QUESTION_COLUMNS, QUESTION_ID, check_unique, read_table
from kb_builder.gold_draw import DrawRecord, Stratum, draw_path

MIN_PER_STRATUM = 2  # a stratum's human labels: fewer leave its machine error unmeasured
FEW_LABELS = 30  # below this the intervals' normal approximation is rough (the scorer warns too)
UNIFORM = "(all)"


def allocate(sizes: list[int], n: int, least: int = MIN_PER_STRATUM) -> list[int]:
    """Each stratum's share of ``n``: proportional to its size, at least ``least`` (or all of a smaller stratum),
    largest remainders first; the total is ``n``."""
    total = sum(sizes)
    floor = [min(s, least) for s in sizes]
    if sum(floor) > n:
        raise GraceError(f"-n {n} is too few for {len(sizes)} strata: each needs {least} human labels "
                         f"(at least {sum(floor)} in all); draw more, or stratify by a coarser column")
    exact = [n * s / total for s in sizes]
    alloc = [max(f, min(s, int(e))) for f, s, e in zip(floor, sizes, exact, strict=True)]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - int(exact[i])), i))
    while sum(alloc) < n:  # largest remainders first, then anywhere with room
        for i in order:
            if sum(alloc) < n and alloc[i] < sizes[i]:
                alloc[i] += 1
    while sum(alloc) > n:  # the floors pushed it over: take from the strata furthest above their share
        i = max((i for i in range(len(sizes)) if alloc[i] > floor[i]), key=lambda i: (alloc[i] - exact[i], -i))
        alloc[i] -= 1
    return alloc


def draw(questions: str | Path, n: int, seed: int, by: str | None = None,
         subset_name: str = "") -> tuple[list[str], list[dict[str, str]], DrawRecord]:
    """The source's header, the drawn rows (as written, in file order) and the record of the draw."""
    path = Path(questions)
    if path.suffix.lower() not in {".csv", ".tsv"}:
        raise GraceError(f"{path}: give a CSV with {', '.join(QUESTION_COLUMNS)} columns (the drawn questions are "
                         "named by their question_id)")
    header, rows = read_table(path, QUESTION_COLUMNS)
    seen: dict[str, int] = {}
    ids = []
    for line, row in rows:
        qid = (row.get(QUESTION_ID) or "").strip()
        if not qid:
            raise GraceError(f"{where(path, line)}: empty {QUESTION_ID}")
        check_unique(path, line, qid, seen)
        ids.append(qid)
    if by is not None and by not in header:
        raise GraceError(f"{where(path, 1)}: no column {by!r} to stratify by; the header has {', '.join(header)}")
    if not 1 <= n <= len(ids):
        raise GraceError(f"-n must be between 1 and the {len(ids)} questions of {path}, got {n}")
    groups: dict[str, list[int]] = {}
    for i, (_, row) in enumerate(rows):
        groups.setdefault((row.get(by) or "").strip() or "(no category)" if by else UNIFORM, []).append(i)
    names = list(groups)
    alloc = allocate([len(groups[g]) for g in names], n) if by else [n]
    chosen = pick(groups, alloc, seed)
    strata = [Stratum(name=name, population=len(groups[name]), drawn=k, weight=round(len(groups[name]) / len(ids), 12),
                      question_ids=[ids[i] for i in groups[name]]) for name, k in zip(names, alloc, strict=True)]
    record = DrawRecord(created_at=now(), grace_version=__version__,
                        source=str(path), source_hash=file_hash(path), subset=subset_name, n=n, seed=seed, by=by,
                        strata=strata, drawn=[ids[i] for i in chosen])
    return header, [rows[i][1] for i in chosen], record


def pick(groups: dict[str, list[int]], alloc: list[int], seed: int) -> list[int]:
    """The drawn items, in order: ``alloc[i]`` of the ``i``-th stratum's members (``groups``' values, in order),
    at random. Seeded: the same strata, shares and seed draw the same items (a run's --sample, a labelled subset)."""
    rng = np.random.default_rng(seed)
    picked: set[int] = set()
    for members, k in zip(groups.values(), alloc, strict=True):
        picked.update(members[j] for j in rng.choice(len(members), size=k, replace=False).tolist())
    return sorted(picked)


def render_subset(header: list[str], rows: list[dict[str, str]]) -> str:
    return csv_text(header, rows)


def record_path(subset: str | Path) -> Path:
    return draw_path(subset)
