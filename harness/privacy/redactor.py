"""Redact what grace sends to a model, consistently within a call, and put the originals back in its reply.

One :class:`Redactor` serves one command. For each call it replaces every find
of :mod:`.detectors` (and of :mod:`.names`, when installed) with a typed
placeholder, ``<PERSON_1>``, ``<EMAIL_2>``: the same value is the same
placeholder everywhere in that call (two spellings of one phone number, or
"Maria" after "Maria Fernandes", too), so a judge can still see that the answer
and the article name the same person.

A call is everything a provider may send, redacted at once with one table
(:meth:`Redactor.request`): the messages and the request's context, which a
``python:`` system reads and an ``http:`` body template may send (the
question, its ID, each article's title and text). For ``grace run`` the
question and the articles are redacted first and the template is filled with
them, so grace's own prompt text is never read; where a caller hands over
finished messages, the lines of grace's templates in them are left as written
(:mod:`.own_text`). The counts are those of the table, so they are what was sent. Placeholders are numbered in order of
appearance, so the same prompt always redacts to the same text: the cache key
and the row's fingerprint are made from the redacted prompt, and the response
cache never holds an original value. The mapping back lives in memory, on the
request (``Request.redactions``), and is used once: the model's reply has its
placeholders replaced by the originals before grace records it.

Counts per type (distinct values per call, summed) and how many prompts held
any are recorded where the command writes its results (:class:`RedactionRecord`);
the values never are.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from harness.privacy.detectors import PERSON, TYPES, Span, find_patterns, normalised, resolve
from harness.privacy.name_runs import NAME_TOKEN, after_a_title_word
from harness.privacy.names import NameFinder, load_name_finder, lower_words, named_as_a_thing, plausible
from harness.run_folder.run_records import RedactionRecord  # what run.json and spotcheck.json record

log = logging.getLogger("grace")
PLACEHOLDER = re.compile(r"<(" + "|".join(TYPES) + r")_(\d+)>")
_PARAGRAPH = re.compile(r"(\n\s*\n)")
PATTERN_TYPES = [t for t in TYPES if t != PERSON]
LANGUAGE_MIN_CHARS = 200  # shorter text takes the call's language (English when the whole call is short)


@dataclass(frozen=True)
class Redacted:
    """One call's messages as sent, and how to put its reply back."""

    messages: list[dict[str, str]]
    restore: dict[str, str]  # placeholder -> original
    found: dict[str, int]


@dataclass(frozen=True)
class _Field:
    """One text of a call: a message (which may hold grace's template lines) or a value (a question, an article)."""

    text: str
    message: bool = False
    title: bool = False  # an article's title names a topic: names are not looked for in it, only their mentions


class Redactor:
    def __init__(self, names: NameFinder | None = None, names_note: str = ""):
        self.names, self.names_note = names, names_note
        self._memo: dict[str, tuple[list[str], _Table]] = {}
        self.found: Counter[str] = Counter()
        self.with_pii = 0

        @lru_cache(maxsize=50000)
        def patterns(paragraph: str) -> tuple[Span, ...]:
            return tuple(find_patterns(paragraph))

        @lru_cache(maxsize=50000)
        def own(paragraph: str) -> tuple[tuple[int, int], ...]:
            from harness.privacy.own_text import own_ranges

            return tuple(own_ranges(paragraph))

        @lru_cache(maxsize=50000)
        def language(text: str) -> str | None:
            from kb_builder.language import detect

            return detect(text)

        self._patterns, self._own, self._language = patterns, own, language

    # --- one call ------------------------------------------------------------------------------------------------

    def _call(self, fields: list[_Field]) -> tuple[list[str], _Table]:
        """Every field of one call redacted with one table (the same value, the same placeholder, in any field);
        memoised, so the same call always gives the same output and is counted once."""
        key = hashlib.sha256(json.dumps([(f.text, f.message, f.title) for f in fields], ensure_ascii=False).encode()).hexdigest()
        done = self._memo.get(key)
        if done is not None:
            return done
        split = [_PARAGRAPH.split(f.text) for f in fields]  # paragraphs at even places, the blank lines between
        found = [[list(self._patterns(p)) if i % 2 == 0 else [] for i, p in enumerate(parts)] for parts in split]
        if self.names is not None:
            self._add_names(fields, split, found)
        table = _Table()
        out = []
        for f, parts, spans in zip(fields, split, found, strict=True):
            pieces = []
            for i, p in enumerate(parts):
                if i % 2 or not spans[i]:
                    pieces.append(p)
                    continue
                keep = resolve(spans[i])
                if f.message:  # a line of grace's own template is never touched
                    own = self._own(p)
                    keep = [s for s in keep if not any(s.start < b and a < s.end for a, b in own)]
                pieces.append(_replace(p, keep, table))
            out.append("".join(pieces))
        done = (out, table)
        self._memo[key] = done
        found_types = table.found()
        self.found.update(found_types)
        self.with_pii += bool(found_types)
        return done

    def _add_names(self, fields: list[_Field], split: list[list[str]], found: list[list[list[Span]]]) -> None:
        """Person names of the call (see :mod:`.names`): finds that read as a name in an English paragraph, then
        every other mention of one of their tokens ("Maria" after "Maria Fernandes")."""
        assert self.names is not None
        whole = "\n\n".join(f.text for f in fields)
        fallback = self._language_of(whole[:4000], "en")  # a paragraph too short to tell is in the call's language
        lowered = lower_words(whole)
        texts = [f.text for f in fields]
        tokens: set[str] = set()
        judged: dict[str, bool] = {}  # value -> a name in this call (a name said 1,000 times is read once)

        def a_name(value: str) -> bool:
            if value not in judged:
                judged[value] = plausible(value, lowered) and not named_as_a_thing(value, texts, self.names.lex)
            return judged[value]

        for f, parts, spans in zip(fields, split, found, strict=True):
            for i, p in enumerate(parts):
                if i % 2 or f.title or self._language_of(p, fallback) not in self.names.languages:
                    continue
                names = [s for s in self.names.find(p) if a_name(s.value)]
                spans[i] += names
                tokens.update(t for s in names for t in s.value.split() if NAME_TOKEN.fullmatch(t))
        if not tokens:
            return
        mention = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, sorted(tokens, key=len, reverse=True)))
                             + r")(?![\w-])")
        for parts, spans in zip(split, found, strict=True):
            for i, p in enumerate(parts):
                if i % 2 == 0:
                    spans[i] += [Span(m.start(), m.end(), PERSON, m.group()) for m in mention.finditer(p)
                                 if not after_a_title_word(p, m.start(), tokens)]

    def _language_of(self, text: str, fallback: str) -> str:
        """The language of ``text`` when it is long enough to tell (a few words with a Dutch name in them read
        as Dutch), else ``fallback``."""
        return (self._language(text) if len(text) >= LANGUAGE_MIN_CHARS else None) or fallback

    # --- what callers use ----------------------------------------------------------------------------------------

    def redact(self, messages: list[dict[str, str]]) -> Redacted:
        """``messages`` with every find replaced by its placeholder (grace's own template lines left as written);
        the same input always gives the same output."""
        texts, table = self._call([_Field(_content(m), True) for m in messages])
        out = [{**m, "content": t} if isinstance(m.get("content"), str) else dict(m)
               for m, t in zip(messages, texts, strict=True)]
        return Redacted(out, table.restore(), table.found())

    def request(self, request: Any, render: Callable[[str, list[Any]], list[dict[str, str]]] | None = None) -> Any:
        """The request with everything a provider may send redacted in one call, and its way back attached
        (``Request.redactions``): the messages and the context a ``python:`` or ``http:`` system reads (the
        question, its ID, each article's title and text).

        With ``render`` (the answer template's, for ``grace run``), the question and the articles are redacted
        first and the messages rendered from them, so the template's own text is never read at all."""
        ctx = request.context
        if ctx is None:
            render = None
        messages = [] if render is not None else request.messages
        fields = [_Field(_content(m), message=True) for m in messages]
        if ctx is not None:
            fields += [_Field(ctx.question_id), _Field(ctx.question)]
            fields += [_Field(x, title=t) for a in ctx.articles for x, t in ((a.title, True), (a.text, False))]
        texts, table = self._call(fields)
        sent = [{**m, "content": t} if isinstance(m.get("content"), str) else dict(m)
                for m, t in zip(messages, texts, strict=False)]
        if ctx is not None:
            rest = texts[len(messages):]
            ctx = replace(ctx, question_id=rest[0], question=rest[1],
                          articles=[replace(a, title=rest[2 + 2 * n], text=rest[3 + 2 * n])
                                    for n, a in enumerate(ctx.articles)])
            if render is not None:
                sent = render(ctx.question, ctx.articles)
        return replace(request, messages=sent, context=ctx, redactions=table.restore() or None)

    def record(self) -> RedactionRecord:
        return RedactionRecord(types=PATTERN_TYPES + ([PERSON] if self.names else []),
                               names=self.names.engine if self.names else None, names_note=self.names_note,
                               prompts=len(self._memo), prompts_with_pii=self.with_pii,
                               found={t: self.found[t] for t in TYPES if self.found[t]})


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _replace(text: str, spans: list[Span], table: _Table) -> str:
    pieces, at = [], 0
    for s in spans:
        pieces += [text[at:s.start], table.placeholder_for(s)]
        at = s.end
    pieces.append(text[at:])
    return "".join(pieces)


class _Table:
    """Placeholders of one call: one per distinct value, numbered per type in order of appearance."""

    def __init__(self) -> None:
        self.by_value: dict[tuple[str, str], str] = {}
        self.placeholder: dict[tuple[str, str], str] = {}  # (kind, normalised) -> placeholder; kinds counted from it
        self.original: dict[str, str] = {}
        self.people: list[tuple[frozenset[str], str]] = []  # a person's name tokens -> placeholder
        self.n: Counter[str] = Counter()

    def found(self) -> dict[str, int]:
        """Distinct values per type in this call."""
        return dict(Counter(kind for kind, _ in self.placeholder))

    def restore(self) -> dict[str, str]:
        return dict(self.original)

    def placeholder_for(self, s: Span) -> str:
        key = (s.kind, normalised(s.kind, s.value))
        ph = self.by_value.get(key)
        if ph is None and s.kind == PERSON:
            ph = self._same_person(key[1])
        if ph is None:
            self.n[s.kind] += 1
            ph = f"<{s.kind}_{self.n[s.kind]}>"
            self.placeholder[key] = ph
            self.original[ph] = s.value
            if s.kind == PERSON:
                self.people.append((frozenset(key[1].lower().split()), ph))
        elif s.kind == PERSON and len(s.value) > len(self.original[ph]):
            self.original[ph] = s.value  # "Maria", then "Maria Fernandes": the reply gets the full name back
        self.by_value[key] = ph
        return ph

    def _same_person(self, name: str) -> str | None:
        """"Maria" after "Maria Fernandes" (or the other way round) is the same person in one call."""
        tokens = frozenset(name.lower().split())
        for known, ph in self.people:
            if tokens <= known or known <= tokens:
                return ph
        return None


def restore(text: str | None, mapping: dict[str, str] | None) -> str | None:
    """The model's reply with each placeholder of its call replaced by the original value."""
    if not text or not mapping or "<" not in text:
        return text
    return PLACEHOLDER.sub(lambda m: mapping.get(m.group(), m.group()), text)


def make_redactor(enabled: bool, console: Any = None) -> Redactor | None:
    """The command's redactor when ``enabled``; says once, on the console or the log, what it cannot find."""
    if not enabled:
        return None
    names, note = load_name_finder()
    if note:
        line = f"--redact-pii: {note}; emails, phones, IBANs, cards, national IDs and IP addresses are redacted"
        if console is not None:  # a Text, not markup: "grace-eval[pii]" would lose "[pii]" as a tag
            from rich.text import Text

            console.print(Text(line, style="yellow"), highlight=False)
        else:
            log.warning(line)
    return Redactor(names, note)


def record_path(out: Any) -> Any:
    """Where a command whose output is one file (a suggestions CSV, a draft gold CSV) records its redaction."""
    from pathlib import Path

    out = Path(out)
    return out.with_name(out.name + ".redaction.json")


def write_record(out: Any, redactor: Redactor) -> Any:
    """The counts (never the values) beside the command's output file; returns the path written."""
    from harness.core.files import atomic_write_text

    path = record_path(out)
    atomic_write_text(path, redactor.record().model_dump_json(indent=2) + "\n")
    return path


def summary_line(rec: RedactionRecord) -> str:
    """"redacted in 12 of 40 prompts: EMAIL 9, PHONE 3 (person names: presidio ...)", for the terminal."""
    found = ", ".join(f"{k} {v}" for k, v in rec.found.items()) or "nothing found"
    names = f"person names by {rec.names}" if rec.names else rec.names_note
    return f"redacted in {rec.prompts_with_pii} of {rec.prompts} prompt(s): {found} ({names})"
