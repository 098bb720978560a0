"""Dense retrieval: sentence-transformers embeddings and exact cosine top-k in numpy.

Documents are embedded once (``passage_prefix + text``) through the on-disk cache, queries
per call (``query_prefix + query``). With ``normalize=True`` (the default) both sides are unit
vectors and the score is their cosine similarity, computed as one matrix product per block
of ``query_block_size`` queries; the top k comes from ``np.argpartition`` plus a sort of the
k selected, with the shared tie-break (score descending, then document order). A corpus too
large for one ``queries x n_docs`` block within ``max_block_scores`` is scored a block of
documents at a time, each block's top k merged into the running exact top k
(:func:`~queryeval.engines.retrievers.topk.blocked_topk`): same ranking, bounded memory.
``index="hnsw"`` answers from an HNSW graph instead (:mod:`.ann`), with its recall against
exact search measured by :meth:`DenseRetriever.ann_recall`.

A corpus too large to hold as objects is indexed with :meth:`DenseRetriever.index_corpus`
(a :class:`~queryeval.suite.corpus_stream.StreamedCorpus`): its texts are embedded in
batches into a memory-mapped matrix cached on disk under the model, prefix, normalisation
and corpus content (:func:`~queryeval.engines.retrievers.cache.write_matrix`).

Prefixes, in order of precedence: the ``query_prefix``/``passage_prefix`` arguments; the
non-empty ``query``/``passage`` (or ``document``) prompts the model declares in its
``config_sentence_transformers.json``; then a rule on the model's name — E5 models get
``"query: "``/``"passage: "``, BGE models get the query instruction
:data:`BGE_QUERY_INSTRUCTION` only when ``bge_instruction=True`` (BGE v1.5 works without
it), every other model gets none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from .ann import HNSWIndex, recall_against_exact
from .base import ScoringRetriever
from .cache import EmbeddingCache, load_matrix, matrix_path, write_matrix
from .embedder import Embedder
from .models import (
    Encoder,
    load_sentence_transformer,
    model_fingerprint,
    read_declared_prompts,
    require_sentence_transformers,
    resolve_model_path,
)
from .topk import topk_rows

__all__ = ["BGE_QUERY_INSTRUCTION", "DenseRetriever", "default_prefixes"]

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
_E5 = re.compile(r"(^|[^a-z0-9])e5([^a-z0-9]|$)")
_BGE = re.compile(r"(^|[^a-z0-9])bge([^a-z0-9]|$)")


def default_prefixes(
    model_name: str, *, declared: dict[str, str] | None = None, bge_instruction: bool = False
) -> tuple[str, str]:
    """``(query_prefix, passage_prefix)`` for a model, from its declared prompts or name."""
    declared = declared or {}
    # sentence-transformers >= 3 reports {"query": "", "document": ""} for models that
    # declare nothing, so only non-empty prompts count as a declaration.
    if any(declared.get(role) for role in ("query", "passage", "document")):
        return declared.get("query", ""), declared.get("passage", declared.get("document", ""))
    name = model_name.lower()
    if _E5.search(name):
        return "query: ", "passage: "
    if _BGE.search(name) and bge_instruction:
        return BGE_QUERY_INSTRUCTION, ""
    return "", ""


CacheArg = EmbeddingCache | str | os.PathLike[str] | bool

#: When set, ``hook(retriever, texts) -> (n, dim) float32`` embeds the corpus instead of the
#: retriever's in-process embedder (``ray_embed.index_with_ray`` sets it to use Ray Data).
CORPUS_EMBEDDER: ContextVar[Callable[[Any, list[str]], np.ndarray] | None] = ContextVar(
    "queryeval_corpus_embedder", default=None)


def _make_cache(cache: CacheArg) -> EmbeddingCache | None:
    if cache is True:
        return EmbeddingCache()
    if cache is False or cache is None:
        return None
    if isinstance(cache, EmbeddingCache):
        return cache
    return EmbeddingCache(cache)


class DenseRetriever(ScoringRetriever):
    """Exact cosine retrieval with a sentence-transformers model (or any encoder).

    ``model``: ``None`` / ``"all-MiniLM-L6-v2"`` for the bundled default, or a local model
    directory (never downloaded). ``encoder``: an object with a sentence-transformers style
    ``encode`` instead of a model path (tests use
    :class:`~queryeval.engines.retrievers.models.HashingEncoder`); its cache identity is its
    ``fingerprint`` attribute or ``model_id``. ``cache``: ``True`` for the default folder,
    ``False`` for none, a path, or an :class:`EmbeddingCache`. ``cache_queries`` also caches
    query embeddings (useful when the same questions are rerun). ``device``: passed to
    sentence-transformers (``None`` lets it choose, e.g. ``"cpu"``, ``"cuda"``).
    ``max_block_scores``: the most scores one search block holds (documents are scored in
    blocks beyond it). ``index``: ``"exact"`` or ``"hnsw"`` (``ann_backend`` ``"faiss"`` or
    ``"usearch"``, with ``hnsw_m``, ``ef_construction``, ``ef_search``). ``stream_batch``:
    texts per batch when :meth:`index_corpus` streams a corpus.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        encoder: Encoder | None = None,
        model_id: str | None = None,
        device: str | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        bge_instruction: bool = False,
        normalize: bool = True,
        batch_size: int = 64,
        cache: CacheArg = True,
        cache_queries: bool = False,
        query_block_size: int = 256,
        max_block_scores: int = 1 << 24,
        index: str = "exact",
        ann_backend: str = "faiss",
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        stream_batch: int = 65536,
    ) -> None:
        super().__init__(query_block_size=query_block_size, max_block_scores=max_block_scores)
        if index not in ("exact", "hnsw"):
            raise ConfigError(f"index must be 'exact' or 'hnsw', got {index!r}")
        if stream_batch < 1:
            raise ConfigError(f"stream_batch must be >= 1, got {stream_batch}")
        self.index_kind = index
        self.stream_batch = int(stream_batch)
        self.ann: HNSWIndex | None = (
            HNSWIndex(ann_backend, m=hnsw_m, ef_construction=ef_construction, ef_search=ef_search)
            if index == "hnsw" else None)
        self.matrix_key: dict[str, Any] | None = None
        if encoder is not None and model is not None:
            raise ConfigError("pass either model= (a model path or name) or encoder=, not both")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        declared: dict[str, str]
        if encoder is not None:
            if not hasattr(encoder, "encode"):
                raise ConfigError("encoder must have an encode(texts, batch_size=...) method")
            fingerprint = model_id or getattr(encoder, "fingerprint", None)
            name = model_id or getattr(encoder, "name", type(encoder).__name__)
            declared = dict(getattr(encoder, "prompts", None) or {})
            source: Any = encoder
            self.model_path: Path | None = None
        else:
            path = resolve_model_path(model)
            require_sentence_transformers()  # a missing extra: one line before any call
            self.model_path = path
            fingerprint = model_fingerprint(path)
            name = str(model) if model is not None else path.name
            name = f"{name} {path.name}"
            declared = read_declared_prompts(path)

            def source() -> Encoder:
                return load_sentence_transformer(path, device=device)

        cache_obj = _make_cache(cache)
        if cache_obj is not None and fingerprint is None:
            raise ConfigError(
                "an encoder without a 'fingerprint' attribute needs model_id= to use the "
                "embedding cache (or pass cache=False)"
            )
        dq, dp = default_prefixes(name, declared=declared, bge_instruction=bge_instruction)
        self.query_prefix = dq if query_prefix is None else query_prefix
        self.passage_prefix = dp if passage_prefix is None else passage_prefix
        self.cache_queries = cache_queries
        self.embedder = Embedder(
            source,
            fingerprint=fingerprint,
            normalize=normalize,
            batch_size=batch_size,
            cache=cache_obj,
        )
        self._doc_matrix: np.ndarray | None = None
        self._cache = cache_obj

    @property
    def doc_embeddings(self) -> np.ndarray:
        """float32 ``(n_docs, dim)`` embeddings of the indexed documents."""
        if self._doc_matrix is None:
            raise RuntimeError("the retriever has no index yet: call index(docs) first")
        return self._doc_matrix

    doc_blocks = True

    def _embed_corpus_batch(self, texts: list[str]) -> np.ndarray:
        hook = CORPUS_EMBEDDER.get()
        if hook is not None:
            return hook(self, texts)
        return self.embedder.embed(texts, prefix=self.passage_prefix)

    def _index_texts(self, texts: list[str]) -> None:
        self._doc_matrix = self._embed_corpus_batch(texts)
        self.matrix_key = None
        self._build_ann()

    def index_corpus(self, corpus: Any) -> None:
        """Index a streamed corpus (``ids``, ``content_fingerprint``, ``text_batches(n)``).

        The texts are embedded ``stream_batch`` at a time (through the per-text cache, or
        on Ray inside ``index_with_ray``) straight into a memory-mapped matrix file; with a
        cache, a rerun on the same corpus maps that file and encodes nothing. Without a cache
        the matrix is built in memory. Hits name the corpus's ids.
        """
        ids = [str(i) for i in corpus.ids]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate doc ids in the corpus")
        n = len(ids)
        if n == 0:
            raise ValueError("the corpus has no documents")
        batches = (self._embed_corpus_batch(t) for t in corpus.text_batches(self.stream_batch))
        if self._cache is not None and self.embedder.fingerprint is not None:
            key = {**self.embedder.cache_key(self.passage_prefix), "corpus": corpus.content_fingerprint,
                   "rows": n}
            matrix = load_matrix(self._cache, key, n)
            if matrix is None:
                matrix = write_matrix(self._cache, key, n, batches)
            self.matrix_key = key
        else:
            matrix = np.concatenate(list(batches)).astype(np.float32, copy=False)
            self.matrix_key = None
        self._doc_matrix = matrix
        self._docs, self._ids = None, ids
        self._build_ann()

    def _build_ann(self) -> None:
        if self.ann is None:
            return
        matrix = self.doc_embeddings
        path = None
        if self._cache is not None and self.matrix_key is not None:
            key = {**self.matrix_key, "ann": self.ann.params}
            path = matrix_path(self._cache, key).with_suffix(f".{self.ann.backend}")
            if path.exists() and self.ann.load(path, *matrix.shape):
                return
        self.ann.build(matrix)
        if path is not None:
            self.ann.save(path)

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        """float32 ``(n_queries, dim)`` query embeddings (with the query prefix)."""
        return self.embedder.embed(queries, prefix=self.query_prefix, use_cache=self.cache_queries)

    def _encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.embed_queries(queries)

    def _score_block(self, encoded: np.ndarray) -> np.ndarray:
        return encoded @ self.doc_embeddings.T

    def _score_range(self, encoded: np.ndarray, start: int, stop: int) -> np.ndarray:
        return encoded @ self.doc_embeddings[start:stop].T

    def exact_topk(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top k (blocked scan), whatever ``index`` is."""
        return super().topk_indices(queries, k)

    def topk_indices(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top k, or with ``index="hnsw"`` the graph's candidates re-scored exactly and
        ranked with the shared tie-break (``-1``/NaN fill a place the graph left empty)."""
        if self.ann is None:
            return self.exact_topk(queries, k)
        k = min(int(k), self.n_docs)
        q = self.embed_queries(list(queries)) if queries else np.empty((0, 1), np.float32)
        cand = self.ann.search(q, k)
        matrix = self.doc_embeddings
        out_idx = np.full(cand.shape, -1, dtype=np.int64)
        out_scores = np.full(cand.shape, np.nan, dtype=np.float32)
        for i, row in enumerate(cand):
            found = np.sort(row[row >= 0])  # document order: the first indexed wins a tie
            if not found.size:
                continue
            scores = (matrix[found] @ q[i])[None, :]
            sel = topk_rows(scores, found.size)[0]
            out_idx[i, : found.size] = found[sel]
            out_scores[i, : found.size] = scores[0, sel]
        return out_idx, out_scores

    def ann_recall(self, queries: list[str], k: int) -> dict[str, Any]:
        """The HNSW index's recall@k against exact search on ``queries`` (see :mod:`.ann`)."""
        if self.ann is None:
            raise RuntimeError("ann_recall needs index='hnsw'")
        approx, _ = self.topk_indices(queries, k)
        exact, _ = self.exact_topk(queries, k)
        return {"k": min(int(k), self.n_docs), "queries": len(queries),
                "recall": recall_against_exact(approx, exact), "index": "hnsw", **self.ann.params}
