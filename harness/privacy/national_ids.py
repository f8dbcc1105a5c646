"""National identity and tax numbers, each found by its written shapes and kept only when its check holds.

One row per number: the pattern (in the folded text, :mod:`.folding`; groups may
be joined by a space, a dot or a hyphen, or nothing; letters in any case), the
validator (given the number compacted: separators dropped, letters upper-cased)
and, for the numbers whose check is weak, the words one of which must stand
shortly before it. A nine-digit number passes an 11-proof one time in eleven, so
a Dutch BSN, a Portuguese NIF, a Greek AFM, a UK NHS number, a Canadian SIN, or
a US SSN written without its hyphens, is taken only after its name ("BSN
123456782", "NIF: 123 456 789"); the others carry enough structure (a letter
checked mod 23, two check digits, a date, a digit-count rule) to stand alone.

Countries: those of grace's languages (en, fr, de, es, pt, it, nl, el) and a
few neighbours that were already here (Sweden, Finland, Poland, India).
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.privacy.checks import luhn_ok

S = r"[ .\-]?"  # one optional separator between the groups of a number
_NOT_BEFORE = r"(?<![\w\-./+])"
_NOT_AFTER = r"(?![\w]|[\-./][\w])"


def _date_ok(dd: int, mm: int, yy: int) -> bool:
    """DD/MM/YY is a real date in the 1900s or the 2000s."""
    for year in (1900 + yy, 2000 + yy):
        try:
            datetime.date(year, mm, dd)
        except ValueError:
            continue
        return True
    return False


# --- validators: the compact, upper-cased number -> valid? -----------------------------------------------------

def es_dni(c: str) -> bool:
    """Spain: DNI 8 digits + letter, NIE X/Y/Z + 7 digits + letter; the letter is the number mod 23."""
    n = c[:-1]
    if n[0] in "XYZ":
        n = str("XYZ".index(n[0])) + n[1:]
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(n) % 23] == c[-1]


_CF_ODD = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23]
_CF_MONTHS = "ABCDEHLMPRST"
_CF_OMO = str.maketrans("LMNPQRSTUV", "0123456789")  # omocodia: digits replaced by letters for a clash


def it_cf(c: str) -> bool:
    """Italy: codice fiscale, 16 characters; a real month letter and day; the last letter checks the 15 before."""
    if sum(ch.isdigit() for ch in c) < 3:  # an omocodic code replaces a few digits, never most of them
        return False
    day = int(c[9:11].translate(_CF_OMO)) % 40
    if c[8] not in _CF_MONTHS or not _date_ok(day, _CF_MONTHS.index(c[8]) + 1, int(c[6:8].translate(_CF_OMO))):
        return False
    total = 0
    for i, ch in enumerate(c[:15]):
        n = int(ch) if ch.isdigit() else ord(ch) - 65
        total += _CF_ODD[n] if i % 2 == 0 else n
    return chr(65 + total % 26) == c[15]


def fr_nir(c: str) -> bool:
    """France: NIR (social security number), 13 characters + a key 97 - (number mod 97); Corsica's 2A/2B are
    counted as 19/18 in place of the department."""
    body = c[:13]
    if body[5:7] in ("2A", "2B"):
        body = body[:5] + ("19" if body[6] == "A" else "18") + body[7:]
    if not body.isdigit() or not c[13:].isdigit():
        return False
    return 97 - int(body) % 97 == int(c[13:])


def _weighted(c: str, weights: tuple[int, ...]) -> int:
    return sum(int(d) * w for d, w in zip(c, weights, strict=False))


def nl_bsn(c: str) -> bool:
    """Netherlands: BSN, 9 digits, the 11-proof (9..2 times the first eight, minus the ninth, is a multiple of 11)."""
    return int(c) > 0 and (_weighted(c, (9, 8, 7, 6, 5, 4, 3, 2)) - int(c[8])) % 11 == 0


def pt_nif(c: str) -> bool:
    """Portugal: NIF, 9 digits, mod 11 check digit."""
    check = 11 - _weighted(c, (9, 8, 7, 6, 5, 4, 3, 2)) % 11
    return c[0] != "0" and (0 if check >= 10 else check) == int(c[8])


def pt_cc(c: str) -> bool:
    """Portugal: Cartão de Cidadão, 8-digit civil number, its check digit, 2 version characters, a check digit
    (Luhn over the digits and letters, a letter counted as 10 + its place in the alphabet)."""
    total = 0
    for i, ch in enumerate(reversed(c)):
        v = int(ch, 36)
        if i % 2:
            v *= 2
            v = v - 9 if v > 9 else v
        total += v
    return total % 10 == 0


def de_idnr(c: str) -> bool:
    """Germany: Steuer-ID, 11 digits, no leading 0; in the first ten one digit twice or three times (never three in
    a row) and the rest once; the last by ISO 7064 MOD 11,10."""
    if c[0] == "0":
        return False
    repeated = [n for n in Counter(c[:10]).values() if n > 1]
    if len(repeated) != 1 or repeated[0] > 3 or any(c[i] == c[i + 1] == c[i + 2] for i in range(8)):
        return False
    product = 10
    for d in c[:10]:
        total = (int(d) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(c[10])


def gr_amka(c: str) -> bool:
    """Greece: AMKA, 11 digits, the birth date DDMMYY first, Luhn."""
    return _date_ok(int(c[:2]), int(c[2:4]), int(c[4:6])) and luhn_ok(c)


def gr_afm(c: str) -> bool:
    """Greece: AFM (tax number), 9 digits, the first eight weighted by powers of 2, mod 11 mod 10."""
    return int(c) > 0 and _weighted(c, (256, 128, 64, 32, 16, 8, 4, 2)) % 11 % 10 == int(c[8])


_NINO_BAD_PREFIX = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def gb_nino(c: str) -> bool:
    """UK: National Insurance number, two letters (D, F, I, Q, U, V never; O not second; a few pairs never
    issued), six digits, A to D. No check digit: the shape is specific enough."""
    return c[:2] not in _NINO_BAD_PREFIX


def gb_nhs(c: str) -> bool:
    """UK: NHS number, 10 digits, mod 11 check digit (a check of 10 is never issued)."""
    check = 11 - _weighted(c, (10, 9, 8, 7, 6, 5, 4, 3, 2)) % 11
    return check != 10 and (0 if check == 11 else check) == int(c[9])


def us_ssn(c: str) -> bool:
    """US: Social Security number (and ITIN, which starts with 9): no area 000 or 666, no group 00, no serial 0000;
    an ITIN's group is 50-65, 70-88, 90-92 or 94-99."""
    area, group, serial = c[:3], c[3:5], c[5:]
    if area in ("000", "666") or group == "00" or serial == "0000":
        return False
    if area[0] == "9":
        g = int(group)
        return 50 <= g <= 65 or 70 <= g <= 88 or 90 <= g <= 92 or 94 <= g <= 99
    return True


def ca_sin(c: str) -> bool:
    """Canada: Social Insurance Number, 9 digits, Luhn; 0 and 8 are never issued first."""
    return c[0] not in "08" and luhn_ok(c)


def ie_pps(c: str) -> bool:
    """Ireland: PPS number, 7 digits and a check letter (mod 23, weights 8..2; since 2013 a second letter A, B or H
    counts too, weight 9; an older W, T or X does not)."""
    total = _weighted(c[:7], (8, 7, 6, 5, 4, 3, 2))
    if len(c) == 9 and c[8] in "ABH":
        total += 9 * (ord(c[8]) - 64)
    return "WABCDEFGHIJKLMNOPQRSTUV"[total % 23] == c[7]


def be_nn(c: str) -> bool:
    """Belgium: national number, YYMMDD + 3 + a check 97 - mod 97 (births from 2000: '2' put before)."""
    body, check = c[:9], int(c[9:])
    if int(c[2:4]) % 20 > 12 and int(c[2:4]) not in range(40, 53):  # a month (a bis number adds 20 or 40)
        return False
    born_2000s = int(c[:2]) <= datetime.date.today().year % 100
    return 97 - int(body) % 97 == check or born_2000s and 97 - int("2" + body) % 97 == check


def ch_ahv(c: str) -> bool:
    """Switzerland: AHV/AVS number, 756 and 10 digits, EAN-13 check."""
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(c[:12]))
    return (10 - total % 10) % 10 == int(c[12])


def br_cpf(c: str) -> bool:
    """Brazil: CPF, 9 digits and two mod 11 check digits (never all one digit)."""
    if len(set(c)) == 1:
        return False
    for n in (9, 10):
        check = _weighted(c[:n], tuple(range(n + 1, 1, -1))) * 10 % 11 % 10
        if check != int(c[n]):
            return False
    return True


def se_pn(c: str) -> bool:
    """Sweden: personnummer (YYYY)YYMMDD-NNNC, Luhn over the last ten digits, a real date (a co-ordination number
    adds 60 to the day)."""
    c = c[-10:]
    day = int(c[4:6])
    return _date_ok(day - 60 if day > 60 else day, int(c[2:4]), int(c[:2])) and luhn_ok(c)


def fi_hetu(c: str) -> bool:
    """Finland: DDMMYY, a century sign, NNN, a check character mod 31."""
    return _date_ok(int(c[:2]), int(c[2:4]), int(c[4:6])) and "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(c[:6] + c[7:10]) % 31] == c[10]


def pl_pesel(c: str) -> bool:
    """Poland: PESEL, 11 digits, weighted check digit, a real (century-coded) month."""
    month = int(c[2:4]) % 20
    return 1 <= month <= 12 and (10 - _weighted(c, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)) % 10) % 10 == int(c[10])


_VERHOEFF_D = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
               [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
               [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
               [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
_VERHOEFF_P = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4]]
for _ in range(6):
    _VERHOEFF_P.append([_VERHOEFF_P[1][x] for x in _VERHOEFF_P[-1]])


def in_aadhaar(c: str) -> bool:
    """India: Aadhaar, 12 digits, first 2-9, Verhoeff."""
    check = 0
    for i, ch in enumerate(reversed(c)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][int(ch)]]
    return c[0] not in "01" and check == 0


# --- the table ---------------------------------------------------------------------------------------------------

_KW_SSN = r"\b(?:SSN|SSNs|social security(?: number| no\.?| #)?|ITIN)\b"
_KW_BSN = r"\b(?:BSN|burgerservicenummer|burger service nummer|sofinummer|sofi-nummer|citizen service number)\b"
_KW_NIF = r"\b(?:NIF|contribuinte|identifica[cç][aã]o fiscal|n\.?º? fiscal|tax (?:id|number))\b"
_KW_AFM = r"(?:ΑΦΜ|Α\.Φ\.Μ\.?|\bAFM\b|\bA\.F\.M\.?)"
_KW_NHS = r"\bNHS\b"
_KW_SIN = r"\b(?:SIN|social insurance(?: number)?|NAS|num[ée]ro d'assurance sociale)\b"


@dataclass(frozen=True)
class IdRule:
    country: str
    name: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool]
    context: re.Pattern[str] | None = None  # a word that must stand shortly before, for the weak checks


def _rule(country: str, name: str, body: str, valid: Callable[[str], bool], context: str | None = None,
          flags: int = re.IGNORECASE) -> IdRule:
    return IdRule(country, name, re.compile(_NOT_BEFORE + "(?:" + body + ")" + _NOT_AFTER, flags), valid,
                  re.compile(context, re.IGNORECASE) if context else None)


D2, D3, D4 = r"\d{2}", r"\d{3}", r"\d{4}"
_CF_D = r"[\dLMNP-V]"  # a digit of a codice fiscale, or its omocodic letter
RULES: tuple[IdRule, ...] = (
    _rule("ES", "DNI", rf"\d{{2}}([ .]?)\d{{3}}\1\d{{3}}{S}[A-Z]", es_dni),
    _rule("ES", "NIE", rf"[XYZ]{S}\d{{7}}{S}[A-Z]", es_dni),
    _rule("IT", "codice fiscale", rf"[A-Z]{{3}}{S}[A-Z]{{3}}{S}{_CF_D}{{2}}[A-EHLMPR-T]{_CF_D}{{2}}{S}[A-Z]{_CF_D}{{3}}{S}[A-Z]",
          it_cf),
    _rule("FR", "NIR", rf"[1278]{S}{D2}{S}(?:0[1-9]|1[0-2]|[2-9]\d){S}(?:\d{{2}}|2[AB]){S}{D3}{S}{D3}(?: - |{S}){D2}", fr_nir),
    _rule("NL", "BSN", rf"{D4}\.?\d{{2}}\.?{D3}|{D3}[ .\-]{D3}[ .\-]{D3}|\d{{9}}", nl_bsn, _KW_BSN),
    _rule("PT", "NIF", rf"{D3}[ .\-]?{D3}[ .\-]?{D3}", pt_nif, _KW_NIF),
    _rule("PT", "Cartão de Cidadão", rf"\d{{8}}{S}\d{S}[A-Z0-9]{{2}}\d", pt_cc),
    _rule("DE", "Steuer-ID", rf"\d{{2}}{S}{D3}{S}{D3}{S}{D3}|\d{{11}}", de_idnr),
    _rule("GR", "AMKA", rf"\d{{6}}{S}\d{{5}}", gr_amka),
    _rule("GR", "AFM", rf"{D3}[ .\-]?{D3}[ .\-]?{D3}", gr_afm, _KW_AFM),
    _rule("GB", "NINO", rf"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]{S}{D2}{S}{D2}{S}{D2}{S}[A-D]", gb_nino),
    _rule("GB", "NHS number", rf"{D3}[ \-]?{D3}[ \-]?{D4}", gb_nhs, _KW_NHS),
    _rule("US", "SSN", rf"{D3}-{D2}-{D4}|{D3} {D2} {D4}", us_ssn),
    _rule("US", "SSN", rf"\d{{9}}|{D3}\.{D2}\.{D4}", us_ssn, _KW_SSN),
    _rule("CA", "SIN", rf"{D3}[ \-]?{D3}[ \-]?{D3}", ca_sin, _KW_SIN),
    _rule("IE", "PPS", r"\d{7} ?[A-W][ABHWTX]?", ie_pps),
    _rule("BE", "national number", rf"{D2}\.?{D2}\.?{D2}{S}{D3}\.?{D2}|\d{{11}}", be_nn),
    _rule("CH", "AHV", rf"756{S}{D4}{S}{D4}{S}{D2}", ch_ahv),
    _rule("BR", "CPF", rf"{D3}\.{D3}\.{D3}-?{D2}|\d{{11}}", br_cpf),
    _rule("SE", "personnummer", r"(?:19|20)?\d{6}[-+]\d{4}", se_pn),
    _rule("FI", "HETU", r"\d{6}[-+A]\d{3}[0-9A-Y]", fi_hetu, flags=0),
    _rule("PL", "PESEL", r"\d{11}", pl_pesel),
    _rule("IN", "Aadhaar", rf"[2-9]\d{{3}}([ \-]){D4}\1{D4}", in_aadhaar),
)
_CONTEXT_BEFORE = 48  # characters before a number in which its name must appear, for the weak checks


def compact(value: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", value).upper()


_CF_HINT = re.compile(r"\d{2}[A-EHLMPR-T]", re.IGNORECASE)  # a codice fiscale's year and month


def find_ids(folded: str, digits: bool = True) -> Iterator[tuple[int, int, str]]:
    """(start, end, rule name) of every validated national number in ``folded`` (the text after :func:`fold`);
    ``digits=False``: only those with fewer than six digits in a row (the codice fiscale), for a text that has no
    longer run."""
    for rule in RULES:
        if not digits and rule.name != "codice fiscale":
            continue
        if rule.name == "codice fiscale" and not _CF_HINT.search(folded):
            continue
        for m in rule.pattern.finditer(folded):
            c = m.group().upper() if rule.name == "HETU" else compact(m.group())  # its century sign counts
            try:
                ok = rule.valid(c)
            except (ValueError, IndexError):
                ok = False
            if ok and rule.context is not None:
                ok = rule.context.search(folded, max(0, m.start() - _CONTEXT_BEFORE), m.start()) is not None
            if ok:
                yield m.start(), m.end(), f"{rule.country} {rule.name}"
