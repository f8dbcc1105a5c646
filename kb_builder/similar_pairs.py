"""The pairs of rows of a TF-IDF matrix that are alike, in bounded memory and bounded work.

Lint looks for articles a question could be answered by equally well. Comparing
every article with every other (``m @ m.T`` at once) costs the sum over words of
(articles holding the word)², which is the square of the KB for the common
words: 10 MB of Markdown took 0.8 GB, 50 MB more than 17 GB. Here the product
is taken a block of rows at a time (memory bounded by ``BLOCK_WORK``) and only
each article's ``per_row`` closest partners are kept, so the output is linear
in the KB too.

Work stays within a budget (``work_budget``) that grows linearly with the KB.
When the exact product would exceed it, the most common words are left out of
the search for candidates (they carry the least TF-IDF weight; what they add to
a pair is bounded by the norms of the parts left out, so a pair that cannot
reach the threshold is never a candidate) and every candidate is then scored
on all its words. Pairs alike *only* in common words can be missed that way;
so a random sample of the articles made mostly of common words is compared in
full, within a second budget, and the result says what was left out: a notice,
never a silent gap.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

BLOCK_WORK = 8_000_000  # multiply-adds per block of rows: its product holds at most this many entries (~100 MB)
WORK_PER_ROW = 16_000  # the search's budget grows by this per article (~4e8 multiply-adds a second here) ...
MIN_WORK = 400_000_000  # ... from this floor: a KB of a few thousand articles of ordinary text is searched exactly
PER_ROW = 5  # partners kept per article: an article with more near copies has one problem, not dozens


@dataclass
class Pairs:
    """Pairs ``rows[k] < cols[k]`` of cosine ``sims[k]`` ≥ the threshold, and what the search left out."""

    rows: np.ndarray
    cols: np.ndarray
    sims: np.ndarray
    notice: str | None = None  # None: the search was exact (but for the per-row cap, which ``capped`` counts)
    capped: int = 0  # articles that had more alike partners than were kept


def work_budget_for(n: int, work_budget: float | None) -> float:
    return work_budget if work_budget is not None else max(MIN_WORK, WORK_PER_ROW * n)


def row_blocks(work_per_row: np.ndarray, limit: float) -> list[tuple[int, int]]:
    """Consecutive row ranges whose summed work stays under ``limit`` (a heavier row is a block of its own)."""
    out, start, acc = [], 0, 0.0
    for i, w in enumerate(work_per_row.tolist()):
        if acc and acc + w > limit:
            out.append((start, i))
            start, acc = i, 0.0
        acc += w
    if start < len(work_per_row):
        out.append((start, len(work_per_row)))
    return out


def top_per_row(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """The ``k`` largest ``vals`` of each row (ties to the lower column), as arrays, and how many rows had more.
    ``rows`` must come grouped (a product's row-major order); a row is partitioned, never the block sorted (a
    lexsort of a block's 30 million entries took 7 s of a 16 s lint)."""
    if not len(rows):
        return rows, cols, vals, 0
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    counts = np.diff(np.r_[starts, len(rows)])
    keep = np.repeat(counts <= k, counts)
    for a, n in zip(starts[counts > k].tolist(), counts[counts > k].tolist(), strict=True):
        seg = vals[a:a + n]
        kth = np.partition(seg, n - k)[n - k]
        above = np.flatnonzero(seg > kth)
        ties = np.flatnonzero(seg == kth)
        ties = ties[np.argsort(cols[a + ties], kind="stable")][:k - len(above)]
        keep[a + above] = True
        keep[a + ties] = True
    return rows[keep], cols[keep], vals[keep], int(np.count_nonzero(counts > k))


def row_dots(a: Any, b: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``a[rows[k]] · b[cols[k]]`` for every k, in chunks (a gather of many rows at once is itself big)."""
    out = np.zeros(len(rows))
    step = 200_000
    for s in range(0, len(rows), step):
        r, c = rows[s:s + step], cols[s:s + step]
        out[s:s + step] = np.asarray(a[r].multiply(b[c]).sum(axis=1)).ravel()
    return out


def row_work(rows: Any, df: np.ndarray) -> np.ndarray:
    """Multiply-adds of each row's product with the whole matrix: the summed df of its words."""
    ones = rows.copy()
    ones.data[:] = 1.0
    return np.asarray(ones @ df).ravel()


def without_common(m: Any, df: np.ndarray, work_per_term: np.ndarray, budget: float) -> tuple[Any, int, np.ndarray]:
    """``m`` without the columns of its most common terms (highest ``df`` first), as few as bring the summed
    ``work_per_term`` of the rest within ``budget``; how many were left out, and which terms are kept. ``m`` itself
    when none need to be."""
    from scipy import sparse

    order = np.argsort(-df, kind="stable")
    total = work_per_term.sum()
    left = np.r_[total, total - np.cumsum(work_per_term[order])]  # left[k]: the work without the k most common
    dropped = int(np.argmax(left <= budget))  # left[-1] is 0: leaving out every term always fits
    keep = np.ones(len(df), bool)
    if not dropped:
        return m, 0, keep
    keep[order[:dropped]] = False
    part = (m @ sparse.diags(keep.astype(np.float64))).tocsr()
    part.eliminate_zeros()
    return part, dropped, keep


def _search(full: Any, part: Any, dropped_norm: np.ndarray, which: np.ndarray, at: float, per_row: int,
            df: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Each row in ``which``: its partners by ``part`` (a lower bound of the cosine) that could reach ``at``,
    scored in full, its ``per_row`` best kept."""
    rest = full - part if part is not full else None
    work = row_work(part[which], df)
    found_r, found_c, found_v, capped = [], [], [], 0
    part_t = part.T.tocsr()  # once: ``part.T`` is a CSC view that every block's product would convert again
    for s, e in row_blocks(work, BLOCK_WORK):
        idx = which[s:e]
        prod = part[idx] @ part_t
        if rest is not None:  # what the words left out can still add: at most the product of their norms
            reach = np.repeat(dropped_norm[idx], np.diff(prod.indptr)) * dropped_norm[prod.indices]
            pos = np.flatnonzero(prod.data + reach >= at)
        else:
            pos = np.flatnonzero(prod.data >= at)  # most entries are far below: look at the rest only
        r = idx[np.searchsorted(prod.indptr, pos, side="right") - 1]
        c, v = prod.indices[pos].astype(np.int64), prod.data[pos]
        ok = c != r
        r, c, v = r[ok], c[ok], v[ok]
        if rest is not None:
            r, c, v, _ = top_per_row(r, c, v, 4 * per_row)  # the candidates, then each scored on all its words
            v = v + row_dots(rest, rest, r, c)
            ok = v >= at
            r, c, v = r[ok], c[ok], v[ok]
        r, c, v, over = top_per_row(r, c, v, per_row)
        capped += over
        found_r.append(r)
        found_c.append(c)
        found_v.append(v)
    if not found_r:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 0
    return np.concatenate(found_r), np.concatenate(found_c), np.concatenate(found_v), capped


def similar_pairs(m: Any, at: float, *, per_row: int = PER_ROW, work_budget: float | None = None,
                  seed: int = 0) -> Pairs:
    """Pairs of rows of ``m`` (a scipy CSR matrix with non-negative, L2-normalised rows) whose cosine is at
    least ``at``: each row's ``per_row`` closest, each pair once (``rows < cols``)."""
    from scipy import sparse

    m = sparse.csr_matrix(m, dtype=np.float64)
    n, vocab = m.shape
    if n < 2 or not m.nnz:
        return Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    budget = work_budget_for(n, work_budget)
    df = np.bincount(m.indices, minlength=vocab).astype(np.float64)
    part, dropped, keep = without_common(m, df, df ** 2, budget)  # a word's share of the product: df²
    notice = None
    every = np.arange(n)
    if not dropped:
        r, c, v, capped = _search(m, m, np.zeros(n), every, at, per_row, df)
    else:
        dropped_norm = np.sqrt(np.clip(1.0 - np.asarray(part.multiply(part).sum(axis=1)).ravel(), 0.0, 1.0))
        r, c, v, capped = _search(m, part, dropped_norm, every, at, per_row, df * keep)
        # rows made mostly of common words may have partners that share no rarer word: a sample of them in full
        at_risk = np.flatnonzero(dropped_norm >= at)
        risk_work = row_work(m[at_risk], df)
        rng = random.Random(seed)
        picked, spent = [], 0.0
        for i in rng.sample(range(len(at_risk)), len(at_risk)):
            if spent + risk_work[i] > budget / 2:
                break
            picked.append(at_risk[i])
            spent += risk_work[i]
        if picked:
            sample = np.array(sorted(picked))
            r2, c2, v2, capped2 = _search(m, m, np.zeros(n), sample, at, per_row, df)
            r, c, v = np.r_[r, r2], np.r_[c, c2], np.r_[v, v2]
            capped += capped2
        notice = (f"lint compared the {n:,} articles on their less common words (the {dropped:,} most common of "
                  f"{vocab:,} left out to keep it within its budget of {budget:.2g} steps)")
        if len(at_risk):
            notice += (f", and {len(picked):,} of the {len(at_risk):,} articles made mostly of common words on all "
                       f"their words (a random sample): pairs alike only in common words may be missed among the "
                       f"other {len(at_risk) - len(picked):,}")
    lo, hi = np.minimum(r, c), np.maximum(r, c)
    if len(lo):  # a pair found from both of its rows (or twice) once, its highest score kept
        order = np.lexsort((-v, hi, lo))
        lo, hi, v = lo[order], hi[order], v[order]
        first = np.r_[True, (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])]
        lo, hi, v = lo[first], hi[first], v[first]
    return Pairs(lo, hi, np.minimum(v, 1.0), notice, capped)
