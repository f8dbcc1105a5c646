"""The per-model plots: accuracy with CIs, accuracy vs cost, outcome mix, retrieval split.

Each function returns an SVG string (or None when the run has nothing to show,
e.g. no prices known), so the page can say why a plot is missing instead of
drawing an empty frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from harness.reports.leaderboard import ci, number, usd
from harness.reports.svg import (
    ACCENT,
    GOOD,
    GRID,
    INK,
    MUTED,
    OTHER_COLOR,
    OUTCOME_COLORS,
    OUTCOME_LABELS,
    Scale,
    document,
    esc,
    fmt,
    ink_on,
    label_width,
    legend,
    line,
    rect,
    text,
    truncate,
)
from harness.run_folder.report import ModelReport

Models = list[ModelReport]  # in leaderboard order
NAME_LIMIT = 34
ROW = 30
STRICT = "#e07b00"


def _gutter(order: list[str]) -> float:
    return min(label_width(order, NAME_LIMIT), 250)


def _x_axis(scale: Scale, top: float, bottom: float, ticks: list[float], label: Callable[[float], str]) -> list[str]:
    out = []
    for t in ticks:
        x = scale(t)
        out.append(line(x, top, x, bottom, GRID))
        out.append(text(x, bottom + 15, label(t), anchor="middle", size=11, fill="#555"))
    return out


def _model_labels(order: list[str], left: float, top: float) -> list[str]:
    return [
        text(left - 8, top + i * ROW + ROW / 2 + 4, truncate(name, NAME_LIMIT), anchor="end", hover=name)
        for i, name in enumerate(order)
    ]


def accuracy_chart(models: Models) -> str | None:
    shown = [m for m in models if number(m.accuracy) is not None]
    rows = [m.model for m in shown]
    if not rows:
        return None
    left, plot_w, top = _gutter(rows), 620.0, 34.0
    width, bottom = left + plot_w + 70, top + ROW * len(rows)
    xs = Scale(0, 1, left, left + plot_w)
    key, _ = legend([("accuracy", ACCENT), ("95% CI", INK), ("strict accuracy", STRICT)], left, 16, plot_w)
    body = [key, *_x_axis(xs, top, bottom, [i / 5 for i in range(6)], lambda t: f"{t:.0%}")]
    body += _model_labels(rows, left, top)
    for i, m in enumerate(shown):
        name, y = m.model, top + i * ROW
        acc, bounds, strict = number(m.accuracy), ci(m.accuracy_ci95), number(m.strict_accuracy)
        tip = f"{name}: accuracy {acc:.1%}" + (f", 95% CI {bounds[0]:.1%}–{bounds[1]:.1%}" if bounds else "")
        tip += (f", strict {strict:.1%}" if strict is not None else "") + f", n={m.n}"
        body.append(rect(left, y + 7, xs(acc) - left, ROW - 14, ACCENT, hover=tip, extra=' opacity="0.85"'))
        end = xs(acc)
        if bounds:
            lo, hi, mid = xs(bounds[0]), xs(bounds[1]), y + ROW / 2
            body += [line(lo, mid, hi, mid, INK, 1.5), line(lo, mid - 5, lo, mid + 5, INK, 1.5),
                     line(hi, mid - 5, hi, mid + 5, INK, 1.5)]
            end = max(end, hi)
        if strict is not None:
            sx, sy = xs(strict), y + ROW / 2
            body.append(f'<path d="M{fmt(sx)} {fmt(sy - 6)} L{fmt(sx + 5)} {fmt(sy)} L{fmt(sx)} {fmt(sy + 6)} '
                        f'L{fmt(sx - 5)} {fmt(sy)} Z" fill="{STRICT}" stroke="white" stroke-width="1"/>')
        body.append(text(min(end + 8, width - 44), y + ROW / 2 + 4, f"{acc:.1%}", size=11.5, weight="600"))
    return document(width, bottom + 24, body, "Accuracy per model with 95% confidence intervals", "accuracy")


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """Models no other model beats on both cost and accuracy (cheapest first)."""
    front, best = [], -1.0
    for name, _cost, acc in sorted(points, key=lambda p: (p[1], -p[2])):
        if acc > best:
            front.append(name)
            best = acc
    return front


def pareto_chart(models: Models) -> tuple[str | None, list[str]]:
    """Returns the SVG and the models left out because their cost is unknown.

    No plot when no model has a cost, or when every known cost is $0 (baselines, local models): there is no
    trade-off to show, and the page says so instead.
    """
    by_name = {m.model: m for m in models}
    points = [(m.model, number(m.cost.per_1k_questions_usd), number(m.accuracy)) for m in models]
    known = [(m, c, a) for m, c, a in points if c is not None and a is not None]
    unknown = [m for m, c, a in points if c is None or a is None]
    if not known or max(c for _, c, _ in known) <= 0:
        return None, unknown
    front = set(pareto_front(known))
    positive = [c for _, c, _ in known if c > 0]
    log = bool(positive) and max(positive) / min(positive) > 20
    left, top, plot_w, plot_h = 64.0, 20.0, 680.0, 320.0
    zero_gap = 46.0 if log and len(positive) < len(known) else 0.0
    x0 = left + zero_gap
    if log:
        xs = Scale(min(positive) / 1.6, max(positive) * 1.6, x0, left + plot_w, log=True)
    else:
        xs = Scale(0, max(c for _, c, _ in known) * 1.12 or 1, x0, left + plot_w)
    bounds = [ci(by_name[m].accuracy_ci95) or (a, a) for m, _, a in known]
    lows, highs = [b[0] for b in bounds], [b[1] for b in bounds]
    lo = max(0.0, math.floor(min(lows) * 10 - 0.3) / 10)
    hi = min(1.0, math.ceil(max(highs) * 10 + 0.3) / 10)
    ys = Scale(lo, hi if hi > lo else lo + 0.1, top + plot_h, top)
    bottom = top + plot_h
    px = lambda c: left + zero_gap / 2 if log and c <= 0 else xs(c)  # noqa: E731
    body = []
    for t in ys.ticks(5):
        body += [line(left, ys(t), left + plot_w, ys(t), GRID),
                 text(left - 6, ys(t) + 4, f"{t:.0%}", anchor="end", size=11, fill="#555")]
    body += _x_axis(xs, top, bottom, xs.ticks(5), usd)
    if zero_gap:
        body += [line(x0 - 4, top, x0 - 4, bottom, MUTED, 1, ' stroke-dasharray="2 3"'),
                 text(left + zero_gap / 2, bottom + 15, "$0", anchor="middle", size=11, fill="#555")]
    body += [line(left, bottom, left + plot_w, bottom, "#888"), line(left, top, left, bottom, "#888"),
             text(left + plot_w / 2, bottom + 34, "cost per 1,000 questions (USD" + (", log scale)" if log else ")"),
                  anchor="middle", fill="#444"),
             text(16, top + plot_h / 2, "accuracy", anchor="middle", fill="#444",
                  extra=f' transform="rotate(-90 16 {fmt(top + plot_h / 2)})"')]
    steps = sorted(((px(c), ys(a)) for m, c, a in known if m in front))
    if len(steps) > 1:
        d = f"M{fmt(steps[0][0])} {fmt(steps[0][1])}"
        for x, y in steps[1:]:
            d += f" H{fmt(x)} V{fmt(y)}"
        body.append(f'<path d="{d}" fill="none" stroke="{GOOD}" stroke-width="2" stroke-dasharray="6 4"/>')
    for name, cost, acc in known:
        x, y, interval = px(cost), ys(acc), ci(by_name[name].accuracy_ci95)
        if interval:
            body.append(line(x, ys(interval[0]), x, ys(interval[1]), "#777", 1))
        on = name in front
        tip = f"{name}: accuracy {acc:.1%}, {usd(cost)} per 1k questions" + (" (Pareto front)" if on else "")
        body.append(f'<circle cx="{fmt(x)}" cy="{fmt(y)}" r="6" fill="{GOOD if on else "white"}" '
                    f'stroke="{GOOD if on else MUTED}" stroke-width="2"><title>{esc(tip)}</title></circle>')
        anchor, dx = ("end", -10) if x > left + plot_w * 0.72 else ("start", 10)
        body.append(text(x + dx, y - 8, truncate(name, 34), anchor=anchor, size=11.5, hover=tip))
    key, _ = legend([("Pareto front", GOOD), ("dominated", MUTED)], left + 8, bottom + 56, plot_w, shape="circle")
    body.append(key)
    svg = document(left + plot_w + 20, bottom + 70, body, "Accuracy against cost per 1,000 questions", "pareto")
    return svg, unknown


def _outcome_order(models: Models) -> list[str]:
    seen = {k for m in models for k, v in m.outcomes.items() if number(v)}
    return [o for o in OUTCOME_COLORS if o in seen] + sorted(seen - set(OUTCOME_COLORS))


def outcome_chart(models: Models) -> str | None:
    outcomes = _outcome_order(models)
    order = [m.model for m in models]
    if not outcomes:
        return None
    left, plot_w = _gutter(order), 660.0
    items = [(OUTCOME_LABELS.get(o, o), OUTCOME_COLORS.get(o, OTHER_COLOR)) for o in outcomes]
    key, key_h = legend(items, left, 16, plot_w)
    top = 16 + key_h + 4
    xs = Scale(0, 1, left, left + plot_w)
    body = [key, *_x_axis(xs, top, top + ROW * len(order), [i / 4 for i in range(5)], lambda t: f"{t:.0%}")]
    body += _model_labels(order, left, top)
    for i, m in enumerate(models):
        name, counts = m.model, m.outcomes
        total = sum(number(v) or 0 for v in counts.values())
        y, start = top + i * ROW, 0.0
        if not total:
            body.append(text(left + 6, y + ROW / 2 + 4, "no responses", fill="#777"))
            continue
        for o in outcomes:
            share = (number(counts.get(o)) or 0) / total
            if share <= 0:
                continue
            x, w = xs(start), xs(start + share) - xs(start)
            tip = f"{name}: {OUTCOME_LABELS.get(o, o)} {int(number(counts[o]))} of {int(total)} ({share:.1%})"
            body.append(rect(x, y + 5, w, ROW - 10, OUTCOME_COLORS.get(o, OTHER_COLOR), hover=tip,
                             extra=' stroke="white" stroke-width="0.5"'))
            if w > 34:
                body.append(text(x + w / 2, y + ROW / 2 + 4, f"{share:.0%}", anchor="middle", size=11, fill=ink_on(o)))
            start += share
    return document(left + plot_w + 20, top + ROW * len(order) + 24, body, "Outcome breakdown per model", "outcomes")


def retrieval_chart(models: Models) -> str | None:
    shown = [m for m in models if m.retrieval is not None]
    if not shown:
        return None
    left, plot_w, row = _gutter([m.model for m in shown]), 600.0, 44.0
    key, _ = legend([("expected article retrieved", ACCENT), ("expected article missed", "#e57373")], left, 16, plot_w)
    top = 34.0
    xs = Scale(0, 1, left, left + plot_w)
    body = [key, *_x_axis(xs, top, top + row * len(shown), [i / 5 for i in range(6)], lambda t: f"{t:.0%}")]
    for i, m in enumerate(shown):
        name, r, y = m.model, m.retrieval, top + i * row
        body.append(text(left - 8, y + row / 2 + 4, truncate(name, NAME_LIMIT), anchor="end", hover=name))
        for j, (field, n_field, color) in enumerate(
            (("accuracy_when_retrieved", "n_retrieved", ACCENT), ("accuracy_when_missed", "n_missed", "#e57373"))
        ):
            by, value, n = y + 5 + j * 17, number(getattr(r, field)), getattr(r, n_field)
            if value is None:
                body.append(text(left + 4, by + 11, f"– (n={n})", size=11, fill="#777"))
                continue
            case = "retrieved" if j == 0 else "missed"
            tip = f"{name}: accuracy {value:.1%} when the expected article was {case} (n={n})"
            body.append(rect(left, by, xs(value) - left, 14, color, hover=tip))
            body.append(text(xs(value) + 6, by + 11, f"{value:.0%} (n={n})", size=11))
    return document(left + plot_w + 90, top + row * len(shown) + 24, body,
                    "Accuracy when the expected article was retrieved vs missed", "retrieval")


def citation_chart(models: Models) -> str | None:
    """Citation precision (x) against recall (y) per model read as references, each with its 95% CIs as a cross,
    over dashed curves of equal F1: up and right is better. None when no model has both figures."""
    shown = [(m, number(m.citations.precision), number(m.citations.recall)) for m in models
             if m.citations is not None]
    shown = [(m, p, r) for m, p, r in shown if p is not None and r is not None]
    if not shown:
        return None
    left, top, size = 64.0, 20.0, 360.0
    xs, ys = Scale(0, 1, left, left + size), Scale(0, 1, top + size, top)
    bottom = top + size
    body = []
    for t in (i / 5 for i in range(6)):
        body += [line(xs(t), top, xs(t), bottom, GRID), line(left, ys(t), left + size, ys(t), GRID),
                 text(xs(t), bottom + 15, f"{t:.0%}", anchor="middle", size=11, fill="#555"),
                 text(left - 6, ys(t) + 4, f"{t:.0%}", anchor="end", size=11, fill="#555")]
    for f1 in (0.2, 0.4, 0.6, 0.8):  # r = f1 p / (2p - f1), for p from f1 / (2 - f1) (r = 1) to 1
        start = f1 / (2 - f1)
        steps = [start + (1 - start) * i / 40 for i in range(41)]
        points = [(p, f1 * p / (2 * p - f1)) for p in steps if 2 * p - f1 > 0]
        points = [(p, r) for p, r in points if 0 <= r <= 1]
        if len(points) > 1:
            d = " ".join(f"{'M' if i == 0 else 'L'}{fmt(xs(p))} {fmt(ys(r))}" for i, (p, r) in enumerate(points))
            body.append(f'<path d="{d}" fill="none" stroke="#c8c8c8" stroke-width="1" stroke-dasharray="3 3"/>')
            body.append(text(xs(1) - 4, ys(points[-1][1]) - 4, f"F1 {f1:.0%}", anchor="end", size=10, fill="#999"))
    body += [line(left, bottom, left + size, bottom, "#888"), line(left, top, left, bottom, "#888"),
             text(left + size / 2, bottom + 34, "citation precision", anchor="middle", fill="#444"),
             text(16, top + size / 2, "citation recall", anchor="middle", fill="#444",
                  extra=f' transform="rotate(-90 16 {fmt(top + size / 2)})"')]
    for i, (m, p, r) in enumerate(shown):
        c = m.citations
        x, y = xs(p), ys(r)
        pb, rb = ci(c.precision_ci95), ci(c.recall_ci95)
        if pb:
            body.append(line(xs(pb[0]), y, xs(pb[1]), y, INK, 1.2))
        if rb:
            body.append(line(x, ys(rb[0]), x, ys(rb[1]), INK, 1.2))
        f1 = number(c.f1)
        tip = (f"{m.model}: citation precision {p:.1%}" + (f" [{pb[0]:.1%}–{pb[1]:.1%}]" if pb else "")
               + f", recall {r:.1%}" + (f" [{rb[0]:.1%}–{rb[1]:.1%}]" if rb else "")
               + (f", F1 {f1:.1%}" if f1 is not None else "") + f", {c.n_unmapped} of {c.n_citations} unmapped")
        body.append(f'<circle cx="{fmt(x)}" cy="{fmt(y)}" r="6" fill="{ACCENT}" stroke="white" stroke-width="1.5">'
                    f"<title>{esc(tip)}</title></circle>")
        anchor, dx = ("end", -10) if x > left + size * 0.7 else ("start", 10)
        body.append(text(x + dx, y - 8 - 12 * (i % 2), truncate(m.model, 34), anchor=anchor, size=11.5, hover=tip))
    return document(left + size + 30, bottom + 46, body, "Citation precision against recall per model, with 95% "
                    "confidence intervals", "citations")
