"""Two runs (or two models) side by side, question by question: ``grace compare`` and the viewer's Compare page.

The repeat policy is the report's (:func:`harness.scoring.significance.per_question`
and ``score_run``'s pairwise tests): a model's result on a question is the share
of its repeats that were correct; the question counts as *correct* when more than
half of them were (a tie is a miss). A question *improved* when it was not correct
in run A and is in run B, *regressed* the other way round. Accuracy is the mean of
the per-question shares over the questions both sides answered (with every
question asked equally often, the report's accuracy), the difference gets a paired
bootstrap 95% CI over those questions (the report's seed and sample count, so a
rerun gives the same interval), and McNemar's exact test is run on the improved
and regressed counts, as the report tests two models.

A comparison only means something on one gold set: runs scored against different
gold files (their ``report.json`` gold hashes differ) are refused with the fix.
It is made from ``scores.jsonl`` as it stands: a run that a grace process is
still writing (its folder's lock is held), or whose ``responses.jsonl`` is newer
than its scores, gets a note naming it and what to do (:func:`progress_note`).
The result is one typed, versioned record (:class:`Comparison`), which ``--json``
writes as is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.run_folder.report import Report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_settings import Difference, run_differences
from harness.scoring.outcomes import HITS, REFUSE
from harness.scoring.significance import mcnemar_exact
from harness.stats.bootstrap import bootstrap_cis

COMPARISON_SCHEMA_VERSION = 1
_HIT_OUTCOMES = frozenset(HITS)


@dataclass
class RunHits:
    """One run's scores reduced to what a comparison needs: per model, per question, repeats correct and asked."""

    path: Path
    questions: list[str]  # question IDs, in the order first seen in scores.jsonl
    labels: list[str]  # each question's gold: its article ID(s) joined by ";", or REFUSE
    hits: dict[str, np.ndarray] = field(default_factory=dict)  # model -> correct repeats per question
    asked: dict[str, np.ndarray] = field(default_factory=dict)  # model -> repeats scored per question (0: never)
    # a model read as references (its scores lines carry cit_f1, ...): per figure, (sums, counts) per question over
    # the repeats that have it; absent for a GRACE model
    citations: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)

    def index(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.questions)}


def gold_label(must_refuse: object, expected: object) -> str:
    if must_refuse:
        return REFUSE
    return ";".join(expected) if isinstance(expected, list) else str(expected or "")


def read_hits(run: str | Path, models: Iterable[str] | None = None, *, strict: bool = False) -> RunHits:
    """Read ``RUN/scores.jsonl`` once: per model, how many repeats of each question were correct and asked.

    ``strict``: correct as read strictly (each row's ``strict_outcome``; the report's strict accuracy), for the
    trend of that figure (:mod:`harness.reports.trend`)."""
    folder = RunDir(run)
    if not folder.path.is_dir():
        raise GraceError(f"{folder.path}: no such run folder; give a folder 'grace run' or 'grace score' wrote")
    if not folder.scores.exists():
        raise GraceError(f"{folder.path}: no scores.jsonl yet; score the run first ('grace score "
                         f"{folder.responses} --gold GOLD.csv --kb KB --out {folder.path}', or let 'grace run' finish)")
    wanted = set(models) if models is not None else None
    index: dict[str, int] = {}
    labels: list[str] = []
    hit_lists: dict[str, list[int]] = {}
    q_lists: dict[str, list[int]] = {}
    cited: dict[str, dict[str, tuple[list[int], list[float]]]] = {}  # model -> figure -> (question, value)
    for _, row in folder.iter_scores():
        qid = row["question_id"]
        qi = index.get(qid)
        if qi is None:
            qi = index[qid] = len(labels)
            labels.append(gold_label(row.get("must_refuse"), row.get("expected_citations")))
        model = row["model"]
        if wanted is not None and model not in wanted:
            continue
        qs = q_lists.get(model)
        if qs is None:
            qs, hit_lists[model] = q_lists.setdefault(model, []), []
        qs.append(qi)
        outcome = (row.get("strict_outcome") or row["outcome"]) if strict else row["outcome"]
        hit_lists[model].append(outcome in _HIT_OUTCOMES)
        if "cit_f1" in row:  # a references line (absent from GRACE lines: their comparison is as it was)
            figures = cited.setdefault(model, {})
            for name in CITATION_FIGURES:
                value = row.get(f"cit_{name}")
                if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
                    at, values = figures.setdefault(name, ([], []))
                    at.append(qi)
                    values.append(float(value))
    out = RunHits(folder.path, list(index), labels)
    for model, qs in q_lists.items():
        q = np.asarray(qs, dtype=np.int64)
        out.asked[model] = np.bincount(q, minlength=len(labels))
        out.hits[model] = np.bincount(q, weights=np.asarray(hit_lists[model], dtype=np.float64), minlength=len(labels))
    for model, figures in cited.items():
        out.citations[model] = {}
        for name in CITATION_FIGURES:
            at, values = figures.get(name, ([], []))
            q = np.asarray(at, dtype=np.int64)
            out.citations[model][name] = (np.bincount(q, weights=np.asarray(values, dtype=np.float64),
                                                      minlength=len(labels)),
                                          np.bincount(q, minlength=len(labels)))
    return out


CITATION_FIGURES = ("f1", "precision", "recall")  # the per-answer figures a comparison reads (scores.jsonl cit_*)


class ArticleDelta(BaseModel):
    """The questions one article answers (or REFUSE: the must-refuse questions): accuracy on each side."""

    article: str  # the gold article ID (a question with several counts for each), or REFUSE for must-refuse questions
    n: int  # questions whose gold names this article (or REFUSE), answered on both sides
    accuracy_a: float  # accuracy on them in A: mean share of correct repeats
    accuracy_b: float  # accuracy on them in B
    delta: float  # accuracy_b - accuracy_a
    improved: int  # of them, questions not correct in A and correct in B
    regressed: int  # of them, questions correct in A and not correct in B


class CitationComparison(BaseModel):
    """Two models read as references, on their citation figures: per question the mean over its repeats of each
    answer's citation F1 (precision, recall), over the questions both sides have it for."""

    n_questions: int  # questions with a citation F1 on both sides: what the F1 figures and the test are over
    f1_a: float  # A's mean citation F1 on those questions
    f1_b: float  # B's
    delta: float  # f1_b - f1_a
    delta_ci: list[float] | None  # paired bootstrap 95% CI of delta; None with 0 bootstrap samples
    p_value: float  # paired permutation test (signs of the per-question differences flipped), two-sided
    significant: bool  # p_value < 0.05 (one comparison: no multiple-testing correction)
    precision_a: float | None  # A's mean citation precision over the questions both sides answered with a citation
    precision_b: float | None  # B's
    recall_a: float | None  # A's mean citation recall over the questions both sides have it for
    recall_b: float | None  # B's


class ModelComparison(BaseModel):
    """One model in both runs (or two models of one run): the change, its interval and test, and which questions."""

    model: str  # the model's name; "A vs B" when two models are compared
    model_a: str  # the model's name in run A
    model_b: str  # the model's name in run B
    n_questions: int  # answered on both sides: what every figure here is over
    accuracy_a: float  # A's accuracy on those questions: the mean share of correct repeats
    accuracy_b: float  # B's accuracy on those questions
    delta: float  # accuracy_b - accuracy_a
    delta_ci: list[float] | None  # paired bootstrap 95% CI of delta; None with 0 bootstrap samples
    mcnemar_p: float  # exact, on the improved and regressed counts
    significant: bool  # mcnemar_p < 0.05 (one comparison: no multiple-testing correction)
    improved: list[str]  # question IDs: not correct in A, correct in B
    regressed: list[str]  # correct in A, not correct in B
    articles: list[ArticleDelta] = Field(default_factory=list)  # largest change first
    # both sides read as references (scores.jsonl has their citation figures): the change in citation F1; absent
    # otherwise
    citations: CitationComparison | None = Field(None, exclude_if=lambda v: v is None)


class Comparison(BaseModel):
    """What ``grace compare --json`` writes."""

    schema_version: int = COMPARISON_SCHEMA_VERSION  # version of the file's format
    run_a: str  # run folder A, as given
    run_b: str  # run folder B, as given (the same as run_a when two models of one run are compared)
    gold_hash: str | None  # the gold set both runs were scored against (report.json gold.hash); null: no report.json
    seed: int  # random seed of the bootstrap (the reports' own unless given)
    bootstrap_samples: int  # bootstrap resamples behind delta_ci (the reports' own unless given; 0: no intervals)
    # when a question counts as correct for a model asked it several times
    repeat_policy: str = "majority of repeats correct (more than half; a tie is not correct), as the report's tests"
    models: list[ModelComparison]  # one per model present in both runs (or one for the two models of one run compared)
    only_in_a: list[str] = Field(default_factory=list)  # models only run A has: not compared
    only_in_b: list[str] = Field(default_factory=list)  # models only run B has: not compared
    # every setting the two sides were asked or scored with differently (run.json, report.json): the KB, gold,
    # questions, retriever, k, template, the compared models' parameters...; answers-changing ones first
    differences: list[Difference] = Field(default_factory=list)
    # what to know before reading the figures, e.g. a run still being written
    notes: list[str] = Field(default_factory=list)

    def __getitem__(self, model: str) -> ModelComparison:
        for m in self.models:
            if m.model == model:
                return m
        raise KeyError(model)


def _report(run: Path) -> Report | None:
    folder = RunDir(run)
    return folder.read_report() if folder.report.exists() else None


def check_same_gold(a: Path, b: Path, report_a: Report | None, report_b: Report | None) -> str | None:
    """The gold hash both runs were scored against; a ``GraceError`` with the fix when they differ."""
    ha = report_a.gold.hash if report_a else None
    hb = report_b.gold.hash if report_b else None
    if ha and hb and ha != hb:
        pa, pb = report_a.gold.path, report_b.gold.path
        raise GraceError(
            f"{a} and {b} were scored against different gold sets ({pa or 'in memory'}, hash {ha[:12]}; "
            f"{pb or 'in memory'}, hash {hb[:12]}): a question-by-question comparison needs one gold set. Re-score "
            f"one run against the other's gold file: grace score {RunDir(b).responses} --gold {pa or 'GOLD.csv'} "
            f"--kb KB --out NEW_FOLDER")
    return ha or hb


def progress_note(run: str | Path, side: str, report: Report | None = None,
                  then: str = "run grace compare again") -> str | None:
    """Why ``run``'s scores may be older than its answers, with what to do, or None: a grace process holds the
    folder's lock (``grace run`` still going), or ``responses.jsonl`` changed since it was scored."""
    folder = RunDir(run)
    writer = folder.writer()
    if writer:
        return (f"{side} {folder.path} is being written now ({writer}): compared on its scores.jsonl as it stands, "
                f"without the answers still to come. Wait for that command to finish (grace run scores its answers "
                f"when it ends), then {then}")
    if folder.scores_behind():
        gold = (report.gold.path if report else None) or "GOLD.csv"
        kb = (report.kb.path if report else None) or "KB"
        return (f"{side} {folder.path}: its responses.jsonl changed since it was scored, so answers on file are "
                f"not scored yet and are left out of this comparison. Score them (grace score {folder.responses} "
                f"--gold {gold} --kb {kb} --out {folder.path}), then {then}")
    return None


def compare_runs(run_a: str | Path, run_b: str | Path, models: Sequence[str] = (), *, seed: int | None = None,
                 bootstrap: int | None = None) -> Comparison:
    """Every model present in both runs (or ``models``), run A against run B."""
    a, b = Path(run_a), Path(run_b)
    report_a, report_b = _report(a), _report(b)
    gold_hash = check_same_gold(a, b, report_a, report_b)
    wanted = list(dict.fromkeys(models))
    hits_a, hits_b = _read_both(a, b, wanted or None)
    for name in wanted:
        for side, hits in ((a, hits_a), (b, hits_b)):
            if name not in hits.hits:
                raise GraceError(f"{side}: no model {name!r} in scores.jsonl; it has "
                                 f"{', '.join(sorted(read_hits(side).hits)) or 'none'}")
    order = [m.model for m in report_b.ranked()] if report_b else []
    both = [m for m in dict.fromkeys(order + sorted(hits_b.hits)) if m in hits_a.hits and m in hits_b.hits]
    names = wanted or both
    seed, bootstrap = _stats_settings(report_a, report_b, seed, bootstrap)
    result = Comparison(run_a=str(a), run_b=str(b), gold_hash=gold_hash, seed=seed, bootstrap_samples=bootstrap,
                        models=compare_sides([(hits_a, m, hits_b, m, m) for m in names], seed, bootstrap),
                        only_in_a=sorted(set(hits_a.hits) - set(hits_b.hits)),
                        only_in_b=sorted(set(hits_b.hits) - set(hits_a.hits)))
    progress = [progress_note(a, "run A", report_a), progress_note(b, "run B", report_b) if b != a else None]
    result.differences = run_differences(RunDir(a).read_run_info(), report_a, RunDir(b).read_run_info(), report_b,
                                         [(m, m) for m in names])
    result.notes = [n for n in progress if n] + _notes(result, hits_a, hits_b)
    return result


PARALLEL_BYTES = 32 << 20  # two scores files at least this big are read by two processes at once


def _read_both(a: Path, b: Path, models: list[str] | None) -> tuple[RunHits, RunHits]:
    """Both runs' hits; two big files are read side by side (a million lines each: ~3 s apiece on one core)."""
    sizes = [RunDir(p).scores.stat().st_size if RunDir(p).scores.exists() else 0 for p in (a, b)]
    if min(sizes) < PARALLEL_BYTES or (os.cpu_count() or 1) < 2 or sys.platform != "linux":
        return read_hits(a, models), read_hits(b, models)
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    # a fork starts at once with everything imported; forking a process with other threads running can deadlock
    context = multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        other = pool.submit(read_hits, b, models)
        first = read_hits(a, models)
        return first, other.result()


def compare_models(run: str | Path, model_a: str, model_b: str, *, seed: int | None = None,
                   bootstrap: int | None = None) -> Comparison:
    """Two models of one run, on the questions both answered."""
    path = Path(run)
    report = _report(path)
    hits = read_hits(path, [model_a, model_b])
    for name in (model_a, model_b):
        if name not in hits.hits:
            raise GraceError(f"{path}: no model {name!r} in scores.jsonl; it has "
                             f"{', '.join(sorted(read_hits(path).hits)) or 'none'}")
    seed, bootstrap = _stats_settings(report, report, seed, bootstrap)
    label = f"{model_a} vs {model_b}"
    note = progress_note(path, "the run", report)
    info = RunDir(path).read_run_info()
    result = Comparison(run_a=str(path), run_b=str(path), gold_hash=report.gold.hash if report else None, seed=seed,
                        bootstrap_samples=bootstrap,
                        models=compare_sides([(hits, model_a, hits, model_b, label)], seed, bootstrap),
                        differences=run_differences(info, report, info, report, [(model_a, model_b)]),
                        notes=[note] if note else [])
    result.notes += _asked_otherwise(result, "model B", "model A")
    return result


def _stats_settings(ra: Report | None, rb: Report | None, seed: int | None, bootstrap: int | None) -> tuple[int, int]:
    """The reports' own seed and bootstrap size unless given: the comparison's interval is reproducible."""
    base = rb or ra
    return (seed if seed is not None else (base.seed if base else 0),
            bootstrap if bootstrap is not None else (base.bootstrap_samples if base else 2000))


Side = tuple[RunHits, str, RunHits, str, str]  # run A, model in A, run B, model in B, the comparison's name


def compare_sides(sides: list[Side], seed: int, bootstrap: int) -> list[ModelComparison]:
    """One :class:`ModelComparison` per side pair; pairs on the same questions share their bootstrap resamples."""
    prepared = []
    for hits_a, model_a, hits_b, model_b, name in sides:
        to_b = hits_b.index()
        qa = [(i, to_b.get(q, -1)) for i, q in enumerate(hits_a.questions)]
        ia = np.array([i for i, j in qa if j >= 0], dtype=np.int64)
        ib = np.array([j for i, j in qa if j >= 0], dtype=np.int64)
        asked_a, asked_b = hits_a.asked[model_a][ia], hits_b.asked[model_b][ib]
        keep = (asked_a > 0) & (asked_b > 0)
        ia, ib = ia[keep], ib[keep]
        rate_a = hits_a.hits[model_a][ia] / hits_a.asked[model_a][ia]
        rate_b = hits_b.hits[model_b][ib] / hits_b.asked[model_b][ib]
        prepared.append((name, model_a, model_b, hits_a, ia, rate_a, rate_b))
    cis: dict[int, list[float] | None] = {}
    groups: dict[bytes, list[int]] = {}
    for k, p in enumerate(prepared):
        groups.setdefault(p[4].tobytes(), []).append(k)
    for members in groups.values():
        diffs = [prepared[k][6] - prepared[k][5] for k in members]
        for k, ci in zip(members, bootstrap_cis(diffs, bootstrap, seed), strict=True):
            cis[k] = ci
    out = []
    for k, (name, model_a, model_b, hits_a, ia, rate_a, rate_b) in enumerate(prepared):
        ok_a, ok_b = rate_a > 0.5, rate_b > 0.5
        improved, regressed = ~ok_a & ok_b, ok_a & ~ok_b
        qids = [hits_a.questions[i] for i in ia]
        n = int(ia.size)
        acc_a = float(rate_a.mean()) if n else 0.0
        acc_b = float(rate_b.mean()) if n else 0.0
        p = mcnemar_exact(int(regressed.sum()), int(improved.sum()))
        out.append(ModelComparison(
            model=name, model_a=model_a, model_b=model_b, n_questions=n, accuracy_a=round(acc_a, 6),
            accuracy_b=round(acc_b, 6), delta=round(acc_b - acc_a, 6), delta_ci=cis[k], mcnemar_p=round(p, 8),
            significant=p < 0.05, improved=[qids[i] for i in np.flatnonzero(improved)],
            regressed=[qids[i] for i in np.flatnonzero(regressed)],
            articles=_by_article([hits_a.labels[i] for i in ia], rate_a, rate_b, improved, regressed),
            citations=_citations(hits_a, model_a, hits_b, model_b, seed, bootstrap)))
    return out


def _citations(hits_a: RunHits, model_a: str, hits_b: RunHits, model_b: str, seed: int,
               bootstrap: int) -> CitationComparison | None:
    """Both sides' citation F1 per question, paired: the change, its bootstrap CI and a permutation test; None
    unless both models were read as references."""
    fa, fb = hits_a.citations.get(model_a), hits_b.citations.get(model_b)
    if fa is None or fb is None:
        return None
    to_b = hits_b.index()
    pairs = [(i, to_b[q]) for i, q in enumerate(hits_a.questions) if q in to_b]
    ia = np.array([i for i, _ in pairs], dtype=np.int64)
    ib = np.array([j for _, j in pairs], dtype=np.int64)

    def means(name: str) -> tuple[np.ndarray, np.ndarray]:
        (sa, na), (sb, nb) = fa[name], fb[name]
        keep = (na[ia] > 0) & (nb[ib] > 0)
        return sa[ia][keep] / na[ia][keep], sb[ib][keep] / nb[ib][keep]

    a, b = means("f1")
    if a.size == 0:
        return None
    diff = b - a
    ci = bootstrap_cis([diff], bootstrap, seed)[0]
    pa, pb = means("precision")
    ra, rb = means("recall")

    def mean(x: np.ndarray) -> float | None:
        return round(float(x.mean()), 6) if x.size else None

    p = permutation_p(diff, seed)
    return CitationComparison(n_questions=int(a.size), f1_a=round(float(a.mean()), 6), f1_b=round(float(b.mean()), 6),
                              delta=round(float(diff.mean()), 6), delta_ci=ci, p_value=round(p, 8),
                              significant=p < 0.05, precision_a=mean(pa), precision_b=mean(pb), recall_a=mean(ra),
                              recall_b=mean(rb))


PERMUTATIONS = 10_000


def permutation_p(diff: np.ndarray, seed: int, n: int = PERMUTATIONS) -> float:
    """Two-sided p-value of a mean paired difference of zero: the share of random sign flips of the per-question
    differences whose mean is at least as far from zero (the observed one counted in, so never 0). Seeded."""
    observed = abs(float(diff.mean()))
    if observed == 0.0 or diff.size == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    extreme = 0
    chunk = max(1, 1_000_000 // diff.size)
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        signs = rng.integers(0, 2, size=(k, diff.size)) * 2 - 1
        extreme += int((np.abs(signs @ diff) / diff.size >= observed - 1e-12).sum())
    return (extreme + 1) / (n + 1)


def _by_article(labels: list[str], rate_a: np.ndarray, rate_b: np.ndarray, improved: np.ndarray,
                regressed: np.ndarray) -> list[ArticleDelta]:
    """Per gold article (a question labelled with several counts for each of them; REFUSE for must-refuse ones)."""
    if not labels:
        return []
    names: dict[str, int] = {}
    split: dict[str, list[int]] = {}
    pos: list[int] = []
    art: list[int] = []
    for i, label in enumerate(labels):
        ids = split.get(label)
        if ids is None:
            ids = split[label] = [names.setdefault(a, len(names)) for a in label.split(";") if a] or \
                [names.setdefault("", len(names))]
        pos += [i] * len(ids)
        art += ids
    q, a = np.asarray(pos, dtype=np.int64), np.asarray(art, dtype=np.int64)
    k = len(names)
    n = np.bincount(a, minlength=k)
    sums_a, sums_b = np.bincount(a, weights=rate_a[q], minlength=k), np.bincount(a, weights=rate_b[q], minlength=k)
    up = np.bincount(a, weights=improved[q].astype(np.float64), minlength=k)
    down = np.bincount(a, weights=regressed[q].astype(np.float64), minlength=k)
    rows = [ArticleDelta(article=name, n=int(n[j]), accuracy_a=round(float(sums_a[j] / n[j]), 6),
                         accuracy_b=round(float(sums_b[j] / n[j]), 6),
                         delta=round(float((sums_b[j] - sums_a[j]) / n[j]), 6), improved=int(up[j]),
                         regressed=int(down[j])) for name, j in names.items()]
    rows.sort(key=lambda r: (-abs(r.delta), -r.n, r.article))
    return rows


def _asked_otherwise(result: Comparison, b: str = "run B", a: str = "run A") -> list[str]:
    """The caveat that goes with a difference in what was asked: a change may be the setting's, not the model's."""
    asked = [d.name() for d in result.differences if d.kind == "answers"]
    return [f"{b} was asked otherwise than {a} ({', '.join(asked)}: see differences): a change in accuracy may come "
            "from that, not from the model alone"] if asked else []


def _notes(result: Comparison, a: RunHits, b: RunHits) -> list[str]:
    notes = _asked_otherwise(result)
    if result.only_in_a:
        notes.append(f"only in run A (not compared): {', '.join(result.only_in_a)}")
    if result.only_in_b:
        notes.append(f"only in run B (not compared): {', '.join(result.only_in_b)}")
    total = len(set(a.questions) | set(b.questions))
    for m in result.models:
        if m.n_questions < total:
            notes.append(f"{m.model}: compared on the {m.n_questions} of {total} questions both runs answered")
    return notes


def write_comparison(path: str | Path, comparison: Comparison) -> None:
    atomic_write_text(Path(path), comparison.model_dump_json(indent=1) + "\n")
