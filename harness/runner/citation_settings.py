"""How each model's citations are read and scored (issue 39): from the TOML, ``grace run --citations`` or
``grace import-logs``' flags, checked against the KB before anything runs, recorded in run.json
(``models[].citations``), and read back from there by every command that scores the folder.

The settings are scoring-only: they live on the :class:`~harness.providers.base.ModelSpec` beside its options, never
in them, so changing a mapping re-scores a run and never re-asks it. A shipped system (``python:``, ``http:``,
imported logs) cites its own documents, by markers and source lists, often several per answer, so it reads
references and is scored several citations per answer unless told otherwise; a GRACE prompt model has no settings
and is read as ever. The mapping file is read once here, where the KB is at hand, so a bad row is an error with its
file and line before any call; its absolute path and hash go into run.json, and a later re-score that finds the file
changed says so and scores with the file as it is now.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.errors import GraceError
from harness.run_folder.run_records import CitationSettings

if TYPE_CHECKING:
    from harness.run_folder.run_records import RunInfo

log = logging.getLogger("grace")

# providers whose answers are a team's own system's: they cite their own references, several per answer
SYSTEM_PROVIDERS = frozenset({"python", "http"})
SCORINGS = ("single", "multi")
READS = ("ids", "references")
MAP_CHANGED = "citation map changed"  # the warning's name: the file differs from the one run.json recorded


def system_default() -> CitationSettings:
    """What a team's system is read with unless its settings say otherwise."""
    return CitationSettings(scoring="multi", reads="references")


def default_for(provider: str) -> CitationSettings | None:
    """A ``python:`` or ``http:`` system's default settings; None (GRACE's reading) for a prompt model."""
    return system_default() if provider in SYSTEM_PROVIDERS else None


def settings(scoring: str = "multi", reads: str = "references", map_file: str | Path | None = None,
             rewrite: Iterable[str] | Mapping[str, str] = (), origin: str = "--rewrite") -> CitationSettings:
    """Settings from flags (``grace import-logs``), each value checked; the rewrite rules by
    :func:`kb_builder.references.read_rewrites` (a duplicate or conflicting prefix is an error)."""
    from kb_builder.references import read_rewrites

    if scoring not in SCORINGS:
        raise GraceError(f"--citations must be one of {', '.join(SCORINGS)}, got {scoring!r}")
    if reads not in READS:
        raise GraceError(f"--reads must be one of {', '.join(READS)}, got {reads!r}")
    rules = read_rewrites(rewrite.items() if isinstance(rewrite, Mapping) else rewrite, origin)
    return CitationSettings(scoring=scoring, reads=reads,
                            map=str(Path(map_file).resolve()) if map_file is not None else None,
                            rewrite={r.prefix: r.replacement for r in rules})


def apply_option(specs: list[Any], values: Iterable[str]) -> None:
    """``grace run --citations MODEL=SCORING[:READS]`` (repeatable): over the model's TOML settings or default, so
    a GRACE prompt model may opt in (``gpt=multi``) and a system may be read as GRACE reads (``bot=single:ids``)."""
    by_name = {s.name: s for s in specs}
    for value in values:
        name, eq, setting = value.rpartition("=")
        scoring, _, reads = setting.partition(":")
        if not eq or not name:
            raise GraceError(f"--citations {value!r}: write it as MODEL=SCORING[:READS], e.g. mybot=multi or "
                             "gpt=single:ids")
        if name not in by_name:
            raise GraceError(f"--citations {value!r}: no model named {name!r} in this run (models: "
                             f"{', '.join(by_name)})")
        if scoring not in SCORINGS or (reads and reads not in READS):
            raise GraceError(f"--citations {value!r}: SCORING is one of {', '.join(SCORINGS)}, READS one of "
                             f"{', '.join(READS)}")
        spec = by_name[name]
        base = spec.citations or default_for(spec.provider) or CitationSettings()
        spec.citations = base.model_copy(update={"scoring": scoring, **({"reads": reads} if reads else {})})


def check_against_kb(citations: CitationSettings | None, kb: Any, who: str) -> CitationSettings | None:
    """Read the settings' mapping file against the KB (an unknown article ID, a duplicate or conflicting row, a
    byte that is not UTF-8, a file too large: an error naming the file and line) and record its hash."""
    from harness.core.hashing import file_hash
    from kb_builder.references import read_mapping

    if citations is None or citations.map is None:
        return citations
    try:
        read_mapping(citations.map, kb.by_id)
    except GraceError as exc:
        raise GraceError(f"{who}: citation map: {exc}") from None
    return citations.model_copy(update={"map_hash": file_hash(citations.map)})


def for_scoring(info: RunInfo | None) -> dict[str, CitationSettings]:
    """Each model's settings as run.json recorded them, for ``score_responses(citations=...)``; a mapping file that
    changed since is a warning (``citation map changed``) and scored as it is now; one that is gone, an error."""
    from harness.core.hashing import file_hash

    out: dict[str, CitationSettings] = {}
    for entry in info.models if info is not None else []:
        c = entry.citations
        if c is None:
            continue
        if c.map is not None:
            path = Path(c.map)
            if not path.is_file():
                raise GraceError(f"{path}: the citation map of model {entry.name!r} (run.json) is gone; put it back, "
                                 "or run again with the model's new map to record it")
            now = file_hash(path)
            if c.map_hash is not None and now != c.map_hash:
                log.warning(f"{MAP_CHANGED}: {path} (model {entry.name!r}) has changed since run.json recorded it "
                            f"(hash {c.map_hash}, now {now}); scoring with the file as it is now. Run the same "
                            "'grace run' again to record it (nothing is asked again)")
                c = c.model_copy(update={"map_hash": now})
        out[entry.name] = c
    return out
