"""Retrievers over a KB: lexical (BM25F, offline default), dense embeddings, and hybrid.

Embedder specs (``--embedder``):
  ``bm25f``                                  field-weighted BM25 (title above text), offline; the default for new KBs
  ``bm25``                                   plain BM25, offline; what KBs built before ``bm25f`` keep using
  ``char4``                                  BM25F over character 4-grams, offline: matches pieces of words
  ``openai`` / ``openai:MODEL[@DIMS]``       OpenAI embeddings (default text-embedding-3-large@1024)
  ``st`` / ``st:MODEL``                      local sentence-transformers (optional extra ``grace-eval[local]``)
  ``use``                                    Universal Sentence Encoder Multilingual, offline, weights in the package
                                             (optional extra ``grace-eval[multilingual]``)
  ``hybrid`` / ``hybrid:DENSE_SPEC``         BM25 and a dense ranking fused by reciprocal rank
  ``A+B[+C...]``                             any of the above fused by reciprocal rank: ``bm25f+char4``
                                             (the French and German default), ``bm25f+char4+use``

The package is retrieval's one home: ``lexical``, ``dense`` and ``hybrid`` (retrievers and fusion), ``files``
(a team's own rankings: ``grace kb search --out``, ``--retrieved``), ``evaluate`` (recall@k and MRR,
``grace kb eval``) and ``passages`` (which passage of a found article matched, which words to mark: what the web
apps show beside a question). Reranking calls a model through the run engine, so it lives there
(``harness.runner.rerank``) and ``evaluate`` takes it as a function that wraps a retriever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.core.errors import GraceError

if TYPE_CHECKING:
    from pathlib import Path

    from kb_builder.kb_records import Article, Manifest

# New KBs get it; a KB keeps the embedder its manifest names, so an old KB's rankings never move under it.
DEFAULT_EMBEDDER = "bm25f"
# ...except in the languages where another one won on held-out questions (docs/how-to/languages.md): a French or German
# KB's default adds character 4-grams. Other languages keep bm25f until data in them says otherwise.
LANGUAGE_DEFAULTS = {"fr": "bm25f+char4", "de": "bm25f+char4"}


@dataclass(frozen=True)
class Hit:
    id: str
    score: float


class KB(Protocol):
    """What a retriever reads of a KB (:class:`kb_builder.store.KB`, which imports the retrievers: named here, not
    imported, so the store and the retrievers are no circle)."""

    path: Path
    articles: list[Article]
    manifest: Manifest


class Retriever(Protocol):
    name: str

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]: ...


def search(retriever: Retriever, query: str, k: int) -> list[Hit]:
    return retriever.search_many([query], k)[0]


def default_embedder(language: str | None) -> str:
    """The retriever a new KB in ``language`` gets when none is named."""
    return LANGUAGE_DEFAULTS.get(language or "", DEFAULT_EMBEDDER)


def canonical_embedder(spec: str) -> str:
    spec = (spec or DEFAULT_EMBEDDER).strip()
    if "+" in spec:
        parts = [canonical_embedder(p) for p in spec.split("+")]
        if len(parts) != len(set(parts)) or any("+" in p or p.startswith("hybrid:") for p in parts):
            raise GraceError(f"embedder {spec!r}: fuse distinct plain retrievers, e.g. bm25f+char4+use")
        return "+".join(parts)
    kind, _, rest = spec.partition(":")
    if kind in {"bm25", "lexical"}:
        return "bm25"
    if kind == "bm25f":
        return "bm25f"
    if kind == "char4":
        return "char4"
    if kind == "openai":
        return "openai:" + (rest or "text-embedding-3-large@1024")
    if kind in {"st", "sentence-transformers"}:
        return "st:" + (rest or "sentence-transformers/all-MiniLM-L6-v2")
    if kind == "use":
        return "use"
    if kind == "hybrid":
        return "hybrid:" + canonical_embedder(rest or "st")
    raise GraceError(f"unknown embedder {spec!r}; use bm25f, bm25, char4, use, openai[:MODEL], st[:MODEL], "
                     "hybrid[:DENSE] or a fusion such as bm25f+char4")


def make_retriever(kb: KB, spec: str) -> Retriever:
    spec = canonical_embedder(spec)
    from kb_builder.retrieval.lexical import BM25FRetriever, BM25Retriever, Char4Retriever, kb_language

    if "+" in spec:
        from kb_builder.retrieval.hybrid import HybridRetriever

        return HybridRetriever([make_retriever(kb, p) for p in spec.split("+")], name=spec, unmatched=False)
    if spec == "bm25":
        return BM25Retriever(kb.articles, language=kb_language(kb))
    if spec == "bm25f":
        return BM25FRetriever.for_kb(kb)
    if spec == "char4":
        return Char4Retriever.for_kb(kb)
    from kb_builder.retrieval.dense import DenseRetriever, make_embedder

    if spec.startswith("hybrid:"):
        from kb_builder.retrieval.hybrid import HybridRetriever

        dense = DenseRetriever(kb, make_embedder(spec.removeprefix("hybrid:")))
        return HybridRetriever([BM25Retriever(kb.articles, language=kb_language(kb)), dense], name=spec)
    return DenseRetriever(kb, make_embedder(spec))
