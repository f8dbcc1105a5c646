"""Gold labels and their review: labelling gold questions (``grace annotate``), drafting and pre-labelling them
(``grace gold generate``, ``grace annotations suggest``), checking the labels (``grace annotations``) and reviewing a
spot-check by hand (``grace annotations review``).

Labelling is the slow, human part of a GRACE benchmark; this package makes it fast
(a keyboard-first local web app), careful (every label saved atomically, KB text
escaped) and measurable (agreement, validation and coverage statistics). Its
command lines are in :mod:`harness.cli` (``annotate.py``, ``gold.py``); curating
the KB itself is :mod:`harness.kb_curate`.
"""
