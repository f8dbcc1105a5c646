"""Everything a report reads, gathered once so the writers stay pure functions.

``report.json`` is required; the rest only enriches the page and is optional:
``scores.jsonl`` (failure samples), the responses file (the text of those
failures), the gold file (question text) and the KB (article titles). A report
from an old run whose KB or gold file has moved must still render, so optional
inputs that cannot be read become a visible note, never an error.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where
from harness.core.jsonl import loads_line
from harness.run_folder.outcome_table import outcomes_where
from harness.run_folder.report import ModelReport, Report
from harness.run_folder.responses import RowKey, iter_response_lines
from harness.run_folder.run_dir import RunDir

log = logging.getLogger("grace")


@dataclass
class ReportInputs:
    out_dir: Path
    report: Report
    scores: list[dict[str, Any]] = field(default_factory=list)  # failed rows only, a bounded sample
    failure_counts: dict[str, int] = field(default_factory=dict)
    responses: dict[RowKey, dict[str, Any]] = field(default_factory=dict)
    responses_path: Path | None = None
    questions: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # shown at the top of the HTML page
    out_of_date: str | None = None  # the answers on file are not those report.json was scored from: why, and the fix

    @property
    def models(self) -> dict[str, ModelReport]:
        return self.report.models

    @property
    def ranked(self) -> list[ModelReport]:
        """Models in leaderboard order; any model missing from the list goes last, not lost."""
        return self.report.ranked()

    @property
    def leaderboard(self) -> list[str]:
        return [m.model for m in self.ranked]

    def title(self, label: str) -> str:
        return self.titles.get(str(label), "")


def load_inputs(out_dir: Path, kb: Any = None, gold: Any = None) -> ReportInputs:
    run = RunDir(out_dir)
    report = run.read_report()
    inputs = ReportInputs(out_dir=run.path, report=report)
    inputs.out_of_date = run.report_out_of_date(report)
    if inputs.out_of_date:  # said first, in every view: the figures below are not of the answers on file
        log.warning(inputs.out_of_date)
        inputs.notes.append(inputs.out_of_date)
    inputs.notes += report.warnings  # the scorer's own caveats come first
    inputs.scores, inputs.failure_counts = _read_failures(run.scores, inputs.notes, report.seed)
    _load_responses(inputs)
    _load_questions(inputs, gold)
    _load_titles(inputs, kb)
    return inputs


CORRECT = outcomes_where(correct=True)  # the rows that are no failure
KEEP_PER_KIND = 200


def _read_failures(path: Path, notes: list[str], seed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Wrong rows only, at most ``KEEP_PER_KIND`` per (model, outcome), plus every model's failure count.

    A million-row ``scores.jsonl`` must not be held in memory to pick six examples per
    model: each failure gets a seeded pseudo-random priority and only the lowest ones are kept,
    so the choice is the same on every render.
    """
    import hashlib
    import heapq

    if not path.exists():
        notes.append(f"{path.name} not found: no failure samples.")
        return [], {}
    heaps: dict[tuple[str, str], list[tuple[int, int, dict[str, Any]]]] = {}
    counts: dict[str, int] = {}
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip() or b'"outcome": "correct' in raw or b'"outcome":"correct' in raw:
                continue
            try:
                row = loads_line(raw)
            except json.JSONDecodeError as exc:
                raise GraceError(f"{where(path, n)}: not valid JSON ({exc.msg}); re-run the step that wrote it") from None
            except UnicodeDecodeError:
                raise GraceError(f"{where(path, n)}: not UTF-8 text; re-run the step that wrote it") from None
            if not isinstance(row, dict) or row.get("outcome") in CORRECT:
                continue
            model = str(row.get("model"))
            counts[model] = counts.get(model, 0) + 1
            key = f"{seed}:{model}:{row.get('question_id')}:{row.get('repeat')}".encode()
            prio = -int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
            heap = heaps.setdefault((model, str(row.get("outcome"))), [])
            item = (prio, n, row)
            if len(heap) < KEEP_PER_KIND:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
    rows = [item[2] for heap in heaps.values() for item in sorted(heap, key=lambda t: t[1])]
    return rows, counts


def _existing(candidate: Any, out_dir: Path) -> Path | None:
    """A recorded path may be relative to where the run was started or to OUT_DIR; try both."""
    if not candidate:
        return None
    p = Path(str(candidate))
    for option in (p, out_dir / p, out_dir / p.name):
        if option.exists():
            return option
    return None


def row_key(row: dict[str, Any]) -> RowKey:
    try:
        repeat = int(row.get("repeat") or 0)
    except (TypeError, ValueError):
        repeat = 0
    return (str(row.get("model")), str(row.get("question_id")), repeat)


def _load_responses(inputs: ReportInputs) -> None:
    recorded = inputs.report.responses.path
    path = _existing(RunDir(inputs.out_dir).responses, inputs.out_dir) or _existing(recorded, inputs.out_dir)
    if path is None:
        if inputs.scores:
            inputs.notes.append("responses file not found: failure samples show no response text.")
        return
    inputs.responses_path = path
    wanted = {row_key(r) for r in inputs.scores}  # only the text of failures that may be shown
    for row in iter_response_lines(path, hint="; re-run the step that wrote it"):  # a million rows: not all held
        key = row_key(row)
        if key in wanted:
            inputs.responses[key] = row


def response_text(row: dict[str, Any] | None) -> str | None:
    """The model's raw answer; the runner's field name is read leniently so old files still show."""
    if not row:
        return None
    for key in ("text", "response", "content", "output", "completion"):
        value = row.get(key)
        if isinstance(value, dict):
            value = value.get("text")
        if isinstance(value, str):
            return value
    return None


def _load_questions(inputs: ReportInputs, gold: Any = None) -> None:
    for row in inputs.responses.values():
        if isinstance(row.get("question"), str):
            inputs.questions.setdefault(str(row.get("question_id")), row["question"])
    if gold is not None:  # the gold set the run already read (a GoldSet)
        for q in gold.questions:
            inputs.questions.setdefault(q.question_id, q.question)
        return
    path = _existing(inputs.report.gold.path, inputs.out_dir)
    if path is None or path.is_dir():
        return
    from kb_builder.gold import read_gold

    try:
        for q in read_gold(path):
            inputs.questions.setdefault(q.question_id, q.question)
    except GraceError as exc:
        inputs.notes.append(f"gold file unreadable, questions not shown: {exc}")


def _load_titles(inputs: ReportInputs, kb: Any) -> None:
    """Titles only: read ``articles.jsonl`` directly; ``load_kb`` would count tokens and write a manifest."""
    from kb_builder.kb_dir import KbDir
    from kb_builder.kb_records import kb_content_hash
    from kb_builder.store import read_articles

    explicit = kb is not None
    if kb is None:
        kb = _existing(inputs.report.kb.path, inputs.out_dir)
        if kb is None:
            inputs.notes.append("KB not found: article titles not shown (pass --kb KB_DIR).")
            return
    if isinstance(kb, str | Path):
        folder = Path(kb).parent if Path(kb).is_file() else Path(kb)
        try:
            articles = read_articles(KbDir(folder).articles)
        except GraceError:
            if explicit:
                raise
            inputs.notes.append(f"KB at {folder} unreadable: article titles not shown (pass --kb KB_DIR).")
            return
        kb_hash = kb_content_hash(articles)
    else:
        articles, kb_hash = kb.articles, kb.kb_hash
    inputs.titles = {a.id: a.title for a in articles}
    expected = inputs.report.kb.hash
    if expected and kb_hash != expected:
        inputs.notes.append(
            f"the KB read for titles (hash {kb_hash[:12]}) is not the one scored (hash {expected[:12]}): "
            "article titles may not match their IDs."
        )
