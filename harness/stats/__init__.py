"""The statistics grace reports with: intervals of a share (``wilson``), bootstrap intervals of a mean over questions
(``bootstrap``) and agreement between raters (``kappa``).

One implementation of each for every stage that reports a figure (the KB builder's retrieval evaluation, the
scorer, the spot-check, the labelling apps); it imports nothing of grace's, so every stage may use it.
"""
