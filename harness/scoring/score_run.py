"""Score a responses file: ``scores.jsonl`` (one line per response) and ``report.json``.

This is the library behind ``grace score`` and the last step of ``grace run``.
The pass over the responses is the hot path (a million rows in well under a
minute): each row is read, extracted strictly and leniently, judged, written,
and reduced to a few integers in a columns file; those are then tallied per model
a chunk at a time (:mod:`harness.scoring.tallies`), and every whole-run metric is
computed once per model from its tally. Memory follows the models, questions and
labels, not the rows: a log of millions of answers is scored in what a small run is.

The report is built as its typed model from the start (:class:`ModelReport`
per model, then :class:`Report`), never as a dict validated at the end: the
blocks forbid unknown keys and check assigned values, so a misspelt figure
name here is an error at once, not a null in ``report.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.hashing import FileHashInThread, file_hash
from harness.core.version import __version__
from harness.run_folder.report import (
    REPORT_SCHEMA_VERSION,
    FailedModel,
    GoldInfo,
    JsonMode,
    KbInfo,
    LabelSuspect,
    LabelSuspects,
    ModelReport,
    Pair,
    Report,
    ResponsesInfo,
    SpotcheckBlock,
    Unlabelled,
)
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import CitationSettings, SampleDraw
from harness.run_folder.spotcheck import read_spotcheck
from harness.scoring.answer_language import question_languages
from harness.scoring.citation_reading import CitationReader
from harness.scoring.citation_scores import add_citation_scores, read_as_grace
from harness.scoring.extraction import RULES
from harness.scoring.funnel import add_funnel
from harness.scoring.metrics import (
    class_metrics,
    cost_latency,
    refusal_calibration,
    repeat_stats,
    retrieval_split,
    truncation,
)
from harness.scoring.outcomes import NONE, OUTCOME_CODE, OUTCOMES, REFUSE, reported_outcomes
from harness.scoring.prediction_powered import MachineLabels, add_ppi, machine_keys, population
from harness.scoring.row_pass import KeptLines, score_all
from harness.scoring.significance import compact_letters, majority_vote, pairwise_tests
from harness.scoring.slices import add_categories, add_permissions, restricted_articles
from harness.scoring.spilled import Spill
from harness.scoring.tallies import N_OUTCOMES, ModelTally, RunTally, Shape, superseded, tally
from harness.stats.wilson import wilson_interval
from kb_builder.gold import GoldQuestion, GoldSet, load_gold
from kb_builder.loader import load_kb
from kb_builder.store import KB


def _load_gold(gold: str | Path | GoldSet | Sequence[GoldQuestion]) -> tuple[list[GoldQuestion], GoldInfo]:
    if isinstance(gold, str | Path):
        gold = load_gold(gold)
    if isinstance(gold, GoldSet):
        questions = list(gold.questions)
        path, h = str(gold.path), gold.hash
    else:
        questions = list(gold)
        path, h = None, hashlib.sha256(json.dumps([[g.question_id, g.expected_citations, g.must_refuse]
                                                   for g in questions]).encode()).hexdigest()[:16]
    return questions, GoldInfo(path=path, hash=h, n_questions=len(questions),
                               n_must_refuse=sum(g.must_refuse for g in questions))


def score_responses(
    responses_path: str | Path,
    gold: str | Path | GoldSet | Sequence[GoldQuestion],
    kb: str | Path | KB,
    out_dir: str | Path,
    *,
    seed: int = 0,
    bootstrap: int = 2000,
    workers: int | None = None,
    machine_gold: MachineLabels | None = None,
    citations: Mapping[str, CitationSettings] | None = None,
) -> Report:
    """Score ``responses_path`` against ``gold`` and ``kb``; write scores.jsonl and report.json in ``out_dir``.

    ``gold`` is a gold CSV path, a :class:`GoldSet` already read, or bare questions; ``kb`` a KB folder or
    a loaded KB. ``workers`` processes share a large file (default: one per
    core, up to 8, for files over 32 MB). Returns the report, as written to
    report.json. Raises ``GraceError`` naming the file and line of
    the first bad response.

    ``machine_gold`` (machine labels for every question, :mod:`harness.scoring.prediction_powered`) makes ``gold``
    the human-labelled subset: the responses may then answer every question of either, the report's figures are
    over the human-labelled questions as ever, and ``report.ppi`` with each model's ``ppi`` adds the
    prediction-powered ones over all of them (scores.jsonl keeps the human-labelled questions' lines).

    ``citations``: how each model's citations are read and scored, by model name (run.json's
    ``models[].citations``); a model without settings is read as a GRACE prompt, exactly as ever. A model read as
    references, or scored several citations per answer, gets the citation fields on its scores lines, the outcome
    ``unmapped_citation`` and ``report.models[m].citations`` (see :mod:`harness.scoring.citation_reading`).
    """
    responses_path, run = Path(responses_path), RunDir(out_dir)
    with run.lock():
        return _score(responses_path, gold, kb, run, seed, bootstrap, workers, machine_gold, citations)


def _score(responses_path: Path, gold: str | Path | GoldSet | Sequence[GoldQuestion], kb: str | Path | KB, run: RunDir,
           seed: int, bootstrap: int, workers: int | None, machine: MachineLabels | None = None,
           citations: Mapping[str, CitationSettings] | None = None) -> Report:
    if bootstrap < 0:
        raise GraceError(f"--bootstrap must be 0 or more, got {bootstrap}")
    questions, gold_info = _load_gold(gold)
    human = questions
    if machine is not None:  # every question: the human-labelled ones first, then the machine file's others
        questions = population(human, machine)
    kb_obj = kb if isinstance(kb, KB) else load_kb(kb, write_missing=False)
    article_ids = [a.id for a in kb_obj.articles]
    kb_ids = frozenset(article_ids)
    # expected IDs missing from the KB can never be cited correctly, but still need a label
    unknown = sorted({e for g in questions for e in g.expected_citations} - kb_ids)
    names = article_ids + unknown + [REFUSE, NONE]
    settings = {name: s for name, s in (citations or {}).items() if not read_as_grace(s)}
    # each model's reader, built before any answer is read: a bad mapping file stops here with its file and line
    # (one reader per distinct settings: the models of a run that read alike share its resolutions)
    alike: dict[str, CitationReader] = {}
    readers = {name: alike.get(s.model_dump_json()) or alike.setdefault(
        s.model_dump_json(), CitationReader(kb_obj.articles, s, kb_ids)) for name, s in settings.items()}
    # (the responses file's content hash, its size): what RunDir.scores_behind later compares the file with. Its
    # size is read before the rows, so an answer appended meanwhile leaves the report behind; hashed in a thread
    # while the rows are scored, not in a pass of its own
    identity = FileHashInThread(responses_path)
    tmp_name = run.temp_file(run.scores)
    columns = spill = None
    try:
        langs = question_languages(questions, kb_obj.manifest.language, kb_obj.manifest.languages)
        audiences = restricted_articles(kb_obj.articles)  # ID -> groups, for the permission check (forbidden_citation)
        columns = score_all(responses_path, questions, kb_ids, names[:-2], Path(tmp_name), workers, langs,
                            audiences, readers or None, meanwhile=identity.start)
        scored = identity.result()
        if not columns.models:
            raise GraceError(f"{responses_path}: no responses in the file")
        shape = Shape(labels=len(names), must=np.array([g.must_refuse for g in human], dtype=bool),
                      answerable=np.array([not g.must_refuse and bool(g.expected_citations) for g in human], dtype=bool),
                      citations=columns.citations, population=len(questions) if machine is not None else 0,
                      machine_keys=machine_keys(questions, machine, names) if machine is not None else None)
        spill = Spill(Path(f"{tmp_name}.spill"))
        dropped = superseded(columns, len(questions), Path(tmp_name))
        # the scores lines of the rows left out (superseded; with machine labels, other questions') go too
        lines = KeptLines(Path(tmp_name)) if dropped.size or machine is not None else None
        try:
            tallies = tally(columns, shape, spill, dropped, lines.take if lines is not None else None)
        except BaseException:
            if lines is not None:
                lines.discard()
            raise
        if lines is not None:
            lines.close()
        if machine is not None and not tallies.rows:
            raise GraceError(f"{responses_path}: no response answers a question of the human gold file "
                             f"({gold_info.path or 'in memory'}); score the run the human labels are for")
        questions = human
        labelled = any(g.must_refuse or g.expected_citations for g in questions)
        report = _build_report(tallies, questions, names, seed, bootstrap, gold_info,
                               KbInfo(path=str(kb_obj.path), hash=kb_obj.kb_hash, n_articles=len(article_ids)),
                               ResponsesInfo(path=str(responses_path), n=tallies.rows, sha256=scored[0],
                                             size=scored[1]), labelled,
                               {name for name, s in settings.items() if s.reads == "references"})
        if labelled:
            report.label_suspects = _label_suspects(tallies, questions, names, kb_obj, RunDir(responses_path.parent))
        report.sample = _sample(report, RunDir(responses_path.parent))
        report.warnings = _warnings(report, len(questions), tallies.dropped, unknown)
        add_citation_scores(report, tallies, questions, settings, seed, bootstrap)
        add_permissions(report, tallies, audiences)
        add_categories(report, tallies, questions, bootstrap)
        add_funnel(report, responses_path, questions, kb_ids, seed, bootstrap)  # a model searched: its funnel
        if machine is not None and labelled:
            add_ppi(report, tallies, population(human, machine), len(human), machine, names, gold_info.path)
        _add_endpoint_notes(report, RunDir(responses_path.parent))
        os.replace(tmp_name, run.scores)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    finally:
        if columns is not None:
            columns.remove()
        if spill is not None:
            spill.close()
    report.spotcheck = _earlier_spotcheck(run, report)
    if run.run_info.exists():  # which run's answers and gold these are (RunDir.report_out_of_date)
        report.run_json_hash = file_hash(run.run_info)
    run.write_report(report)
    return report


def _sample(report: Report, folder: RunDir) -> SampleDraw | None:
    """The draw of a ``grace run --sample N`` whose answers these are (run.json's ``sample``, on this gold set)."""
    info = folder.read_run_info()
    if info is None or info.sample is None or info.gold.hash != report.gold.hash:
        return None
    return SampleDraw(**info.sample.model_dump(include=set(SampleDraw.model_fields)))


def _add_endpoint_notes(report: Report, folder: RunDir) -> None:
    """What ``grace run`` learned about each model's endpoint (the JSON mode a server made it fall back to, and what
    its calls took of its server's time)."""
    info = folder.read_run_info()
    for entry in info.models if info else []:
        model = report.models.get(entry.name)
        if model is not None and entry.json_mode:
            model.json_mode = JsonMode(used=entry.json_mode, reason=entry.json_mode_reason or "")
    if info is not None:  # what each model's questions took of its server's time (a self-hosted model's cost)
        from harness.scoring.serving import add_serving

        add_serving(report, info)


def _earlier_spotcheck(run: RunDir, report: Report) -> SpotcheckBlock | None:
    """Keep the last ``grace spotcheck run`` in the report when responses are re-scored.

    Re-scoring (a resumed ``grace run``, ``grace score``) must not silently drop a
    paid-for judge pass; the block says it predates this scoring so nobody mistakes
    it for a check of new answers.
    """
    path = run.spotcheck
    if not path.exists():
        return None
    try:
        block = SpotcheckBlock.from_spotcheck(read_spotcheck(path))
    except (OSError, GraceError):
        report.warnings.append(f"{path} could not be read; the spot-check is not shown")
        return None
    others = [m for m in block.models if m not in report.models and m not in report.failed_models]
    if others:  # a spot-check of answers this report does not score (another run's) is not this run's
        report.warnings.append(f"{path} checks model(s) this report does not score ({', '.join(others)}): it is of "
                               "other answers and is not shown; run 'grace spotcheck run' again")
        return None
    block.notes = ((block.notes or "") + " Spot-check from an earlier scoring of this run folder; "
                   "run 'grace spotcheck run' again if the responses changed.").strip()
    return block


def _share(k: int, n: int) -> float:
    """``k`` of ``n`` rows, to 6 digits (NaN of no row, as the mean of an empty column was)."""
    return round(k / n, 6) if n else float("nan")


# what an unlabelled run's report leaves out (null, or empty for per_class and the confusion matrix), and why
UNLABELLED_ABSENT = ("rank", "significance_group", "accuracy", "accuracy_ci95", "strict_accuracy",
                     "strict_accuracy_ci95", "per_class", "macro_precision", "macro_recall", "macro_f1",
                     "weighted_precision", "weighted_recall", "weighted_f1", "refusal", "confusion", "retrieval",
                     "repeat_stats", "pairwise", "label_suspects")
UNLABELLED_REASON = ("the questions carry no label (a questions file, or imported logs without --gold): whether a citation is the right "
                     "article, or whether a question should have been refused, is not known, so accuracy and the "
                     "figures built on it are absent. Shown without a label: invalid and unshown citations, the "
                     "refusal rate, no citation, several citations, latency, tokens and cost. Label the questions "
                     "(grace annotations suggest turns the models' agreement into pre-labels; grace annotate) and "
                     "run again with the gold file, or import again with --gold, to score them.")
_NO_CLASS_METRICS = {"per_class": {}, "macro_precision": None, "macro_recall": None, "macro_f1": None,
                     "weighted_precision": None, "weighted_recall": None, "weighted_f1": None,
                     "confusion": {"labels": [], "matrix": []}}


def _model_metrics(t: ModelTally, names: list[str], labelled: bool = True, references: bool = False) -> ModelReport:
    """One model's block from its tally (rank, significance group and CIs filled in later, across models).
    Unlabelled (no question has a label): the figures that need one are left out."""
    n, counts = t.n, t.outcomes
    strict = t.strict
    retrieval = t.own_retrieval if t.own else t.retrieval
    cost, latency = cost_latency(t.cost, t.latency, t.in_tokens, t.out_tokens, t.queued)
    width = len(names) * N_OUTCOMES  # an answer's key: question * width + predicted * outcomes + outcome
    true, pred = t.labels.keys // len(names), t.labels.keys % len(names)
    limits = t.limits_cut if t.cut else t.limits
    listed = reported_outcomes(labelled, references)
    block = ModelReport(
        rank=0 if labelled else None,  # set once every model is scored
        significance_group="",
        n=n,
        n_questions=int(np.count_nonzero(t.q_n)),
        repeats=int(t.repeats.keys.size),
        accuracy=_share(t.hits, n) if labelled else None,
        accuracy_ci95=None,
        strict_accuracy=_share(t.strict_hits, n) if labelled else None,
        strict_accuracy_ci95=None,
        outcomes={name: int(counts[OUTCOME_CODE[name]]) for name in listed},
        strict_outcomes={name: int(x) for name, x in zip(OUTCOMES, strict, strict=True) if name in listed},
        invalid_citation_rate=_share(int(counts[OUTCOME_CODE["invalid_citation"]]), n),
        unshown_citation_rate=_share(int(counts[OUTCOME_CODE["unshown_citation"]]), n),
        other_language_rate=round(t.other_language / t.told, 6) if t.told else None,
        error_count=int(counts[OUTCOME_CODE["error"]]),
        truncated=truncation(n, t.cut, t.cut_empty, limits.keys, limits.counts),
        extraction_rules={r: int(x) for r, x in zip(RULES, t.rules, strict=True)},
        **(class_metrics(true, pred, names, t.labels.counts) if labelled else _NO_CLASS_METRICS),
        refusal=refusal_calibration(t.should, t.should_refused, t.answerable, t.answerable_refused) if labelled
        else {"should_refuse_did": None, "should_answer_did": None, "calibration": None},
        retrieval=retrieval_split(retrieval.known, retrieval.k, retrieval.got, retrieval.missed, retrieval.hits_got,
                                  retrieval.hits_missed) if labelled else None,
        retrieval_source="system" if t.own else None,
        repeat_stats=repeat_stats(t.repeats.keys, t.repeats.sums[:, 0], t.repeats.sums[:, 1],
                                  t.answers.keys // width, t.answers.counts) if labelled else None,
        cost=cost,
        latency=latency,
    )
    if not labelled:
        block.refusal_rate = round(t.valid_refused / t.valid, 6) if t.valid else None
    return block


def _build_report(run: RunTally, questions: list[GoldQuestion], names: list[str], seed: int, bootstrap: int,
                  gold: GoldInfo, kb: KbInfo, responses: ResponsesInfo, labelled: bool = True,
                  references: set[str] | frozenset[str] = frozenset()) -> Report:
    nq = len(questions)
    per_model: dict[str, ModelReport] = {}
    majority: dict[str, np.ndarray] = {}
    for name, t in zip(run.models, run.tallies, strict=True):
        m = _model_metrics(t, names, labelled, name in references)
        answered, rate = t.per_question(t.q_hits.astype(np.float64))
        majority[name] = majority_vote(nq, answered, rate)
        if labelled and bootstrap > 0:  # --bootstrap 0 means "no intervals" for every figure of the report
            m.accuracy_ci95 = wilson_interval(m.accuracy, m.n_questions)
            m.strict_accuracy_ci95 = wilson_interval(m.strict_accuracy, m.n_questions)
        per_model[name] = m
    models = run.models
    failed = {name: FailedModel(n=m.n, error_count=m.error_count,
                                reason=f"all {m.n} calls failed; see the error rows in the responses file and run again")
              for name, m in per_model.items() if m.error_count == m.n}
    if not labelled:  # nothing to rank by: the models by name, with no rank, group or test
        board = sorted(m for m in models if m not in failed)
        return Report(schema_version=REPORT_SCHEMA_VERSION, created_at=now(),
                      grace_version=__version__, gold=gold, kb=kb, responses=responses, seed=seed,
                      bootstrap_samples=bootstrap, leaderboard=board, models={name: per_model[name] for name in board},
                      pairwise=[], spotcheck=None, failed_models=failed,
                      unlabelled=Unlabelled(absent=list(UNLABELLED_ABSENT), reason=UNLABELLED_REASON))
    board = sorted((m for m in models if m not in failed),
                   key=lambda x: (-per_model[x].accuracy, -per_model[x].strict_accuracy, x))
    pairs = pairwise_tests(board, majority)
    letters = compact_letters(board, {frozenset((p["a"], p["b"])) for p in pairs if p["significant"]})
    for name in board:
        acc = per_model[name].accuracy
        per_model[name].rank = 1 + sum(per_model[o].accuracy > acc for o in board)
        per_model[name].significance_group = letters[name]
    return Report(
        schema_version=REPORT_SCHEMA_VERSION,
        created_at=now(),
        grace_version=__version__,
        gold=gold,
        kb=kb,
        responses=responses,
        seed=seed,
        bootstrap_samples=bootstrap,
        leaderboard=board,
        models={name: per_model[name] for name in board},
        pairwise=[Pair(**p) for p in pairs],
        spotcheck=None,
        failed_models=failed,
    )


SUSPECTS_IN_REPORT = 10


def _label_suspects(run: RunTally, questions: list[GoldQuestion], names: list[str], kb: KB,
                    folder: RunDir) -> LabelSuspects | None:
    """The gold labels the run's independent models contradict (see label_audit), for the report's "labels to
    check"; None without two such models, whatever the baselines say."""
    from harness.scoring.label_audit import MIN_VOTERS, audit, independent_models
    from harness.scoring.votes import votes_from_codes

    info = folder.read_run_info()
    voters = independent_models(run.models, {e.name: e.provider for e in info.models} if info else {})
    if len(voters) < MIN_VOTERS:
        return None
    # each voter's distinct (question, predicted label) with its rows, from its (question, answer) counts
    width = len(names) * N_OUTCOMES
    q, m, pred, counts = (np.concatenate(x) for x in zip(*(
        (t.answers.keys // width, np.full(t.answers.keys.size, mi), t.answers.keys % width // N_OUTCOMES,
         t.answers.counts) for mi, t in enumerate(run.tallies) if run.models[mi] in voters), strict=True))
    votes = votes_from_codes(q, m, pred, [g.question_id for g in questions], run.models,
                             [None if n == NONE else n for n in names], counts)
    suspects = audit(questions, votes, {x.id: x.title for x in kb.articles})
    kinds: dict[str, int] = {}
    for s in suspects:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    return LabelSuspects(n=len(suspects), by_kind=kinds, models=voters,
                         top=[LabelSuspect(**s.to_json()) for s in suspects[:SUSPECTS_IN_REPORT]])


def _warnings(report: Report, nq: int, dropped: int, unknown: list[str]) -> list[str]:
    out = []
    if unknown:
        shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        out.append(f"{len(unknown)} expected citation(s) in the gold file are not KB article IDs ({shown}); "
                   "questions expecting them can never be answered correctly")
    if dropped:
        out.append(f"{dropped} response(s) were superseded by a later line for the same model, question and "
                   "repeat; only the last one is scored")
    if report.unlabelled is not None:
        out.append("No labels, so no accuracy: " + report.unlabelled.reason)
        rates = ", ".join(f"{name} {m.refusal_rate:.1%}" for name, m in report.models.items() if m.refusal_rate is not None)
        if rates:  # no leaderboard column holds it (a labelled run's has refusal calibration there)
            out.append(f"Refusal rate (refused of the answered calls): {rates}")
    if report.sample is not None:  # said once, not as "answered 30 of 90" for every model
        nq = report.sample.n
        out.append(f"this run asked {report.sample.describe()} (grace run --sample): every figure and interval is "
                   f"over those {nq:,} questions; run without --sample for the whole gold set")
    for name, m in report.models.items():
        if m.n_questions < nq and report.unlabelled is None:
            out.append(f"{name} answered {m.n_questions} of {nq} gold questions; its accuracy is over those only")
    for name, f in report.failed_models.items():
        out.append(f"{name} is not ranked: {f.reason}")
    suspects = report.label_suspects
    if suspects is not None and suspects.n:
        out.append(f"{suspects.n} gold label(s) are contradicted by most of the {len(suspects.models)} models that "
                   "are not baselines (a wrong label reads as a model error): list them with 'grace annotations "
                   "audit GOLD --kb KB --run RUN --out SUSPECTS.csv'")
    failed = [f"{name} {m.error_count}" for name, m in report.models.items() if m.error_count]
    if failed:
        out.append(f"failed calls scored as misses ({', '.join(failed)}); run the same 'grace run' again to retry them")
    return out
