"""The KB workflows of ``grace kb``: build, index, search, lint and evaluate retrieval, one call each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

if TYPE_CHECKING:
    from rich.console import Console

    from harness.runner.calls import Estimate
    from harness.workflows.calls import ModelCalls
    from kb_builder.build import BuildResult
    from kb_builder.lint import LintReport
    from kb_builder.references import Resolution
    from kb_builder.retrieval import Hit
    from kb_builder.retrieval.evaluate import RetrievalComparison
    from kb_builder.store import KB

__all__ = ["build_kb", "eval_retrieval", "index_kb", "lint_kb", "load_kb", "resolve_references", "search"]


@overload
def build_kb(source: str | Path | None, out: str | Path, *, splitter: str | None = None,
             calls: ModelCalls | None = None, dry_run: Literal[False] = False, console: Console | None = None,
             articles_file: Path | None = None, max_tokens: int = ..., min_tokens: int = ...,
             embedder: str | None = None, language: str | None = None,
             progress: Callable[..., Any] | None = None) -> BuildResult: ...
@overload
def build_kb(source: str | Path | None, out: str | Path, *, splitter: str | None = None,
             calls: ModelCalls | None = None, dry_run: Literal[True], console: Console | None = None,
             articles_file: Path | None = None, max_tokens: int = ..., min_tokens: int = ...,
             embedder: str | None = None, language: str | None = None,
             progress: Callable[..., Any] | None = None) -> Estimate: ...
@overload
def build_kb(source: str | Path | None, out: str | Path, *, splitter: str | None = None,
             calls: ModelCalls | None = None, dry_run: bool = False, console: Console | None = None,
             articles_file: Path | None = None, max_tokens: int = ..., min_tokens: int = ...,
             embedder: str | None = None, language: str | None = None,
             progress: Callable[..., Any] | None = None) -> BuildResult | Estimate: ...
def build_kb(source: str | Path | None, out: str | Path, *, splitter: str | None = None,
             calls: ModelCalls | None = None, dry_run: bool = False, console: Console | None = None,
             **options: Any) -> BuildResult | Estimate:
    """Split documents into self-contained articles and write a KB folder (rebuilding into one keeps its IDs).

    ``splitter``: ``headings`` (a new KB's default; a rebuild keeps the KB's own), ``semantic`` (offline: topic
    boundaries from the text) or ``llm:PROVIDER:MODEL`` (a model finds them and titles the parts, its calls made
    as ``calls``, a :class:`~harness.workflows.calls.ModelCalls`, with a progress bar on ``console``); with
    ``dry_run`` the model's calls, tokens and cost are estimated and returned (an ``Estimate``), nothing written.
    ``.fallbacks`` lists the texts split by ``semantic`` because the model's answer could not be read, and
    ``.model_calls`` its calls and cost.

    ``options``: ``articles_file`` (pre-split articles instead of documents), ``max_tokens``, ``min_tokens``,
    ``embedder``, ``language`` (ISO 639-1, or None to detect it per article), ``progress`` (called once per document). Returns a ``BuildResult``: ``.kb`` (the loaded KB),
    ``.changes`` (IDs added, changed, removed), ``.documents``, ``.skipped``, ``.curation`` (the KB's curation
    re-applied: ``.applied`` and ``.conflicts``; None when it has none).
    """
    from contextlib import nullcontext

    from kb_builder.build import build_kb as _build
    from kb_builder.kb_dir import KbDir

    # one writer per KB: a rebuild waits for no curation app, it is refused while one is open
    asker = _topic_asker(source, out, splitter, calls, dry_run, console, options)
    if dry_run:
        estimate: Estimate = asker
        return estimate
    folder = KbDir(out)
    with folder.lock() if folder.has_articles() else nullcontext():
        result: BuildResult = _build(Path(source) if source is not None else None, Path(out), splitter=splitter,
                                     ask_topics=asker, **options)
    if asker is not None:
        result.model_calls = asker.stats.as_dict()
    return result


class _TopicAsker:
    """``--splitter llm:``: asks the model about every planned text at once, through the engine."""

    def __init__(self, model: Any, settings: Any, console: Any) -> None:
        from harness.runner.calls import PromptStats

        self.model, self.settings, self.console, self.stats = model, settings, console, PromptStats()

    def __call__(self, requests: list[Any]) -> dict[str, Any]:
        from harness.core.errors import GraceError
        from harness.runner.calls import progress

        with progress(self.settings, self.console) as settings:
            answers: dict[str, Any] = self.model.ask(requests, settings, self.stats)
        if self.stats.aborted:
            raise GraceError(f"the topic splitter was stopped: {self.stats.aborted[0]}; nothing was written")
        if requests and self.stats.errors >= len(requests):
            raise GraceError(f"the topic splitter {self.model.spec.name} answered none of {len(requests)} text(s) "
                             f"({self.stats.errors} call(s) failed); nothing was written. Run the same command again "
                             "to retry (answers given are cached), or use --splitter semantic")
        return answers


def _topic_asker(source: Any, out: str | Path, splitter: str | None, calls: Any, dry_run: bool, console: Any,
                 options: dict[str, Any]) -> Any:
    """The model caller of an ``llm:`` build (None for the offline splitters); a dry run's estimate instead."""
    from harness.core.errors import GraceError
    from harness.workflows.calls import ModelCalls
    from kb_builder.build import chosen_splitter, plan_topic_requests
    from kb_builder.splitting import DEFAULT_MAX_TOKENS, DEFAULT_MIN_TOKENS

    chosen = chosen_splitter(Path(out), splitter)
    if not chosen.startswith("llm:") or options.get("articles_file") is not None:
        if dry_run:
            raise GraceError(f"--dry-run estimates the model calls of --splitter llm:PROVIDER:MODEL; a {chosen} "
                             "build calls no model: run it without --dry-run")
        return None
    from harness.runner.topic_split import make_topic_model

    calls = calls or ModelCalls()
    model = make_topic_model(chosen, options=calls.options, prices=calls.prices, ready=not dry_run)
    settings = calls.settings(redactor=calls.redactor(console))
    if not dry_run:
        return _TopicAsker(model, settings, console)
    if source is None:
        raise GraceError("give a SOURCE folder or file to estimate")
    requests = plan_topic_requests(Path(source), options.get("max_tokens", DEFAULT_MAX_TOKENS),
                                   options.get("min_tokens", DEFAULT_MIN_TOKENS), chosen)
    return model.estimate(requests, settings)


def index_kb(kb: str | Path, embedder: str | None = None) -> tuple[KB, int | None]:
    """Write a missing manifest and index (embeddings, the bm25f index) for a KB folder, with ``embedder`` if
    named; returns ``(KB, articles newly embedded)``."""
    from kb_builder.retrieval import canonical_embedder
    from kb_builder.store import write_manifest

    kb_obj = load_kb(kb)
    if embedder:
        kb_obj.manifest.embedder = canonical_embedder(embedder)
        write_manifest(kb_obj.path, kb_obj.manifest)
    retriever = kb_obj.retriever()
    return kb_obj, getattr(retriever, "newly_embedded", None)


def eval_retrieval(kb: str | Path | KB, gold: str | Path, *, ks: Sequence[int] = (1, 3, 5),
                   embedders: Sequence[str] = (), retrieved: str | Path | None = None, rerank: str | None = None,
                   rerank_depth: int = 20, bootstrap: int = 2000, seed: int = 0) -> RetrievalComparison:
    """Recall@k and MRR of each retriever on the answerable gold questions, side by side with paired bootstrap
    CIs: the KB's own retriever (or ``embedders``), a team's ranked file (``retrieved``), each reranked by
    ``rerank``. Returns a ``RetrievalComparison`` (``.rows``, ``.questions``, ``.reranked``)."""
    from kb_builder.gold import load_gold, require_labels
    from kb_builder.retrieval.evaluate import compare_on_gold

    kb = load_kb(kb) if isinstance(kb, str | Path) else kb

    def reranking() -> Callable[[Any], Any]:
        from harness.runner.rerank import reranking as _reranking

        assert rerank is not None  # only called with a reranker named
        return _reranking(rerank, kb, rerank_depth)

    return compare_on_gold(kb, require_labels(load_gold(gold), "grace kb eval (recall of the labelled articles)"), list(ks), list(embedders), Path(retrieved) if retrieved else None,
                           reranking if rerank else None, bootstrap, seed)


def load_kb(path: str | Path) -> KB:
    """A KB folder (or its ``articles.jsonl``), every curation action in force; a missing manifest is written."""
    from kb_builder.loader import load_kb as _load

    return _load(path)


@overload
def search(kb: str | Path | KB, questions: str, k: int = 5,  # type: ignore[overload-overlap]  # str first
           embedder: str | None = None) -> list[Hit]: ...
@overload
def search(kb: str | Path | KB, questions: Sequence[str], k: int = 5,
           embedder: str | None = None) -> list[list[Hit]]: ...
def search(kb: str | Path | KB, questions: str | Sequence[str], k: int = 5,
           embedder: str | None = None) -> list[Hit] | list[list[Hit]]:
    """Top-``k`` articles for each question (one question: one list)."""
    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    one = isinstance(questions, str)
    hits: list[list[Hit]] = kb.retriever(embedder).search_many([questions] if isinstance(questions, str)
                                                               else list(questions), k)
    return hits[0] if one else hits


@overload
def resolve_references(kb: str | Path | KB, references: str, *,  # type: ignore[overload-overlap]  # str first
                       mapping: str | Path | None = None,
                       rewrites: Sequence[str | tuple[str, str]] = (), bare_ids: bool = False) -> Resolution: ...
@overload
def resolve_references(kb: str | Path | KB, references: Sequence[str], *, mapping: str | Path | None = None,
                       rewrites: Sequence[str | tuple[str, str]] = (), bare_ids: bool = False) -> list[Resolution]: ...
def resolve_references(kb: str | Path | KB, references: str | Sequence[str], *, mapping: str | Path | None = None,
                       rewrites: Sequence[str | tuple[str, str]] = (),
                       bare_ids: bool = False) -> Resolution | list[Resolution]:
    """Map a system's own references (source paths, URLs with anchors, titles, quotes, its own IDs) onto ``kb``'s
    articles, so a team can check its mapping before a run.

    ``mapping``: a CSV of ``their_id,article_id`` rows; ``rewrites``: ``PREFIX=REPLACEMENT`` rules (or pairs)
    applied to paths and URLs; ``bare_ids``: the system cites by KB ID, so a bare ``17`` is article 17 (else it is
    never read as one). Returns one :class:`~kb_builder.references.Resolution` per reference (one reference: one
    Resolution): ``.articles`` (every article holding what it points to), ``.scope`` (article, several, page),
    ``.how`` (mapping, id, rewrite, source+heading, source, title, quote), or unmapped with ``.note`` and
    ``.candidates``; ``.warning`` names a problem (ambiguous-anchor, page-too-large...).
    """
    from kb_builder.references import Resolver, read_mapping, read_rewrites

    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    table: dict[str, str | tuple[str, ...]] = {**read_mapping(mapping, kb.by_id)} if mapping is not None else {}
    resolver = Resolver(kb.articles, mapping=table, rewrites=read_rewrites(rewrites), bare_ids=bare_ids)
    one = isinstance(references, str)
    found = resolver.resolve_many([references] if isinstance(references, str) else list(references))
    return found[0] if one else found


def lint_kb(kb: str | Path | KB, run: str | Path | None = None) -> LintReport:
    """KB faults worst first (confusable pairs, articles not self-contained, ...); ``run`` adds the pairs a
    scored run's models swap. Returns a ``LintReport`` (``.findings``, ``.as_json()``)."""
    from harness.run_folder.run_dir import scored_rows
    from kb_builder.lint import lint_kb as _lint

    scores = scored_rows(run, "then lint with --run") if run is not None else None
    return _lint(load_kb(kb) if isinstance(kb, str | Path) else kb, scores)
