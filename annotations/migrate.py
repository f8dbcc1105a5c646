"""``grace annotations migrate``: keep a gold set valid after its KB was curated.

A merge retires one article into another, so a label citing the retired ID means
the survivor: it is rewritten, and the question keeps counting. A split retires an
article into two new ones, and which part answers a question is a person's call:
the label is taken off (the row becomes ``unlabelled``, left out of the gold set
until relabelled) and a suggestion naming both parts is written for
``grace annotate --suggestions``, so relabelling is one look per question.
Nothing is guessed: a label citing an ID that is simply gone is left as it is
and listed, as ``grace annotations validate`` lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from annotations.labels import LabelRecord, read_labels, render_csv
from annotations.suggestions import Suggestion, label_of, write_suggestions
from harness.core.files import atomic_write_text
from kb_builder.curation_records import Retirement, where_ids_went
from kb_builder.store import KB


@dataclass
class MovedLabel:
    question_id: str
    before: list[str]  # the citations as they were
    after: list[str]  # the citations now (merged IDs mapped to the survivor)


@dataclass
class Relabel:
    question_id: str
    before: list[str]
    split: dict[str, list[str]]  # split ID -> its parts, suggested together


@dataclass
class GoldMigration:
    """What ``migrate`` did: labels moved to a merge's survivor, labels taken off for relabelling (split), and the
    citations it could not place (an ID not in the KB that curation did not retire)."""

    gold: Path
    kb: Path
    out: Path
    suggestions: Path | None = None  # the relabelling suggestions (None: nothing to relabel)
    questions: int = 0
    moved: list[MovedLabel] = field(default_factory=list)
    relabel: list[Relabel] = field(default_factory=list)
    unknown: dict[str, list[str]] = field(default_factory=dict)  # question_id -> IDs neither live nor curated away

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.relabel)


def suggestions_path(out: Path) -> Path:
    """Where the relabelling suggestions go by default: beside the new gold file."""
    return out.with_name(out.stem + ".relabel.csv")


def migrate_gold(gold: Path, kb: KB, out: Path, suggestions: Path | None = None) -> GoldMigration:
    """Rewrite the gold CSV ``gold`` for the curated ``kb`` into ``out`` (callers check ``out`` first)."""
    records, extra = read_labels(gold)
    live = set(kb.by_id)
    went = where_ids_went(kb.path, live)
    result = GoldMigration(gold=gold, kb=kb.path, out=out, questions=len(records))
    wanted: list[Suggestion] = []
    for rec in records:
        if rec.must_refuse or not rec.expected_citations or rec.status not in ("labelled", "draft"):
            continue
        cites = list(rec.expected_citations)
        gone = [c for c in cites if c not in live]
        if not gone:
            continue
        unknown = [c for c in gone if c not in went]
        if unknown:
            result.unknown[rec.question_id] = unknown
        split = {c: went[c].into for c in gone if c in went and (len(went[c].into) != 1 or went[c].how == "split")}
        if split:
            result.relabel.append(Relabel(rec.question_id, cites, split))
            wanted.append(_suggestion(rec, cites, went, live, kb))
            _take_off(rec, cites, went)
            continue
        mapped = list(dict.fromkeys(went[c].into[0] if c in went else c for c in cites))
        if mapped != cites:
            result.moved.append(MovedLabel(rec.question_id, cites, mapped))
            rec.expected_citations = mapped
            if rec.expected_titles:
                rec.expected_titles = [kb.by_id[c].title if c in kb.by_id else "" for c in mapped]
            rec.notes = _note(rec.notes, "; ".join(f"{c} merged into {went[c].into[0]} (curation action "
                                                   f"{went[c].seq})" for c in cites if c in went))
    atomic_write_text(out, render_csv(records, extra))
    if wanted:
        result.suggestions = write_suggestions(suggestions or suggestions_path(out), wanted)
    return result


def _suggestion(rec: LabelRecord, cites: list[str], went: dict[str, Retirement], live: set[str], kb: KB) -> Suggestion:
    """Both (all) parts of each split article, with the rest of the label: the person keeps the part(s) that
    answer."""
    parts = list(dict.fromkeys(p for c in cites for p in (went[c].into if c in went else [c]) if p in live))
    said = "; ".join(f"{c} ('{went[c].title}') was split into "
                     + " and ".join(f"{p} ('{kb.by_id[p].title}')" if p in kb.by_id else p for p in went[c].into)
                     + f" (curation action {went[c].seq}, by {went[c].author})"
                     for c in cites if c in went and went[c].how == "split")
    return Suggestion(question_id=rec.question_id, question=rec.question, suggested=label_of(parts, False),
                      source="migrate", votes=" ".join(f"{p}:1" for p in parts), voters=1, flag="weak",
                      reason=f"was labelled {';'.join(cites)}; {said}: keep only the part(s) that answer it")


def _take_off(rec: LabelRecord, cites: list[str], went: dict[str, Retirement]) -> None:
    rec.status, rec.expected_citations, rec.must_refuse = "unlabelled", [], False
    rec.expected_titles, rec.provenance = [], ""
    rec.notes = _note(rec.notes, f"relabel: was {';'.join(cites)}; "
                      + "; ".join(f"{c} split into {' and '.join(went[c].into)}" for c in cites if c in went))


def _note(notes: str, text: str) -> str:
    return f"{notes} [{text}]".strip() if notes else f"[{text}]"
