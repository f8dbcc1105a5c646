"""The KB workflows of ``grace kb``: build, index, search, lint and evaluate retrieval, one call each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["build_kb", "eval_retrieval", "index_kb", "lint_kb", "load_kb", "search"]


def build_kb(source: str | Path | None, out: str | Path, **options: Any):
    """Split documents into self-contained articles and write a KB folder (rebuilding into one keeps its IDs).

    ``options``: ``articles_file`` (pre-split articles instead of documents), ``max_tokens``, ``min_tokens``,
    ``embedder``, ``language`` (ISO 639-1, or None to detect it per article), ``progress`` (called once per document). Returns a ``BuildResult``: ``.kb`` (the loaded KB),
    ``.changes`` (IDs added, changed, removed), ``.documents``, ``.skipped``.
    """
    from kb_builder.build import build_kb as _build

    return _build(Path(source) if source is not None else None, Path(out), **options)


def index_kb(kb: str | Path, embedder: str | None = None):
    """Write a missing manifest and index (embeddings, the bm25f index) for a KB folder, with ``embedder`` if
    named; returns ``(KB, articles newly embedded)``."""
    from harness.core.files import atomic_write_text
    from kb_builder.retrieval import canonical_embedder
    from kb_builder.store import MANIFEST

    kb_obj = load_kb(kb)
    if embedder:
        kb_obj.manifest.embedder = canonical_embedder(embedder)
        atomic_write_text(kb_obj.path / MANIFEST, kb_obj.manifest.model_dump_json(indent=2) + "\n")
    retriever = kb_obj.retriever()
    return kb_obj, getattr(retriever, "newly_embedded", None)


def eval_retrieval(kb: Any, gold: str | Path, *, ks: Sequence[int] = (1, 3, 5), embedders: Sequence[str] = (),
                   retrieved: str | Path | None = None, rerank: str | None = None, rerank_depth: int = 20,
                   bootstrap: int = 2000, seed: int = 0):
    """Recall@k and MRR of each retriever on the answerable gold questions, side by side with paired bootstrap
    CIs: the KB's own retriever (or ``embedders``), a team's ranked file (``retrieved``), each reranked by
    ``rerank``. Returns a ``RetrievalComparison`` (``.rows``, ``.questions``, ``.reranked``)."""
    from kb_builder.gold import load_gold
    from kb_builder.retrieval.evaluate import compare_on_gold

    kb = load_kb(kb) if isinstance(kb, str | Path) else kb

    def reranking():
        from harness.runner.rerank import reranking as _reranking

        return _reranking(rerank, kb, rerank_depth)

    return compare_on_gold(kb, load_gold(gold), list(ks), list(embedders), Path(retrieved) if retrieved else None,
                           reranking if rerank else None, bootstrap, seed)


def load_kb(path: str | Path):
    from kb_builder.store import load_kb as _load

    return _load(path)


def search(kb: Any, questions: str | Sequence[str], k: int = 5, embedder: str | None = None):
    """Top-``k`` articles for each question (one question: one list)."""
    kb = load_kb(kb) if isinstance(kb, str | Path) else kb
    one = isinstance(questions, str)
    hits = kb.retriever(embedder).search_many([questions] if one else list(questions), k)
    return hits[0] if one else hits


def lint_kb(kb: Any, run: str | Path | None = None):
    """KB faults worst first (confusable pairs, articles not self-contained, ...); ``run`` adds the pairs a
    scored run's models swap. Returns a ``LintReport`` (``.findings``, ``.as_json()``)."""
    from harness.core.errors import GraceError
    from harness.run_folder import RunDir
    from kb_builder.lint import lint_kb as _lint

    scores = None
    if run is not None:
        folder = RunDir(run)
        if not folder.scores.exists():
            raise GraceError(f"{folder.path}: no scores.jsonl; score the run first (grace score, or grace run "
                             "without --no-score), then lint with --run")
        scores = (row for _, row in folder.iter_scores())
    return _lint(load_kb(kb) if isinstance(kb, str | Path) else kb, scores)
