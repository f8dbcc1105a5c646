"""Redact what grace sends to a model, consistently within a call, and put the originals back in its reply.

One :class:`Redactor` serves one command. For each call it replaces every find
of :mod:`.detectors` (and of :mod:`.names`, when installed) with a typed
placeholder, ``<PERSON_1>``, ``<EMAIL_2>``: the same value is the same
placeholder everywhere in that call (two spellings of one phone number, or
"Maria" after "Maria Fernandes", too), so a judge can still see that the answer
and the article name the same person. Placeholders are numbered in order of
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
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from harness.privacy.detectors import PERSON, TYPES, Span, find_patterns, normalised, resolve
from harness.privacy.names import NameFinder, load_name_finder
from harness.run_folder.run_records import RedactionRecord  # what run.json and spotcheck.json record

log = logging.getLogger("grace")
PLACEHOLDER = re.compile(r"<(" + "|".join(TYPES) + r")_(\d+)>")
_PARAGRAPH = re.compile(r"(\n\s*\n)")
PATTERN_TYPES = [t for t in TYPES if t != PERSON]


@dataclass(frozen=True)
class Redacted:
    """One call's messages as sent, and how to put its reply back."""

    messages: list[dict[str, str]]
    restore: dict[str, str]  # placeholder -> original
    found: dict[str, int]


class Redactor:
    def __init__(self, names: NameFinder | None = None, names_note: str = ""):
        self.names, self.names_note = names, names_note
        self._memo: dict[str, Redacted] = {}
        self.found: Counter[str] = Counter()
        self.with_pii = 0

        @lru_cache(maxsize=50000)
        def spans(paragraph: str) -> tuple[Span, ...]:
            found = find_patterns(paragraph)
            if self.names is not None:
                found += self.names.find(paragraph)
            return tuple(resolve(found))

        self._spans = spans

    def redact(self, messages: list[dict[str, str]]) -> Redacted:
        """``messages`` with every find replaced by its placeholder; the same input always gives the same output."""
        key = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        done = self._memo.get(key)
        if done is not None:
            return done
        table = _Table()
        out = []
        for m in messages:
            content = m.get("content")
            if isinstance(content, str) and content:
                parts = _PARAGRAPH.split(content)
                content = "".join(p if i % 2 else self._replace(p, table) for i, p in enumerate(parts))
            out.append({**m, "content": content})
        found = dict(Counter(kind for kind, _ in table.placeholder))
        done = Redacted(out, {ph: table.original[ph] for ph in table.original}, found)
        self._memo[key] = done
        self.found.update(found)
        self.with_pii += bool(found)
        return done

    def _replace(self, text: str, table: _Table) -> str:
        spans = self._spans(text)
        if not spans:
            return text
        pieces, at = [], 0
        for s in spans:
            pieces += [text[at:s.start], table.placeholder_for(s)]
            at = s.end
        pieces.append(text[at:])
        return "".join(pieces)

    def request(self, request: Any) -> Any:
        """The request with its messages redacted and its way back attached (``Request.redactions``)."""
        done = self.redact(request.messages)
        return replace(request, messages=done.messages, redactions=done.restore)

    def record(self) -> RedactionRecord:
        return RedactionRecord(types=PATTERN_TYPES + ([PERSON] if self.names else []),
                               names=self.names.engine if self.names else None, names_note=self.names_note,
                               prompts=len(self._memo), prompts_with_pii=self.with_pii,
                               found={t: self.found[t] for t in TYPES if self.found[t]})


class _Table:
    """Placeholders of one call: one per distinct value, numbered per type in order of appearance."""

    def __init__(self) -> None:
        self.by_value: dict[tuple[str, str], str] = {}
        self.placeholder: dict[tuple[str, str], str] = {}  # (kind, normalised) -> placeholder; kinds counted from it
        self.original: dict[str, str] = {}
        self.people: list[tuple[frozenset[str], str]] = []  # a person's name tokens -> placeholder
        self.n: Counter[str] = Counter()

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
