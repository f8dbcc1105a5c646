"""Small SVG building blocks for the report's plots.

Plots are inline SVG written from Python so the page opens offline, needs no
JavaScript and no plotting library. Every string that reaches the SVG passes
through :func:`esc`: model names and article titles are untrusted text.
"""

from __future__ import annotations

import math
import unicodedata
from html import escape

from harness.run_folder.outcome_table import OUTCOME_KINDS, OUTCOME_TABLE

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif"
CHAR_W = 6.6  # average glyph width at 12px, to size label gutters without a font engine

# each outcome's fixed colour and its words, from the outcome table (so one colour means one outcome in every plot
# and page), in the reports' order: legends and bars list the outcomes in this order
OUTCOME_COLORS: dict[str, str] = {k.name: k.colour for k in OUTCOME_TABLE}
OUTCOME_LABELS: dict[str, str] = {k.name: k.label for k in OUTCOME_TABLE}
OTHER_COLOR = "#bdbdbd"  # an outcome the table does not know (a newer grace's scores)
ACCENT = "#3b6ea5"
MUTED = "#9e9e9e"
GOOD = "#2e7d32"
INK = "#222"
GRID = "#e3e3e3"


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def fmt(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def truncate(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# glyph widths in em, each class's widest in DejaVu Sans (the widest of the usual sans-serif fonts, and what the
# FONT stack falls back to on Linux): text sized with them fits wherever it is drawn, at the cost of a little room
_EM = {**dict.fromkeys("'ijlIJ .,·/:;\\|", 0.34), **dict.fromkeys("f-()[]t!r", 0.42),
       **dict.fromkeys("ABCDEFGHKLNOPQRSTUVXYZ&▼▲", 0.79), **dict.fromkeys("mwMW%@#+<=>^~…—", 1.0)}


def text_width(content: str, size: float, bold: bool = False) -> float:
    """The width ``content`` takes at ``size`` px, at most: what a gutter or a line break must allow for, where
    :data:`CHAR_W`'s average under-counts a label of wide letters. Other ASCII is 0.64 em; wide (CJK) glyphs 1 em;
    bold (font-weight 600 and up) up to 18% wider, glyph for glyph."""
    return size * sum(_em(ch) for ch in content) * (1.18 if bold else 1.0)


def _em(ch: str) -> float:
    if ch in _EM:
        return _EM[ch]
    if ch.isascii():
        return 0.64
    return 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.8


def wrap(content: str, size: float, width: float, max_lines: int, bold: bool = False) -> list[str]:
    """``content`` broken at spaces into lines of at most ``width`` px (by :func:`text_width`), a word too long for
    a line cut where it must; past ``max_lines`` the last line ends with "…"."""
    def fits(line: str) -> bool:
        return text_width(line, size, bold) <= width

    lines: list[str] = []
    line = ""
    for word in " ".join(str(content).split()).split(" "):
        joined = f"{line} {word}" if line else word
        if fits(joined):
            line = joined
            continue
        if line:
            lines.append(line)
        while not fits(word):  # a path or an ID with no space in it
            cut = next((i for i in range(len(word) - 1, 0, -1) if fits(word[:i])), 1)
            lines.append(word[:cut])
            word = word[cut:]
        line = word
    lines.append(line)
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        while last and not fits(last + "…"):
            last = last[:-1]
        lines = lines[:max_lines - 1] + [last.rstrip() + "…"]
    return lines


def label_width(labels: list[str], limit: int, floor: float = 60) -> float:
    longest = max((len(truncate(s, limit)) for s in labels), default=0)
    return max(floor, longest * CHAR_W + 14)


def document(width: float, height: float, body: list[str], label: str, name: str) -> str:
    """The outer ``<svg>``; ``name`` lets tests and CSS find a plot, ``label`` is read by screen readers."""
    return (
        f'<svg class="plot" data-plot="{esc(name)}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{esc(label)}" viewBox="0 0 {fmt(width)} {fmt(height)}" width="{fmt(width)}" '
        f'height="{fmt(height)}" font-family="{esc(FONT)}" font-size="12">'
        + "".join(body)
        + "</svg>"
    )


def title(text: str) -> str:
    return f"<title>{esc(text)}</title>"


def text(x: float, y: float, content: str, *, anchor: str = "start", size: float = 12, fill: str = INK,
         weight: str = "normal", hover: str | None = None, extra: str = "") -> str:
    tip = title(hover) if hover else ""
    return (
        f'<text x="{fmt(x)}" y="{fmt(y)}" text-anchor="{anchor}" font-size="{fmt(size)}" fill="{fill}" '
        f'font-weight="{weight}"{extra}>{tip}{esc(content)}</text>'
    )


def rect(x: float, y: float, w: float, h: float, fill: str, *, hover: str | None = None, extra: str = "") -> str:
    inner = title(hover) if hover else ""
    return (
        f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(max(w, 0))}" height="{fmt(max(h, 0))}" fill="{fill}"{extra}>'
        f"{inner}</rect>"
    )


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 1, extra: str = "") -> str:
    return (
        f'<line x1="{fmt(x1)}" y1="{fmt(y1)}" x2="{fmt(x2)}" y2="{fmt(y2)}" stroke="{stroke}" '
        f'stroke-width="{fmt(width)}"{extra}/>'
    )


class Scale:
    """Maps a data interval onto pixels, linearly or on a log10 axis."""

    def __init__(self, lo: float, hi: float, start: float, end: float, log: bool = False):
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        if self.hi == self.lo:
            self.hi = self.lo + 1
        self.start, self.end = start, end

    def __call__(self, v: float) -> float:
        v = math.log10(v) if self.log else v
        return self.start + (v - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        if self.log:
            # decades, plus 2x and 5x steps when the axis spans too few decades to read
            steps = (1,) if self.hi - self.lo > 3 else (1, 2, 5)
            return [m * 10.0**e for e in range(math.floor(self.lo), math.ceil(self.hi) + 1) for m in steps
                    if self.lo - 1e-9 <= math.log10(m * 10.0**e) <= self.hi + 1e-9]
        span = self.hi - self.lo
        raw = span / max(count, 1)
        mag = 10 ** math.floor(math.log10(raw))
        step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=mag * 10)
        first = math.ceil(self.lo / step - 1e-9) * step
        out, v = [], first
        while v <= self.hi + 1e-9:
            out.append(round(v, 10))
            v += step
        return out


def legend(
    items: list[tuple[str, str]], x: float, y: float, max_width: float, *, shape: str = "rect", wide: bool = False
) -> tuple[str, float]:
    """A wrapping row of swatches; returns the SVG and the height it used. ``wide``: size the labels by
    :func:`text_width` (never past ``max_width``), not the average glyph."""
    parts, cx, cy = [], x, y
    for label, color in items:
        w = 16 + (text_width(label, 11.5) if wide else len(label) * CHAR_W) + 14
        if cx + w > x + max_width and cx > x:
            cx, cy = x, cy + 18
        if shape == "circle":
            parts.append(f'<circle cx="{fmt(cx + 5)}" cy="{fmt(cy - 4)}" r="5" fill="{color}"/>')
        else:
            parts.append(rect(cx, cy - 9, 11, 11, color))
        parts.append(text(cx + 16, cy, label, size=11.5))
        cx += w
    return "".join(parts), cy - y + 18


def ink_on(outcome: str) -> str:
    """The text colour for a figure printed on an outcome's fill."""
    kind = OUTCOME_KINDS.get(outcome)
    return "white" if kind is not None and kind.white_ink else INK
