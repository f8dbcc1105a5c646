"""Hallucination spot-checks (``grace spotcheck``): claims or segments, answer quality, calibration, meta-eval.

A model that cites the right article usually answers from it, but not always.
The spot-check samples answers (correct-citation hits by default; ``--scope``),
and has a judge (an LLM through the same runner as ``grace run``, or the
offline ``baseline:lexical``) check them: by default each answer is split into
atomic claims tied to their citations and each claim gets supported, partial
or unsupported with its evidence sentence (``--mode claims``); the cheaper
``--mode segments`` splits at citations without an LLM, checks quotes verbatim
and asks yes/no per segment. It reports faithfulness (groundedness), the
hallucination rate, the hallucination risk and coverage, each with its n and,
from ``metrics.MIN_ANSWERS_FOR_CI`` checked answers up, a bootstrap CI;
``--quality`` adds GroUSE-style grades. Unreadable replies are asked again
once, never cached, and counted; answers cut off by max_tokens are skipped and
counted; a JSON answer is checked by its answer text. A model citing several
sources (run.json ``models[].citations``) also gets each cited sentence labelled
own / other / none against the articles its answer cites (citation_support),
with its own figures and the judge's kappa on multi-citation cases. ``calibrate`` measures
the judge against human labels (kappa per class for claims); ``meta-eval`` runs
it on hand-written cases, support and GroUSE's seven failure modes.

Modules: segmentation, quotes (no LLM); judge_prompt (segment template, verdict
parsing), claims (extraction and claim verdicts), quality (GroUSE-style
grades and their meta-eval), citation_support (claim-level support of several citations, its cases and
meta-eval), lexical_judge, judge_calls (engine wiring), passes
(the segment passes, resumable); inputs (scopes), sampling, metrics, pipeline,
publish (report), review (human CSV), calibration, meta_eval; spotcheck_records (the
files' typed schemas).
"""
