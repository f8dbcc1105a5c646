"""Personal data that a pattern and a checksum find: emails, phones, IBANs, cards, national IDs, IP addresses.

Why checksums: a KB is full of numbers (amounts, dates, article IDs, policy
codes), and a redactor that took every long digit run for a card number would
blank out the facts a judge has to compare. So a candidate counts only when it
validates: an IBAN by its country's length, BBAN format and ISO 13616 mod-97, a
card number by its issuer prefix and Luhn, a national ID by its own check
(:mod:`.national_ids`), a phone number by a shape only phones have or by its
country's numbering plan (:mod:`.phones`).

Matching reads the text folded (:mod:`.folding`): a no-break, narrow or thin
space, a non-breaking hyphen or an en dash between the groups is a separator
like a space or a hyphen, and letters match in either case (``gb82-west-...``).
The span replaced is the one in the original text, separators included, and
every other character is left as it was.

Everything here is plain ``re`` and arithmetic, plus the ``phonenumbers``
package's numbering plans: it runs without the optional name detection
(:mod:`harness.privacy.names`) and never touches the network.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.privacy.checks import IBAN_LENGTH, iban_ok, luhn_ok  # noqa: F401 (re-exported)
from harness.privacy.folding import fold
from harness.privacy.national_ids import find_ids
from harness.privacy.phones import IBAN_BEFORE, find_phones

# entity types, in the order overlapping finds are preferred (an email's local part is no name; an IBAN's digits
# are no phone number)
EMAIL, IBAN, CARD, NATIONAL_ID, IP, PHONE, PERSON = "EMAIL", "IBAN", "CARD", "NATIONAL_ID", "IP", "PHONE", "PERSON"
TYPES = (EMAIL, IBAN, CARD, NATIONAL_ID, IP, PHONE, PERSON)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    value: str  # the text as written


# --- patterns ----------------------------------------------------------------------------------------------------

_EMAIL = re.compile(r"\b[A-Za-z0-9][A-Za-z0-9._%+'-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# an IBAN's start: country, check digits; the rest is read character by character up to the country's length
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ .\-]?[A-Za-z0-9])")
_IBAN_SEP = " .-"
# a card number: 12 to 19 digits, grouped or not; never an ID inside a URL path or a slug
_CARD = re.compile(r"(?<![\w/=#?&.,+\-])\d(?:[ \-]?\d){11,22}(?!\w|[.,]\d|-?[A-Za-z])")
_CARD_PREFIX = re.compile(r"(?:4|5[0-9]|2[2-7]|3[0-9]|6)")


def _card_length_ok(d: str) -> bool:
    """14 digits: Diners; 15: Amex; every other card in use has 16 to 19 (a 13-digit number is an EAN barcode)."""
    if len(d) == 14:
        return d[:2] in ("30", "36", "38", "39")
    if len(d) == 15:
        return d[:2] in ("34", "37")
    return 16 <= len(d) <= 19
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")  # not 4 groups of a longer dotted number
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,7}(?::|(?::[0-9A-Fa-f]{1,4}){1,7}|[0-9A-Fa-f]{1,4})(?![\w:])")


_SECTION_BEFORE = re.compile(r"(?:§|\b(?:sections?|sect?\.|clauses?|chapters?|articles?|art\.|paragraphs?|para\.|"
                             r"versions?|v|release|step|rule|item|point|chapitre|artículo|articolo|artikel|"
                             r"abschnitt|secci[oó]n|sezione|punto|apartado|ponto|άρθρο))\s*$", re.IGNORECASE)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


# "tile@2x.png" is an image at twice the resolution, not a mailbox: no top-level domain is a file extension
_FILE_SUFFIX = frozenset("png jpg jpeg gif svg webp avif bmp ico tif tiff pdf css js json html htm md txt csv xml".split())


def _emails(text: str) -> Iterator[tuple[int, int, str]]:
    if "@" in text:
        for m in _EMAIL.finditer(text):
            if m.group().rsplit(".", 1)[1].lower() not in _FILE_SUFFIX:
                yield m.start(), m.end(), EMAIL


def _ibans(text: str) -> Iterator[tuple[int, int, str]]:
    """An IBAN as written: any case, its groups joined by one space, dot or hyphen (or none), up to its country's
    length; the character after it may not continue it."""
    for m in _IBAN_START.finditer(text):
        want = IBAN_LENGTH.get(m.group()[:2].upper())
        if want is None:
            continue
        chars, i, end = [], m.start(), None
        while i < len(text) and len(chars) < want:
            ch = text[i]
            if ch.isascii() and ch.isalnum():
                chars.append(ch)
            elif not (ch in _IBAN_SEP and chars and i + 1 < len(text) and text[i + 1].isascii()
                      and text[i + 1].isalnum()):
                break
            i += 1
        if len(chars) == want:
            end = i
        if end is None or (end < len(text) and text[end].isalnum()):
            continue
        if iban_ok("".join(chars)):
            yield m.start(), end, IBAN


def _cards(text: str) -> Iterator[tuple[int, int, str]]:
    """Grouped digits whose first 13 to 19 (whole groups) are a card number: the run may go on into another number
    ("4111 1111 1111 1111 2024")."""
    for m in _CARD.finditer(text):
        if IBAN_BEFORE.search(text, max(0, m.start() - 40), m.start()):
            continue
        groups = list(re.finditer(r"\d+", m.group()))
        for last in range(len(groups), 0, -1):
            end = m.start() + groups[last - 1].end()
            d = _digits(text[m.start():end])
            if len(d) < 13:
                break
            if _card_length_ok(d) and _CARD_PREFIX.match(d) and len(set(d)) > 1 and luhn_ok(d):
                yield m.start(), end, CARD
                break


def _national_ids(text: str) -> Iterator[tuple[int, int, str]]:
    for start, end, _name in find_ids(text, digits=True):
        yield start, end, NATIONAL_ID


def _ips(text: str) -> Iterator[tuple[int, int, str]]:
    if "." in text:
        for m in _IPV4.finditer(text):
            if len(m.group()) == 7 or _SECTION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
                continue  # 4.2.1.3 is a section number
            try:
                address = ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            if not (address.is_loopback or address.is_unspecified):  # 127.0.0.1 and 0.0.0.0 point at no one
                yield m.start(), m.end(), IP
    if "::" in text or text.count(":") >= 3:
        for m in _IPV6.finditer(text):
            try:
                address6 = ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            if not (address6.is_loopback or address6.is_unspecified):
                yield m.start(), m.end(), IP


def _phones(text: str) -> Iterator[tuple[int, int, str]]:
    for start, end in find_phones(text):
        yield start, end, PHONE


DETECTORS: tuple[Callable[[str], Iterator[tuple[int, int, str]]], ...] = (
    _emails, _ibans, _cards, _national_ids, _ips, _phones)


# every number looked for but an email, an IP address and an Italian codice fiscale has six digits that at most one
# separator apart: most paragraphs have none and are read by three patterns instead of forty
_SIX_DIGITS = re.compile(r"\d(?:[ .\-/]?\d){5}")
_NUMBERS = (_ibans, _cards, _national_ids, _phones)


def find_patterns(text: str) -> list[Span]:
    """Every checksum-validated or well-shaped find in ``text``, overlaps not yet resolved; spans are offsets in
    ``text`` itself (matching reads it folded, which keeps every offset)."""
    folded = fold(text)
    numbers = _SIX_DIGITS.search(folded) is not None
    found = [Span(start, end, kind, text[start:end]) for detect in DETECTORS if numbers or detect not in _NUMBERS
             for start, end, kind in detect(folded)]
    if not numbers:  # the one number with fewer digits in a row
        found += [Span(start, end, NATIONAL_ID, text[start:end]) for start, end, _ in find_ids(folded, digits=False)]
    return found


def resolve(spans: list[Span]) -> list[Span]:
    """Non-overlapping spans, in text order: where two overlap, the type earlier in :data:`TYPES` wins, then the
    longer span."""
    rank = {t: i for i, t in enumerate(TYPES)}
    chosen: list[Span] = []  # in text order, none overlapping: a new span can only overlap its two neighbours
    starts: list[int] = []
    for s in sorted(spans, key=lambda s: (rank[s.kind], -(s.end - s.start), s.start)):
        i = bisect.bisect_left(starts, s.start)
        if (i and chosen[i - 1].end > s.start) or (i < len(chosen) and chosen[i].start < s.end):
            continue
        chosen.insert(i, s)
        starts.insert(i, s.start)
    return chosen


def normalised(kind: str, value: str) -> str:
    """The form two mentions of one value share: ``+351 912 345 678`` and ``+351912345678`` are one phone."""
    value = fold(value)
    if kind in (PHONE, CARD, NATIONAL_ID):
        return ("+" if value.lstrip().startswith("+") else "") + re.sub(r"[^0-9A-Za-z]", "", value).upper()
    if kind == IBAN:
        return re.sub(r"[^0-9A-Za-z]", "", value).upper()
    if kind in (EMAIL, IP):
        return value.lower()
    return " ".join(value.split())
