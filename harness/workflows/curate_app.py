"""``grace kb curate``: the curation web app, opened and ready to serve, and proposals for lint findings as one call.

The app works through the curation overlay (:func:`harness.workflows.kb_edits.open_curation`: every action saved
to ``KB/curation.jsonl`` at once and re-applied by ``grace kb build``); proposals go through the engine of
``grace run`` (cached, priced, ``--dry-run``, ``--redact-pii``) with the knobs of :class:`ModelCalls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from harness.workflows.calls import ModelCalls

if TYPE_CHECKING:
    from rich.console import Console

    from harness.kb_curate.app import CurateApp
    from harness.kb_curate.proposals import Proposal
    from harness.kb_curate.proposer import Proposer
    from harness.runner.calls import CallSettings, Estimate
    from kb_builder.curation import Curation
    from kb_builder.store import KB

__all__ = ["CuratingApp", "open_curating", "propose_fixes"]


@dataclass
class CuratingApp:
    """The curation app, open on its KB (which it holds the one-writer lock of until ``close()``): ``app`` is what
    :func:`harness.web.listen` serves, ``curation`` the overlay it acts through."""

    app: CurateApp
    curation: Curation
    proposer: str
    notes: list[str] = field(default_factory=list)
    new_keys: dict[str, str] = field(default_factory=dict)  # a team's keys issued by this start: printed once

    def close(self) -> None:
        self.curation.close()

    def __enter__(self) -> CuratingApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _proposer(model: str, calls: ModelCalls, language: str | None, template: str | None, console: Console | None = None,
              ready: bool = True) -> tuple[Proposer, CallSettings]:
    from harness.kb_curate.proposer import make_proposer

    proposer = make_proposer(model, options=calls.options, prices=calls.prices, language=language, template=template,
                             ready=ready)
    settings = calls.settings(redactor=calls.redactor(console))
    return proposer, settings


def open_curating(kb: str | Path, *, propose_with: str = "baseline:heuristic", calls: ModelCalls | None = None,
                  author: str | None = None, run: str | Path | None = None, template: str | None = None,
                  console: Console | None = None, reviewers: str | None = None, curators: str | None = None,
                  new_keys: str | None = None) -> CuratingApp:
    """Open the curation app on ``kb``: lint's findings worst first (``run``: a scored run also names the pairs its
    models swap), proposals from ``propose_with`` (``baseline:heuristic`` offline, or ``PROVIDER:MODEL``), every
    action recorded as ``author`` (default ``$GRACE_ANNOTATOR`` or the login name).

    ``reviewers`` (``dana,erin``) opens it for a team: each person names themself on the page, a curator's action
    (``curators``: the roster; default anyone named) waits in ``KB/curation_review.jsonl`` until a reviewer
    approves it (then it is applied as any action) or rejects it, with the reason. Every person named gets their
    own key (``opened.new_keys``, printed once; ``new_keys``: ``bob`` replaces theirs); a name alone acts as
    nobody who holds one."""
    from annotations.teamwork import parse_names
    from harness.core.errors import GraceError
    from harness.kb_curate.app import CurateApp
    from harness.kb_curate.change_requests import ReviewQueue
    from harness.run_folder.run_dir import scored_rows
    from kb_builder.curation import default_author, open_curation

    calls = (calls or ModelCalls()).check()
    team = parse_names(reviewers, "--reviewers")
    roster = parse_names(curators, "--curators")
    if roster is not None and team is None:
        raise GraceError("--curators names a team's curators: give --reviewers too (who approves their changes)")
    cur = open_curation(kb)
    try:
        proposer, settings = _proposer(propose_with, calls, cur.kb.manifest.language, template, console)
        scores = scored_rows(run, "then give it again") if run is not None else None  # the KB builder reads no run
        review = ReviewQueue(cur.path) if team else None
        app = CurateApp(cur, proposer, settings, author=author or default_author(), run=scores, review=review,
                        curators=roster, reviewers=team)
        new = {} if review is None else review.credentials.issue(list(dict.fromkeys([*(roster or []), *(team or [])])),
                                                                 parse_names(new_keys, "--new-key") or [])
    except BaseException:
        cur.close()
        raise
    opened = CuratingApp(app, cur, proposer.name, new_keys=new)
    c = app.state()["counts"]
    opened.notes.append(f"{len(app.findings)} finding(s) to work through" + (
        f" ({', '.join(f'{n} {k}' for k, n in c.items())})" if c else "") + f"; proposals from {proposer.name}")
    if app.review is not None:
        pending = app.state()["team"]["pending"]
        opened.notes.append(f"a team session: curators' actions wait for a reviewer ({', '.join(team or [])}); "
                            f"{pending} change(s) pending in {app.review.path}")
    if cur.conflicts():
        opened.notes.append(f"{len(cur.conflicts())} edit(s) the last build could not re-apply: listed in the app")
    return opened


@overload
def propose_fixes(kb: str | Path | KB, model: str = "baseline:heuristic", *, kinds: Sequence[str] | None = None,
                  limit: int | None = None, calls: ModelCalls | None = None, dry_run: Literal[False] = False,
                  template: str | None = None, console: Console | None = None) -> list[Proposal]: ...
@overload
def propose_fixes(kb: str | Path | KB, model: str = "baseline:heuristic", *, kinds: Sequence[str] | None = None,
                  limit: int | None = None, calls: ModelCalls | None = None, dry_run: Literal[True],
                  template: str | None = None, console: Console | None = None) -> list[Estimate]: ...
@overload
def propose_fixes(kb: str | Path | KB, model: str = "baseline:heuristic", *, kinds: Sequence[str] | None = None,
                  limit: int | None = None, calls: ModelCalls | None = None, dry_run: bool = False,
                  template: str | None = None,
                  console: Console | None = None) -> list[Proposal] | list[Estimate]: ...
def propose_fixes(kb: str | Path | KB, model: str = "baseline:heuristic", *, kinds: Sequence[str] | None = None,
                  limit: int | None = None, calls: ModelCalls | None = None, dry_run: bool = False,
                  template: str | None = None, console: Console | None = None) -> list[Proposal] | list[Estimate]:
    """A proposal for each of lint's findings on ``kb`` (of ``kinds``, the first ``limit``), worst first, without
    changing anything: a list of :class:`harness.kb_curate.proposals.Proposal` (a rejected one has ``error`` set). With
    ``dry_run``: what the calls would cost (``Estimate`` rows), and no call."""
    from harness.kb_curate.proposals import KIND_FOR_FINDING, make_input
    from harness.kb_curate.proposer import estimate, propose
    from harness.runner.calls import PromptStats
    from harness.workflows.kb import lint_kb, load_kb
    from kb_builder.curation import paragraphs

    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    calls = (calls or ModelCalls()).check()
    found = [f for f in lint_kb(kb).findings if f.kind in KIND_FOR_FINDING and (not kinds or f.kind in kinds)]
    inputs = []
    for f in found:
        kind = KIND_FOR_FINDING[f.kind]
        ids = f.articles[:2] if kind == "merge" else f.articles[:1]
        if kind == "split" and len(paragraphs(kb.by_id[ids[0]].text)) < 2:
            continue  # one paragraph: nowhere to split (an edit by hand)
        inputs.append(make_input(kb, kind, ids, finding=f.message, finding_kind=f.kind,
                                 paragraphs=lambda i: paragraphs(kb.by_id[i].text)))
        if limit is not None and len(inputs) >= limit:
            break
    proposer, settings = _proposer(model, calls, kb.manifest.language, template, console, ready=not dry_run)
    if dry_run:
        return estimate(proposer, inputs, settings)
    proposals = propose(proposer, inputs, settings, PromptStats())
    for n, p in enumerate(proposals, 1):
        p.id = n
    return proposals
