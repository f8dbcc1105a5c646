"""Scoring: responses -> per-response outcomes (scores.jsonl) -> whole-run metrics (report.json).

``score_responses`` is the entry point for ``grace score`` and for ``grace run``
when a run finishes; ``extract`` and ``decide_outcome`` are the pure per-response
rules, exposed for tests and for tools that judge a single answer.
"""

from harness.scoring.extraction import Extraction, extract, extract_both, extract_lenient, extract_strict
from harness.scoring.outcomes import HITS, OUTCOMES, decide_outcome
from harness.scoring.refusal import REFUSAL_SENTENCE, is_refusal, is_strict_refusal
from harness.scoring.score_run import score_responses

__all__ = [
    "Extraction", "extract", "extract_both", "extract_lenient", "extract_strict",
    "HITS", "OUTCOMES", "decide_outcome", "REFUSAL_SENTENCE", "is_refusal", "is_strict_refusal",
    "score_responses",
]
