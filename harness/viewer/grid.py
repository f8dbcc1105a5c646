"""The Questions grid: one row per question, one column per (run, model), filtered, sorted and paged in numpy.

The filter state is a flat set of parameters (:class:`GridQuery`), the same names
the page keeps in its URL, so a pasted link reproduces the grid. A static export
(``grace view --export``) runs the same filters in its page's script over the same
matrices (``static/view.js``, ``Local.questions``); a test holds the two to one answer.
The page names no outcome itself: :data:`OUTCOME_NAMES` (names in code order, how the
filter lists them, how a cell shows them) comes with every answer of ``/api/questions``
and, in an export, with the grid's matrices.

A gold file with a ``category`` column adds a category filter (``category=NAME``) and each row's category.

Runs are aligned by question ID: the rows are the first run's questions, then any
question only later runs have. "Flipped" compares the first picked run (A) with the
last (B) under the report's repeat rule (correct when more than half of the
repeats are), like ``grace compare``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from harness.run_folder.outcome_table import OUTCOME_KINDS
from harness.scoring.outcomes import OUTCOMES
from harness.viewer.index import RunIndex
from harness.web import Rejected

PAGE_SIZE = 50
SORTS = ("file", "id", "hardest", "easiest", "disagreement")
FLIPS = ("any", "improved", "regressed")
OUTCOME_FILTERS = ("hit", "miss", *OUTCOMES)
QUESTION_PREVIEW = 240  # characters of a question shown in the grid
# what the page needs of each outcome, in code order (the grid's codes index it): its label, how a cell shows it
# ({cited} is the cited article) and its tone, the page's colour family beyond hit and miss, from the outcome table
OUTCOME_NAMES = [{"name": o, "label": o.replace("_", " "), "cell": OUTCOME_KINDS[o].cell, "tone": OUTCOME_KINDS[o].tone}
                 for o in OUTCOMES]


def tone(outcome: str) -> str:
    """The page's colour family for an outcome (``none`` for one the page does not know, or no outcome)."""
    kind = OUTCOME_KINDS.get(outcome)
    return kind.tone if kind is not None else "none"


@dataclass
class GridQuery:
    """The Questions page's state: what the URL after ``#/questions?`` holds."""

    runs: list[str] = field(default_factory=list)
    model: str = ""  # the columns "outcome", "truncated" and "flip" look at (empty: every column)
    outcome: str = ""  # hit, miss, or an outcome name
    article: str = ""  # gold or cited article ID
    disagree: bool = False  # the columns cite different articles (or some refuse)
    flip: str = ""  # any, improved, regressed: run A (first) against run B (last)
    suspect: bool = False  # the label audit flags the gold label
    missed: bool = False  # retrieval did not show the gold article
    truncated: bool = False  # an answer was cut off by max_tokens
    category: str = ""  # the question's gold category (the gold file's category column)
    q: str = ""  # words, each the start of a word of the question or of an answer
    sort: str = "file"
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, Sequence[str]]) -> GridQuery:
        one = {k: (v[0] if isinstance(v, list | tuple) else v) for k, v in params.items() if v}
        out = cls(runs=[r for r in str(one.get("runs", "")).split(",") if r])
        for f in fields(cls):
            if f.name in ("runs",) or f.name not in one:
                continue
            value = str(one[f.name])
            if f.type == "bool":
                setattr(out, f.name, value in ("1", "true", "yes", "on"))
            elif f.name == "page":
                if not value.isdigit() or int(value) < 1:
                    raise Rejected(f"page must be a number from 1, got {value!r}")
                out.page = int(value)
            else:
                setattr(out, f.name, value.strip()[:500])
        if out.sort not in SORTS:
            raise Rejected(f"sort must be one of {', '.join(SORTS)}, got {out.sort!r}")
        if out.flip and out.flip not in FLIPS:
            raise Rejected(f"flip must be one of {', '.join(FLIPS)}, got {out.flip!r}")
        if out.outcome and out.outcome not in OUTCOME_FILTERS:
            raise Rejected(f"outcome must be one of {', '.join(OUTCOME_FILTERS)}, got {out.outcome!r}")
        return out


@dataclass
class Column:
    run: str
    model: str
    r: int  # which of the grid's runs
    m: int  # the model's column in that run's index


class Grid:
    """The picked runs' matrices side by side, rows aligned by question ID. Built once per set of runs."""

    def __init__(self, runs: list[tuple[str, RunIndex]], orders: list[list[str]] | None = None):
        """``orders``: each run's models in the order to show them (its leaderboard); others follow."""
        self.runs = runs
        first = runs[0][1]
        self.qids: list[str] = list(first.qids)
        if len(runs) > 1:
            seen = set(self.qids)
            for _, ix in runs[1:]:
                self.qids += [q for q in ix.qids if q not in seen]
                seen.update(ix.qids)
        n = len(self.qids)
        self.rowmap: list[np.ndarray] = []  # per run: its question row for each grid row, -1 when absent
        for k, (_, ix) in enumerate(runs):
            if k == 0 or ix.qids == self.qids:
                rows = np.arange(len(ix.qids))
                self.rowmap.append(np.concatenate([rows, np.full(n - rows.size, -1)]) if rows.size < n else rows)
            else:
                self.rowmap.append(np.array([ix.qindex.get(q, -1) for q in self.qids], dtype=np.int64))
        self.columns = []
        for k, (rid, ix) in enumerate(runs):
            wanted = [m for m in (orders[k] if orders else []) if m in ix.models]
            for model in dict.fromkeys(wanted + ix.models):
                self.columns.append(Column(rid, model, k, ix.models.index(model)))
        self.labels: dict[str, int] = {}  # one code space for cited labels across runs
        local = []
        for _, ix in runs:
            local.append(np.array([self.labels.setdefault(lab, len(self.labels)) for lab in ix.labels], dtype=np.int32))
        self.label_names = list(self.labels)
        self.none_code = self.labels[""]

        def stack(name: str, fill: Any, dtype: Any) -> np.ndarray:
            out = np.empty((n, len(self.columns)), dtype=dtype)
            c = 0
            for k, (_, ix) in enumerate(runs):
                cols = [col.m for col in self.columns if col.r == k]
                rm = self.rowmap[k]
                block = ix.arrays[name][np.where(rm >= 0, rm, 0)][:, cols]
                if name == "pred":
                    block = np.where(block >= 0, local[k][np.maximum(block, 0)], -1)
                block = np.where((rm >= 0)[:, None], block, fill)
                out[:, c:c + len(cols)] = block
                c += len(cols)
            return out

        self.outcome = stack("outcome", -1, np.int8)
        self.asked = stack("asked", 0, np.int32)
        self.hits = stack("hits", 0, np.int32)
        self.pred = stack("pred", -1, np.int32)
        self.truncated = stack("truncated", False, bool)
        self.missed = np.zeros(n, dtype=bool)
        self.suspect = np.zeros(n, dtype=bool)
        self.question = [""] * n
        self.gold = [""] * n
        self.category = [""] * n
        for k in reversed(range(len(runs))):  # the first run's text wins
            ix, rm = runs[k][1], self.rowmap[k]
            have = np.flatnonzero(rm >= 0)
            self.missed[have] |= ix.arrays["missed"][rm[have]]
            self.suspect[have] |= ix.suspect[rm[have]]
            for row in have.tolist():
                q = int(rm[row])
                self.question[row] = ix.questions[q] or self.question[row]
                self.gold[row] = ix.gold[q]
                self.category[row] = ix.category[q] or self.category[row]
        self.categories = list(dict.fromkeys(c for c in self.category if c))  # in the first run's gold order
        self._category = np.array(self.category, dtype=object)
        self._id_order: np.ndarray | None = None

    # -- the query ---------------------------------------------------------------------------------

    def model_columns(self, model: str) -> list[int]:
        if not model:
            return list(range(len(self.columns)))
        cols = [i for i, c in enumerate(self.columns) if c.model == model]
        if not cols:
            raise Rejected(f"no model {model!r} in the runs picked; they have "
                           f"{', '.join(dict.fromkeys(c.model for c in self.columns))}")
        return cols

    def flip_pairs(self, model: str) -> list[tuple[int, int]]:
        """(column in run A, column in run B) for the model, or every model both runs have."""
        if len(self.runs) < 2:
            raise Rejected("'flipped between runs' needs two runs: pick another run on the Runs page")
        last = len(self.runs) - 1
        a = {c.model: i for i, c in enumerate(self.columns) if c.r == 0}
        b = {c.model: i for i, c in enumerate(self.columns) if c.r == last}
        names = [model] if model else [m for m in a if m in b]
        pairs = [(a[m], b[m]) for m in names if m in a and m in b]
        if not pairs:
            raise Rejected(f"no model is in both {self.runs[0][0]} and {self.runs[last][0]}"
                           + (f" under the name {model!r}" if model else ""))
        return pairs

    def mask(self, query: GridQuery, search: np.ndarray | None = None) -> np.ndarray:
        n = len(self.qids)
        keep = np.ones(n, dtype=bool)
        cols = self.model_columns(query.model)
        if query.outcome:
            sub_o, sub_asked = self.outcome[:, cols], self.asked[:, cols] > 0
            if query.outcome in ("hit", "miss"):
                hit = self.hits[:, cols] * 2 > self.asked[:, cols]
                keep &= ((hit if query.outcome == "hit" else ~hit) & sub_asked).any(axis=1)
            else:
                keep &= (sub_o == OUTCOMES.index(query.outcome)).any(axis=1)
        if query.article:
            code = self.labels.get(query.article)
            cited = (self.pred == code).any(axis=1) if code is not None else np.zeros(n, dtype=bool)
            keep &= cited | np.array([query.article in g.split(";") for g in self.gold], dtype=bool)
        if query.disagree:
            asked = self.asked > 0
            hi = np.where(asked, self.pred, -1).max(axis=1)
            lo = np.where(asked, self.pred, np.iinfo(np.int32).max).min(axis=1)
            keep &= (asked.sum(axis=1) >= 2) & (hi != lo)
        if query.flip:
            moved = np.zeros(n, dtype=bool)
            for ca, cb in self.flip_pairs(query.model):
                both = (self.asked[:, ca] > 0) & (self.asked[:, cb] > 0)
                ok_a = self.hits[:, ca] * 2 > self.asked[:, ca]
                ok_b = self.hits[:, cb] * 2 > self.asked[:, cb]
                if query.flip in ("any", "improved"):
                    moved |= both & ~ok_a & ok_b
                if query.flip in ("any", "regressed"):
                    moved |= both & ok_a & ~ok_b
            keep &= moved
        if query.category:
            if query.category not in self.categories:
                raise Rejected(f"no category {query.category!r} in the runs picked; they have "
                               f"{', '.join(self.categories) or 'none (the gold file has no category column)'}")
            keep &= self._category == query.category
        if query.suspect:
            keep &= self.suspect
        if query.missed:
            keep &= self.missed
        if query.truncated:
            keep &= self.truncated[:, cols].any(axis=1)
        if search is not None:
            found = np.zeros(n, dtype=bool)
            found[search] = True
            keep &= found
        return keep

    def search_rows(self, text: str) -> np.ndarray | None:
        """Grid rows whose question or an answer (in any picked run) has every word of ``text``."""
        if not text.strip():
            return None
        rows = []
        for k, (_, ix) in enumerate(self.runs):
            found = ix.search(text)
            rm = self.rowmap[k]
            if k == 0:
                rows.append(found)
            else:
                back = np.full(len(ix.qids), -1, dtype=np.int64)
                have = np.flatnonzero(rm >= 0)
                back[rm[have]] = have
                mapped = back[found]
                rows.append(mapped[mapped >= 0])
        return np.unique(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64)

    def order(self, sort: str, rows: np.ndarray) -> np.ndarray:
        if sort == "file":
            return rows
        if sort == "id":
            if self._id_order is None:
                self._id_order = np.argsort(np.array(self.qids, dtype=object), kind="stable")
            rank = np.empty(len(self.qids), dtype=np.int64)
            rank[self._id_order] = np.arange(len(self.qids))
            return rows[np.argsort(rank[rows], kind="stable")]
        asked = self.asked[rows]
        if sort in ("hardest", "easiest"):
            share = np.where(asked > 0, self.hits[rows] / np.maximum(asked, 1), 0).sum(axis=1)
            share = share / np.maximum((asked > 0).sum(axis=1), 1)
            return rows[np.argsort(share if sort == "hardest" else -share, kind="stable")]
        distinct = np.array([len(set(p[a > 0].tolist())) for p, a in zip(self.pred[rows], asked, strict=True)])
        return rows[np.argsort(-distinct, kind="stable")]

    def page(self, query: GridQuery, search: np.ndarray | None = None) -> dict[str, Any]:
        keep = self.mask(query, search)
        rows = self.order(query.sort, np.flatnonzero(keep))
        total = int(rows.size)
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(query.page, pages)
        shown = rows[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        cols = self.model_columns(query.model) if query.model else None
        matched_hits = self.hits[keep] * 2 > self.asked[keep]
        matched_asked = self.asked[keep] > 0
        return {
            "total": total,
            "all": len(self.qids),
            "page": page,
            "pages": pages,
            "page_size": PAGE_SIZE,
            "outcomes": OUTCOME_NAMES,
            "categories": self.categories,
            "columns": [{"run": c.run, "model": c.model,
                         "accuracy": _share(matched_hits[:, i], matched_asked[:, i]),
                         "focus": cols is None or i in cols} for i, c in enumerate(self.columns)],
            "rows": [self.row(int(r)) for r in shown],
        }

    def row(self, r: int) -> dict[str, Any]:
        text = self.question[r]
        return {
            "id": self.qids[r],
            "question": text[:QUESTION_PREVIEW] + ("…" if len(text) > QUESTION_PREVIEW else ""),
            "gold": self.gold[r],
            "suspect": bool(self.suspect[r]),
            "missed": bool(self.missed[r]),
            **({"category": self.category[r]} if self.categories else {}),
            "cells": [self.cell(r, i) for i in range(len(self.columns))],
        }

    def cell(self, r: int, i: int) -> dict[str, Any] | None:
        asked = int(self.asked[r, i])
        if not asked:
            return None
        pred = int(self.pred[r, i])
        label = self.label_names[pred] if pred >= 0 else ""
        return {"outcome": OUTCOMES[self.outcome[r, i]], "hits": int(self.hits[r, i]), "n": asked,
                "hit": bool(self.hits[r, i] * 2 > asked), "cited": label or ("none" if pred == self.none_code else ""),
                "truncated": bool(self.truncated[r, i])}


def _share(hits: np.ndarray, asked: np.ndarray) -> float | None:
    n = int(asked.sum())
    return round(float((hits & asked).sum() / n), 4) if n else None

