"""The leaderboard columns, formatted once for the terminal, Markdown and HTML.

One definition keeps the three views identical: a reader comparing the
terminal table with ``leaderboard.md`` or the page never finds two numbers for
the same thing. Missing values (a model with no price, no latency, no
must-refuse questions) are shown as an en dash, never as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DASH = "–"

COLUMNS: list[tuple[str, str]] = [
    ("rank", "Rank"),
    ("model", "Model"),
    ("accuracy", "Accuracy ± 95% CI"),
    ("strict", "Strict acc."),
    ("calibration", "Refusal calib."),
    ("invalid", "Invalid cit."),
    ("unshown", "Unshown cit."),
    ("cost", "Cost / 1k Q"),
    ("latency", "p50 latency"),
    ("group", "Sig."),
]

LEGEND = [
    "Accuracy: share of responses that cite the expected article, or refuse when the question must be refused "
    "(lenient extraction); the interval is a 95% bootstrap CI.",
    "Strict acc.: the same with strict citation extraction only; a large gap means the model's citation format "
    "is sloppy.",
    "Refusal calib.: the mean of the share of must-refuse questions refused and the share of answerable questions "
    "answered; 100% means the model refuses exactly the questions the KB cannot answer.",
    "Invalid cit.: share of responses citing an article ID that does not exist.",
    "Unshown cit.: share of responses citing a KB article that was not among the articles shown to the model "
    "(it cannot have read the answer there); a miss, whatever the article.",
    "Cost / 1k Q: USD per 1,000 questions; p50 latency: median time per call.",
    "Sig.: models sharing a letter are not significantly different (paired McNemar exact test, alpha 0.05, "
    "Holm-corrected).",
]


def number(value: Any) -> float | None:
    """A finite float, or None for null, NaN and non-numbers (JSON from other tools is not trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def pct(value: Any, digits: int = 1) -> str:
    v = number(value)
    return DASH if v is None else f"{100 * v:.{digits}f}%"


def ci(pair: Any) -> tuple[float, float] | None:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        lo, hi = number(pair[0]), number(pair[1])
        if lo is not None and hi is not None:
            return lo, hi
    return None


def pct_ci(value: Any, pair: Any) -> str:
    if number(value) is None:
        return DASH
    bounds = ci(pair)
    if bounds is None:
        return pct(value)
    return f"{pct(value)} [{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]"


def usd(value: Any) -> str:
    v = number(value)
    if v is None:
        return DASH
    if v == 0:
        return "$0"
    return f"${v:,.2f}" if v >= 0.1 else f"${v:.2g}"


def millis(value: Any) -> str:
    v = number(value)
    if v is None:
        return DASH
    return f"{v:.0f} ms" if v < 1000 else f"{v / 1000:.2f} s"


def count(value: Any) -> str:
    v = number(value)
    return DASH if v is None else f"{int(v):,}"


def cost_per_1k(model: dict[str, Any]) -> float | None:
    return number((model.get("cost") or {}).get("per_1k_questions_usd"))


@dataclass
class Row:
    model: str
    cells: dict[str, str]
    errors: int
    n: int


def leaderboard_rows(models: dict[str, dict[str, Any]], order: list[str]) -> list[Row]:
    rows = []
    for position, name in enumerate(order, 1):
        m = models[name]
        rank = m.get("rank")
        errors = int(number(m.get("error_count")) or 0)
        rows.append(
            Row(
                model=name,
                errors=errors,
                n=int(number(m.get("n")) or 0),
                cells={
                    "rank": str(rank if isinstance(rank, int) else position),
                    "model": name,
                    "accuracy": pct_ci(m.get("accuracy"), m.get("accuracy_ci95")),
                    "strict": pct(m.get("strict_accuracy")),
                    "calibration": pct((m.get("refusal") or {}).get("calibration")),
                    "invalid": pct(m.get("invalid_citation_rate")),
                    "unshown": pct(m.get("unshown_citation_rate")),
                    "cost": usd(cost_per_1k(m)),
                    "latency": millis((m.get("latency") or {}).get("p50_ms")),
                    "group": str(m.get("significance_group") or DASH),
                },
            )
        )
    return rows


def errors_text(n: int) -> str:
    return f"{n} error" + ("" if n == 1 else "s")


def error_note(rows: list[Row]) -> str | None:
    """Errors are counted as misses; a final report should have none, so say so loudly."""
    failing = [f"{r.model}: {r.errors} of {r.n}" for r in rows if r.errors]
    if not failing:
        return None
    return (
        "Failed calls are counted as wrong answers (" + "; ".join(failing) + "). "
        "Run the same 'grace run' again to retry them, then re-score."
    )


# Per-model answer-format details (leaderboard.md and the page's details): the outcome shares that say
# how answers broke, and how many the output limit cut off.
DETAIL_COLUMNS: list[tuple[str, str]] = [
    ("model", "Model"),
    ("n", "Responses"),
    ("no_citation", "No citation"),
    ("invalid", "Invalid cit."),
    ("unshown", "Unshown cit."),
    ("truncated", "Cut off by max_tokens"),
    ("truncated_no_citation", "Cut off before citing"),
    ("max_tokens", "max_tokens"),
    ("json_mode", "JSON mode"),
]

DETAIL_LEGEND = (
    "Cut off by max_tokens: answers whose finish_reason says the output limit stopped them (\"length\", "
    "\"max_tokens\" or \"MAX_TOKENS\"); Cut off before citing: those of them with no citation or refusal in what "
    "was written, scored no_citation (or answered_unanswerable) only because they were cut short; max_tokens: the "
    "limit they were asked with; JSON mode: how JSON was asked for when the server rejected the answer's "
    "schema (json_object, or the prompt alone)."
)


def _share_of(model: dict[str, Any], outcome: str) -> str:
    counts, n = model.get("outcomes"), number(model.get("n"))
    if not isinstance(counts, dict) or not n:
        return DASH
    return pct((number(counts.get(outcome)) or 0) / n)


def detail_rows(models: dict[str, dict[str, Any]], order: list[str]) -> list[dict[str, str]]:
    rows = []
    for name in order:
        m = models[name]
        t = m.get("truncated") if isinstance(m.get("truncated"), dict) else {}
        n_cut = number(t.get("n"))
        limit = number(t.get("max_tokens"))
        rows.append({
            "model": name,
            "n": count(m.get("n")),
            "no_citation": _share_of(m, "no_citation"),
            "invalid": pct(m.get("invalid_citation_rate")),
            "unshown": pct(m.get("unshown_citation_rate")),
            "truncated": DASH if n_cut is None else f"{pct(t.get('share'))} ({count(n_cut)})",
            "truncated_no_citation": count(t.get("no_citation")) if n_cut is not None else DASH,
            "max_tokens": DASH if limit is None else f"{int(limit):,}",
            "json_mode": json_mode_text(m),
        })
    return rows


def json_mode_text(model: dict[str, Any]) -> str:
    """'json_object (server rejected json_schema)', or a dash when the schema was used or JSON was not asked for."""
    jm = model.get("json_mode")
    if not isinstance(jm, dict) or not jm.get("used"):
        return DASH
    reason = str(jm.get("reason") or "").partition(":")[0]
    return f"{jm['used']} ({reason})" if reason else str(jm["used"])


def truncation_notes(models: dict[str, dict[str, Any]], order: list[str]) -> list[str]:
    """One warning per model whose answers the output limit cut off: results that say more about max_tokens."""
    notes = []
    for name in order:
        m = models[name]
        t = m.get("truncated") if isinstance(m.get("truncated"), dict) else {}
        n_cut, n = int(number(t.get("n")) or 0), int(number(m.get("n")) or 0)
        if not n_cut or not n:
            continue
        limit = number(t.get("max_tokens"))
        by = f"max_tokens ({int(limit):,})" if limit is not None else "the output limit (max_tokens)"
        empty = int(number(t.get("no_citation")) or 0)
        before = f", {empty} of them before any citation" if empty else ""
        notes.append(f"{name}: {n_cut} of {n} answers ({n_cut / n:.0%}) were cut off by {by} before finishing"
                     f"{before}; raise --max-tokens")
    return notes
