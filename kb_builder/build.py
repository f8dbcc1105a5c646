"""``grace kb build``: documents (or pre-split articles) -> a KB directory.

Rebuilding into an existing KB directory keeps the IDs of articles whose source
and heading path are unchanged and reports what was added, changed and removed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import GraceError
from kb_builder.curation import Replay, built_articles, replay
from kb_builder.curation_records import set_aside_torn_tail
from kb_builder.documents import discover, load_file
from kb_builder.ids import IdChanges, assign_ids
from kb_builder.kb_dir import KbDir
from kb_builder.kb_records import Article
from kb_builder.language import is_known
from kb_builder.loader import load_kb
from kb_builder.provenance import built, document_anchors
from kb_builder.splitting import DEFAULT_MAX_TOKENS, DEFAULT_MIN_TOKENS, Splitter
from kb_builder.store import KB, finish_articles, make_manifest, read_manifest, set_languages, write_kb
from kb_builder.topics import AskTopics, Segmentation, TopicRequest, TopicSplitter, parse_splitter


@dataclass
class BuildResult:
    kb: KB
    changes: IdChanges
    documents: int
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    splitter: str = "headings"
    # llm: the texts whose model answer could not be read, split by semantic instead ("source: breadcrumb")
    fallbacks: list[str] = field(default_factory=list)
    model_calls: dict | None = None  # llm: the splitter model's calls, cache hits, tokens and cost (set by the workflow)
    # the curation overlay re-applied (KB/curation.jsonl): the edits applied and those in conflict; None: no overlay
    curation: Replay | None = None


def articles_from_documents(source: Path, max_tokens: int, min_tokens: int, progress=None,
                            keep_short: bool = False, *, splitter: str = "headings",
                            answers: dict[str, Segmentation | None] | None = None,
                            record: list[TopicRequest] | None = None,
                            fallbacks: list[str] | None = None) -> tuple[list[Article], int, list[str]]:
    """``splitter``: ``headings``, or ``semantic``/``llm:...`` (a :class:`TopicSplitter` with the model's
    ``answers``, or collecting its questions in ``record``; texts split by semantic for want of an answer are
    added to ``fallbacks``)."""
    files = discover(source)
    if splitter == "headings":
        splitter_: Splitter = Splitter(max_tokens=max_tokens, min_tokens=min_tokens, keep_short=keep_short)
    else:
        splitter_ = TopicSplitter(max_tokens=max_tokens, min_tokens=min_tokens, keep_short=keep_short,
                                  answers=answers, record=record)
    articles: list[Article] = []
    skipped: list[str] = []
    single = source.is_file()
    for path, rel in files:
        try:
            doc = load_file(path, rel)
        except GraceError as exc:
            if single:
                raise
            skipped.append(str(exc))
            continue
        finally:
            if progress:
                progress()
        anchors = document_anchors(doc)
        for d in splitter_.split(doc):
            spans, headings = built(doc, d.held, anchors)
            art = Article(id="", title=d.title, text=d.text, source=rel, heading_path=d.path[1:], tokens=d.tokens,
                          spans=spans, headings=headings)
            if d.parts > 1:
                art.part = d.part  # type: ignore[attr-defined]
            articles.append(art)
    if not articles and not keep_short and not skipped:
        # every section was short enough to pass for a fragment: a KB of one short article is still a KB
        return articles_from_documents(source, max_tokens, min_tokens, None, keep_short=True, splitter=splitter,
                                       answers=answers, record=record, fallbacks=fallbacks)
    if fallbacks is not None and isinstance(splitter_, TopicSplitter):
        fallbacks.extend(splitter_.fallbacks)
    if not articles:
        detail = f" ({len(skipped)} file(s) unreadable: {skipped[0]})" if skipped else ""
        raise GraceError(f"{source}: no articles could be made: the documents hold no text{detail}")
    return articles, len(files), skipped


def build_kb(
    source: Path | None,
    out: Path,
    *,
    articles_file: Path | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    min_tokens: int = DEFAULT_MIN_TOKENS,
    embedder: str | None = None,
    language: str | None = None,
    progress=None,
    splitter: str | None = None,
    ask_topics: AskTopics | None = None,
) -> BuildResult:
    """``language``: the articles' ISO 639-1 code, or None (or ``auto``) to detect it, per article.

    ``splitter``: ``headings`` (a new KB's default; a rebuild keeps the KB's own), ``semantic`` or
    ``llm:PROVIDER:MODEL``, which needs ``ask_topics``: the function that asks the model (it calls through the
    run engine, a later layer, so the workflow hands it in: :func:`harness.workflows.kb.build_kb`).
    """
    from harness.core.outputs import check_output_folder
    from kb_builder.retrieval import canonical_embedder, default_embedder

    # before any source is parsed: a wrong --out is said at once, and a KB never lands on its own input
    folder = KbDir(out)
    check_output_folder(out, {"source": source, "articles file": articles_file}, [p.name for p in folder.files()])
    t0 = time.perf_counter()
    old: list[Article] | None = None
    next_id, retired = None, []
    if folder.articles.exists():
        set_aside_torn_tail(out)  # a curation action cut off mid-write never took effect: it never blocks a build
        prev = load_kb(out)
        # matched against the articles as last built (curation taken back), so curated articles keep their IDs
        old, next_id, retired = built_articles(out, prev.articles), prev.manifest.next_id, list(prev.manifest.retired_ids)
        # a rebuild keeps the KB's retriever unless one is named: its rankings do not change under it
        embedder = embedder or prev.manifest.embedder
    if embedder is not None:
        embedder = canonical_embedder(embedder)  # a wrong name is said before any source is parsed
    skipped: list[str] = []
    splitter = chosen_splitter(out, splitter)
    answers: dict[str, Segmentation | None] | None = None
    fallbacks: list[str] = []
    if splitter.startswith("llm:") and articles_file is None:
        if ask_topics is None:
            raise GraceError(f"--splitter {splitter}: asking a model needs the workflow's model calls; build with "
                             "`grace kb build` or harness.workflows.kb.build_kb (grace.build_kb)")
        if source is None:
            raise GraceError("give a SOURCE folder or file, or --articles FILE")
        answers = ask_topics(plan_topic_requests(source, max_tokens, min_tokens, splitter))
    if articles_file is not None:
        from kb_builder.imports import read_article_file

        articles = read_article_file(articles_file)
        finish_articles(articles)
        n_docs = 1
        old_ids = {a.id for a in old or []}
        changes = IdChanges(
            added=[a.id for a in articles if a.id not in old_ids],
            changed=[a.id for a in articles if a.id in old_ids and _hash(old, a.id) != a.content_hash],
            removed=sorted(old_ids - {a.id for a in articles}),
        )
        retired = sorted(set(retired) | set(changes.removed))
        clash = [a.id for a in articles if a.id in retired]
        if clash:
            raise GraceError(f"{articles_file}: article id(s) {', '.join(clash[:5])} were removed from this KB before; retired IDs are never reused")
        next_id = None
    else:
        if source is None:
            raise GraceError("give a SOURCE folder or file, or --articles FILE")
        articles, n_docs, skipped = articles_from_documents(source, max_tokens, min_tokens, progress,
                                                            splitter=splitter, answers=answers, fallbacks=fallbacks)
        finish_articles(articles)
        changes, next_id, retired = assign_ids(articles, old, next_id, retired)
    # the person's edits, re-applied where the text they saw is still there; the others listed as conflicts
    curation = replay(out, articles, retired, next_id)
    articles, retired, next_id = curation.articles, curation.retired, curation.next_id
    forced = None if (language or "auto").strip().lower() == "auto" else language.strip().lower()
    if forced is not None and not is_known(forced):
        raise GraceError(f"--language {language!r}: give a two-letter ISO 639-1 code (fr, de, el, zh...) or auto")
    kb_language, languages = set_languages(articles, forced)
    embedder = embedder or default_embedder(kb_language)  # none named and no KB yet: the language's default
    manifest = make_manifest(
        articles,
        embedder,
        language=kb_language,
        languages=languages,
        next_id=next_id,
        retired_ids=retired,
        sources=sorted({a.source for a in articles if a.source}),
        curation_seq=curation.seq,
        max_tokens=max_tokens if articles_file is None else None,
        # recorded when not the default (a headings build writes the manifest it always did), for rebuilds
        **({"splitter": splitter} if splitter != "headings" and articles_file is None else {}),
    )
    write_kb(out, articles, manifest)
    curation.save(out)
    if changes.removed and old:
        folder.append_retired([a for a in old if a.id in set(changes.removed)])
    kb = KB(path=out, articles=articles, manifest=manifest)
    if embedder != "bm25":
        kb.retriever()  # embeds what is new (or saves the bm25f index) now, so the first search is fast
    return BuildResult(kb=kb, changes=changes, documents=n_docs, skipped=skipped, seconds=time.perf_counter() - t0,
                       splitter=splitter, fallbacks=fallbacks,
                       curation=curation if curation.applied or curation.conflicts else None)


def chosen_splitter(out: Path, splitter: str | None) -> str:
    """The splitter named, else the KB's own (a rebuild keeps it, so its articles and IDs stay put), else headings."""
    if splitter is None:
        try:
            manifest = read_manifest(out)
        except (GraceError, OSError):
            manifest = None  # an unreadable manifest is reported by the build itself
        splitter = manifest.splitter if manifest is not None else None
    return parse_splitter(splitter)


def plan_topic_requests(source: Path, max_tokens: int = DEFAULT_MAX_TOKENS, min_tokens: int = DEFAULT_MIN_TOKENS,
                        splitter: str = "semantic") -> list[TopicRequest]:
    """The texts ``--splitter llm:`` asks its model to cut into topics, each once (a dry run counts these)."""
    record: list[TopicRequest] = []
    articles_from_documents(source, max_tokens, min_tokens, splitter=splitter, record=record)
    return list({r.key: r for r in record}.values())


def _hash(old: list[Article] | None, aid: str) -> str | None:
    for a in old or []:
        if a.id == aid:
            return a.content_hash
    return None
