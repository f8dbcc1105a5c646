"""Building a run's index (:mod:`harness.viewer.index`): one pass over scores, one over responses, then the audit.

``python -m harness.viewer.build RUN INDEX`` runs it as a child process of ``grace view``:
the viewer's pages keep answering while a big run is indexed on the other core;
progress goes to stdout as one JSON line per step (``{"phase", "done"}``), a
problem to stderr as one ``error: ...`` line and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import GraceError, where
from harness.core.jsonl import loads_line
from harness.run_folder.outcome_table import OUTCOME_TABLE
from harness.run_folder.run_dir import RunDir
from harness.run_folder.scores import iter_scores_at
from harness.scoring.outcomes import HIT_CODES, OUTCOME_CODE, OUTCOMES, REFUSE
from harness.scoring.run_comparison import gold_label
from harness.viewer.index import (
    INDEX_SCHEMA_VERSION,
    NONE_LABEL,
    REFUSE_LABEL,
    Progress,
    create_tables,
    source_key,
)

# the outcomes whose answer is no vote in the gold audit, whatever it cites (the outcome table's votes)
_NO_VOTE = tuple(OUTCOME_CODE[k.name] for k in OUTCOME_TABLE if not k.votes)


@dataclass
class _Gold:
    question_id: str
    question: str
    expected_citations: list[str]
    must_refuse: bool


def recorded_path(recorded: str | None, run: Path) -> Path | None:
    """A path report.json recorded, relative to where the run was started or to the run folder."""
    if not recorded:
        return None
    p = Path(recorded)
    for option in (p, run / p, run / p.name):
        if option.exists():
            return option
    return None


def _gold_texts(report: Any, run: Path, notes: list[str]) -> dict[str, str]:
    from kb_builder.gold import read_gold, read_questions

    path = recorded_path(report.gold.path if report else None, run)
    if path is None or path.is_dir():
        notes.append("gold file not found: questions are shown by ID only")
        return {}
    try:
        return {g.question_id: g.question for g in read_gold(path)}
    except GraceError as exc:
        try:  # questions with no label (grace import-logs without gold writes them as questions.csv)
            return {q.question_id: q.question for q in read_questions(path)}
        except GraceError:
            notes.append(f"gold file unreadable, questions shown by ID only: {exc}")
            return {}


def _gold_categories(report: Any, run: Path) -> dict[str, str]:
    """Each question's category (the gold file's category column), for the grid's filter; {} without one (or
    without a readable gold file, which _gold_texts has noted)."""
    from kb_builder.gold import read_gold

    path = recorded_path(report.gold.path if report else None, run)
    if path is None or path.is_dir() or not (report and report.categories):
        return {}
    try:
        return {g.question_id: g.category for g in read_gold(path) if g.category}
    except GraceError:
        return {}


def _articles(report: Any, run: Path, notes: list[str]) -> list[tuple[str, str, str]]:
    from kb_builder.kb_dir import KbDir
    from kb_builder.kb_records import kb_content_hash
    from kb_builder.store import read_articles

    folder = recorded_path(report.kb.path if report else None, run)
    if folder is None:
        notes.append("KB not found: article titles and texts are not shown")
        return []
    folder = folder.parent if folder.is_file() else folder
    try:
        arts = read_articles(KbDir(folder).articles)
    except GraceError as exc:
        notes.append(f"KB unreadable, article texts not shown: {exc}")
        return []
    if report is not None and report.kb.hash and kb_content_hash(arts) != report.kb.hash:
        notes.append(f"the KB at {folder} is not the one scored (its hash differs): article texts may not match")
    return [(a.id, a.title, a.text) for a in arts]


class _Labels:
    def __init__(self) -> None:
        self.codes: dict[str, int] = {"": NONE_LABEL, REFUSE: REFUSE_LABEL}

    def code(self, label: str) -> int:
        c = self.codes.get(label)
        if c is None:
            c = self.codes[label] = len(self.codes)
        return c


def build_index(run: str | Path, dest: Path, progress: Progress | None = None) -> Path:
    """Read the run once and write its index to ``dest`` (a temp file first, then renamed into place)."""
    folder = RunDir(run)
    say = progress or (lambda phase, done: None)
    if not folder.scores.exists():
        raise GraceError(f"{folder.path}: no scores.jsonl yet; the run is not scored")
    key = source_key(folder.path)
    report = folder.read_report() if folder.report.exists() else None
    notes: list[str] = []
    say("reading the gold set and the KB", 0.01)
    texts = _gold_texts(report, folder.path, notes)
    categories = _gold_categories(report, folder.path)
    articles = _articles(report, folder.path, notes)
    responses = responses_file(folder, report)
    del report  # a big run's report holds a confusion matrix per model: not kept through the passes below
    kb_ids = frozenset(a[0] for a in articles)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        create_tables(db)
        cells = _read_scores(folder, kb_ids, say)
        say("reading the answers", 0.45)
        _read_answers(db, responses, cells, texts, say)
        say("auditing the gold labels", 0.92)
        suspects = _suspects(cells, texts, articles)
        say("writing the index", 0.96)
        _write(db, cells, texts, articles, suspects, notes, key, folder.path, responses, categories)
        db.commit()
    except BaseException:
        db.close()
        tmp.unlink(missing_ok=True)
        raise
    db.close()
    os.replace(tmp, dest)
    say("ready", 1.0)
    return dest


@dataclass
class _Cells:
    """The scores pass: one entry per response row, then aggregated per (question, model) cell."""

    qids: list[str] = field(default_factory=list)
    gold: list[str] = field(default_factory=list)
    expected: list[list[str]] = field(default_factory=list)
    must: list[bool] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    labels: _Labels = field(default_factory=_Labels)
    repeats: int = 1
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: dict[str, np.ndarray] = field(default_factory=dict)  # per response row: q, m, repeat, pred


def _read_scores(folder: RunDir, kb_ids: frozenset[str], say: Progress) -> _Cells:
    c = _Cells()
    qindex: dict[str, int] = {}
    mindex: dict[str, int] = {}
    cols = {name: array(t) for name, t in (("q", "i"), ("m", "i"), ("r", "i"), ("o", "b"), ("s", "b"), ("p", "i"),
                                           ("t", "b"), ("e", "b"), ("so", "q"), ("sl", "i"))}
    q_, m_, r_, o_, s_, p_, t_, e_, so_, sl_ = (cols[k].append for k in ("q", "m", "r", "o", "s", "p", "t", "e",
                                                                         "so", "sl"))
    code = OUTCOME_CODE
    size = max(1, folder.scores.stat().st_size)
    done = 0
    label_code = c.labels.code
    for n, start, length, row in iter_scores_at(folder.scores):
        qid = row["question_id"]
        qi = qindex.get(qid)
        if qi is None:
            qi = qindex[qid] = len(c.qids)
            c.qids.append(qid)
            expected = [str(x) for x in row.get("expected_citations") or []]
            c.expected.append(expected)
            c.must.append(bool(row.get("must_refuse")))
            c.gold.append(gold_label(row.get("must_refuse"), expected))
        mi = mindex.get(row["model"])
        if mi is None:
            mi = mindex[row["model"]] = len(c.models)
            c.models.append(row["model"])
        oc = code.get(row["outcome"])
        if oc is None:
            raise GraceError(f"{where(folder.scores, n)}: unknown outcome {row['outcome']!r}; run 'grace score' again")
        cited = row.get("cited_ids") or []
        if oc in _NO_VOTE:
            pred = NONE_LABEL
        elif row.get("refused"):
            pred = REFUSE_LABEL
        elif len(cited) == 1 and (cited[0] in kb_ids or not kb_ids):
            pred = label_code(str(cited[0]))
        else:
            pred = NONE_LABEL
        q_(qi)
        m_(mi)
        r_(row["repeat"])
        o_(oc)
        s_(code.get(row.get("strict_outcome"), oc))
        p_(pred)
        t_(1 if row.get("truncated") else 0)
        er = row.get("expected_retrieved")
        e_(-1 if er is None else 1 if er else 0)
        so_(start)
        sl_(length)
        if n % 50_000 == 0:
            done = min(0.4, 0.4 * n * 600 / size)  # ~600 bytes a line: a progress estimate, not a promise
            say("reading the scores", 0.02 + done)
    if not c.qids:
        raise GraceError(f"{folder.scores}: no scores in the file; run 'grace score' again")
    rows = {k: np.frombuffer(v, dtype={"i": np.int32, "b": np.int8, "q": np.int64}[v.typecode]).copy()
            for k, v in cols.items()}
    _aggregate(c, rows)
    return c


def _aggregate(c: _Cells, rows: dict[str, np.ndarray]) -> None:
    nq, nm = len(c.qids), len(c.models)
    cell = rows["q"].astype(np.int64) * nm + rows["m"]
    reps = int(rows["r"].max()) + 1 if rows["r"].size else 1
    # a (question, model, repeat) scored twice: the last line counts, as the scorer keeps the last response
    key = cell * reps + rows["r"]
    _, last = np.unique(key[::-1], return_index=True)
    keep = np.sort(key.size - 1 - last)
    rows = {k: v[keep] for k, v in rows.items()}
    cell = cell[keep]
    c.repeats = reps
    c.rows = {"q": rows["q"], "m": rows["m"], "r": rows["r"], "p": rows["p"], "so": rows["so"], "sl": rows["sl"]}
    size = nq * nm
    hit = np.isin(rows["o"], HIT_CODES)
    asked = np.bincount(cell, minlength=size)
    hits = np.bincount(cell, weights=hit, minlength=size)
    strict_hits = np.bincount(cell, weights=np.isin(rows["s"], HIT_CODES), minlength=size)
    majority = hits * 2 > asked
    k = len(OUTCOMES)
    is_hit = np.isin(np.arange(k), HIT_CODES)

    def mode(codes: np.ndarray, side: np.ndarray) -> np.ndarray:
        """The most common outcome of each cell among those on the side the majority rule took."""
        if reps == 1:  # one answer per cell: its outcome (and no (cells x outcomes) count matrix)
            out = np.full(size, -1, dtype=np.int8)
            out[cell] = codes
            return out
        counts = np.bincount(cell * k + codes, minlength=size * k).reshape(size, k)
        counts[side] *= is_hit
        counts[~side] *= ~is_hit
        out = counts.argmax(axis=1).astype(np.int8)
        out[asked == 0] = -1
        return out

    c.arrays["outcome"] = mode(rows["o"], majority).reshape(nq, nm)
    c.arrays["strict"] = mode(rows["s"], strict_hits * 2 > asked).reshape(nq, nm)
    c.arrays["asked"] = asked.astype(np.uint16).reshape(nq, nm)
    c.arrays["hits"] = hits.astype(np.uint16).reshape(nq, nm)
    c.arrays["strict_hits"] = strict_hits.astype(np.uint16).reshape(nq, nm)
    c.arrays["truncated"] = (np.bincount(cell, weights=rows["t"], minlength=size) > 0).reshape(nq, nm)
    # the label most often cited in a cell (ties: the lowest code): what "models disagree" compares
    n_labels = len(c.labels.codes)
    pairs, counts = np.unique(cell * n_labels + rows["p"], return_counts=True)
    owner = pairs // n_labels
    order = np.lexsort((-counts, owner))
    first = np.ones(order.size, dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    pred = np.full(size, -1, dtype=np.int32)
    pred[owner[order][first]] = (pairs[order][first] % n_labels).astype(np.int32)
    c.arrays["pred"] = pred.reshape(nq, nm)
    missed = np.zeros(nq, dtype=bool)
    missed[rows["q"][rows["e"] == 0]] = True
    c.arrays["missed"] = missed
    c.arrays["must"] = np.asarray(c.must, dtype=bool)


def responses_file(folder: RunDir, report: Any) -> Path | None:
    """The responses the run was scored from: the folder's own, else the file report.json names."""
    if folder.responses.exists():
        return folder.responses
    return recorded_path(report.responses.path if report else None, folder.path)


def _read_answers(db: sqlite3.Connection, path: Path | None, c: _Cells, texts: dict[str, str], say: Progress) -> None:
    """Each scored response's place in responses.jsonl, and every question and answer into the word search."""
    nq, nm, reps = len(c.qids), len(c.models), c.repeats
    qindex = {q: i for i, q in enumerate(c.qids)}
    mindex = {m: i for i, m in enumerate(c.models)}
    db.executemany("INSERT INTO search(rowid, body) VALUES (?, ?)",
                   ((i, f"{q} {texts.get(q, '')}") for i, q in enumerate(c.qids)))
    starts = np.full(nq * nm * reps, -1, dtype=np.int64)  # per (question, model, repeat): not a dict of a million
    lengths = np.zeros(nq * nm * reps, dtype=np.int32)
    if path is not None:
        _read_response_places(db, path, c, qindex, mindex, starts, lengths, say)
    slots = (c.rows["q"].astype(np.int64) * nm + c.rows["m"]) * reps + c.rows["r"]
    order = np.argsort(slots)
    slots = slots[order]
    db.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                   zip((slots // reps).tolist(), (slots % reps).tolist(), c.rows["so"][order].tolist(),
                       c.rows["sl"][order].tolist(), starts[slots].tolist(), lengths[slots].tolist(), strict=True))


def _read_response_places(db: sqlite3.Connection, path: Path, c: _Cells, qindex: dict[str, int],
                          mindex: dict[str, int], starts: np.ndarray, lengths: np.ndarray, say: Progress) -> None:
    nq, nm, reps = len(c.qids), len(c.models), c.repeats
    size = max(1, path.stat().st_size)
    batch: list[tuple[int, str]] = []
    offset = 0
    with path.open("rb") as fh:
        for raw in fh:
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                row = loads_line(raw)
                qi, mi = qindex.get(str(row["question_id"])), mindex.get(str(row["model"]))
                rep = int(row.get("repeat") or 0)
            except (ValueError, KeyError, TypeError):  # a torn or hand-edited line: the scorer named it already
                continue
            if qi is None or mi is None or not 0 <= rep < reps:
                continue
            slot = ((qi * nm + mi) * reps) + rep
            starts[slot], lengths[slot] = start, len(raw)  # the last line of a call is the one scored
            text = row.get("response")
            if isinstance(text, str) and text:
                batch.append((nq + slot, text))
            if len(batch) >= 20_000:
                db.executemany("INSERT INTO search(rowid, body) VALUES (?, ?)", batch)
                batch.clear()
                say("indexing the answers", 0.45 + 0.45 * offset / size)
    if batch:
        db.executemany("INSERT INTO search(rowid, body) VALUES (?, ?)", batch)


def _suspects(c: _Cells, texts: dict[str, str], articles: list[tuple[str, str, str]]) -> list[tuple]:
    """The label audit's rows (``harness.scoring.label_audit``), from the votes the scores hold."""
    if len(c.models) < 2:
        return []
    from harness.scoring.label_audit import audit
    from harness.scoring.votes import votes_from_codes

    names: list[str | None] = [None] * len(c.labels.codes)
    for label, code in c.labels.codes.items():
        names[code] = None if code == NONE_LABEL else label
    votes = votes_from_codes(c.rows["q"], c.rows["m"], c.rows["p"], c.qids, c.models, names)
    questions = [_Gold(q, texts.get(q, ""), e, m) for q, e, m in zip(c.qids, c.expected, c.must, strict=True)]
    qindex = {q: i for i, q in enumerate(c.qids)}
    out = []
    for s in audit(questions, votes, {a[0]: a[1] for a in articles}):
        for qid in s.question_ids:
            if qid in qindex:
                out.append((qindex[qid], s.kind, s.suggested, s.agree, s.voters, s.check, s.reason))
    return out


def _write(db: sqlite3.Connection, c: _Cells, texts: dict[str, str], articles: list[tuple[str, str, str]],
           suspects: list[tuple], notes: list[str], key: str, run: Path, responses: Path | None,
           categories: dict[str, str]) -> None:
    db.executemany("INSERT INTO questions VALUES (?, ?, ?, ?, ?)",
                   ((i, q, texts.get(q, ""), g, categories.get(q, ""))
                    for i, (q, g) in enumerate(zip(c.qids, c.gold, strict=True))))
    db.executemany("INSERT INTO models VALUES (?, ?)", enumerate(c.models))
    db.executemany("INSERT INTO labels VALUES (?, ?)", ((code, label) for label, code in c.labels.codes.items()))
    db.executemany("INSERT OR REPLACE INTO articles VALUES (?, ?, ?)", articles)
    db.executemany("INSERT INTO suspects VALUES (?, ?, ?, ?, ?, ?, ?)", suspects)
    for name, arr in c.arrays.items():
        arr = np.ascontiguousarray(arr)
        db.execute("INSERT INTO arrays VALUES (?, ?, ?, ?)", (name, arr.dtype.str, json.dumps(arr.shape),
                                                             arr.tobytes()))
    if responses is None:
        notes.append("responses file not found: answers are not shown")
    meta = {"schema_version": INDEX_SCHEMA_VERSION, "source": key, "run": str(run), "repeats": c.repeats,
            "responses": str(responses.resolve()) if responses else None,
            "notes": notes, "n_questions": len(c.qids), "n_models": len(c.models)}
    db.executemany("INSERT INTO meta VALUES (?, ?)", ((k, json.dumps(v)) for k, v in meta.items()))



def main(argv: list[str]) -> int:
    run, dest = Path(argv[0]), Path(argv[1])
    last = [0.0, -1.0]

    def say(phase: str, done: float) -> None:
        now = time.monotonic()
        if done >= 1.0 or now - last[0] > 0.2 or done - last[1] > 0.05:
            last[0], last[1] = now, done
            print(json.dumps({"phase": phase, "done": round(done, 3)}), flush=True)

    try:
        build_index(run, dest, say)
    except GraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
