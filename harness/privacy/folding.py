"""The text the detectors read: every way of writing a separator folded to one character, offsets unchanged.

People type a phone number or an IBAN with whatever their keyboard, word
processor or locale puts between the groups: a no-break space (U+00A0, French
typography puts one in ``06 12 34 56 78``), a narrow no-break space (U+202F), a
thin space (U+2009), a figure space, a non-breaking hyphen (U+2011), an en dash,
full-width digits from an East Asian input method. :func:`fold` maps each such
character to its plain ASCII counterpart, one character for one, so a pattern
written for ``[ .\\-/]`` finds them all and a span found in the folded text is
the same span in the original (which is what gets replaced, separators and all).
Invisible characters that can sit inside a number (zero-width space, soft
hyphen, word joiner) fold to a space: a separator, not a break.
"""

from __future__ import annotations

_MAP: dict[int, str] = {}
for _cp in (0x00A0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000,  # Unicode spaces (Zs)
            0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD):  # invisible: zero-width, word joiner, BOM, soft hyphen
    _MAP[_cp] = " "
for _cp in (0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2015, 0x2212, 0xFE58, 0xFE63, 0xFF0D):  # hyphens and dashes
    _MAP[_cp] = "-"
for _cp in (0x2024, 0xFF0E):  # one-dot leader, full-width full stop
    _MAP[_cp] = "."
for _cp in (0x2044, 0x2215, 0xFF0F):  # fraction slash, division slash, full-width solidus
    _MAP[_cp] = "/"
for _i in range(10):  # full-width digits
    _MAP[0xFF10 + _i] = str(_i)
_MAP.update({0xFF0B: "+", 0xFF08: "(", 0xFF09: ")", 0xFF20: "@"})
_TABLE = str.maketrans(_MAP)


def fold(text: str) -> str:
    """``text`` with Unicode spaces, dashes, dots, slashes and full-width digits as ASCII; the same length."""
    if text.isascii():
        return text
    out = text.translate(_TABLE)
    assert len(out) == len(text)
    return out
