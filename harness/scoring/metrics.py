"""Whole-run metrics for one model, computed once from its tally (:mod:`harness.scoring.tallies`): counts, not rows.

Labels are integer codes: ``0..A-1`` are KB articles in KB order, ``A`` is
REFUSE and ``A+1`` is "none" (an answer that names no single KB article).
Per-class scores follow scikit-learn's definitions with an explicit label list
and ``zero_division=0``, so a class nobody predicted still appears with 0
instead of disappearing; tests check them against scikit-learn itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from harness.scoring.spilled import Series


def _r(x: float | None, nd: int = 6) -> float | None:
    if x is None or not np.isfinite(x):
        return None
    return round(float(x), nd)


def _mean(x: np.ndarray) -> float | None:
    return _r(x.mean()) if x.size else None


def precision_recall_f1(y_true: np.ndarray, y_pred: np.ndarray, labels: list[int],
                        counts: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per-label precision, recall, F1 and support, as scikit-learn's ``precision_recall_fscore_support`` with
    ``zero_division=0`` computes them (F1 from counts: 2tp / (true + predicted)), in a few numpy passes and
    without importing scikit-learn (1.4 s), which made ``grace score`` of 400 answers take a second.

    ``counts``: how many answers each (true, predicted) pair stands for (a tally's); one each by default."""
    size = int(max(y_true.max(initial=0), y_pred.max(initial=0), max(labels, default=0))) + 1
    same = y_true == y_pred
    true_sum = np.bincount(y_true, counts, minlength=size)[labels].astype(float)
    pred_sum = np.bincount(y_pred, counts, minlength=size)[labels].astype(float)
    tp = np.bincount(y_true[same], None if counts is None else counts[same], minlength=size)[labels].astype(float)

    def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.zeros_like(a)
        np.divide(a, b, out=out, where=b != 0)
        return out

    return divide(tp, pred_sum), divide(tp, true_sum), divide(2 * tp, true_sum + pred_sum), true_sum.astype(int)


def confusion(y_true: np.ndarray, y_pred: np.ndarray, labels: list[int],
              counts: np.ndarray | None = None) -> np.ndarray:
    """Counts of (true, predicted) over ``labels`` in that order; pairs with another label are left out.
    ``counts`` as in :func:`precision_recall_f1`."""
    size = int(max(y_true.max(initial=0), y_pred.max(initial=0), max(labels, default=0))) + 1
    index = np.full(size, -1)
    index[labels] = np.arange(len(labels))
    t, p = index[y_true], index[y_pred]
    keep = (t >= 0) & (p >= 0)
    n = len(labels)
    weights = None if counts is None else counts[keep]
    return np.bincount(t[keep] * n + p[keep], weights, minlength=n * n).astype(np.int64).reshape(n, n)


def class_metrics(y_true: np.ndarray, y_pred: np.ndarray, names: list[str],
                  counts: np.ndarray | None = None) -> dict[str, Any]:
    """Per-class precision/recall/F1 over every article that is a true or predicted label (plus REFUSE).

    Averages are taken over the same labels: macro is the plain mean of the
    per-class scores, weighted is weighted by support (scikit-learn's definitions).
    ``counts``: how many answers each (true, predicted) pair stands for (a tally's distinct pairs).
    """
    none_code = len(names) - 1
    present = np.union1d(np.unique(y_true), np.unique(y_pred))
    labels = [int(c) for c in present if c != none_code]
    p, r, f, s = precision_recall_f1(y_true, y_pred, labels, counts)
    per_class = {
        names[c]: {"precision": _r(p[i]), "recall": _r(r[i]), "f1": _r(f[i]), "support": int(s[i])}
        for i, c in enumerate(labels)
    }
    total = s.sum()
    weights = s / total if total else np.zeros_like(p)
    conf_labels = [c for c in labels if c < none_code - 1] + [none_code - 1, none_code]
    matrix = confusion(y_true, y_pred, conf_labels, counts)
    return {
        "per_class": per_class,
        "macro_precision": _r(p.mean()) or 0.0,
        "macro_recall": _r(r.mean()) or 0.0,
        "macro_f1": _r(f.mean()) or 0.0,
        "weighted_precision": _r((p * weights).sum()) or 0.0,
        "weighted_recall": _r((r * weights).sum()) or 0.0,
        "weighted_f1": _r((f * weights).sum()) or 0.0,
        "confusion": {"labels": [names[c] for c in conf_labels], "matrix": matrix.tolist()},
    }


def refusal_calibration(should: int, should_refused: int, answerable: int, answerable_refused: int) -> dict[str, Any]:
    """How often the model refuses when it should, and answers when it should, from the answers (errors left out)
    to must-refuse questions and to the others, and how many of each refused."""
    did = _r(should_refused / should) if should else None
    answered = _r((answerable - answerable_refused) / answerable) if answerable else None
    calib = _r((did + answered) / 2) if did is not None and answered is not None else None
    return {"should_refuse_did": did, "should_answer_did": answered, "calibration": calib}


def retrieval_split(known: int, k: int, got: int, missed: int, hits_got: int, hits_missed: int) -> dict[str, Any] | None:
    """Retrieval recall@k and accuracy split by whether an expected article was retrieved.

    ``known`` rows say what was retrieved (``k`` the most of them); ``got`` and ``missed`` count the answerable
    ones whose retrieval held an expected article or not, ``hits_got`` and ``hits_missed`` their hits. High
    accuracy when retrieved but many misses means retrieval is the bottleneck; low accuracy when retrieved means
    the model is.
    """
    if not known:
        return None
    return {
        "k": k,
        "recall_at_k": _r(got / (got + missed)) if got + missed else None,
        "n_retrieved": got,
        "n_missed": missed,
        "accuracy_when_retrieved": _r(hits_got / got) if got else None,
        "accuracy_when_missed": _r(hits_missed / missed) if missed else None,
    }


def repeat_stats(repeats: np.ndarray, rows: np.ndarray, hits: np.ndarray, answer_q: np.ndarray,
                 answer_counts: np.ndarray) -> dict[str, Any] | None:
    """Agreement across repeats and the run-to-run spread of accuracy; None with a single repeat.

    ``repeats`` are the repeat numbers (ascending) with their ``rows`` and ``hits``; ``answer_q`` and
    ``answer_counts`` count each distinct (question, answer) a model gave, by question (an answer codes what the
    model did: outcome and predicted label). A question's agreement is the share of its repeats giving its most
    common answer, averaged over questions asked more than once.
    """
    if repeats.size < 2:
        return None
    per_repeat = [h / n for n, h in zip(rows.tolist(), hits.tolist(), strict=True)]
    starts = np.flatnonzero(np.r_[True, answer_q[1:] != answer_q[:-1]])
    modal = np.maximum.reduceat(answer_counts, starts)
    totals = np.add.reduceat(answer_counts, starts)
    multi = totals > 1
    agreement = _mean(modal[multi] / totals[multi])
    return {
        "n_repeats": int(repeats.size),
        "question_agreement": agreement,
        "accuracy_per_repeat": [_r(a) for a in per_repeat],
        "accuracy_std": _r(np.std(per_repeat, ddof=1)),
    }


def cost_latency(cost: Series, latency: Series, in_tokens: int, out_tokens: int,
                 queued: Series | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Totals and per-1,000-questions cost over the rows that report a cost; percentiles of the model's time per
    call (``latency``) and of the time calls waited in a queue (``queued``). Each series holds the model's known
    values, in file order (their sums are numpy's, to the bit)."""
    total = float(cost.sum()) if cost.n else None
    per_1k = float(cost.mean() * 1000) if cost.n else None
    p50, p95 = _percentiles(latency)
    q50, q95 = _percentiles(queued)
    cost_d = {
        "total_usd": _r(total, 8),
        "per_1k_questions_usd": _r(per_1k, 8),
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
    }
    return cost_d, {"p50_ms": _r(p50, 3), "p95_ms": _r(p95, 3), "queued_p50_ms": _r(q50, 3), "queued_p95_ms": _r(q95, 3)}


def _percentiles(values: Series | None) -> tuple[Any, Any]:
    return tuple(values.percentiles([50, 95])) if values is not None and values.n else (None, None)


def truncation(n: int, cut: int, cut_empty: int, limits: np.ndarray, limit_counts: np.ndarray) -> dict[str, Any]:
    """Answers the output limit cut off: how many (of ``n``), their share, how many of them had nothing read.

    ``limits`` (ascending) and ``limit_counts``: the limits the cut-off answers were asked with (over every row
    when none was cut off), each with its rows; the most common one is reported (the smallest of a tie), None when
    no row says.
    """
    limit = int(limits[np.argmax(limit_counts)]) if limits.size else None
    return {"n": cut, "share": _r(cut / n) if n else 0.0, "no_citation": cut_empty, "max_tokens": limit}
