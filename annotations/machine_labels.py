"""``--machine-gold FILE``: machine labels for every question, read from either file that holds them.

- a suggestions CSV (``grace annotations suggest``: the consensus of a run's models, an LLM labeler, or both):
  a row's ``suggested`` label is used when the row is usable (no flag, or ``weak``); a ``split``,
  ``few_voters``, ``no_votes`` or ``labeler_error`` row has no machine label;
- a gold-format CSV (model-consensus or LLM labels written as gold, ``grace gold generate``'s drafts included):
  each row's ``expected_citations`` or ``must_refuse``; a row with neither has no machine label.

The file is told by its header (``suggested``: suggestions; ``expected_citations``: gold). Each format keeps its
one reader (:mod:`annotations.suggestions`, :mod:`kb_builder.gold`); this module only turns what they read into
the scorer's :class:`~harness.scoring.prediction_powered.MachineLabels`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.core.csv_rows import read_csv_rows
from harness.core.errors import GraceError, where
from harness.core.hashing import file_hash
from harness.scoring.prediction_powered import MachineLabel, MachineLabels
from kb_builder.gold import (
    CITATIONS_NEEDED,
    EXPECTED_CITATIONS,
    MUST_REFUSE,
    QUESTION,
    QUESTION_COLUMNS,
    check_label,
    parse_needed,
    parse_row,
    read_table,
)


def read_machine_labels(path: str | Path) -> MachineLabels:
    """The machine labels of ``path`` (a suggestions or gold-format CSV); a bad row names its file and line."""
    path = Path(path)
    if not path.is_file():
        raise GraceError(f"{path}: machine-label file not found" + (" (a folder)" if path.is_dir() else ""))
    header, _ = read_csv_rows(path)
    if "suggested" in header:
        return _from_suggestions(path)
    if EXPECTED_CITATIONS in header and MUST_REFUSE in header:
        return _from_gold(path)
    raise GraceError(f"{where(path, 1)}: not a machine-label file: expected a suggestions CSV ('grace annotations "
                     f"suggest': question_id, suggested, ...) or a gold-format CSV ({', '.join(QUESTION_COLUMNS)}, "
                     f"{EXPECTED_CITATIONS}, {MUST_REFUSE}); the header has {', '.join(header)}")


def _from_suggestions(path: Path) -> MachineLabels:
    from annotations.suggestions import read_suggestions

    rows = read_suggestions(path)
    sources = Counter(s.source for s in rows.values() if s.source)
    labels = {qid: MachineLabel(tuple(s.citations), s.must_refuse) for qid, s in rows.items() if s.usable}
    return MachineLabels(path=str(path), hash=file_hash(path), format="suggestions",
                         source=", ".join(f"{src} ({n})" for src, n in sources.most_common()) or "suggestions",
                         questions={qid: s.question or qid for qid, s in rows.items()}, labels=labels)


def _from_gold(path: Path) -> MachineLabels:
    _, rows = read_table(path, QUESTION_COLUMNS + [EXPECTED_CITATIONS, MUST_REFUSE])
    seen: dict[str, int] = {}
    questions, labels = {}, {}
    for line, row in rows:
        rec = parse_row(path, line, {**row, QUESTION: row.get(QUESTION) or row.get("question_id", "")}, seen=seen)
        check_label(path, rec, required=False)
        questions[rec.question_id] = rec.question
        if rec.must_refuse or rec.expected_citations:
            labels[rec.question_id] = MachineLabel(tuple(rec.expected_citations), rec.must_refuse,
                                                   parse_needed(row.get(CITATIONS_NEEDED), path, line))
    if not questions:
        raise GraceError(f"{path}: no questions found")
    return MachineLabels(path=str(path), hash=file_hash(path), format="gold", source=f"gold-format file {path.name}",
                         questions=questions, labels=labels)
