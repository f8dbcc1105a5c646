"""One outcome per response, and the labels the per-article metrics are built on.

The order of the rules is the GRACE contract: a refusal is judged first (a
response that states a refusal is one even if it also cites related articles),
then an unknown ID, then answering what should have been refused, then the
number of citations. Three states are kept apart from a plain miss (no
citation, several citations, an invalid ID) so they are counted and shown,
never folded into a silent 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

OUTCOMES = (
    "correct",
    "correct_refusal",
    "false_refusal",
    "invalid_citation",
    "answered_unanswerable",
    "no_citation",
    "multiple_citations",
    "wrong_citation",
    "error",
)
OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOMES)}
HITS = frozenset({"correct", "correct_refusal"})
HIT_CODES = tuple(OUTCOME_CODE[h] for h in sorted(HITS))

REFUSE = "REFUSE"  # label of a refusal, true or predicted
NONE = "none"  # predicted label of an answer that names no single KB article


def decide_outcome(
    cited_ids: Sequence[str],
    refused: bool,
    must_refuse: bool,
    expected: Collection[str],
    kb_ids: Collection[str],
    *,
    error: bool = False,
) -> str:
    if error:
        return "error"
    if refused:
        return "correct_refusal" if must_refuse else "false_refusal"
    for cid in cited_ids:
        if cid not in kb_ids:
            return "invalid_citation"
    if must_refuse:
        return "answered_unanswerable"
    if not cited_ids:
        return "no_citation"
    if len(cited_ids) > 1:
        return "multiple_citations"
    return "correct" if cited_ids[0] in expected else "wrong_citation"


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


def predicted_label(cited_ids: Sequence[str], refused: bool, kb_ids: Collection[str]) -> str:
    if refused:
        return REFUSE
    if len(cited_ids) == 1 and cited_ids[0] in kb_ids:
        return cited_ids[0]
    return NONE
