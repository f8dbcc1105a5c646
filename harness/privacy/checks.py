"""Check digits shared by the detectors: Luhn (cards, and IDs built on it) and ISO 13616 (IBANs)."""

from __future__ import annotations

import re


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# BBAN formats by country (ISO 13616 registry: n digits, a upper-case letters, c either), for the countries whose
# IBANs a European or American KB holds; the IBAN's length follows (4 + the BBAN's)
_BBAN = {
    "AD": "4n4n12c", "AE": "3n16n", "AT": "5n11n", "BE": "3n7n2n", "BG": "4a4n2n8c", "BR": "8n5n10n1a1c",
    "CH": "5n12c", "CY": "3n5n16c", "CZ": "4n6n10n", "DE": "8n10n", "DK": "4n9n1n", "EE": "2n2n11n1n",
    "ES": "4n4n1n1n10n", "FI": "3n11n", "FO": "4n9n1n", "FR": "5n5n11c2n", "GB": "4a6n8n", "GI": "4a15c",
    "GL": "4n9n1n", "GR": "3n4n16c", "HR": "7n10n", "HU": "3n4n1n15n1n", "IE": "4a6n8n", "IL": "3n3n13n",
    "IS": "4n2n6n10n", "IT": "1a5n5n12c", "LI": "5n12c", "LT": "5n11n", "LU": "3n13c", "LV": "4a13c",
    "MC": "5n5n11c2n", "MT": "4a5n18c", "NL": "4a10n", "NO": "4n6n1n", "PL": "8n16n", "PT": "4n4n11n2n",
    "RO": "4a16c", "SA": "2n18c", "SE": "3n16n1n", "SI": "5n8n2n", "SK": "4n6n10n", "SM": "1a5n5n12c",
    "TR": "5n1n16c", "UA": "6n19c",
}
_CLASS = {"n": "[0-9]", "a": "[A-Z]", "c": "[A-Z0-9]"}
BBAN = {cc: re.compile("".join(f"{_CLASS[k]}{{{n}}}" for n, k in re.findall(r"(\d+)([nac])", f)))
        for cc, f in _BBAN.items()}
IBAN_LENGTH = {cc: 4 + sum(int(n) for n in re.findall(r"\d+", f)) for cc, f in _BBAN.items()}


def iban_ok(compact: str) -> bool:
    """ISO 13616: the country's length and BBAN format, then mod 97 of the rearranged number is 1."""
    compact = compact.upper()
    bban = BBAN.get(compact[:2])
    if bban is None or IBAN_LENGTH[compact[:2]] != len(compact) or not compact[2:4].isdigit():
        return False
    if not bban.fullmatch(compact[4:]):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
