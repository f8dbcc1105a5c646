"""Personal data that a pattern and a checksum find: emails, phones, IBANs, cards, national IDs, IP addresses.

Why checksums: a KB is full of numbers (amounts, dates, article IDs, policy
codes), and a redactor that took every long digit run for a card number would
blank out the facts a judge has to compare. So a candidate counts only when it
validates: an IBAN by its country's length and ISO 13616 mod-97, a card number
by its issuer prefix and Luhn, a national ID by its own check digit. IDs
with no checksum (a US SSN, a UK National Insurance number) are left alone: a
pattern alone would redact too many ordinary numbers.

Phones have no checksum, so the patterns ask for a phone's shape: an
international ``+CC`` number, a North American ``(415) 555-0132`` /
``415-555-0132``, or a national number with a trunk ``0`` and separators
(``020 7946 0958``, ``030 1234567``, ``01 23 45 67 89``), 8 to 15 digits in all.
Dates (``2024-01-15``, ``15.01.2024``), amounts and times do not have those shapes.

Everything here is plain ``re`` and arithmetic: it runs without the optional
name detection (:mod:`harness.privacy.names`) and never touches the network.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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


# --- checksums ---------------------------------------------------------------------------------------------------

def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# IBAN lengths by country (ISO 13616 registry), for the countries whose IBANs a European or American KB holds
_IBAN_LENGTH = {
    "AD": 24, "AE": 23, "AT": 20, "BE": 16, "BG": 22, "BR": 29, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "EE": 20, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GI": 23, "GL": 18, "GR": 27, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18,
    "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26, "UA": 29,
}


def iban_ok(compact: str) -> bool:
    """ISO 13616: the country's length, then mod 97 of the rearranged number is 1."""
    if _IBAN_LENGTH.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _mod11_weights(digits: str, weights: tuple[int, ...]) -> int:
    return sum(int(d) * w for d, w in zip(digits, weights, strict=False))


def _verhoeff_ok(digits: str) -> bool:
    d = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
         [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
         [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
         [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
    p = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4]]
    for _ in range(6):
        p.append([p[1][x] for x in p[-1]])
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = d[c][p[i % 8][int(ch)]]
    return c == 0


def _es_dni(v: str) -> bool:  # Spain: DNI 8 digits + letter, NIE X/Y/Z + 7 digits + letter
    n = v[:-1]
    if n[0] in "XYZ":
        n = str("XYZ".index(n[0])) + n[1:]
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(n) % 23] == v[-1]


def _it_cf(v: str) -> bool:  # Italy: codice fiscale, 16 characters with a check letter
    odd = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23]
    total = 0
    for i, ch in enumerate(v[:15]):
        n = int(ch) if ch.isdigit() else ord(ch) - 65
        total += odd[n] if i % 2 == 0 else n
    return chr(65 + total % 26) == v[15]


def _fr_nir(v: str) -> bool:  # France: social security number, 13 digits + 2-digit key (Corsica: 2A/2B)
    body = v[:13].replace("2A", "19").replace("2B", "18")
    return 97 - int(body) % 97 == int(v[13:])


def _se_pn(v: str) -> bool:  # Sweden: personnummer YYMMDD-NNNC, Luhn over the ten digits
    return luhn_ok(v[:6] + v[7:])


def _fi_hetu(v: str) -> bool:  # Finland: DDMMYY, century sign, NNN, check character mod 31
    return "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(v[:6] + v[7:10]) % 31] == v[10]


def _pl_pesel(v: str) -> bool:  # Poland: 11 digits, weighted check digit, and a real month (century-coded)
    month = int(v[2:4]) % 20
    return 1 <= month <= 12 and (10 - _mod11_weights(v, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)) % 10) % 10 == int(v[10])


def _be_nn(v: str) -> bool:  # Belgium: national number YY.MM.DD-NNN.CC, 97 - mod 97 (2000s births: "2" prefixed)
    digits = re.sub(r"\D", "", v)
    body, check = int(digits[:9]), int(digits[9:])
    return 97 - body % 97 == check or 97 - int("2" + digits[:9]) % 97 == check


def _in_aadhaar(v: str) -> bool:  # India: 12 digits, first 2-9, Verhoeff
    digits = re.sub(r"\D", "", v)
    return digits[0] not in "01" and _verhoeff_ok(digits)


_NATIONAL: list[tuple[re.Pattern[str], Callable[[str], bool]]] = [
    (re.compile(r"\b(?:\d{8}|[XYZ]\d{7})[A-Z]\b"), _es_dni),
    (re.compile(r"\b[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b"), _it_cf),
    (re.compile(r"\b[12]\d{4}(?:\d{2}|2[AB])\d{6}\d{2}\b"), lambda v: _fr_nir(v)),
    (re.compile(r"\b\d{6}[-+]\d{4}\b"), _se_pn),
    (re.compile(r"\b\d{6}[-+A]\d{3}[0-9A-Y]\b"), _fi_hetu),
    (re.compile(r"\b\d{11}\b"), _pl_pesel),
    (re.compile(r"\b\d{2}\.\d{2}\.\d{2}-\d{3}\.\d{2}\b"), _be_nn),
    (re.compile(r"\b[2-9]\d{3} \d{4} \d{4}\b"), _in_aadhaar),
]

# --- patterns ----------------------------------------------------------------------------------------------------

_EMAIL = re.compile(r"\b[A-Za-z0-9][A-Za-z0-9._%+'-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){2,8}\b")
_CARD = re.compile(r"(?<![/=#?&])\b(?:\d[ -]?){12,18}\d\b(?!-?[A-Za-z])")  # not an ID in a URL path
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,7}(?::|(?::[0-9A-Fa-f]{1,4}){1,7}|[0-9A-Fa-f]{1,4})(?![\w:])")
_PHONES = (
    # +351 912 345 678, +44 (0)20 7946 0958, +1-415-555-0132, +4930123456
    re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(0?\d{1,4}\))?(?:[ .-]?\d{1,5}){1,5}\b"),
    # (415) 555-0132, 415-555-0132, 415.555.0132
    re.compile(r"(?<![\w(])(?:\(\d{3}\) ?|\d{3}([-.]))\d{3}(?(1)\1|[-. ])\d{4}\b"),
    # 020 7946 0958, 030 1234567, 0171 234 5678, 01 23 45 67 89
    re.compile(r"(?<![\w+.-])0\d{1,4}([ -])\d{3,4}(?:\1?\d{3,4})?\b"),
    re.compile(r"(?<![\w+.-])0\d([ .])\d{2}\1\d{2}\1\d{2}\1\d{2}\b"),
)
_CARD_PREFIX = re.compile(r"(?:4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|2)|35)")


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _emails(text: str) -> Iterator[Span]:
    if "@" in text:
        for m in _EMAIL.finditer(text):
            yield Span(m.start(), m.end(), EMAIL, m.group())


def _ibans(text: str) -> Iterator[Span]:
    for m in _IBAN.finditer(text):
        raw = m.group()
        compact = raw.replace(" ", "")
        # the greedy match may run into a following word ("... 4 until"): shorten to the country's length
        want = _IBAN_LENGTH.get(compact[:2])
        if want is None or len(compact) < want:
            continue
        end, seen = m.start(), 0
        for i, ch in enumerate(raw):
            if ch != " ":
                seen += 1
            if seen == want:
                end = m.start() + i + 1
                break
        if iban_ok(compact[:want]) and (end == len(text) or not text[end].isalnum()):
            yield Span(m.start(), end, IBAN, text[m.start():end])


def _cards(text: str) -> Iterator[Span]:
    for m in _CARD.finditer(text):
        d = _digits(m.group())
        if 13 <= len(d) <= 19 and _CARD_PREFIX.match(d) and len(set(d)) > 1 and luhn_ok(d):
            yield Span(m.start(), m.end(), CARD, m.group())


def _national_ids(text: str) -> Iterator[Span]:
    for pattern, valid in _NATIONAL:
        for m in pattern.finditer(text):
            try:
                ok = valid(m.group())
            except (ValueError, IndexError):
                ok = False
            if ok:
                yield Span(m.start(), m.end(), NATIONAL_ID, m.group())


def _ips(text: str) -> Iterator[Span]:
    if "." in text:
        for m in _IPV4.finditer(text):
            try:
                ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            yield Span(m.start(), m.end(), IP, m.group())
    if "::" in text or text.count(":") >= 3:
        for m in _IPV6.finditer(text):
            try:
                ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            yield Span(m.start(), m.end(), IP, m.group())


def _phones(text: str) -> Iterator[Span]:
    for pattern in _PHONES:
        for m in pattern.finditer(text):
            if 8 <= len(_digits(m.group())) <= 15:
                yield Span(m.start(), m.end(), PHONE, m.group())


DETECTORS: tuple[Callable[[str], Iterator[Span]], ...] = (_emails, _ibans, _cards, _national_ids, _ips, _phones)


def find_patterns(text: str) -> list[Span]:
    """Every checksum-validated or well-shaped find in ``text``, overlaps not yet resolved."""
    return [s for detect in DETECTORS for s in detect(text)]


def resolve(spans: list[Span]) -> list[Span]:
    """Non-overlapping spans, in text order: where two overlap, the type earlier in :data:`TYPES` wins, then the
    longer span."""
    rank = {t: i for i, t in enumerate(TYPES)}
    chosen: list[Span] = []
    for s in sorted(spans, key=lambda s: (rank[s.kind], -(s.end - s.start), s.start)):
        if all(s.end <= c.start or s.start >= c.end for c in chosen):
            chosen.append(s)
    return sorted(chosen, key=lambda s: s.start)


def normalised(kind: str, value: str) -> str:
    """The form two mentions of one value share: ``+351 912 345 678`` and ``+351912345678`` are one phone."""
    if kind in (PHONE, CARD, NATIONAL_ID):
        return ("+" if value.lstrip().startswith("+") else "") + re.sub(r"[^0-9A-Za-z]", "", value).upper()
    if kind == IBAN:
        return value.replace(" ", "").upper()
    if kind in (EMAIL, IP):
        return value.lower()
    return " ".join(value.split())
