"""``SUBSET.draw.json``: the record of a random draw of questions for humans to label (``grace annotations sample``).

A prediction-powered leaderboard (``grace score --machine-gold``) is valid only when the human-labelled questions
are a random draw from the questions scored, made before anyone looked at the labels: a subset hand-picked for
being easy, or the questions the machine found hard, biases the correction. The draw writes this record beside
the subset it wrote, and the scorer looks for it beside the human gold file: it checks the labelled questions are
the drawn ones and, for a stratified draw, weighs each stratum by its share of the questions.

This module is the format's one owner (its model, reader and writer), in ``kb_builder`` beside the gold format so
that both the sampler (``annotations``) and the scorer (``harness.scoring``) can read it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.core.errors import GraceError
from harness.core.files import atomic_write_text

DRAW_SCHEMA_VERSION = 1
DRAW_SUFFIX = ".draw.json"


class Stratum(BaseModel):
    """One stratum of the draw (the whole population for a uniform draw)."""

    model_config = ConfigDict(extra="forbid")

    name: str  # the category value (stratified draw), or "(all)" for a uniform draw
    population: int  # questions of this stratum in the source file
    drawn: int  # of those, questions drawn for humans to label
    weight: float  # the stratum's share of the source's questions: what its estimate is weighed by
    question_ids: list[str]  # every question ID of the stratum in the source file, in file order


class DrawRecord(BaseModel):
    """The whole of ``SUBSET.draw.json``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = DRAW_SCHEMA_VERSION  # version of this file's format
    created_at: str  # when the draw was made: ISO 8601, UTC, to the second
    grace_version: str  # the grace that drew it
    source: str  # the questions file drawn from, as given
    source_hash: str  # 16 hex digits of the SHA-256 of the source file's bytes
    subset: str  # the subset CSV written beside this record (its file name)
    n: int  # questions drawn
    seed: int  # the random seed: the same source, n, seed and strata draw the same questions
    by: str | None  # the column stratified by (--by), or null for a uniform draw
    strata: list[Stratum]  # the strata, in order of first appearance in the source (one for a uniform draw)
    drawn: list[str]  # the drawn question IDs, in the source file's order

    @property
    def population(self) -> list[str]:
        return [q for s in self.strata for q in s.question_ids]


def draw_path(subset: str | Path) -> Path:
    """``SUBSET.csv`` -> ``SUBSET.draw.json``, beside it."""
    subset = Path(subset)
    return subset.with_name(subset.stem + DRAW_SUFFIX)


def write_draw(path: Path, record: DrawRecord) -> None:
    atomic_write_text(path, record.model_dump_json(indent=1) + "\n")


def read_draw(path: str | Path) -> DrawRecord:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GraceError(f"{path}: not a readable draw record ({exc}); draw again with 'grace annotations sample'") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or version > DRAW_SCHEMA_VERSION:
        raise GraceError(f"{path}: draw record schema_version {version!r} is not one this grace reads "
                         f"(<= {DRAW_SCHEMA_VERSION}); upgrade grace or draw again")
    try:
        return DrawRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GraceError(f"{path}: {where}: {first['msg']}; draw again with 'grace annotations sample'") from None


def find_draw(labelled: set[str], folders: list[Path]) -> tuple[Path, DrawRecord] | None:
    """The draw record in ``folders`` whose drawn questions overlap ``labelled`` most (None: no record shares one).

    The humans' file is usually another file than the subset (``grace annotate --questions SUBSET.csv --out
    HUMAN.csv``), so the record is found by its content, not its name; an unreadable record is skipped."""
    best: tuple[int, Path, DrawRecord] | None = None
    for folder in dict.fromkeys(folders):
        for path in sorted(folder.glob("*" + DRAW_SUFFIX)) if folder.is_dir() else []:
            try:
                record = read_draw(path)
            except GraceError:
                continue
            shared = len(labelled & set(record.drawn))
            if shared and (best is None or shared > best[0]):
                best = (shared, path, record)
    return None if best is None else (best[1], best[2])
