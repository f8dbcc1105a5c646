"""The sampling workflow of ``grace annotations sample``: the random subset humans label, and its draw record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Drawn", "sample_questions"]


@dataclass
class Drawn:
    """What ``sample_questions`` wrote: the subset CSV, its draw record (``SUBSET.draw.json``) and the record."""

    subset: Path
    record_path: Path
    record: Any  # kb_builder.gold_draw.DrawRecord
    warnings: list[str]


def sample_questions(questions: str | Path, n: int, out: str | Path, *, seed: int = 0, by: str | None = None,
                     force: bool = False) -> Drawn:
    """Draw ``n`` of ``questions`` (a CSV with question_id, question) at random into ``out`` (same columns, file
    order) and record the draw beside it as ``OUT.draw.json``; ``by`` stratifies by a column (each value gets its
    share of ``n``, at least 2). Label ``out`` (``grace annotate KB --questions OUT --out HUMAN.csv``), keep the
    record in the same folder as the labelled file, and score with ``grace score --gold HUMAN.csv --machine-gold
    ...``: the scorer checks the labels came from this draw."""
    from annotations.sample import FEW_LABELS, draw, record_path, render_subset
    from harness.core.files import atomic_write_text
    from harness.core.outputs import check_output_file
    from kb_builder.gold_draw import write_draw

    out = Path(out)
    record_file = record_path(out)
    check_output_file(out, {"questions file": questions}, force=force)
    check_output_file(record_file, {"questions file": questions}, force=force, option="the draw record")
    header, rows, record = draw(questions, n, seed, by, subset_name=out.name)
    atomic_write_text(out, render_subset(header, rows))
    write_draw(record_file, record)
    warnings = []
    if n < FEW_LABELS:
        warnings.append(f"{n} human labels are few: prediction-powered intervals rest on a normal approximation that "
                        f"needs about {FEW_LABELS} or more (the scorer warns too)")
    return Drawn(out, record_file, record, warnings)
