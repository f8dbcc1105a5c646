"""Where a person's name can be in a text, read from its capitalised words: the candidates the name model judges.

Why rules before the model: the small English model misses names by phrasing
(issue 45: "Contact Jean-Pierre Martin or Sofia Rossi" gave no person, "Sofia
Rossi" was a place, "Can Jean-Pierre Martin claim" gave "Pierre Martin" and
leaked "Jean-"), while the words themselves say most of it. A name is a run of
capitalised words on one line ("Jean-Pierre", "O'Connor", "McAllister",
"Łukasz"), particles ("van der", "di", "al-") and initials ("R.") between them,
that starts with a given name (``given_names.txt``). The run is cut where the
name starts: a sentence's first word ("Contact", "Can"), an honorific or a job
title ("Dr", "Payroll Lead") goes before it; any other capitalised word before
it makes the run a title ("the Travel Booking Tool"), and so does an article. A
name ends where the run ends, so "Sofia Rossi Foundation" is one thing.

Then the last word decides who else must agree (:class:`Candidate` ``.sure``):

- a surname (``surnames.txt``), or a word that is no English word after a given
  name that is no English word either ("Kwame Mensah"): a name, with no model;
- an English word ("Victoria Line", "Mark Complete"), or after a given name that
  is one ("Grace Whitfield", "June Offsite"): a name only when the model tags a
  person there;
- a run that starts with no given name but with a word that is no English word
  ("Oluwaseun Adeyemi") is a name only when it ends with a surname: with no
  model when that is no English word either, else when the model agrees.

English words are the lemmatizer's index of the model's own pipeline (WordNet's
nouns, verbs, adjectives and adverbs): no list to ship, the same model. A word
that ends an organisation's or a place's name ("Office", "Campus", "Line"), one
that starts a place's ("San", "Fort"), or a last word that is no noun at all
("Complete") makes a thing's name whatever else agrees. What these rules cost
and what they miss is measured on the Measurements page (person names).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


def _letters(case: str) -> str:
    """A character class body of the Latin letters of one case (Latin-1, Extended-A and -B, Vietnamese)."""
    chars = [chr(c) for r in (range(0x41, 0x5B), range(0x61, 0x7B), range(0xC0, 0x250), range(0x1E00, 0x1F00))
             for c in r if unicodedata.category(chr(c)) == case and "LATIN" in unicodedata.name(chr(c), "")]
    out, start = [], 0
    while start < len(chars):  # ranges of consecutive code points, so the class stays short
        end = start
        while end + 1 < len(chars) and ord(chars[end + 1]) == ord(chars[end]) + 1:
            end += 1
        out.append(re.escape(chars[start]) + (f"-{re.escape(chars[end])}" if end > start else ""))
        start = end + 1
    return "".join(out)


UPPER, LOWER = _letters("Lu"), _letters("Ll")
# one token of a name: "O'Brien", "McAllister", "Jean-Luc", "Eun-ji", "al-Farsi", "Łukasz"; never all capitals
NAME_TOKEN = re.compile(rf"(?:(?:al|el)-)?[{UPPER}](?:[{LOWER}]+|['\u2019][{UPPER}][{LOWER}]+)"
                        rf"(?:[{UPPER}][{LOWER}]+)?(?:-[{UPPER}]?[{LOWER}]+)*")
PARTICLES = frozenset("""van von der den de del della dello degli dei di da dos das du le la los las bin ibn al el ter
ten zu zum zur af av""".split())
_TOKEN = re.compile(rf"(?<![\w'\u2019.-])(?:(?P<name>{NAME_TOKEN.pattern})|(?P<initial>[{UPPER}]\.)|"
                    rf"(?P<particle>{'|'.join(sorted(PARTICLES, key=len, reverse=True))}))(?![\w-])")
_GAP = re.compile(r"[ \u00a0]+")  # what may stand between two words of one name: spaces on one line
# function words a name never is: "Dear All", "Please Note", "Our Team"
FUNCTION_WORDS = frozenset("""a an the and or but nor of in on at to for from by with without about as into onto
upon over under after before during since until per via vs our your my his her their its we you they he she it i
me us them this that these those all any each every some no not yes please dear hello hi thanks thank regards best
kind new old other same such only also more most less least is are was were be been being do does did have has had
will would can could should may might must shall if when where what who whom whose which why how whether while once
so then than there here because although though unless yet still just even ever never always""".split())
# words that end the name of an organisation, a place, a product or a document, never a person's: "Larkspur
# Analytics", "Austin Campus", "Victoria Line"
THING_WORDS = frozenset("""analytics systems solutions services software labs technologies tech group holdings
partners consulting ltd inc llc gmbh plc corp company bank university college school institute foundation
association council committee board office department team agency ministry authority centre center hospital clinic
street road avenue square park building house hall tower station airport terminal campus line lines valley lake
river bay beach coast island islands springs falls heights gate gardens garden plaza mall market lounge room rooms
desk hub portal app apps cloud suite drive docs notes calendar mail day days week month policy policies manual
handbook guide program programme project platform agreement plan contract form report act law fund award prize
scheme review bonus allowance leave holiday festival summit conference league aid""".split())
# words that start a place's name, never a person's: "San Francisco", "Fort Worth", "Lake Victoria"
PLACE_WORDS = frozenset("""san santa santo são sao saint st ste sankt port fort mount mont monte lake cape costa
puerto porto rio río villa ciudad los las""".split())
HONORIFICS = frozenset("mr mrs ms miss dr prof professor sir dame mx".split())
# job titles, which stand before a name without making it a thing's: "Payroll Lead Sofia Rossi"
TITLE_WORDS = frozenset("""lead manager director head chief officer coordinator president chair chairman chairwoman
chairperson secretary treasurer colleague engineer analyst administrator counsel advisor adviser consultant
specialist supervisor assistant associate partner founder owner contact representative rep""".split())
ARTICLES = frozenset("the a an this our your its their".split())
_NO_NAME_START = FUNCTION_WORDS | HONORIFICS | TITLE_WORDS  # words a name never starts with
_OPENERS = frozenset(".!?:;\n*\u2022>")  # what a sentence, a line or a list item starts after
MAX_NAME_WORDS = 4
_REACH = 400  # how far before or after a run the rules look (a heading's "#", a run's ends): long lines stay linear


@dataclass(frozen=True)
class Candidate:
    """A place where a person's name reads; ``sure`` when the words alone say so, else the model must agree."""

    start: int
    end: int
    value: str
    sure: bool
    given: bool  # starts with a given name


@dataclass(frozen=True)
class Lexicon:
    """The English words of the model's pipeline, which the rules look words up in beside the lists of names (empty
    without a model: then no word is English)."""

    english: frozenset[str] = frozenset()
    nouns: frozenset[str] = frozenset()


@lru_cache(maxsize=2)
def _names_list(file: str) -> frozenset[str]:
    path = Path(__file__).with_name(file)
    return frozenset(line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                     if line.strip() and not line.startswith("#"))


def given_names() -> frozenset[str]:
    """First names of many countries (``given_names.txt``, from Faker's locales): "Citrix Workspace", "Sprint
    Reviews", "Tejo Pensões" start with none."""
    return _names_list("given_names.txt")


def surnames() -> frozenset[str]:
    """Last names of many countries (``surnames.txt``, from Faker's locales)."""
    return _names_list("surnames.txt")


def is_given(token: str) -> bool:
    return token in given_names() or token.split("-")[0] in given_names()


def is_surname(token: str) -> bool:
    return token in surnames() or token.split("-")[-1] in surnames()


def _lemmas(word: str) -> set[str]:
    w = word.lower()
    out = {w}
    if w.endswith("ies"):
        out.add(w[:-3] + "y")
    if w.endswith("es"):
        out.add(w[:-2])
    if w.endswith("s"):
        out.add(w[:-1])
    return out


def english(word: str, lex: Lexicon) -> bool:
    """Whether a word (any part of a hyphenated one, "al-" aside) is an English word."""
    parts = word.split("-")
    if len(parts) > 1 and parts[0] in ("al", "el"):
        parts = parts[1:]
    return any(p and bool(_lemmas(p) & lex.english) for p in parts)


def _parts(token: str) -> list[str]:
    return [p.lower() for p in re.split(r"[-'\u2019]", token) if p]


def runs(text: str, start: int = 0, end: int | None = None) -> Iterator[list[re.Match[str]]]:
    """Runs of name tokens, particles and initials on one line, spaces between them."""
    run: list[re.Match[str]] = []
    for m in _TOKEN.finditer(text, start, len(text) if end is None else end):
        if run and not _GAP.fullmatch(text, run[-1].end(), m.start()):
            yield run
            run = []
        run.append(m)
    if run:
        yield run


def _trim(run: list[re.Match[str]]) -> list[re.Match[str]]:
    """A run starts and ends with a name token: particles and initials at its ends belong to no name here."""
    while run and run[0].lastgroup != "name":
        run = run[1:]
    while run and run[-1].lastgroup != "name":
        run = run[:-1]
    return run


def candidates(text: str, lex: Lexicon) -> Iterator[Candidate]:
    """Every run of ``text`` that reads as a person's name, with whether the model must agree."""
    for run in runs(text):
        found = _in_run(text, _trim(run), lex)
        if found is not None:
            yield found


def _in_run(text: str, run: list[re.Match[str]], lex: Lexicon) -> Candidate | None:
    if sum(m.lastgroup == "name" for m in run) < 2 or _in_heading(text, run[0].start()):
        return None
    # the name starts at its first given name or word that is no English word ("Contact", "Does", "Payroll" go)
    start = next((i for i, m in enumerate(run) if m.lastgroup == "name" and m.group().lower() not in _NO_NAME_START
                  and (is_given(m.group()) or not english(m.group(), lex))), None)
    if start is None:
        return None
    given = is_given(run[start].group())
    if start and not _droppable(text, run, start):
        return None  # a capitalised word before the name, mid-sentence: a title ("the Travel Booking Tool")
    if _word_before(text, run[0].start())[0].lower() in ARTICLES:
        return None  # a person's name takes no article ("the Vitalis Saúde plan")
    words = run[start:]
    tokens = [m.group() for m in words if m.lastgroup == "name"]
    if not 2 <= len(tokens) <= MAX_NAME_WORDS:
        return None
    if any(p in FUNCTION_WORDS or p in THING_WORDS for t in tokens for p in _parts(t)):
        return None
    first, last = tokens[0], tokens[-1]
    if first.lower() in PLACE_WORDS:
        return None
    if lex.nouns and english(last, lex) and not any(_lemmas(p) & lex.nouns for p in last.split("-")) \
            and not is_surname(last):
        return None  # no noun ("Mark Complete", "Slack Connect")
    if given:
        sure = is_surname(last) or not (english(last, lex) or english(first, lex))
    elif not is_surname(last):
        return None  # "Tejo Pensões": without a given name, only a surname makes a person
    else:
        sure = not english(last, lex)
    return Candidate(words[0].start(), words[-1].end(), text[words[0].start():words[-1].end()], sure, given)


def confirmed(c: Candidate, people: list[tuple[int, int]]) -> Candidate | None:
    """``c`` when the model tags a person over any of it (``people``: the model's spans)."""
    return c if any(a < c.end and c.start < b for a, b in people) else None


def _at_start(text: str, at: int) -> bool:
    """Whether ``at`` starts a sentence, a line or a list item (its first word may be any capitalised word)."""
    j = at
    while j > 0 and text[j - 1] in " \t\u00a0":
        j -= 1
    return j == 0 or text[j - 1] in _OPENERS or (text[j - 1] in "-\u2013\u2014" and (j < 2 or text[j - 2].isspace()))


def _word_before(text: str, at: int) -> tuple[str, int]:
    """The word before the spaces before ``at``, and where it starts ("" when punctuation comes first)."""
    j = at
    while j > 0 and text[j - 1] in " \t\u00a0":
        j -= 1
    i = j
    while i > 0 and text[i - 1].isalpha():
        i -= 1
    return (text[i:j], i) if j < at else ("", at)


def _droppable(text: str, run: list[re.Match[str]], start: int) -> bool:
    """Whether the words of the run before its name are no part of a title: a sentence's first word alone, or
    words up to an honorific, a job title or a function word ("Please", "Dear")."""
    if any(m.group().lower() in ARTICLES for m in run[:start]):
        return False  # "The Washington Post"
    lead = run[start - 1].group().lower().rstrip(".")
    if lead in HONORIFICS or lead in TITLE_WORDS or lead in FUNCTION_WORDS:
        return True
    return start == 1 and _at_start(text, run[0].start())


def _in_heading(text: str, at: int) -> bool:
    """A Markdown heading or an article's title line names a topic ("# Larkspur Analytics Employee Policies
    Manual"), and the model reads its capitalised words as a name: a person named there is named in the text
    below, where it is found. A line whose start is further back than a heading's length is no heading."""
    i = text.rfind("\n", max(0, at - _REACH), at) + 1
    if i == 0 and at > _REACH:
        return False
    while i < at and text[i] in " \t":
        i += 1
    return text.startswith(("#", "[ID:"), i)  # "[ID: 17] Title": an article's title line in a prompt


def after_a_title_word(text: str, at: int, names: set[str]) -> bool:
    """Whether the word at ``at`` follows a capitalised word of a title on its line ("Google Doc" after the
    name "Doc Norton"): a one-word mention of a name there is that title's, not the person's."""
    word, start = _word_before(text, at)
    return (NAME_TOKEN.fullmatch(word) is not None and word not in names and not _at_start(text, start)
            and word.lower() not in _NO_NAME_START)


def in_a_title(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether the words at ``text[start:end]`` are part of a title, a heading or a thing's name here: their run
    reads as no name that holds them."""
    line_start = text.rfind("\n", max(0, start - _REACH), start) + 1
    line_end = text.find("\n", end, end + _REACH)
    for run in runs(text, max(line_start, start - _REACH), min(len(text), end + _REACH) if line_end < 0 else line_end):
        if run[0].start() <= start < run[-1].end():
            found = _in_run(text, _trim(run), lex)
            return found is None or not (found.start <= start and end <= found.end)
    return False
