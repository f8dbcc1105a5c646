"""Phone numbers: the shapes people write, and the numbering plans of the countries grace's languages are spoken in.

A phone number has no check digit, so two layers keep dates, amounts and IDs out:

1. shapes that only a phone number has, taken as written: an international
   number (``+351 912 345 678``, ``0033 6 12 34 56 78``, ``+44 (0)20 7946 0958``);
   a North American one grouped 3-3-4 with an area code and an exchange that
   start 2-9 (``(415) 555-0132``, ``415.555.0132``, ``415 555 0199``,
   ``1-800-555-0199``); a national number with its trunk ``0`` and phone
   grouping (``020 7946 0958``, ``030/1234567``, ``06-12-34-56-78``);
2. any other run of 8 to 15 digits, contiguous (``4155550199``, ``0612345678``)
   or grouped (``612 34 56 78``), kept only when it is a valid number of a
   country whose national format it fits: North America (10 digits, area code
   and exchange 2-9), the trunk-0 countries (UK, France, Germany, Netherlands,
   Belgium, Switzerland, Austria, Ireland) and Italy when it starts with 0,
   Italy's mobiles (3, 10 digits), Spain (9 digits, 6-9), Portugal (9 digits, 2
   or 9), Greece (10 digits, 2 or 69). Valid means Google's libphonenumber (the
   ``phonenumbers`` package) knows the range; without that package, which grace
   depends on, only the first layer and the two commonest contiguous forms (10
   digits, North American or trunk 0) are taken.

Both layers skip a number that is part of a URL or a word, a date
(``2024-01-15``, ``15/01/2024``, ``20240115``), a number with thousands
separators (``1.234.567``), a ZIP+4 code (``94105-1234``), and an amount (a
currency sign or code next to it).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from functools import lru_cache
from itertools import accumulate

try:
    import phonenumbers
except ImportError:  # pragma: no cover - a dependency; the shapes still work without it
    phonenumbers = None

SEP = r"[ .\-/]"
_BEFORE = r"(?<![\w+.,/\-=#?&@%])(?<!\d:)"
_AFTER = r"(?!\w|[.,\-/]\d|[.,]?[%°])"
_INTL = re.compile(r"(?:(?<![\w+])\+|" + _BEFORE + r"00(?=[1-9]))\d{1,3}(?:" + SEP + r"?\(0?\d{1,4}\))?(?:" + SEP
                   + r"?\d{1,5}){1,6}" + _AFTER)
_NANP = re.compile(_BEFORE + r"(?:1[ .\-]?)?(?:\([2-9]\d{2}\)[ .\-]?|[2-9]\d{2}([ .\-]))[2-9]\d{2}(?(1)\1|[ .\-])\d{4}"
                   + _AFTER)
_TRUNK = re.compile(_BEFORE + r"0\d{1,4}(" + SEP + r")\d{3,4}(?:\1?\d{3,4})?" + _AFTER)
_TRUNK_PAIRS = re.compile(_BEFORE + r"0[1-9]([ .\-])\d{2}\1\d{2}\1\d{2}\1\d{2}" + _AFTER)
_LOOSE = re.compile(_BEFORE + r"(?:\(\d{1,5}\) ?)?\d(?:(?: / |" + SEP + r")?\d){4,14}" + _AFTER)
_SHAPES = (_INTL, _NANP, _TRUNK, _TRUNK_PAIRS)

_DATE = re.compile(r"\d{1,4}([./\-])\d{1,2}\1\d{1,4}|\d{4}[./\-]\d{1,2}|\d{1,2}[./\-]\d{4}")
_DATE_RUN = re.compile(r"(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d*|(?:0[1-9]|[12]\d|3[01])"
                       r"(?:0[1-9]|1[0-2])(?:19|20)\d{2}")
_THOUSANDS = re.compile(r"\d{1,3}(?:([.,])\d{3})(?:\1\d{3})+")
_ZIP4 = re.compile(r"\d{5}-\d{4}")
_YEAR_REF = re.compile(r"(?:19|20)\d{2}[/\-]\d+|\d+[/\-](?:19|20)\d{2}")  # 2024-000123, 0123/2024: a file number
# the tail of an IBAN-like code ("FR76 3000 6000 ..." whose check failed): what follows is no phone or card number
IBAN_BEFORE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ .\-]?[A-Za-z0-9]{4})*[ .\-]?$")
_MONEY_BEFORE = re.compile(r"(?:[$€£¥₹]|\b(?:EUR|USD|GBP|CHF|CAD|AUD|Rs\.?))\s?$", re.IGNORECASE)
_MONEY_AFTER = re.compile(r"^\s?(?:[$€£¥₹%]|(?:EUR|USD|GBP|CHF|CAD|AUD|euros?|dollars?|pounds?)\b)", re.IGNORECASE)
# words that say a phone number follows, in grace's languages: what a run of eight or nine digits needs before it
_PHONE_WORD = re.compile(
    r"(?:\b(?:tel|tél|t[ée]l[ée]phone|phone|telephone|mobile|cell|cellphone|fax|call|ring|text|whatsapp|sms|"
    r"m[óo]vil|tel[ée]fono|telefone|telem[óo]vel|contacto|contato|llam[ae]\w*|lig(?:ue|ar)|appel\w*|portable|"
    r"rufen|anrufen|telefon|handy|mobil|mobiel|telefoon|bel|bellen|chiam\w*|cellulare|"
    r"τηλ|τηλέφωνο|κινητό|καλέστε)\b)[^\n\d]{0,24}$", re.IGNORECASE)
_TRUNK_REGIONS = ("GB", "FR", "DE", "NL", "BE", "CH", "AT", "IE", "IT")


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _regions(d: str) -> tuple[str, ...]:
    """The countries whose national format a digit run without a country code fits."""
    out: list[str] = []
    if len(d) == 10 and d[0] in "23456789" and d[3] in "23456789":
        out += ["US", "CA"]
    if d[0] == "0" and d[1] != "0":
        out += _TRUNK_REGIONS
    if len(d) == 10 and d[0] == "3":
        out.append("IT")
    if len(d) == 9 and d[0] in "6789":
        out.append("ES")
    if len(d) == 9 and d[0] in "29":
        out.append("PT")
    if len(d) == 10 and (d[0] == "2" or d.startswith("69")):
        out.append("GR")
    return tuple(out)


@lru_cache(maxsize=4096)
def _valid_national(d: str) -> bool:
    regions = _regions(d)
    if phonenumbers is None:  # no numbering plans: the two commonest contiguous forms only
        return len(d) == 10 and bool(regions) and regions[0] in ("US", "GB")
    for region in regions:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(d, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


def _international_ok(text: str) -> bool:
    """``+CC ...`` or ``00CC ...``: a length that the country code's plan allows (``(0)`` is the trunk 0 shown for
    national dialling, not part of the number)."""
    if phonenumbers is None:
        return True
    d = _digits(text.replace("(0)", ""))
    if text.startswith("00"):
        d = d[2:]
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse("+" + d, None))
    except phonenumbers.NumberParseException:
        return False


def _amount(folded: str, start: int, end: int) -> bool:
    return bool(_MONEY_BEFORE.search(folded[max(0, start - 5):start]) or _MONEY_AFTER.match(folded[end:end + 9]))


def find_phones(folded: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every phone number in ``folded`` (the text after :func:`~harness.privacy.folding.fold`)."""
    taken: list[tuple[int, int]] = []
    for pattern in _SHAPES:
        for m in pattern.finditer(folded):
            value = m.group()
            n = len(_digits(value))
            if not 8 <= n <= 15 or _amount(folded, m.start(), m.end()):
                continue
            if pattern is _INTL:
                if not _international_ok(value):
                    continue
            elif (_DATE.fullmatch(value) or _THOUSANDS.fullmatch(value) or _YEAR_REF.fullmatch(value)
                  or value.count(".") == 1):  # one dot is a decimal point: 03.663003
                continue
            if IBAN_BEFORE.search(folded, max(0, m.start() - 40), m.start()):
                continue
            taken.append((m.start(), m.end()))
            yield m.start(), m.end()
    taken.sort()
    starts = [s for s, _ in taken]
    reach = list(accumulate((e for _, e in taken), max))  # the furthest end of the shapes found so far, by start
    for m in _LOOSE.finditer(folded):
        value = m.group()
        i = bisect.bisect_right(starts, m.start()) - 1
        if i >= 0 and reach[i] >= m.end():  # inside a shape already found
            continue
        d = _digits(value)
        if not 8 <= len(d) <= 15 or _DATE.fullmatch(value) or _THOUSANDS.fullmatch(value) or _ZIP4.fullmatch(value):
            continue
        if _YEAR_REF.fullmatch(value) or IBAN_BEFORE.search(folded, max(0, m.start() - 40), m.start()):
            continue
        if _DATE_RUN.fullmatch(d) and len(d) <= 10 or "." in value and value.count(".") < 2:
            continue
        if _amount(folded, m.start(), m.end()) or not _valid_national(d):
            continue
        if len(d) < 10 and d == value and not _PHONE_WORD.search(folded, max(0, m.start() - 32), m.start()):
            continue  # 244400404, 08100101: a short run of digits alone is a code, unless a phone is asked for
        yield m.start(), m.end()
