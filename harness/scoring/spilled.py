"""A float figure of every row of a model, kept on disk, and numpy's own sum, mean and percentiles of it.

The report's cost (a sum and a mean), latency (the 50th and 95th percentiles) and a citation model's mean
precision, recall and F1 are of every row of a model. Held as a column they grew with the log (8 bytes a row
a figure; a 2 GB log is 3 million rows). The row pass's tallies append each series here instead, a segment at a
time in one scratch file, and reduce it from there a block at a time, so memory stays the same whatever the
number of rows.

The figures are numpy's to the bit, not an approximation: the sum is numpy's pairwise summation split where
numpy splits it (``np.sum`` of a block gives the same partial sum as inside the whole array), and a percentile
is numpy's linear interpolation between the two order statistics around it, each found exactly by narrowing the
value 16 bits at a time. A series small enough is read whole and handed to numpy itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

LEAF = 1 << 20  # values summed by numpy at once (8 MB); above, split as numpy's pairwise summation splits
WHOLE = 1 << 20  # a series of at most this many values is read whole for its percentiles
_DIGIT = 16  # bits of the value narrowed per pass when selecting an order statistic
_TOP = np.uint64(1 << 63)


class Spill:
    """One scratch file of float64 series (removed by :meth:`close`); each series is the segments it was given."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("w+b")
        self._end = 0

    def series(self) -> Series:
        return Series(self)

    def _append(self, values: np.ndarray) -> int:
        at = self._end
        self._fh.seek(at)
        np.ascontiguousarray(values, dtype=np.float64).tofile(self._fh)
        self._end += values.size * 8
        return at

    def _read(self, at: int, n: int) -> np.ndarray:
        self._fh.flush()
        self._fh.seek(at)
        return np.fromfile(self._fh, dtype=np.float64, count=n)

    def close(self) -> None:
        self._fh.close()
        self.path.unlink(missing_ok=True)


class Series:
    """A float64 series appended a chunk at a time; read back as numpy would see the whole array."""

    def __init__(self, spill: Spill) -> None:
        self._spill = spill
        self._segments: list[tuple[int, int, int]] = []  # (first value's index, byte offset, values)
        self.n = 0

    def add(self, values: np.ndarray) -> None:
        if not values.size:
            return
        at = self._spill._append(values)
        last = self._segments[-1] if self._segments else None
        if last is not None and last[1] + 8 * last[2] == at:  # written right after its previous segment: one
            self._segments[-1] = (last[0], last[1], last[2] + values.size)
        else:
            self._segments.append((self.n, at, values.size))
        self.n += values.size

    def values(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Values ``[start, stop)`` of the series (all of them by default)."""
        stop = self.n if stop is None else stop
        parts = []
        for first, at, n in self._segments:
            lo, hi = max(start, first), min(stop, first + n)
            if lo < hi:
                parts.append(self._spill._read(at + 8 * (lo - first), hi - lo))
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)

    def blocks(self, size: int = LEAF) -> Iterator[np.ndarray]:
        for start in range(0, self.n, size):
            yield self.values(start, min(self.n, start + size))

    def sum(self) -> np.float64:
        """``np.sum`` of the whole series, bit for bit: numpy's pairwise summation (blocks of 8 summed
        crosswise up to 128 values, halves rounded down to a multiple of 8 above), with numpy summing each leaf."""

        def part(start: int, n: int) -> np.float64:
            if n <= LEAF:
                return np.add.reduce(self.values(start, start + n))
            half = n // 2
            half -= half % 8
            return part(start, half) + part(start + half, n - half)

        return part(0, self.n)

    def mean(self) -> np.float64:
        """``np.mean`` of the series (not of an empty one)."""
        return self.sum() / self.n

    def percentiles(self, q: Sequence[float]) -> list[np.float64]:
        """``np.percentile(values, q)`` (linear interpolation), of a non-empty series without NaN."""
        if self.n <= WHOLE:
            return list(np.percentile(self.values(), q))
        quantiles = np.true_divide(np.asanyarray(q), 100)
        virtual = (self.n - 1) * quantiles  # numpy's virtual index of each percentile
        out = []
        for v in virtual:
            if v >= self.n - 1:  # the 100th: numpy takes the last value twice, at index -1 (so gamma is v + 1)
                a = b = self._kth(self.n - 1)
                gamma = v + 1
            else:
                below = np.floor(v)
                a, b = self._kth(int(below)), self._kth(int(below) + 1)
                gamma = v - below
            out.append(_lerp(a, b, gamma))
        return out

    def _kth(self, k: int) -> np.float64:
        """The ``k``-th smallest value (from 0): its order-preserving 64-bit key fixed 16 bits at a time, each a
        pass counting the candidates' next digit, until few enough are left to sort."""
        prefix, bits, rank = 0, 0, k  # the key's top ``bits`` bits are ``prefix``; ``rank`` among those values
        while bits < 64:
            shift = 64 - bits - _DIGIT
            counts = np.zeros(1 << _DIGIT, dtype=np.int64)
            for block in self.blocks():
                keys = _in_prefix(_keys(block), prefix, bits)
                digits = (keys >> np.uint64(shift)) & np.uint64((1 << _DIGIT) - 1)
                counts += np.bincount(digits.astype(np.int64), minlength=1 << _DIGIT)
            cumulative = np.cumsum(counts)
            digit = int(np.searchsorted(cumulative, rank, side="right"))
            rank -= int(cumulative[digit - 1]) if digit else 0
            prefix, bits = (prefix << _DIGIT) | digit, bits + _DIGIT
            if counts[digit] <= WHOLE and bits < 64:  # few enough: sort them
                found = np.sort(np.concatenate([_in_prefix(_keys(b), prefix, bits) for b in self.blocks()]))
                return _value(found[rank])
        return _value(np.uint64(prefix))


def _keys(values: np.ndarray) -> np.ndarray:
    """Unsigned keys in the order of the floats: negative ones bit-inverted, the others with the sign bit set."""
    u = values.view(np.uint64)
    return np.where(u & _TOP, ~u, u | _TOP)


def _in_prefix(keys: np.ndarray, prefix: int, bits: int) -> np.ndarray:
    return keys if not bits else keys[(keys >> np.uint64(64 - bits)) == np.uint64(prefix)]


def _value(key: np.uint64) -> np.float64:
    k = np.uint64(key)
    u = k ^ _TOP if k & _TOP else ~k
    return np.array([u], dtype=np.uint64).view(np.float64)[0]


def _lerp(a: np.float64, b: np.float64, t: np.float64) -> np.float64:
    """numpy's ``_lerp`` (percentile's linear interpolation), with its two formulas either side of 0.5."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t
