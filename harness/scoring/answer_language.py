"""Did the model answer in the question's language?

A French employee asked in French wants a French answer; a model that answers
(or refuses) in English has failed them even when its citation is right, so
the report counts these answers per model (``other_language_rate``) beside the
citation scores, which they do not change.

A question's language is the KB's (for a KB that mixes languages, the question
is detected among the KB's languages). An answer (its first 500 characters)
is checked in two steps, so the row pass stays fast on a million responses
(about 3 µs a row): most answers use enough distinct function words of the
expected language to be taken as written in it at once (six, or three and more
than any of the languages in RIVALS, whose short words overlap); the rest go to
the detector (py3langid, ~60 µs). An answer too short to tell (a bare citation,
"Yes [ID: 3]") is not counted either way. The sample benchmark's answers in the
seven template languages are each read as their own language and none as English
(tests/harness/prompts/test_language_prompts.py).

Splitting an answer into words and looking each up is the whole cost, so the
six words are first looked for among the first FIRST_WORDS words only; the
decisions are those of the rule read over every word of the head
(tests/harness/scoring/test_answer_language.py holds the rule written plainly and compares).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from kb_builder import language as lang

UNKNOWN, SAME, OTHER = -1, 0, 1
_MARKUP = frozenset({"id", "answer", "citation", "null", "https", "http", "www"})  # citations, JSON keys, links
_WORD = re.compile(r"[^\W\d_]+")
QUICK_HITS = 3  # function words of the expected language that settle it without the detector (if no rival has as many)
SURE_HITS = 6  # this many settle it alone: no other language's text holds six distinct function words of another
MIN_WORDS = 4  # fewer words than this: not enough to tell
HEAD_CHARS = 500  # an answer's language shows in its first sentences; reading more only costs time
FIRST_WORDS = 24  # words looked at before the rest of the head is split: most answers are settled by them
RIVALS = ("en", "fr", "de", "es", "it", "pt", "nl")  # their short function words ("a", "in", "de") overlap


def question_languages(questions: Sequence[object], kb_language: str | None, kb_languages: dict[str, int]) -> list[str]:
    """Each question's language: the KB's, or for a mixed KB the one of its languages the question is written in."""
    main = kb_language or lang.DEFAULT_LANGUAGE
    if len(kb_languages) < 2:
        return [main] * len(questions)
    known = set(kb_languages)
    out = []
    for q in questions:
        found = lang.detect(getattr(q, "question", ""))
        out.append(found if found in known else main)
    return out


class _Words(NamedTuple):
    """The word sets an answer is checked against for one expected language, built once."""

    own: frozenset[str]  # its function words
    known: frozenset[str]  # its and every rival's
    rivals: tuple[frozenset[str], ...]  # each rival's function words
    unshared: frozenset[str]  # its function words that no rival shares
    rivals_unshared: tuple[frozenset[str], ...]  # each rival's that no other language of RIVALS shares


class AnswerLanguage:
    """``check(text, expected)``: SAME, OTHER or UNKNOWN; the stop lists are built once per language."""

    def __init__(self) -> None:
        self._stop: dict[str, frozenset[str]] = {}
        self._own: dict[str, frozenset[str]] = {}
        self._sets: dict[str, _Words] = {}

    def _function_words(self, code: str) -> frozenset[str]:
        words = self._stop.get(code)
        if words is None:
            words = self._stop[code] = lang.stop_words(code) | (lang.MEANINGFUL_EN if code == "en" else frozenset())
        return words

    def _own_words(self, code: str) -> frozenset[str]:
        """``code``'s function words that no rival language shares ("the", "and" for English; "und", "nicht"):
        two of them and none of a rival's settle a tie of shared short words ("a", "in", "de") without the detector,
        which costs 30 µs a row where the sets cost 2."""
        words = self._own.get(code)
        if words is None:
            others = frozenset().union(*(self._function_words(r) for r in RIVALS if r != code))
            words = self._own[code] = self._function_words(code) - others
        return words

    def _words(self, code: str) -> _Words:
        rivals = [r for r in RIVALS if r != code]
        own = self._function_words(code)
        sets = self._sets[code] = _Words(
            own, own.union(*(self._function_words(r) for r in rivals)), tuple(self._function_words(r) for r in rivals),
            self._own_words(code), tuple(self._own_words(r) for r in rivals))
        return sets

    def check(self, text: str, expected: str) -> int:
        head_text = text[:HEAD_CHARS].lower() if text else ""
        sets = self._sets.get(expected) or self._words(expected)
        # Splitting the words off and hashing them is the whole cost (str.split and set intersections run in C;
        # a word with punctuation stuck to it just does not count towards the quick path). Most answers hold
        # SURE_HITS function words in their first FIRST_WORDS words, so those are split off first and the rest
        # of the head (split's remainder, one string) is split only when they do not.
        words = head_text.split(None, FIRST_WORDS)
        if len(words) > FIRST_WORDS:
            rest = words.pop()
            first = sets.own.intersection(words)
            if len(first) >= SURE_HITS:  # six distinct words: more than MIN_WORDS too
                return SAME
            more = rest.split()
            hits = len(first.union(sets.own.intersection(more)))
            if hits >= SURE_HITS:
                return SAME
            words += more
        elif len(words) < MIN_WORDS:
            return UNKNOWN
        else:
            hits = len(sets.own.intersection(words))
            if hits >= SURE_HITS:
                return SAME
        if hits >= QUICK_HITS:
            seen = sets.known.intersection(words)  # each set below is part of ``known``: the same counts
            for rival in sets.rivals:  # more hits than any rival has
                if len(seen & rival) >= hits:
                    break
            else:
                return SAME
            if len(seen & sets.unshared) >= 2:  # or two words of its own, and none of a rival's own
                for rival in sets.rivals_unshared:
                    if not seen.isdisjoint(rival):
                        break
                else:
                    return SAME
        found = lang.detect(" ".join(w for w in _WORD.findall(head_text) if w not in _MARKUP))
        if found is None:
            return UNKNOWN
        return SAME if found == expected else OTHER
