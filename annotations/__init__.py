"""Labelling gold questions (``grace annotate``) and checking the labels (``grace annotations``).

Labelling is the slow, human part of a GRACE benchmark; this package makes it fast
(a keyboard-first local web app), careful (every label saved atomically, KB text
escaped) and measurable (agreement, validation and coverage statistics).
"""
