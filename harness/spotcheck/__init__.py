"""Hallucination spot-checks on correct-citation hits (``grace spotcheck``).

A model that cites the right article usually answers from it, but not always.
The spot-check samples hits, splits each answer into segments at its
citations, checks quotes verbatim and every segment against its own cited
article with a judge (an LLM through the same runner as ``grace run``, or the
offline ``baseline:lexical``), checks uncited segments against what was found
supported, and reports groundedness, the hallucination rate among hits and the
hallucination risk, each with its n and, from ``metrics.MIN_ANSWERS_FOR_CI``
checked answers up, a bootstrap CI. Unreadable verdicts are asked again once,
never cached, and counted; answers cut off by max_tokens are skipped and
counted; a JSON answer is checked by its answer text. ``calibrate`` measures the judge
against human labels; ``meta-eval`` runs it on hand-written cases.

Modules: segmentation, quotes (no LLM); judge (template, verdict parsing),
lexical_judge, judging (engine wiring), passes (the two passes, resumable);
inputs, sampling, metrics, pipeline, publish (report), review (human CSV),
calibration, meta_eval; records (the files' typed schemas).
"""
