"""Curating a built KB in a local web app (``grace kb curate``): lint's findings as a worklist, fixed by hand or by a
model's proposal, each fix applied through the KB's curation overlay (:mod:`kb_builder.curation`).

It lives apart from :mod:`kb_builder`, which needs only grace's core, because the app is served by grace's web core
(:mod:`harness.web`) and its proposals are model calls through the engine of ``grace run`` (:mod:`harness.runner`);
and apart from :mod:`annotations`, which is gold labels and their review. The page (``static/curate.*``) and the
proposal prompt (``templates/proposal.v1.txt``) ship with it.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"  # the curation page's own assets; harness.web serves the shared ones
