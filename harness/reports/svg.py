"""Small SVG building blocks for the report's plots.

Plots are inline SVG written from Python so the page opens offline, needs no
JavaScript and no plotting library. Every string that reaches the SVG passes
through :func:`esc`: model names and article titles are untrusted text.
"""

from __future__ import annotations

import math
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
    items: list[tuple[str, str]], x: float, y: float, max_width: float, *, shape: str = "rect"
) -> tuple[str, float]:
    """A wrapping row of swatches; returns the SVG and the height it used."""
    parts, cx, cy = [], x, y
    for label, color in items:
        w = 16 + len(label) * CHAR_W + 14
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
