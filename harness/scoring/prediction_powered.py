"""The report's prediction-powered figures: a human-labelled subset and machine labels for every question.

``grace score --gold HUMAN --machine-gold MACHINE`` scores each response twice
from the one pass over the file: against the human label where there is one
(the ordinary report, over those questions only), and against the machine label
of every question (a suggestion of ``grace annotations suggest``, or a
gold-format file of model or LLM labels). A machine label that says "must
refuse" is a label like any other: a refusal is then the hit. A question with no
usable machine label (the models split, the labeler failed) counts each answer
as a miss under the machine label: any fixed rule is a valid prediction for
PPI, and this one is simple to state. :mod:`harness.scoring.ppi` then corrects
the machine-label figures by their error on the human-labelled questions.

What can go wrong is said in the report's warnings, shown by every view: a human
subset that ``grace annotations sample`` did not draw (or whose labels are not
the drawn questions), one smaller than 30, and one on which the machine labels
never disagree with the humans (then there is no error to learn from, and the
interval is only as good as the hope that the machine is never wrong).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np

from harness.run_folder.report import ModelPpi, PpiDraw, PpiFigure, PpiPair, PredictionPowered, Report
from harness.scoring.ppi import Estimate, calibration, calibration_grad, calibration_terms, estimate
from harness.scoring.significance import compact_letters, holm
from harness.scoring.tallies import PpiTally, RunTally
from harness.stats.bootstrap import ALPHA
from kb_builder.gold import GoldQuestion
from kb_builder.gold_draw import DrawRecord, find_draw

MIN_HUMAN_LABELS = 30
METHOD = ("PPI++ (Angelopoulos et al. 2023): each figure computed with the machine labels over every question, "
          "corrected by the machine labels' error on the human-labelled questions, the machine labels weighed by a "
          "power-tuning lambda (0: human labels only); 95% normal intervals")


@dataclass(frozen=True)
class MachineLabel:
    citations: tuple[str, ...] = ()  # the articles that answer the question, as the machine says
    must_refuse: bool = False  # the machine says no article answers it (REFUSE)
    # the gold's citations_needed: "any" (one of the articles answers) or "all" (an answer cites every one)
    citations_needed: str = "any"


@dataclass(frozen=True)
class MachineLabels:
    """A machine-label file as read (``annotations.machine_labels.read_machine_labels``): every question it lists,
    and the usable label of each question that has one."""

    path: str
    hash: str
    format: str  # "suggestions" or "gold"
    source: str  # who labelled (the suggestions' source column, or the file)
    questions: dict[str, str]  # question_id -> question text, in file order
    labels: dict[str, MachineLabel] = field(default_factory=dict)


def population(human: Sequence[GoldQuestion], machine: MachineLabels) -> list[GoldQuestion]:
    """Every question to score: the human-labelled ones first (their labels), then the machine file's others
    (no label: the row pass judges them label-free, and their hits come from the machine labels)."""
    seen = {g.question_id for g in human}
    return list(human) + [GoldQuestion(question_id=qid, question=text) for qid, text in machine.questions.items()
                          if qid not in seen]


def asked_questions(human: Sequence[GoldQuestion], machine: MachineLabels) -> list[GoldQuestion]:
    """Every question a run asks with machine labels: the human-labelled ones, then the others carrying their
    machine label (what a baseline fitting a threshold on labels reads; none when the machine has none)."""
    out = population(human, machine)
    for i in range(len(human), len(out)):
        m = machine.labels.get(out[i].question_id)
        if m is not None:
            out[i] = GoldQuestion(question_id=out[i].question_id, question=out[i].question,
                                  expected_citations=[] if m.must_refuse else list(m.citations),
                                  must_refuse=m.must_refuse, citations_needed=m.citations_needed)
    return out


def _agrees(g: GoldQuestion, m: MachineLabel | None) -> bool:
    if m is None:
        return False
    if g.must_refuse or m.must_refuse:
        return g.must_refuse and m.must_refuse
    return bool(set(g.expected_citations) & set(m.citations))


def _figure(e: Estimate | None) -> PpiFigure:
    if e is None:
        return PpiFigure(value=None, ci95=None, human_only=None, human_only_ci95=None, lam=None, effective_labels=None)
    eff = e.effective_labels
    return PpiFigure(value=round(e.value, 6), ci95=[round(e.low, 6), round(e.high, 6)], human_only=round(e.classical, 6),
                     human_only_ci95=[round(e.classical_low, 6), round(e.classical_high, 6)], lam=round(e.lam, 6),
                     effective_labels=None if eff is None else round(eff, 2))


@dataclass
class _Design:
    """Which questions are human-labelled, and the strata (a stratified draw) their estimates are weighed by."""

    n_human: int
    stratum: np.ndarray  # per question (population order), its stratum; all 0 for a uniform draw
    weights: np.ndarray

    def split(self, answered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        human = answered < self.n_human
        return human, ~human

    def kwargs(self, answered: np.ndarray, human: np.ndarray) -> dict:
        if self.weights.size == 1:
            return {}
        return {"strata": self.stratum[answered[human]], "strata_unlabelled": self.stratum[answered[~human]],
                "weights": self.weights}


def machine_keys(questions: Sequence[GoldQuestion], machine: MachineLabels, names: list[str]) -> np.ndarray:
    """Every machine label as ``question * len(names) + label code`` (sorted): a row whose predicted label is one
    of its question's is a hit under the machine label (the tallies count them in the one pass over the rows). A
    label requiring all of several articles (``citations_needed = all``) has no key: one predicted article is no
    hit under it, as the outcome of such a question is no hit."""
    return np.unique(np.array(_machine_labels(questions, machine, names)[0], dtype=np.int64))


def _machine_labels(questions: Sequence[GoldQuestion], machine: MachineLabels,
                    names: list[str]) -> tuple[list[int], np.ndarray, set[str]]:
    """The machine labels' keys (see :func:`machine_keys`), each question's machine must-refuse, and the machine's
    article IDs that are not KB articles."""
    width = len(names)
    code = {name: i for i, name in enumerate(names[:-2])}
    refuse_code = len(names) - 2
    keys, must_hat = [], np.zeros(len(questions))
    bad_ids: set[str] = set()
    for i, g in enumerate(questions):
        m = machine.labels.get(g.question_id)
        if m is None:
            continue
        if m.must_refuse:
            keys.append(i * width + refuse_code)
            must_hat[i] = 1
        for c in m.citations:
            if m.citations_needed == "all" and len(m.citations) > 1:
                if c not in code:
                    bad_ids.add(c)
                continue
            if c in code:
                keys.append(i * width + code[c])
            else:
                bad_ids.add(c)
    return keys, must_hat, bad_ids


def add_ppi(report: Report, run: RunTally, questions: Sequence[GoldQuestion], n_human: int, machine: MachineLabels,
            names: list[str], gold_path: str | None, alpha: float = ALPHA) -> None:
    """``report.ppi`` and each ranked model's ``ppi`` block from the rows of every question (``run.ppi``: each
    model's tally over ``questions``, the first ``n_human`` of them human-labelled), and the warnings."""
    human_q = questions[:n_human]
    _, must_hat, bad_ids = _machine_labels(questions, machine, names)
    must = np.array([g.must_refuse for g in human_q] + [False] * (len(questions) - n_human), dtype=np.float64)

    design, draw, notes = _design(questions, n_human, machine, gold_path)
    report.warnings += notes
    agree = [_agrees(g, machine.labels.get(g.question_id)) for g in human_q]
    agreement = round(sum(agree) / len(agree), 6) if agree else None
    report.warnings += _subset_warnings(n_human, agree, bad_ids, machine, human_q)

    nq = len(questions)
    per_model: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for name, t in zip(run.models, run.ppi or (), strict=True):
        block = report.models.get(name)
        if block is None:
            continue
        answered = np.flatnonzero(t.q_n)  # each question's rows: their mean hit under either label
        y, y_hat = t.q_hits[answered] / t.q_n[answered], t.q_machine[answered] / t.q_n[answered]
        per_model[name] = (answered, y, y_hat)
        human, other = design.split(answered)
        acc = estimate(y[human], y_hat[human], y_hat[other], bounds=(0.0, 1.0), alpha=alpha,
                       **design.kwargs(answered, human))
        cal = _calibration(t, must, must_hat, design, alpha)
        gained = None if acc is None or acc.effective_labels is None else round(acc.effective_labels - acc.n, 2)
        no_label = sum(questions[int(i)].question_id not in machine.labels for i in answered[other])
        block.ppi = ModelPpi(rank=0, significance_group="", n_human=int(human.sum()), n_machine=int(other.sum()),
                             n_no_label=int(no_label),
                             accuracy=_figure(acc), machine_accuracy=round(float(y_hat.mean()), 6) if y_hat.size else None,
                             labels_gained=gained, refusal_calibration=_figure(cal) if cal is not None else None)
        if acc is None:
            report.warnings.append(f"{name}: fewer than 2 human-labelled questions answered (in some stratum): no "
                                   "prediction-powered accuracy")

    def key(name: str) -> tuple:
        v = report.models[name].ppi.accuracy.value  # type: ignore[union-attr]
        return (v is None, -(v or 0.0), -(report.models[name].accuracy or 0.0), name)

    board = sorted(per_model, key=key)
    pairs = _pairs(board, per_model, design, alpha)
    letters = compact_letters(board, {frozenset((p.a, p.b)) for p in pairs if p.significant})
    for name in board:
        block = report.models[name].ppi
        assert block is not None
        v = block.accuracy.value
        block.rank = 1 + sum((report.models[o].ppi.accuracy.value or 0.0) > (v or 0.0) for o in board)  # type: ignore[union-attr]
        block.significance_group = letters[name]
    labelled = set(machine.labels)
    report.ppi = PredictionPowered(
        method=METHOD + ("; stratified by " + draw.stratified_by if draw.stratified_by else ""),
        questions=nq, human_labels=n_human, rows=run.all_rows, human_rows=run.rows,
        machine_labels=sum(g.question_id in labelled for g in questions[n_human:]),
        unlabelled=sum(g.question_id not in labelled for g in questions[n_human:]),
        machine_path=machine.path, machine_hash=machine.hash, machine_format=machine.format,
        machine_source=machine.source, agreement=agreement, draw=draw, leaderboard=board, pairwise=pairs)


def _calibration(t: PpiTally, must: np.ndarray, must_hat: np.ndarray, design: _Design, alpha: float) -> Estimate | None:
    """Refusal calibration over the questions with an answer (failed calls left out, as the report's)."""
    answered = np.flatnonzero(t.q_ok)
    r = t.q_refused[answered] / t.q_ok[answered]
    human, other = design.split(answered)
    z = calibration_terms(must[answered[human]], r[human])
    if not (0 < z[:, 1].mean() < 1):  # no must-refuse (or no answerable) human label: the ratio is not defined
        return None
    return estimate(z, calibration_terms(must_hat[answered[human]], r[human]),
                    calibration_terms(must_hat[answered[other]], r[other]), g=calibration, grad=calibration_grad,
                    bounds=(0.0, 1.0), alpha=alpha, **design.kwargs(answered, human))


def _pairs(board: list[str], per_model: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], design: _Design,
           alpha: float) -> list[PpiPair]:
    """The prediction-powered difference of every pair, on the questions both answered; Holm over the pairs."""
    rows: list[tuple[str, str, int, int, Estimate | None]] = []
    for a_name, b_name in combinations(board, 2):
        (qa, ya, ha), (qb, yb, hb) = per_model[a_name], per_model[b_name]
        both, ia, ib = np.intersect1d(qa, qb, return_indices=True)
        human, other = design.split(both)
        d, d_hat = ya[ia] - yb[ib], ha[ia] - hb[ib]
        e = estimate(d[human], d_hat[human], d_hat[other], bounds=(-1.0, 1.0), alpha=alpha,
                     **design.kwargs(both, human))
        rows.append((a_name, b_name, int(human.sum()), int(other.sum()), e))
    adjusted = holm([1.0 if e is None else e.p_value for *_, e in rows])
    return [PpiPair(a=a_name, b=b_name, n_human=nh, n_machine=nm,
                    difference=None if e is None else round(e.value, 6),
                    ci95=None if e is None else [round(e.low, 6), round(e.high, 6)],
                    lam=None if e is None else round(e.lam, 6), p_value=round(1.0 if e is None else e.p_value, 8),
                    p_adjusted=round(adj, 8), significant=e is not None and adj < alpha)
            for (a_name, b_name, nh, nm, e), adj in zip(rows, adjusted, strict=True)]


def _design(questions: Sequence[GoldQuestion], n_human: int, machine: MachineLabels,
            gold_path: str | None) -> tuple[_Design, PpiDraw, list[str]]:
    """Find the draw record, check the human subset against it, and the strata to weigh by."""
    labelled = {g.question_id for g in questions[:n_human]}
    folders = [Path(p).parent for p in (gold_path, machine.path) if p]
    found = find_draw(labelled, folders)
    uniform = _Design(n_human, np.zeros(len(questions), dtype=np.int64), np.ones(1))
    sample = "'grace annotations sample QUESTIONS.csv -n N --out SUBSET.csv'"
    if found is None:
        where = " or ".join(dict.fromkeys(str(f) for f in folders)) or "the gold file's folder"
        return uniform, PpiDraw(path=None, matches=False, stratified_by=None, drawn=0, labelled_not_drawn=0,
                                drawn_not_labelled=0), [
            f"the {n_human} human-labelled questions were not drawn by 'grace annotations sample' (no draw record "
            f"in {where} shares a question with them): the prediction-powered figures are valid only if they are a "
            f"random sample of the {len(questions)} questions, made before anyone saw a label; draw them with "
            f"{sample} and label that subset"]
    path, record = found
    drawn = set(record.drawn)
    extra, missing = len(labelled - drawn), len(drawn - labelled)
    notes = []
    if extra:
        notes.append(f"{extra} human-labelled question(s) were not drawn by the draw recorded in {path}: a subset "
                     "that is not the random draw can bias the prediction-powered figures; label only the drawn "
                     "questions")
    if missing:
        notes.append(f"{missing} question(s) drawn in {path} have no human label (skipped?): if they were skipped "
                     "for being hard, the prediction-powered figures are biased; label every drawn question")
    scored = [g.question_id for g in questions]
    outside = set(scored) - set(record.population)
    if outside or len(scored) != len(record.population):
        notes.append(f"the {len(scored)} questions scored are not the {len(record.population)} the draw in {path} "
                     f"was made from ({len(outside)} not among them): the human subset is a random draw of those, "
                     "not of these")
    draw = PpiDraw(path=str(path), matches=not extra and not missing, stratified_by=None, drawn=len(drawn),
                   labelled_not_drawn=extra, drawn_not_labelled=missing)
    if record.by is None:
        return uniform, draw, notes
    return _strata(questions, n_human, record, draw, notes, uniform)


def _strata(questions: Sequence[GoldQuestion], n_human: int, record: DrawRecord, draw: PpiDraw, notes: list[str],
            uniform: _Design) -> tuple[_Design, PpiDraw, list[str]]:
    index = {qid: h for h, s in enumerate(record.strata) for qid in s.question_ids}
    stratum = np.array([index.get(g.question_id, -1) for g in questions], dtype=np.int64)
    if (stratum < 0).any():
        notes.append(f"{int((stratum < 0).sum())} scored question(s) are in no stratum of the draw (by "
                     f"{record.by}): the strata are not used, and the estimate treats the draw as uniform")
        return uniform, draw, notes
    draw.stratified_by = record.by
    return _Design(n_human, stratum, np.array([s.weight for s in record.strata])), draw, notes


def _subset_warnings(n_human: int, agree: list[bool], bad_ids: set[str], machine: MachineLabels,
                     human_q: Sequence[GoldQuestion]) -> list[str]:
    out = []
    if n_human < MIN_HUMAN_LABELS:
        out.append(f"only {n_human} human labels: prediction-powered intervals rest on a normal approximation that "
                   f"needs about {MIN_HUMAN_LABELS} or more; label more of the drawn questions")
    if agree and all(agree):
        out.append(f"the machine labels agree with all {n_human} human labels: there is no disagreement to learn "
                   "their error from, so the prediction-powered intervals assume the machine is never wrong on the "
                   "other questions; label more questions (a larger random draw) before trusting them")
    missing = [g.question_id for g in human_q if g.question_id not in machine.questions]
    if missing:
        out.append(f"{len(missing)} human-labelled question(s) are not in the machine-label file {machine.path} "
                   f"(e.g. {missing[0]}): their machine label counts as none; suggest labels for the same questions")
    if bad_ids:
        shown = ", ".join(sorted(bad_ids)[:5]) + (" ..." if len(bad_ids) > 5 else "")
        out.append(f"{len(bad_ids)} article ID(s) in the machine labels are not in the KB ({shown}): no answer can "
                   "match them")
    return out
