"""The retrieved-articles file: one JSON line per question with its ranked article IDs.

``grace kb search --queries Q --out FILE`` writes it from grace's retriever, and
``grace run --retrieved FILE`` reads it, from grace or from a team's production
retriever, so a leaderboard can measure models inside the team's real system::

    {"question_id": "q1", "retrieved": [{"id": "17", "score": 12.3}, {"id": "4", "score": 9.1}]}
    {"question_id": "q2", "retrieved": ["8", "17", "3"]}

Either form of ``retrieved`` is accepted: objects with ``id`` (and an optional
``score``), or bare IDs in rank order. Every ID must name an article of the KB:
a file made against another KB version would silently show models the wrong
articles, so an unknown ID stops the run with its line. A production retriever
ranks its own index (chunk IDs, paths, URLs): with an :class:`IdMapping`
(``grace run --retrieved-map``) each ID that is not a KB article is mapped onto
one, and one that maps to none is counted and named, never read as an article.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text

Ranked = list[tuple[str, float | None]]  # (article ID, score or None), best first


def write_retrieved(path: Path, rows: Iterable[tuple[str, Iterable[tuple[str, float]]]]) -> int:
    """Write ``(question_id, [(id, score), ...])`` rows; returns how many."""
    lines = [json.dumps({"question_id": qid, "retrieved": [{"id": i, "score": round(s, 6)} for i, s in hits]},
                        ensure_ascii=False) for qid, hits in rows]
    atomic_write_text(Path(path), "".join(line + "\n" for line in lines))
    return len(lines)


def _ranked(value: object, path: Path, n: int) -> Ranked:
    if not isinstance(value, list):
        raise GraceError(f"{where(path, n)}: 'retrieved' must be a list of article IDs (best first) or of "
                         '{"id": ..., "score": ...} objects')
    out: Ranked = []
    for item in value:
        score = None
        if isinstance(item, dict):
            score = item.get("score")
            item = item.get("id")
            if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
                raise GraceError(f"{where(path, n)}: a score must be a number, got {score!r}")
        if isinstance(item, bool) or not isinstance(item, str | int) or not str(item).strip():
            raise GraceError(f"{where(path, n)}: each retrieved entry needs an article ID (a string), got {item!r}")
        out.append((str(item).strip(), None if score is None else float(score)))
    return out


@dataclass
class IdMapping:
    """A rankings file's own document IDs onto KB articles: ``resolve`` gives the article(s) an ID names (a chunk
    whose text is in two articles: both, at its rank), or none; what was mapped and what was not is counted here as
    the file is read (an unmapped ID leaves the ranking, named)."""

    resolve: Callable[[str], tuple[str, ...]]
    mapped: int = 0  # entries that were not KB IDs and mapped onto an article
    unmapped: Counter[str] = field(default_factory=Counter)  # ID -> entries that mapped onto no article

    def rank(self, ranked: Ranked, known_ids: Mapping[str, object] | set[str]) -> Ranked:
        """The ranking in KB articles: each ID mapped, an article named twice (two of its chunks) kept at its best
        rank, an unmapped ID counted and left out."""
        out: Ranked = []
        seen: set[str] = set()
        for i, score in ranked:
            articles = (i,) if i in known_ids else self.resolve(i)
            if not articles:
                self.unmapped[i] += 1
                continue
            if i not in known_ids:
                self.mapped += 1
            for article in articles:
                if article not in seen:
                    seen.add(article)
                    out.append((article, score))
        return out


def read_retrieved(path: str | Path, known_ids: Mapping[str, object] | set[str],
                   mapping: IdMapping | None = None) -> dict[str, Ranked]:
    """question_id -> ranked article IDs; every ID checked against the KB (or mapped onto it by ``mapping``), every
    line against the format."""
    path = Path(path)
    if not path.is_file():
        raise GraceError(f"{path}: retrieved-articles file not found (write one with `grace kb search --queries "
                         "GOLD --out FILE`, or from your own retriever: one JSON line per question)")
    out: dict[str, Ranked] = {}
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise GraceError(f"{where(path, n)}: not valid JSON; each line must be one object like "
                                 '{"question_id": "q1", "retrieved": ["17", "4", "8"]}') from None
            if not isinstance(row, dict):
                raise GraceError(f"{where(path, n)}: expected an object with question_id and retrieved")
            qid = row.get("question_id")
            if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
                raise GraceError(f"{where(path, n)}: 'question_id' must be a non-empty string, got {qid!r}")
            qid = str(qid).strip()
            if qid in out:
                raise GraceError(f"{where(path, n)}: question {qid!r} is listed twice; keep one line per question")
            if "retrieved" not in row:
                raise GraceError(f"{where(path, n)}: missing 'retrieved' (the ranked article IDs)")
            ranked = _ranked(row["retrieved"], path, n)
            if mapping is not None:
                out[qid] = mapping.rank(ranked, known_ids)
                continue
            unknown = [i for i, _ in ranked if i not in known_ids]
            if unknown:
                raise GraceError(f"{where(path, n)}: article ID(s) {', '.join(map(repr, unknown[:5]))} of question "
                                 f"{qid!r} are not in the KB; the file was made against another KB, or ranks your "
                                 "retriever's own documents (map them onto the KB's articles with --retrieved-map "
                                 "FILE, a CSV of their_id,article_id rows, or rebuild the KB)")
            out[qid] = ranked
    if not out:
        raise GraceError(f"{path}: no questions in the file")
    return out


class FileRetriever:
    """A file of rankings as a retriever, for ``grace kb eval --retrieved``: questions are looked up by text."""

    def __init__(self, name: str, ranked: dict[str, Ranked], questions: Iterable[tuple[str, str]]):
        self.name = name
        self._by_text = {text: ranked[qid] for qid, text in questions if qid in ranked}

    def search_many(self, queries: list[str], k: int) -> list[list[Any]]:
        from kb_builder.retrieval import Hit

        return [[Hit(i, 1.0 / r if s is None else s) for r, (i, s) in enumerate(self._by_text.get(q, [])[:k], 1)]
                for q in queries]
