"""One outcome per response, and the labels the per-article metrics are built on.

The order of the rules is the GRACE contract, first match wins:

1. ``error``: the call failed.
2. ``forbidden_citation``: a cited article has an ``audience`` (the groups that
   may see it) and the user who asked is in none of them. The citation shows
   the asker an article they must not see: a leak, whatever else the answer
   did, so it is judged before everything but a failed call: before a refusal
   (a refusal that cites a restricted article leaks it all the same), an
   invalid or unshown ID elsewhere in the answer, and a correct citation (the
   right article for the question, shown to the wrong person, is still a
   leak). Only rows whose asker's groups are known are checked (the row's
   ``user_groups``, else the gold question's ``groups``); articles without an
   audience may be seen by everyone.
3. ``correct_refusal`` / ``false_refusal``: a response that states a refusal is
   one even if it also cites related articles.
4. ``invalid_citation``: a cited ID is not a KB article; for a model whose citations are read as references
   (its own paths, URLs, titles, footnotes: :mod:`harness.scoring.citation_reading`), ``unmapped_citation``
   when every reference resolved to no KB article (one that did not, beside one that did, is one more citation).
5. ``unshown_citation``: a cited article is in the KB but was not among the
   articles shown to the model (the row's ``retrieved_ids``), so the model cannot
   have read the answer there. It is judged before ``answered_unanswerable``, as
   an invalid ID is: on a must-refuse question it is the same miss either way,
   and naming it says the citation itself is made up. Rows that do not say what
   was shown (no or empty ``retrieved_ids``, e.g. an external responses file)
   skip this rule. A system that retrieves for itself and says what it retrieved (the row's
   ``system_retrieved``: ``python:``, ``http:``, imported logs) is judged against that instead.
6. ``answered_unanswerable``: a must-refuse question answered.
7. ``no_citation``, then ``multiple_citations``: the number of citations.
8. ``correct`` / ``wrong_citation``.

One order for every model: how its citations are read and scored (:class:`Rules`, from its ``CitationSettings``)
is data the rules read, never a second order. A model scored several citations per answer (``multi``) differs in
what three rules look at, not in where they stand: a citation that resolves to nothing (4) or that was not shown
(5) decides the outcome only when every citation is one (one among others is a miss in its citation precision,
not the answer's outcome); it has no ``multiple_citations`` (7); and it hits (8) when an acceptable article is among
those it cites. A question whose gold requires all its articles (``citations_needed = all``) hits only when every
one is cited, which one citation does only when the gold lists one.

A system that returns its citations as data (the row's ``citations``) is read
from those, not from its text (the refusal still is); see
:func:`harness.scoring.extraction.given_citations`.

Five states are kept apart from a plain miss (no citation, several citations,
an invalid ID, an unshown article, a forbidden article) so they are counted and
shown, never folded into a silent 0. An unshown citation, like an invalid one,
names no article for the per-article metrics (predicted label ``none``) and is
no vote in the gold audit. A forbidden citation keeps its article there: the
model read it and chose it, and whether it answers the question is a fact about
the article, not about who asked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

# the names, their order and what each counts as: spelled once, in the outcome table beside the scores.jsonl
# contract they are values of. This module holds the rules that choose one (a new outcome: its entry there, its
# rule here)
from harness.run_folder.outcome_table import OUTCOMES as OUTCOMES
from harness.run_folder.outcome_table import outcomes_where

OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
HITS = outcomes_where(correct=True)  # accuracy's hits
REFUSALS = outcomes_where(refusal=True)  # the answer refused, rightly, wrongly or unjudged
HIT_CODES = tuple(OUTCOME_CODE[h] for h in sorted(HITS))

# finish_reason values meaning the output limit (max_tokens) cut the answer off: OpenAI-compatible servers
# ("length"), Anthropic ("max_tokens"), Gemini ("MAX_TOKENS", or "FinishReason.MAX_TOKENS" from the enum)
CUT_OFF_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})

REFUSE = "REFUSE"  # label of a refusal, true or predicted
NONE = "none"  # predicted label of an answer that names no single KB article

# A question with no label (neither must_refuse nor an expected citation: ``grace import-logs`` without gold) is
# judged only where no label is needed: a failed call, a forbidden, invalid or unshown citation, no citation or
# several; a refusal is ``refusal`` and one shown KB article cited is ``unjudged_citation``, neither right nor wrong.
# A report of such questions lists these outcomes only; a report of labelled ones lists the others.
NEEDS_LABEL = outcomes_where(needs_label=True)
LABEL_FREE = outcomes_where(needs_label=False)
# decided only for a model whose citations are read as references (unmapped_citation): a GRACE model's report
# does not list them, so it stays what it was
REFERENCES_ONLY = outcomes_where(references_only=True)


def reported_outcomes(labelled: bool, references: bool = False) -> list[str]:
    """The outcomes a report counts, in code order: a labelled run's, or an unlabelled run's (see LABEL_FREE);
    those of a model read as references only when ``references``."""
    left_out = LABEL_FREE if labelled else NEEDS_LABEL
    if not references:
        left_out = left_out | REFERENCES_ONLY
    return [o for o in OUTCOMES if o not in left_out]


@dataclass(frozen=True, slots=True)
class Rules:
    """How a model's citations are judged (the mode, as data: from its ``CitationSettings``; none is GRACE's)."""

    multi: bool = False  # several citations per answer (scoring = "multi"): see the module docstring
    references: bool = False  # read as references: every citation unmapped is unmapped_citation, not invalid


GRACE = Rules()


def decide_outcome(
    cited_ids: Sequence[str],
    refused: bool,
    must_refuse: bool,
    expected: Collection[str],
    kb_ids: Collection[str],
    *,
    shown: Collection[str] | None = None,
    error: bool = False,
    audiences: Mapping[str, Collection[str]] | None = None,
    groups: Collection[str] | None = None,
    unmapped: int = 0,
    all_needed: bool = False,
    rules: Rules = GRACE,
) -> str:
    """The outcome of one response (rules in the module docstring); ``shown`` is the row's retrieved_ids, if known;
    ``audiences`` the KB's restricted articles (ID -> the groups that may see it), ``groups`` the asker's, if known.
    ``unmapped``: citations that resolved to no article (``cited_ids`` are then the distinct articles the others
    resolved to): all unmapped is ``unmapped_citation`` (``invalid_citation`` for a model read as IDs), and each
    counts as a citation made. ``all_needed``: the gold requires every expected article (``citations_needed =
    all``). ``rules``: how the model's citations are read and scored (GRACE's by default)."""
    if error:
        return "error"
    if audiences and groups is not None and forbidden_ids(cited_ids, audiences, groups):
        return "forbidden_citation"
    if refused:
        if not must_refuse and not expected:  # a question with no label: see LABEL_FREE
            return "refusal"
        return "correct_refusal" if must_refuse else "false_refusal"
    for cid in cited_ids:
        if cid not in kb_ids:
            return "invalid_citation"
    if unmapped and not cited_ids:
        return "unmapped_citation" if rules.references else "invalid_citation"
    if shown:
        if rules.multi:  # one unshown among others is a precision miss; all of them, the answer's outcome
            for cid in cited_ids:
                if cid in shown:
                    break
            else:
                if cited_ids:
                    return "unshown_citation"
        else:
            for cid in cited_ids:
                if cid not in shown:
                    return "unshown_citation"
    if must_refuse:
        return "answered_unanswerable"
    if not cited_ids:
        return "no_citation"
    if len(cited_ids) + unmapped > 1 and not rules.multi:
        return "multiple_citations"
    if not expected:
        return "unjudged_citation"
    if all_needed:
        for e in expected:
            if e not in cited_ids:
                return "wrong_citation"
        return "correct"
    if cited_ids[0] in expected:  # GRACE's one citation (the hot path: a million rows), or a multi answer's first
        return "correct"
    for cid in cited_ids[1:]:
        if cid in expected:
            return "correct"
    return "wrong_citation"


def forbidden_ids(cited_ids: Sequence[str], audiences: Mapping[str, Collection[str]],
                  groups: Collection[str]) -> list[str]:
    """The cited articles the asker may not see: each has an audience, and none of ``groups`` is in it."""
    return [c for c in cited_ids if (allowed := audiences.get(c)) is not None and not any(g in allowed for g in groups)]


def true_label(cited_ids: Sequence[str], must_refuse: bool, expected: Sequence[str]) -> str:
    """REFUSE for must_refuse; else the cited ID when it is an expected one, else the first expected ID.

    With several acceptable articles, citing any of them is right, so the true
    label follows the citation instead of penalising the choice of a second one.
    """
    if must_refuse:
        return REFUSE
    for cid in cited_ids:
        if cid in expected:
            return cid
    return expected[0]


def predicted_label(cited_ids: Sequence[str], refused: bool, kb_ids: Collection[str],
                    shown: Collection[str] | None = None) -> str:
    """REFUSE; else the one cited KB article, if it was shown (or nothing says what was); else NONE."""
    if refused:
        return REFUSE
    if len(cited_ids) == 1 and cited_ids[0] in kb_ids and (not shown or cited_ids[0] in shown):
        return cited_ids[0]
    return NONE


def is_cut_off(finish_reason: object) -> bool:
    """Did the output limit stop this answer? Not an outcome: a cut-off answer is judged like any other
    (the spot-check skips it). OpenAI-compatible "length", Anthropic "max_tokens", Gemini "MAX_TOKENS"."""
    return isinstance(finish_reason, str) and finish_reason.strip().rsplit(".", 1)[-1].lower() in CUT_OFF_REASONS
