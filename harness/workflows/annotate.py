"""The gold-label workflows of ``grace annotate`` and ``grace annotations``: what a command does, as one call each.

The two web apps (labelling gold, reviewing a spot-check) are opened here, checked and ready to serve; the command
line then serves them (``harness.web.listen`` and ``serve``) and prints, and a script may do the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.workflows.calls import ModelCalls

if TYPE_CHECKING:
    from rich.console import Console

    from annotations.audit import AuditResult
    from annotations.stats import GoldStats
    from annotations.validate import ValidationReport
    from kb_builder.store import KB

__all__ = ["Agreement", "LabellingApp", "ReviewingApp", "Suggested", "agree_labels", "audit_gold", "gold_stats",
           "open_labelling", "open_review", "open_review_team", "suggest_labels", "validate_gold"]


def _load(kb: Any) -> Any:
    from kb_builder.loader import load_kb as _load_kb

    return _load_kb(kb) if isinstance(kb, str | Path) else kb


def _path(given: str | Path | None) -> Path | None:
    return Path(given) if given is not None else None


def _kb_inputs(kb: Any) -> list[Path] | None:
    from kb_builder.store import kb_files

    if kb is None:
        return None
    return kb_files(kb if isinstance(kb, str | Path) else kb.path)


def _run_inputs(run: str | Path | None) -> list[Path] | None:
    from harness.run_folder.run_dir import RunDir

    return RunDir.input_files(run) if run is not None else None


@dataclass
class LabellingApp:
    """The labelling app, open on its gold file (``grace annotate``): ``app`` is the WSGI app to serve, ``session``
    the annotation session that writes every label to ``out`` at once; ``notes`` and ``warnings`` say what was
    loaded. ``close()`` when the server stops (it releases the gold file)."""

    app: Any
    session: Any
    kb: Any
    retriever: Any
    out: Path
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> LabellingApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_labelling(kb: str | Path, out: str | Path | None = None, *, questions: str | Path | None = None,
                   from_gold: str | Path | None = None, annotator: str | None = None, k: int = 10,
                   embedder: str | None = None, suggestions: str | Path | None = None, run: str | Path | None = None,
                   order: str = "file", only: str | Path | None = None,
                   question_ids: list[str] | tuple[str, ...] = (), team: str | None = None,
                   assign: str | None = None, reviewers: str | None = None,
                   new_keys: str | None = None, agree: str | None = None) -> LabellingApp:
    """Open the labelling app on ``out`` (a gold CSV, resumed if it exists; default ``from_gold``) for the
    ``questions`` (a CSV or text file) or the labels of ``from_gold``, with ``k`` candidates from ``embedder`` (the
    KB's own retriever by default). Suggestions come from a ``suggestions`` CSV or the consensus of a ``run``'s
    models (accepted with one key); ``only`` (an audit's suspects CSV) and ``question_ids`` narrow the questions;
    ``order="informative"`` puts the weakest suggestions first. Refuses an ``out`` that is one of its inputs.

    ``team`` (``alice,bob,carol``, or ``any`` for no roster), ``assign`` (``all``, ``share``, ``overlap:N``) and
    ``reviewers`` open one session for a team instead: ``out`` is then a folder (resumed when it holds a team's
    ``team.json``), ``session`` an ``annotations.team.TeamSession`` and ``app`` serves every person and the
    reviewer's queue. Each person named gets their own key (printed once: ``session.new_keys``); ``new_keys``
    (``bob``) replaces theirs."""
    from annotations.server import AnnotationApp
    from annotations.state import AnnotationSession, default_annotator
    from harness.core.errors import GraceError
    from harness.core.outputs import check_output_file
    from kb_builder.loader import load_kb

    if suggestions and run:
        raise GraceError("give --suggestions FILE or --run RUN, not both")
    team_folder = out is not None and (Path(out) / "team.json").is_file()
    if team is not None or assign is not None or reviewers is not None or agree is not None or team_folder:
        if annotator:
            raise GraceError("a team session (--team) saves each label under the name of the person whose link "
                             "made it: --annotator is for one person's session")
        if from_gold and (questions or suggestions or run):
            raise GraceError("--from-gold gives a team its questions and suggests its labels: give it without "
                             "--questions, --suggestions and --run")
        opened = _open_team(kb, out, questions=questions or from_gold, team=team, assign=assign,
                            reviewers=reviewers, k=k, embedder=embedder, new_keys=new_keys, agree=agree)
        try:
            _focus(opened, suggestions, run, only, order, question_ids, from_gold=from_gold)
        except BaseException:
            opened.close()
            raise
        return opened
    if out is None:
        if from_gold is None:
            raise GraceError("give --out GOLD.csv: the file labels are saved to (it is resumed if it exists)")
        out = from_gold
    out = Path(out)
    # the gold file is this app's to write (and to resume), never a file it only reads
    check_output_file(out, {"questions file": questions, "suggestions file": suggestions, "suspects file": only,
                            "KB": _kb_inputs(kb), "run": _run_inputs(run)}, owned=True)
    if questions is None and from_gold is None and not out.exists():
        raise GraceError("give --questions Q.csv (or Q.txt, one question per line) or --from-gold GOLD.csv")
    kb_obj = load_kb(kb)
    retriever = _candidates(kb_obj, embedder)
    session = AnnotationSession.open(kb_obj, out, questions=questions, from_gold=from_gold,
                                     annotator=annotator or default_annotator())
    opened = LabellingApp(AnnotationApp(session, retriever, k=k), session, kb_obj, retriever, out)
    try:
        _focus(opened, suggestions, run, only, order, question_ids)
    except BaseException:
        session.close()
        raise
    return opened


def _open_team(kb: str | Path, out: str | Path | None, *, questions: str | Path | None, team: str | None,
               assign: str | None, reviewers: str | None, k: int, embedder: str | None,
               new_keys: str | None = None, agree: str | None = None) -> LabellingApp:
    from annotations.team import TeamSession
    from annotations.team_app import TeamApp
    from harness.core.errors import GraceError
    from kb_builder.loader import load_kb

    if out is None:
        raise GraceError("give --out FOLDER: a team session keeps each person's labels and the gold there")
    out = Path(out)
    for name, given in {"questions file": questions, "KB": kb}.items():
        if given is not None and Path(given).resolve() == out.resolve():
            raise GraceError(f"--out {out} is the {name}; give the team session a folder of its own")
    kb_obj = load_kb(kb)
    retriever = _candidates(kb_obj, embedder)
    session = TeamSession.open(kb_obj, out, questions=questions, people=team, reviewers=reviewers, rule=assign,
                               new_keys=new_keys, agree=agree)
    return LabellingApp(TeamApp(session, retriever, k=k), session, kb_obj, retriever, out)


def _focus(opened: LabellingApp, suggestions: str | Path | None, run: str | Path | None, only: str | Path | None,
           order: str, question_ids: list[str] | tuple[str, ...] = (), from_gold: str | Path | None = None) -> None:
    """Suggestions, the --only subset, --question and the order, onto the open session; a team's onto each
    person's one-person session, within the questions given to them (``TeamSession.narrow``). A team given
    ``from_gold`` (a gold file to check again) is suggested its labels: each person accepts or changes them,
    without one person's word standing for the team's."""
    session, notes = opened.session, opened.notes
    team = not hasattr(session, "progress")
    records = session.base if team else session.records
    suggested: tuple[dict[str, Any], str | Path] | None = None
    if from_gold and team:
        from annotations.labels import read_labels
        from annotations.suggestions import Suggestion

        gold = [r for r in read_labels(from_gold)[0] if r.label]
        suggested = {r.question_id: Suggestion(r.question_id, r.question, suggested=r.label or "", voters=1,
                                                source=f"gold:{Path(from_gold).name}",
                                                reason=f"the label of {Path(from_gold).name}") for r in gold}, from_gold
        notes.append(f"the labels of {from_gold} suggested for {len(gold)} of {len(records)} questions")
    if suggestions:
        from annotations.suggestions import read_suggestions

        suggested = read_suggestions(suggestions), suggestions
    if run:
        from annotations.suggest import suggest_from_run

        found, models = suggest_from_run(records, run, opened.kb.by_id)  # once, for everyone
        suggested = {s.question_id: s for s in found}, run
        notes.append(f"consensus of {len(models)} model(s) in {run}: a suggestion for "
                     f"{sum(s.usable for s in found)} of {len(found)} questions")
        if len(models) < 3:
            opened.warnings.append("fewer than 3 models voted; look before accepting")
    counts: dict[str, int] = {}

    def focus(one: Any) -> None:
        if suggested is not None:
            counts["suggested"] = one.use_suggestions(*suggested)
        if only:
            counts["only"] = one.only(only)
        if question_ids:
            counts["question"] = one.only_questions(list(question_ids))
        one.order_by(order)

    if team:
        session.narrow(focus)
    else:
        focus(session)
    if suggestions:
        notes.append(f"suggestions from {suggestions} for {counts.get('suggested', 0)} of {len(records)} questions")
    if only:
        notes.append(f"reviewing the {counts.get('only', 0)} question(s) {only} lists, of {len(records)}"
                     + (" (each person: those given to them)" if team else ""))
    if question_ids and not team:
        notes.append(f"opening {counts['question']} question(s): {', '.join(session.view_ids())}")


def _candidates(kb: Any, embedder: str | None) -> Any:
    """The KB's retriever for candidates (the search box's is lexical: ``search_box_retriever``)."""
    from harness.core.errors import GraceError

    try:
        return kb.retriever(embedder)
    except GraceError as exc:
        if (embedder or kb.manifest.embedder) == "bm25":
            raise
        raise GraceError(f"{exc}\n(or pass --embedder bm25 to label with lexical candidates)") from None


@dataclass
class ReviewingApp:
    """The spot-check review app, open on its labels CSV (``grace annotations review``): ``app`` to serve,
    ``session`` writing every mark to ``out`` at once, the run's ``sources`` (KB, gold, spot-check) and the app's
    ``warnings``. ``close()`` when the server stops."""

    app: Any
    session: Any
    kb: Any
    sources: Any
    out: Path

    @property
    def warnings(self) -> list[str]:
        return list(self.app.warnings)

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> ReviewingApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_review(run: str | Path, *, kb: str | Path | None = None, gold: str | Path | None = None,
                out: str | Path | None = None, reviewer: str | None = None) -> ReviewingApp:
    """Open the review app on a spot-checked ``run``: each answer segment is marked supported or not by its cited
    article, saved to ``out`` (default ``RUN/spotcheck_review.csv``, which ``grace spotcheck calibrate`` reads;
    resumed if it exists). ``kb`` and ``gold`` default to the ones the spot-check used and the run names."""
    from annotations.review_app import ReviewApp
    from annotations.review_session import ReviewSession
    from annotations.review_sources import RunSources
    from annotations.state import default_annotator
    from harness.core.outputs import check_output_file
    from harness.run_folder.run_dir import RunDir
    from kb_builder.loader import load_kb

    sources = RunSources.find(Path(run), kb_dir=_path(kb), gold=_path(gold))
    out = Path(out) if out is not None else sources.review_csv
    run_files = [f for f in RunDir(sources.run_dir).data_files() if f != sources.review_csv]
    check_output_file(out, {"gold CSV": sources.gold, "KB": _kb_inputs(sources.kb_dir), "run": run_files}, owned=True)
    kb_obj = load_kb(sources.kb_dir, write_missing=False)
    session = ReviewSession.open(sources.review_csv, out, reviewer=reviewer or default_annotator())
    try:
        app = ReviewApp(session, sources, kb_obj)
    except BaseException:
        session.close()
        raise
    return ReviewingApp(app, session, kb_obj, sources, out)


def open_review_team(run: str | Path, *, team: str, reviewers: str | None = None, kb: str | Path | None = None,
                     gold: str | Path | None = None, out: str | Path | None = None,
                     viewer: str | None = None, new_keys: str | None = None) -> ReviewingApp:
    """Open a spot-checked ``run`` for a team's review (``grace annotations review --team a,b``): each person's
    verdicts in their own file of the team folder ``out`` (default ``RUN/spotcheck_team``), disagreements in a
    reviewer's queue, the team's labels in ``out/human.csv``, and the calibration page (``viewer``: the address of
    ``grace view RUN``, which the judge's false positives and negatives link to). ``session`` is the
    :class:`annotations.review_team.TeamReview`."""
    from annotations.review_sources import RunSources
    from annotations.review_team import TeamReview
    from annotations.review_team_app import TeamReviewApp
    from kb_builder.loader import load_kb

    sources = RunSources.find(Path(run), kb_dir=_path(kb), gold=_path(gold))
    kb_obj = load_kb(sources.kb_dir, write_missing=False)
    session = TeamReview.open(sources, out, people=team, reviewers=reviewers, viewer=viewer, kb=kb_obj,
                              new_keys=new_keys)
    try:
        app = TeamReviewApp(session, kb_obj)
    except BaseException:
        session.close()
        raise
    return ReviewingApp(app, session, kb_obj, sources, session.folder)


def audit_gold(gold: str | Path, kb: str | Path | KB, run: str | Path, out: str | Path | None = None, *,
               force: bool = False, min_voters: int | None = None, min_swaps: int | None = None) -> AuditResult:
    """The gold labels a run's models contradict, most likely wrong first (``grace annotations audit``); written
    to ``out`` (a suspects CSV) when given, which may replace an existing file only with ``force`` and never one
    of its inputs. ``rules``: ``min_voters``, ``min_swaps``. Returns an ``AuditResult``."""
    from annotations.audit import audit_gold as _audit
    from harness.core.outputs import check_output_file

    if out is not None:
        check_output_file(Path(out), {"gold CSV": gold, "KB": _kb_inputs(kb), "run": _run_inputs(run)}, force=force)
    rules = {k: v for k, v in {"min_voters": min_voters, "min_swaps": min_swaps}.items() if v is not None}
    return _audit(gold, _load(kb), run, out, **rules)


def validate_gold(gold: str | Path, kb: str | Path, *, old_kb: str | Path | None = None, k: int = 10,
                  embedder: str | None = None) -> ValidationReport:
    """A gold CSV checked against its KB (``grace annotations validate``): an ``annotations.validate.ValidationReport``
    (``errors``, ``warnings``). ``old_kb``: the KB the labels were made on, to name retired IDs by title; ``k`` and
    ``embedder``: the retrieval of the 'never surfaced' check."""
    from annotations.validate import validate_gold as _validate

    return _validate(gold, kb, old_kb=_path(old_kb), k=k, embedder=embedder)


def gold_stats(gold: str | Path, kb: str | Path, *, column: str | None = None) -> GoldStats:
    """Questions per article, coverage gaps and category counts (``grace annotations stats``): an
    ``annotations.stats.GoldStats``. ``column``: the category column (default: ``category`` if present)."""
    from annotations.stats import gold_stats as _stats

    return _stats(gold, kb, column=column)


@dataclass
class Agreement:
    """Annotators compared (``grace annotations agree``): ``comparison`` (an ``annotations.agreement.Comparison``;
    None for one file), the suggester's agreement with the people (``suggester``), the KB's titles, and the
    adjudication sheet written (``merged``)."""

    comparison: Any = None
    suggester: list[Any] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)
    merged: Path | None = None


def agree_labels(files: list[str | Path], *, merge: str | Path | None = None, kb: str | Path | None = None,
                 force: bool = False) -> Agreement:
    """Agreement between annotators' CSVs: Cohen's kappa (two) or Fleiss' kappa (three or more), and with the
    suggestions their labels were made with. ``merge``: an adjudication CSV to write (``force`` replaces one);
    ``kb``: for article titles."""
    from annotations import agreement
    from harness.core.errors import GraceError
    from harness.core.outputs import check_output_file

    paths = [Path(f) for f in files]
    if merge:
        check_output_file(merge, {"annotation CSV": paths, "KB": _kb_inputs(kb)}, force=force, option="--merge")
    suggester = agreement.suggester_agreement(paths)
    if len(paths) < 2:
        if not suggester:
            raise GraceError("give two or more annotation CSVs to compare (or one whose labels carry suggestions)")
        return Agreement(suggester=suggester)
    titles = {a.id: a.title for a in _load(kb).articles} if kb is not None else {}
    result = Agreement(agreement.compare_files(paths), suggester, titles)
    if merge:
        agreement.write_merge(result.comparison, Path(merge), titles)
        result.merged = Path(merge)
    return result


@dataclass
class Suggested:
    """Suggestions made (``grace annotations suggest``). ``suggestions``: one per question, as written to ``out``
    (None after a labeler dry run, which printed its estimate); ``models``: the run's voting models (None without a
    run), ``usable`` of whose consensus suggestions count; ``labeler_skipped``: every question had a consensus.
    With ``redact_pii``, what was redacted (``redaction``) and where its counts went."""

    out: Path
    questions: int = 0
    suggestions: list[Any] | None = None
    models: list[str] | None = None
    usable: int = 0
    labeler: str | None = None
    labeler_skipped: bool = False
    redaction: Any = None  # harness.privacy.redactor.RedactionRecord
    redaction_file: Path | None = None

    def flags(self) -> Counter[str]:
        return Counter(s.flag or "suggested" for s in self.suggestions or [])

    @property
    def asked(self) -> int:
        return sum(s.source.startswith("labeler:") for s in self.suggestions or [])

    @property
    def failed(self) -> int:
        return self.flags().get("labeler_error", 0)

    def failure(self) -> str | None:
        """Why the labeler failed as a whole (no usable answer for any question it was asked), or None."""
        asked = self.asked
        if not (self.labeler and asked and self.failed == asked):
            return None
        first = next(s.reason for s in self.suggestions or [] if s.flag == "labeler_error")
        return (f"the labeler {self.labeler} gave no usable answer for any of the {asked} question(s) it was asked "
                f"({first}); {self.out} lists each failure; run the same command again to retry them")


def suggest_labels(questions: str | Path, kb: str | Path | KB, out: str | Path, *, run: str | Path | None = None,
                   labeler: str | None = None, min_agreement: float = 0.6, min_models: int = 2, k: int = 10,
                   template: str | None = None, dry_run: bool = False, force: bool = False,
                   calls: ModelCalls | None = None, console: Console | None = None,
                   on_consensus: Callable[[Suggested], None] | None = None) -> Suggested:
    """Pre-label ``questions`` (a CSV or text file) into the suggestions CSV ``out``: the consensus of ``run``'s
    models, the LLM ``labeler`` (``PROVIDER:MODEL``, asked with ``calls``), or both, the labeler then only where the
    models do not agree enough. ``on_consensus`` is called with the consensus (``models``, ``usable``) before the
    labeler is asked; a dry run prints the labeler's estimate on ``console`` and writes nothing."""
    from annotations.suggest import suggest_from_run
    from annotations.suggestions import write_suggestions
    from harness.core.errors import GraceError
    from harness.core.outputs import check_output_file
    from kb_builder.gold import read_questions

    if not run and not labeler:
        raise GraceError("give --run RUN (a run folder or responses file) and/or --labeler PROVIDER:MODEL")
    if template and not labeler:
        raise GraceError("--template is the labeler's prompt: give it with --labeler PROVIDER:MODEL")
    calls = calls or ModelCalls()
    out = Path(out)
    if not dry_run:
        check_output_file(out, {"questions file": questions, "KB": _kb_inputs(kb), "run": _run_inputs(run)}, force=force)
    kb_obj = _load(kb)
    qs = read_questions(questions)
    done = Suggested(out, len(qs), labeler=labeler)
    suggestions: list[Any] = []
    if run:
        suggestions, done.models = suggest_from_run(qs, run, kb_obj.by_id, min_agreement=min_agreement,
                                                    min_voters=min_models)
        done.usable = sum(s.usable for s in suggestions)
        if on_consensus is not None:
            on_consensus(done)
    if labeler:
        from annotations.labeler import suggest_with_labeler

        todo = [q for q, s in zip(qs, suggestions, strict=True) if not s.usable] if suggestions else qs
        if suggestions and not todo:
            done.labeler_skipped = True
        else:
            redactor = calls.redactor(console)
            labelled = suggest_with_labeler(kb_obj, todo, labeler, k=k, dry_run=dry_run, concurrency=calls.concurrency,
                                            max_attempts=calls.max_attempts, prices=calls.prices,
                                            read_cache=calls.read_cache, console=console, options=calls.model_options(),
                                            redactor=redactor, template=template)
            if redactor is not None and labelled is not None:
                from harness.privacy.redactor import write_record

                done.redaction, done.redaction_file = redactor.record(), write_record(out, redactor)
            if labelled is None:  # the dry run printed its estimate
                return done
            by_id = {s.question_id: s for s in labelled}
            suggestions = [by_id.get(q.question_id) or s for q, s in zip(qs, suggestions, strict=True)] \
                if suggestions else labelled
    write_suggestions(out, suggestions)
    done.suggestions = suggestions
    return done
