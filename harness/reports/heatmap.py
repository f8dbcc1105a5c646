"""Heatmaps: which article a model cites when it should cite another, and each model's accuracy per category.

A KB can have hundreds of articles, and a full matrix would be a grey square;
so only the labels involved in the most confusions are drawn (up to
``MAX_LABELS``), with shares computed against each label's full row so the
numbers stay true. Diagonal cells are green, confusions red, so a glance tells
the two apart; hovering a cell or label shows the article titles.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.reports.svg import GRID, INK, document, fmt, rect, text, truncate
from harness.run_folder.report import Confusion, ModelReport

MAX_LABELS = 40


def top_labels(labels: list[str], matrix: list[list[float]], limit: int = MAX_LABELS) -> list[int]:
    """Indices of the labels with the most off-diagonal mass (as true or as predicted), in label order."""
    n = len(labels)
    if n <= limit:
        return list(range(n))
    mass = [0.0] * n
    for i in range(n):
        for j in range(n):
            if i != j and matrix[i][j]:
                mass[i] += matrix[i][j]
                mass[j] += matrix[i][j]
    confused = [i for i in range(n) if mass[i] > 0]
    if not confused:  # a perfect model: show the busiest labels instead
        confused = [i for i in range(n) if any(matrix[i])]
        return sorted(sorted(confused, key=lambda i: (-sum(matrix[i]), i))[:limit])
    return sorted(sorted(confused, key=lambda i: (-mass[i], i))[:limit])


def _mix(share: float, rgb: tuple[int, int, int]) -> str:
    """White blended towards ``rgb``; a small share still shows, so one stray confusion is visible."""
    t = 0.15 + 0.85 * min(max(share, 0.0), 1.0)
    r, g, b = (round(255 + (c - 255) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def _matrix(confusion: Confusion) -> tuple[list[str], list[list[float]]] | None:
    """The labels and the matrix as floats; None for an empty or ragged matrix (a hand-edited report)."""
    labels, rows = confusion.labels, confusion.matrix
    if len(rows) != len(labels) or not labels or any(len(r) != len(labels) for r in rows):
        return None
    return labels, [[float(v) for v in r] for r in rows]


def confusion_heatmap(model: str, confusion: Confusion, title_of: Callable[[str], str]) -> tuple[str | None, str]:
    """Returns the SVG (None if the matrix is empty or malformed) and a note on what was left out."""
    parsed = _matrix(confusion)
    if parsed is None:
        return None, "no confusion matrix in the report"
    labels, matrix = parsed
    if not any(any(r) for r in matrix):
        return None, "no responses"
    keep = top_labels(labels, matrix)
    note = "" if len(keep) == len(labels) else f"showing the {len(keep)} most confused of {len(labels)} labels"
    if not keep:
        return None, "no responses"
    # "none" is only ever predicted; its all-zero row would read as a label the model never got right
    rows_keep = [i for i in keep if labels[i] != "none" or any(matrix[i])]
    n, n_rows = len(keep), len(rows_keep)
    cell = max(10.0, min(28.0, 640.0 / n))
    names = [truncate(labels[i], 14) for i in keep]
    gutter = max(len(s) for s in names) * 6.6 + 16
    left, top = gutter + 22, gutter + 24
    body = [
        text(left + n * cell / 2, 12, "predicted (cited)", anchor="middle", size=11.5, fill="#444"),
        text(12, top + n_rows * cell / 2, "true (gold)", anchor="middle", size=11.5, fill="#444",
             extra=f' transform="rotate(-90 12 {fmt(top + n_rows * cell / 2)})"'),
    ]

    def described(label: str) -> str:
        t = title_of(label)
        return f"{label} ({t})" if t else label

    for k, i in enumerate(rows_keep):
        body.append(text(left - 5, top + k * cell + cell / 2 + 4, truncate(labels[i], 14), anchor="end", size=10.5,
                         hover=described(labels[i])))
    for k, i in enumerate(keep):
        hover = described(labels[i])
        cx = left + k * cell + cell / 2 + 4
        body.append(text(cx, top - 6, names[k], size=10.5, hover=hover,
                         extra=f' transform="rotate(-60 {fmt(cx)} {fmt(top - 6)})"'))
    body.append(rect(left, top, n * cell, n_rows * cell, "#fafafa", extra=f' stroke="{GRID}"'))
    for r, i in enumerate(rows_keep):
        total = sum(matrix[i])
        for c, j in enumerate(keep):
            value = matrix[i][j]
            if not value:
                continue
            share = value / total if total else 0.0
            color = _mix(share, (46, 125, 50) if i == j else (198, 40, 40))
            verb = "correctly cited" if i == j else "cited instead"
            tip = (f"{model}: true {described(labels[i])} → predicted {described(labels[j])}: {int(value)} of "
                   f"{int(total)} ({share:.0%}) {verb}")
            x, y = left + c * cell, top + r * cell
            body.append(rect(x + 0.5, y + 0.5, cell - 1, cell - 1, color, hover=tip))
            if cell >= 18:
                ink = "white" if share > 0.55 else INK
                body.append(text(x + cell / 2, y + cell / 2 + 4, f"{int(value)}", anchor="middle", size=10, fill=ink))
    size_w, size_h = left + n * cell + 16, top + n_rows * cell + 12
    label = f"Confusion matrix for {model}: rows are the gold label, columns the cited label"
    return document(size_w, size_h, body, label, "confusion"), note


def category_heatmap(categories: list[str] | None, models: list[ModelReport]) -> str | None:
    """Accuracy per gold category (rows) and model (columns), red to green; None without categories.

    Category and model names are user text: :func:`~harness.reports.svg.text` escapes them."""
    if not categories or not models:
        return None
    cats = [truncate(c, 28) for c in categories]
    names = [truncate(m.model, 24) for m in models]
    cell_w, cell_h = 64.0, 24.0
    left = max(len(c) for c in cats) * 6.6 + 16
    longest = max(len(n) for n in names) * 6.6
    top = longest * 0.87 + 16  # the names are turned 60 degrees: sin 60 of their length above, cos 60 to the right
    body = []
    for k, m in enumerate(models):
        cx = left + k * cell_w + cell_w / 2
        body.append(text(cx, top - 6, names[k], size=10.5, hover=m.model,
                         extra=f' transform="rotate(-60 {fmt(cx)} {fmt(top - 6)})"'))
    for r, cat in enumerate(categories):
        y = top + r * cell_h
        body.append(text(left - 6, y + cell_h / 2 + 4, cats[r], anchor="end", size=11, hover=cat))
        for k, m in enumerate(models):
            x = left + k * cell_w
            s = (m.categories or {}).get(cat)
            if s is None or s.accuracy is None:
                body.append(rect(x + 0.5, y + 0.5, cell_w - 1, cell_h - 1, "#f0f0f0",
                                 hover=f"{m.model}, {cat}: no questions answered"))
                body.append(text(x + cell_w / 2, y + cell_h / 2 + 4, "–", anchor="middle", size=10.5, fill="#777"))
                continue
            acc = s.accuracy
            interval = (f", 95% CI {s.accuracy_ci95[0]:.1%}–{s.accuracy_ci95[1]:.1%}"
                        if s.accuracy_ci95 else "")
            tip = f"{m.model}, {cat}: accuracy {acc:.1%}{interval}, {s.n_questions} question(s)"
            body.append(rect(x + 0.5, y + 0.5, cell_w - 1, cell_h - 1, f"hsl({round(120 * acc)},55%,80%)",
                             hover=tip))
            body.append(text(x + cell_w / 2, y + cell_h / 2 + 4, f"{acc:.0%}", anchor="middle", size=10.5, fill=INK))
    width = left + len(models) * cell_w + max(16.0, longest * 0.5 - cell_w / 2 + 8)
    height = top + len(categories) * cell_h + 12
    return document(width, height, body, "Accuracy per gold category and model", "categories")
