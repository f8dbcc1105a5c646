"""Reading and writing a KB directory: the one reader and writer of its articles and manifest.

``KB_DIR/articles.jsonl`` is the contract; ``manifest.json``, ``embeddings/`` and
``index/`` (the saved bm25f index) are derived from it. A folder holding only a hand-written ``articles.jsonl`` is a
valid KB: :func:`load_kb` fills in what is missing on first use. The file names and paths are
:class:`kb_builder.kb_dir.KbDir`'s.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.core.clock import now
from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from harness.core.jsonl import iter_jsonl
from harness.core.version import __version__
from kb_builder.kb_dir import KbDir
from kb_builder.kb_records import KB_FORMAT_VERSION, Article, Manifest, kb_content_hash
from kb_builder.tokens import count_tokens


@dataclass
class KB:
    path: Path
    articles: list[Article]
    manifest: Manifest
    by_id: dict[str, Article] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {a.id: a for a in self.articles}

    @property
    def kb_hash(self) -> str:
        return self.manifest.kb_hash

    def check_cited(self, questions: Iterable[Any], path: str | Path) -> None:
        """Every gold citation names an article of this KB, else a ``GraceError`` naming the rows.

        Run, eval, audit and the annotation app all check this before any work:
        a label citing a retired or mistyped ID would otherwise count as every
        model's error, or (in an audit) be advised as a label to add.
        """
        bad = [(q, [c for c in q.expected_citations if c not in self.by_id]) for q in questions]
        bad = [(q, ids) for q, ids in bad if ids]
        if not bad:
            return
        def row(q: Any, ids: list[str]) -> str:
            return f"{where(path, getattr(q, 'line', None) or None)}: question {q.question_id!r} cites article(s) {', '.join(ids)}"

        also = "".join(f"; {row(q, ids)}" for q, ids in bad[1:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
        from kb_builder.curation_records import curated_away

        curated = curated_away(self.path, {c for _, ids in bad for c in ids}, set(self.by_id))
        if curated:  # merged or split by hand: the gold set has a command that follows
            raise GraceError(f"{row(*bad[0])} not in the KB {self.path}: {curated}{also}; run 'grace annotations "
                             f"migrate {path} --kb {self.path} --out NEW.csv' and use NEW.csv")
        raise GraceError(f"{row(*bad[0])} not in the KB {self.path} ({len(self.articles)} articles){also}; fix the "
                         "row(s), or use the KB they were labelled on ('grace annotations validate' names retired IDs)")

    def retriever(self, embedder: str | None = None):
        """The KB's retriever (its manifest's embedder unless one is named)."""
        from kb_builder.retrieval import make_retriever

        return make_retriever(self, embedder or self.manifest.embedder)


def kb_files(kb_dir: str | Path) -> list[Path]:
    """The files of a KB folder (or the ``articles.jsonl`` named): inputs no command's output may replace."""
    return KbDir.of(kb_dir).files()


def read_articles(path: Path) -> list[Article]:
    if not path.exists():
        raise GraceError(f"{path}: not found; a KB folder needs an {path.name} (run 'grace kb build' first)")
    articles: list[Article] = []
    seen: dict[str, int] = {}
    for n, data in iter_jsonl(path):
        if "id" in data and isinstance(data["id"], int | float):
            data["id"] = str(data["id"])
        try:
            art = Article.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field_name = ".".join(str(p) for p in first["loc"]) or "?"
            raise GraceError(f"{where(path, n)}: field '{field_name}': {first['msg'].removeprefix('Value error, ')}") from None
        art.id = art.id.strip()
        if not art.id:
            raise GraceError(f"{where(path, n)}: empty article id")
        if art.id in seen:
            raise GraceError(f"{where(path, n)}: duplicate article id {art.id!r} (first on line {seen[art.id]})")
        seen[art.id] = n
        articles.append(art)
    if not articles:
        raise GraceError(f"{path}: no articles in the file")
    return articles


def token_stats(articles: list[Article]) -> dict[str, float]:
    counts = sorted(a.tokens or 0 for a in articles)
    if not counts:
        return {}
    # inclusive: the default (exclusive) method extrapolates past the data for small KBs (p95 > max)
    q = statistics.quantiles(counts, n=20, method="inclusive") if len(counts) > 1 else [counts[0]] * 19
    return {
        "min": counts[0],
        "p5": round(q[0], 1),
        "median": statistics.median(counts),
        "mean": round(statistics.fmean(counts), 1),
        "p95": round(q[18], 1),
        "max": counts[-1],
        "total": sum(counts),
    }


def finish_articles(articles: list[Article]) -> None:
    """Fill the derived per-article fields (tokens, content hash) in place."""
    for a in articles:
        if a.tokens is None:
            a.tokens = count_tokens(a.title + "\n" + a.text)
        a.content_hash = a.compute_hash()


def set_languages(articles: list[Article], forced: str | None = None) -> tuple[str, dict[str, int]]:
    """Detect (or, with ``forced``, set) the KB's language and each article's; returns (language, count per language).

    An article keeps a language its file already names; the others are detected
    (:func:`kb_builder.language.assign`). Only a KB that mixes languages records
    one on each article: a one-language KB says it once, in the manifest.
    """
    from kb_builder import language as lang

    if forced:
        main, langs, counts = lang.assign([""] * len(articles), forced)
    else:
        given = [a.language for a in articles]
        todo = [i for i, g in enumerate(given) if not g]
        _, found, _ = lang.assign([articles[i].title + "\n" + articles[i].text for i in todo])
        langs = list(given)
        for i, la in zip(todo, found, strict=True):
            langs[i] = la
        counts = dict(Counter(langs).most_common())
        main = next(iter(counts))
    mixed = len(counts) > 1
    for a, la in zip(articles, langs, strict=True):
        a.language = la if mixed else None
    return main, counts


def make_manifest(articles: list[Article], embedder: str, **extra) -> Manifest:
    return Manifest(
        format_version=KB_FORMAT_VERSION,
        kb_hash=kb_content_hash(articles),
        embedder=embedder,
        article_count=len(articles),
        token_stats=token_stats(articles),
        built_with=f"grace {__version__}",
        built_at=now(),
        **extra,
    )


def write_kb(kb_dir: Path, articles: list[Article], manifest: Manifest) -> None:
    lines = "".join(json.dumps(a.to_line(), ensure_ascii=False) + "\n" for a in articles)
    atomic_write_text(KbDir(kb_dir).articles, lines)
    write_manifest(kb_dir, manifest)


def write_manifest(kb_dir: Path, manifest: Manifest) -> None:
    """The manifest alone (``grace kb index`` naming another embedder): the articles are unchanged."""
    atomic_write_text(KbDir(kb_dir).manifest, manifest.model_dump_json(indent=2) + "\n")


def read_manifest(kb_dir: str | Path) -> Manifest | None:
    """The KB folder's manifest as written (none yet: None)."""
    mpath = KbDir(kb_dir).manifest
    if not mpath.exists():
        return None
    try:
        manifest = Manifest.model_validate_json(mpath.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise GraceError(f"{mpath}: not a grace manifest ({exc.errors()[0]['msg']}); delete it to rebuild") from None
    if manifest.format_version > KB_FORMAT_VERSION:
        raise GraceError(
            f"{mpath}: KB format {manifest.format_version} is newer than this grace reads "
            f"({KB_FORMAT_VERSION}); upgrade grace"
        )
    return manifest


def read_kb(kb_dir: str | Path, *, write_missing: bool = True) -> KB:
    """The KB folder's files as they are (:func:`kb_builder.loader.load_kb` also applies curation stopped
    half-way)."""
    path = Path(kb_dir)
    if path.is_file():
        folder = KbDir.of(path)
        if folder.articles != path:
            raise GraceError(f"{path} is a file, not a KB folder (a KB folder holds {folder.articles.name}; build one "
                             "with grace kb build)")
        path = folder.path
    if not path.exists():
        raise GraceError(f"{path}: KB folder not found")
    folder = KbDir(path)
    articles = read_articles(folder.articles)
    finish_articles(articles)
    manifest = read_manifest(path)
    current = kb_content_hash(articles)
    if manifest is None or manifest.kb_hash != current or manifest.article_count != len(articles):
        # hand-written or hand-edited articles.jsonl: derive a fresh manifest, keep the embedder choice
        from kb_builder.retrieval import default_embedder

        old = manifest
        language, languages = set_languages(articles)
        manifest = make_manifest(articles, old.embedder if old else default_embedder(language), language=language,
                                 languages=languages)
        if old is not None:
            manifest.next_id, manifest.retired_ids, manifest.sources = old.next_id, old.retired_ids, old.sources
            manifest.curation_seq = old.curation_seq
        if write_missing:
            try:
                write_manifest(path, manifest)
            except OSError:
                pass  # a read-only KB is still usable; the manifest is derived data
    elif len(manifest.languages) > 1 and any(a.language is None for a in articles):
        set_languages(articles)  # a hand-written mixed KB: each article's language, detected again in memory
    return KB(path=path, articles=articles, manifest=manifest)
