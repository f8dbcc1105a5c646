"""One leaderboard across run folders: the same model under several configurations as rows of one table, with the
report's paired tests between every two rows (``grace report RUN_A RUN_B ...``, ``grace.combine_runs``).

A run folder is one configuration of the prompts: every model in it is asked the same questions from the same
retrieved articles with the same template and k (``grace run`` refuses to mix another k or template into a
folder), which is what makes its models comparable question by question. "k=3 or k=1?", "inline or JSON?",
"which retriever?" are then questions across folders: run each configuration into its own folder (the response
cache answers whatever two configurations share, so nothing is paid twice) and read them here as one board.

Rows: every model of every run, named by the model and by what sets its run apart from the other runs that have
the same model, as :mod:`harness.run_folder.run_settings` names a difference (``gpt-x · k=1`` and ``gpt-x ·
k=3``; ``gpt-x · temperature=0.7``). A model in one run only keeps its name; runs that differ in no recorded
setting are told apart by their IDs.

Figures: a row's are its run's ``report.json`` figures for the model (its accuracy and Wilson interval, cost,
latency...), so the board never disagrees with a run's own report. Ranks, significance letters and the pairs are
the board's, by the report's own code (:mod:`harness.scoring.significance`): per question the majority of a row's
repeats, McNemar's exact test on the questions both rows answered, Holm-corrected over every pair, compact letters.
All the runs must be scored against one gold set (``grace compare``'s rule); a run that asked a sample of it
(``grace run --sample``) is a row over its questions, and is tested against the others on those.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from harness.core.errors import GraceError
from harness.run_folder.report import Confusion, ModelReport, Pair, Report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import RunInfo
from harness.run_folder.run_settings import Setting, model_entry, model_settings, run_settings
from harness.scoring.run_comparison import progress_note, read_hits
from harness.scoring.significance import compact_letters, majority_vote, pairwise_tests

BOARD_SCHEMA_VERSION = 1
LABEL_VALUE = 32  # characters of a setting's value a row's name shows
# settings that never name a row: they change no answer (how calls were made) or say little (grace's version, the
# bootstrap size); runs that differ only in them are told apart by their IDs
_NOT_IN_NAMES = frozenset({"grace", "bootstrap samples"})


class BoardRun(BaseModel):
    """One run folder of the board."""

    id: str  # the run's ID (its folder's name, made unique)
    path: str  # the run folder
    sample: str | None = None  # grace run --sample: "30 of 90 questions, sampled with seed 0 by category"


class BoardRow(BaseModel):
    """One model of one run: a row of the board."""

    row: str  # the row's name: the model's, and what sets its run apart ("gpt-x · k=1")
    run: str  # the run's ID
    model: str  # the model's name in that run
    # what sets this row apart from the same model's other rows (setting -> value, as run_settings words them); {}:
    # the model is in one run only
    settings: dict[str, str | None] = Field(default_factory=dict)
    # the run's report.json figures for the model, rank and significance group the board's (per-class scores and
    # the confusion matrix are left out: they are in the run's own report)
    figures: ModelReport


class VaryingSetting(BaseModel):
    """A run-wide setting the board's runs were not all asked or scored with alike."""

    setting: str  # "k", "template", "questions", ...
    kind: str  # answers | scoring | calls (harness.run_folder.run_settings)
    values: dict[str, str | None]  # run ID -> its value (None: not set, or not recorded)


class Board(BaseModel):
    """What ``grace report RUN_A RUN_B ... --out BOARD.json`` writes; ``grace.combine_runs()`` returns it."""

    schema_version: int = BOARD_SCHEMA_VERSION  # version of this format
    gold_hash: str  # the gold set every run was scored against
    gold_path: str | None  # its file, as the first run recorded it
    runs: list[BoardRun]  # the runs, in the order given
    rows: list[BoardRow]  # best first: accuracy, then strict accuracy, then name
    pairwise: list[Pair]  # McNemar exact for every two rows (a above b), Holm-corrected over all of them
    varying: list[VaryingSetting] = Field(default_factory=list)  # the run-wide settings the runs differ in
    notes: list[str] = Field(default_factory=list)  # what to know before reading the figures

    def __getitem__(self, row: str) -> BoardRow:
        for r in self.rows:
            if r.row == row:
                return r
        raise KeyError(row)

    def pair(self, a: str, b: str) -> Pair:
        """The test between rows ``a`` and ``b`` (either order)."""
        for p in self.pairwise:
            if {p.a, p.b} == {a, b}:
                return p
        raise KeyError((a, b))


class _Source:
    """One run as the board reads it: its report, run.json and settings."""

    def __init__(self, rid: str, path: Path):
        folder = RunDir(path)
        if not folder.report.exists():
            raise GraceError(f"{path}: not scored yet (no report.json); score it first ('grace score', or let 'grace "
                             "run' finish), or leave it out")
        self.id, self.path = rid, Path(path)
        self.report: Report = folder.read_report()
        if self.report.unlabelled is not None:
            raise GraceError(f"{path}: unlabelled (imported logs without gold): it has no accuracy to rank; import "
                             "it again with --gold, or leave it out")
        self.info: RunInfo | None = folder.read_run_info()
        self.settings: list[Setting] = run_settings(self.info, self.report)

    def model_settings(self, model: str) -> list[Setting]:
        return model_settings(model_entry(self.info, model))


def combine(runs: Sequence[tuple[str, str | Path]], models: Sequence[str] = ()) -> Board:
    """The board of ``runs`` (ID, folder), every model of each (or only ``models``); raises ``GraceError`` when the
    runs were scored against different gold sets, or one is not scored."""
    if len(runs) < 1:
        raise GraceError("no run to put on a board: give run folders")
    sources = [_Source(rid, path) for rid, path in runs]
    _check_one_gold(sources)
    wanted = list(dict.fromkeys(models))
    entries = [(s, m.model) for s in sources for m in s.report.ranked() if not wanted or m.model in wanted]
    if wanted:
        have = {name for s in sources for name in s.report.models}
        missing = [m for m in wanted if m not in have]
        if missing:
            raise GraceError(f"model {missing[0]!r} is in none of these runs; they have {', '.join(sorted(have))}")
    if not entries:
        raise GraceError("no ranked model in these runs (every model failed, or none was scored)")
    names = _row_names(entries)
    rows = [BoardRow(row=names[i][0], run=s.id, model=m, settings=names[i][1], figures=_figures(s.report.models[m]))
            for i, (s, m) in enumerate(entries)]
    for r in rows:
        r.figures.model = r.row
    votes = _majority(entries, [r.row for r in rows])
    rows.sort(key=lambda r: (-(r.figures.accuracy or 0.0), -(r.figures.strict_accuracy or 0.0), r.row))
    order = [r.row for r in rows]
    pairs = pairwise_tests(order, votes)
    letters = compact_letters(order, {frozenset((p["a"], p["b"])) for p in pairs if p["significant"]})
    for r in rows:
        r.figures.rank = 1 + sum((o.figures.accuracy or 0.0) > (r.figures.accuracy or 0.0) for o in rows)
        r.figures.significance_group = letters[r.row]
    first = sources[0].report
    return Board(gold_hash=first.gold.hash, gold_path=first.gold.path,
                 runs=[BoardRun(id=s.id, path=str(s.path), sample=s.report.sample.describe() if s.report.sample
                                else None) for s in sources],
                 rows=rows, pairwise=[Pair(**p) for p in pairs], varying=_varying(sources),
                 notes=_notes(sources, rows))


def _check_one_gold(sources: list[_Source]) -> None:
    by_gold: dict[str, list[_Source]] = {}
    for s in sources:
        by_gold.setdefault(s.report.gold.hash, []).append(s)
    if len(by_gold) > 1:
        sets = "; ".join(f"{h[:12]} ({runs[0].report.gold.path or 'in memory'}): {', '.join(r.id for r in runs)}"
                         for h, runs in by_gold.items())
        raise GraceError(f"these runs were scored against {len(by_gold)} gold sets ({sets}): a board's paired tests "
                         "need one gold set. Give the runs of one, or re-score the others against its gold file "
                         "(grace score RUN/responses.jsonl --gold GOLD.csv --kb KB --out NEW_FOLDER)")


def _figures(m: ModelReport) -> ModelReport:
    """The run's figures for the board: without the per-class scores and confusion matrix (a board of ten rows
    would hold ten of them; they are in each run's report), nor prediction-powered figures (the board ranks by
    accuracy over the human labels, as each run's leaderboard lists it)."""
    return m.model_copy(update={"per_class": {}, "confusion": Confusion(labels=[], matrix=[]), "ppi": None}, deep=True)


def _row_names(entries: list[tuple[_Source, str]]) -> list[tuple[str, dict[str, str | None]]]:
    """Each entry's row name and the settings that set it apart from the same model's other entries."""
    out: list[tuple[str, dict[str, str | None]]] = [("", {})] * len(entries)
    groups: dict[str, list[int]] = {}
    for i, (_, model) in enumerate(entries):
        groups.setdefault(model, []).append(i)
    for model, members in groups.items():
        if len(members) == 1:
            out[members[0]] = (model, {})
            continue
        values = [{s.name: s.value for s in (src.settings + src.model_settings(model))
                   if s.kind != "calls" and s.name not in _NOT_IN_NAMES} for src, _ in (entries[i] for i in members)]
        keys = [k for k in dict.fromkeys(k for v in values for k in v)
                if len({v.get(k) for v in values}) > 1 and all(v.get(k) is not None or k not in v for v in values)]
        shown = {k: _plain([v.get(k) for v in values]) for k in keys}
        for j, (i, v) in enumerate(zip(members, values, strict=True)):
            apart = {k: v.get(k) for k in keys}
            label = ", ".join(f"{k}={_cut(shown[k][j])}" for k in keys)
            out[i] = (f"{model} · {label}" if label else f"{model} · {entries[i][0].id}", apart)
        taken = [out[i][0] for i in members]
        for i in members:  # two runs alike in every named setting: their IDs tell them apart
            if taken.count(out[i][0]) > 1:
                out[i] = (f"{out[i][0]} · {entries[i][0].id}", out[i][1])
    return out


def _plain(values: list[str | None]) -> list[str | None]:
    """Values without their trailing `` (...)`` detail (a template's hash beside its name, a KB's article count)
    when they still tell the rows apart without it: ``grounded-json.v1``, not ``grounded-json.v1 (8745daec1711)``."""
    bare = [v.rsplit(" (", 1)[0] if v and v.endswith(")") and " (" in v else v for v in values]
    return bare if len(set(bare)) == len(set(values)) else values


def _cut(value: str | None) -> str:
    if value is None:
        return "not set"
    return value if len(value) <= LABEL_VALUE else value[:LABEL_VALUE - 1] + "…"


def _majority(entries: list[tuple[_Source, str]], names: list[str]) -> dict[str, np.ndarray]:
    """Per row, per question of every run (by question ID): 1 when the majority of its repeats hit, 0 when not, -1
    when it did not answer it (the report's rule: a tie is a miss)."""
    wanted: dict[Path, list[str]] = {}
    for src, model in entries:
        wanted.setdefault(src.path, []).append(model)
    hits = {path: read_hits(path, models) for path, models in wanted.items()}
    index: dict[str, int] = {}
    for h in hits.values():
        for q in h.questions:
            index.setdefault(q, len(index))
    out = {}
    for (src, model), name in zip(entries, names, strict=True):
        h = hits[src.path]
        if model in h.hits:
            at = np.asarray([index[q] for q in h.questions], dtype=np.int64)
            asked = h.asked[model] > 0
            out[name] = majority_vote(len(index), at[asked], h.hits[model][asked] / h.asked[model][asked])
        else:
            out[name] = np.full(len(index), -1, dtype=np.int8)
    return out


def _varying(sources: list[_Source]) -> list[VaryingSetting]:
    values = [{s.name: s for s in src.settings} for src in sources]
    out = []
    for name in dict.fromkeys(n for v in values for n in v):
        seen = {src.id: (v[name].value if name in v else None) for src, v in zip(sources, values, strict=True)}
        if len(set(seen.values())) > 1:
            kind = next(v[name].kind for v in values if name in v)
            out.append(VaryingSetting(setting=name, kind=kind, values=seen))
    return out


def _notes(sources: list[_Source], rows: list[BoardRow]) -> list[str]:
    notes = [n for s in sources if (n := progress_note(s.path, f"run {s.id}", s.report, "run grace report again"))]
    sizes = {r.row: r.figures.n_questions for r in rows}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{row} {n:,}" for row, n in sizes.items())
        notes.append(f"the rows are over different numbers of questions ({shown}): each figure is over its own run's "
                     "questions, and each pair is tested on the questions both rows answered")
    failed = [f"{name} ({s.id})" for s in sources for name in s.report.failed_models]
    if failed:
        notes.append(f"not ranked (every call failed): {', '.join(failed)}")
    return notes
