"""Every outcome a response can come to, and everything each reader needs to know of it, in one table.

The names are values of ``scores.jsonl`` (:class:`~harness.run_folder.scores.ScoreLine`'s ``outcome``), so they
live in the run folder, the lowest layer every reader of a scored run may import: the scorer, the reports, the
spot-check, the viewer and the exports. Each reader used to keep its own map or set of outcome names (a colour
here, "counts as correct" there), so a new outcome was learnt from failing tests; now each takes what it needs
from :data:`OUTCOME_TABLE`, and a test holds every other module to spelling no set of outcome names.

A new outcome is two files: its name (last in :data:`Outcome`) and its :class:`OutcomeKind` here, and the rule
that decides it in :func:`harness.scoring.outcomes.decide_outcome` (its place in the order of the rules). Its
line in docs/concepts/outcomes.md tells users what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# the outcome names, spelled here only, in the order the scorer codes them (OUTCOMES[code]): the viewer's indexes
# and exports store the codes, so a new outcome goes last and the codes of the others stay what they were.
# forbidden_citation occurs only in runs whose KB gives articles an audience, so scores files without one are what
# they were (the schema version stayed 2)
Outcome = Literal[
    "correct", "correct_refusal", "false_refusal", "invalid_citation", "unshown_citation", "answered_unanswerable",
    "no_citation", "multiple_citations", "wrong_citation", "error", "forbidden_citation",
    # a question with no label (grace import-logs without gold): a refusal, or one shown KB article cited; whether
    # either is right needs a label, so neither is judged (they occur only in such runs)
    "refusal", "unjudged_citation",
    # a model whose citations are read as references (its own paths, URLs, titles, footnotes: issue 39): every
    # reference it cited resolved to no KB article (occurs, and is reported, only for such models)
    "unmapped_citation",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

# the viewer's colour families for a grid cell beyond hit and miss (view.css styles .tone-*, so the stylesheet
# spells no outcome); "leak", the strongest, is a citation the asker may not see
Tone = Literal["none", "plain", "warn", "odd", "fault", "leak"]
TONES: tuple[Tone, ...] = get_args(Tone)


@dataclass(frozen=True)
class OutcomeKind:
    """One outcome: how every report, page and export shows it, and what it counts as.

    Every field is given for every outcome (none has a default), so a new outcome cannot leave one out.
    """

    name: Outcome
    label: str  # the report's words for it: plot legends and tooltips, a failure card's badge
    colour: str  # its fill (#rrggbb) in every plot and badge, so one colour means one outcome everywhere
    white_ink: bool  # the fill is dark enough that a share printed on it reads in white (else in ink)
    tone: Tone  # the viewer's colour family for its grid cell
    cell: str  # how a viewer grid cell shows it; {cited} is the cited article (blank for none or a refusal)
    # the question page's sentence: what the answer did against the gold. Fields: {ids} the cited IDs, {gold} the
    # expected ones ("none"), {shown} the articles shown, {error} the failed call's kind and message, {it} "it" or
    # "one of them" (one or several cited), {citing} ", citing IDS" when it cited any
    sentence: str
    correct: bool  # counts as correct: an accuracy hit (in the reports, exports and the viewer)
    refusal: bool  # the answer refused (an inspect log's refusal; no answer to spot-check in scope "answered")
    failed: bool  # the call failed: no answer at all (never spot-checked, never a vote)
    # True: decided only for a labelled question; False: only for one with no label (grace import-logs without
    # gold); None: for either. A report lists the outcomes its run's kind of question can have
    needs_label: bool | None
    spot_checked: bool  # in the spot-check's default scope ("hits"): a correct citation, or one not judged
    votes: bool  # the one KB article it cites is the model's choice in the viewer's gold audit
    # True: decided (and counted in a report) only for a model whose citations are read as references
    # (CitationSettings.reads == "references"), so a GRACE model's report lists what it always did
    references_only: bool


# in the reports' order (legends, stacked bars, failure cards): right, then wrong, then not judged
OUTCOME_TABLE: tuple[OutcomeKind, ...] = (
    OutcomeKind(
        name="correct", label="correct", colour="#2e7d32", white_ink=True, tone="none", cell="✓ {cited}",
        sentence="cited {ids}, the gold article",
        correct=True, refusal=False, failed=False, needs_label=True, spot_checked=True, votes=True, references_only=False),
    OutcomeKind(
        name="correct_refusal", label="correct refusal", colour="#81c784", white_ink=False, tone="none",
        cell="✓ refused", sentence="refused, and the KB cannot answer this question (must_refuse)",
        correct=True, refusal=True, failed=False, needs_label=True, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="false_refusal", label="false refusal", colour="#90a4ae", white_ink=False, tone="warn",
        cell="refused", sentence="refused, but article {gold} answers it",
        correct=False, refusal=True, failed=False, needs_label=True, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="answered_unanswerable", label="answered unanswerable", colour="#ef6c00", white_ink=False, tone="none",
        cell="answered {cited}", sentence="answered a question the KB cannot answer (must_refuse){citing}",
        correct=False, refusal=False, failed=False, needs_label=True, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="wrong_citation", label="wrong citation", colour="#c62828", white_ink=True, tone="none",
        cell="✗ {cited}", sentence="cited {ids}, not the gold article {gold}",
        correct=False, refusal=False, failed=False, needs_label=True, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="invalid_citation", label="invalid citation", colour="#8e24aa", white_ink=True, tone="odd",
        cell="invalid {cited}", sentence="cited {ids}: not an article of the KB",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(  # a reference (path, URL, title, quote, the system's own ID) that maps onto no KB article
        name="unmapped_citation", label="unmapped citation", colour="#00838f", white_ink=True, tone="odd",
        cell="unmapped", sentence="cited only references that map onto no KB article (each is listed with why)",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=False,
        references_only=True),
    OutcomeKind(
        name="unshown_citation", label="unshown citation", colour="#d81b60", white_ink=True, tone="odd",
        cell="unshown {cited}", sentence="cited {ids}: a KB article that was not among the articles shown ({shown})",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=False, references_only=False),
    OutcomeKind(  # a leak: the asker may not see the cited article
        name="forbidden_citation", label="forbidden citation (the asker may not see it)", colour="#1a237e",
        white_ink=True, tone="leak", cell="forbidden {cited}",
        sentence="cited {ids}: the user who asked may not see {it} (its audience has none of their groups)",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="no_citation", label="no citation", colour="#fbc02d", white_ink=False, tone="plain",
        cell="no citation", sentence="cited no article and did not refuse (gold: {gold})",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="multiple_citations", label="multiple citations", colour="#8d6e63", white_ink=False, tone="plain",
        cell="several", sentence="cited several articles ({ids}); the answer must come from exactly one",
        correct=False, refusal=False, failed=False, needs_label=None, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="error", label="error (failed call)", colour="#37474f", white_ink=True, tone="fault",
        cell="error", sentence="the call failed: {error}",
        correct=False, refusal=False, failed=True, needs_label=None, spot_checked=False, votes=False, references_only=False),
    # an unlabelled run's (imported logs without gold): neither right nor wrong
    OutcomeKind(
        name="refusal", label="refusal (not judged: no label)", colour="#b0bec5", white_ink=False, tone="plain",
        cell="refused", sentence="refused; the question has no label, so whether it should have is not known",
        correct=False, refusal=True, failed=False, needs_label=False, spot_checked=False, votes=True, references_only=False),
    OutcomeKind(
        name="unjudged_citation", label="cited a shown article (not judged: no label)", colour="#64b5f6",
        white_ink=False, tone="plain", cell="{cited}",
        sentence="cited {ids}, an article that was shown; the question has no label, so whether it is the right "
                 "one is not known",
        correct=False, refusal=False, failed=False, needs_label=False, spot_checked=True, votes=True, references_only=False),
)
OUTCOME_KINDS: dict[str, OutcomeKind] = {k.name: k for k in OUTCOME_TABLE}


def outcomes_where(**fields: object) -> frozenset[str]:
    """The names of the outcomes whose fields have these values, e.g. ``outcomes_where(correct=True)``."""
    return frozenset(k.name for k in OUTCOME_TABLE if all(getattr(k, f) == v for f, v in fields.items()))
