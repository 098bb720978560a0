"""Dense retrieval: sentence-transformers embeddings and exact cosine top-k in numpy.

Documents are embedded once (``passage_prefix + text``) through the on-disk cache, queries
per call (``query_prefix + query``). With ``normalize=True`` (the default) both sides are unit
vectors and the score is their cosine similarity, computed as one matrix product per block
of ``query_block_size`` queries; the top k comes from ``np.argpartition`` plus a sort of the
k selected, with the shared tie-break (score descending, then document order). This is exact
search, not an approximate index: the corpora evaluated here (chunks, field values) are
small enough that a matrix product is both the fastest and the simplest correct choice.

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
from .base import ScoringRetriever
from .cache import EmbeddingCache
from .embedder import Embedder
from .models import (
    Encoder,
    load_sentence_transformer,
    model_fingerprint,
    read_declared_prompts,
    resolve_model_path,
)

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
    :class:`~queryeval.systems.retrievers.models.HashingEncoder`); its cache identity is its
    ``fingerprint`` attribute or ``model_id``. ``cache``: ``True`` for the default folder,
    ``False`` for none, a path, or an :class:`EmbeddingCache`. ``cache_queries`` also caches
    query embeddings (useful when the same questions are rerun). ``device``: passed to
    sentence-transformers (``None`` lets it choose, e.g. ``"cpu"``, ``"cuda"``).
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
    ) -> None:
        super().__init__(query_block_size=query_block_size)
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

    @property
    def doc_embeddings(self) -> np.ndarray:
        """float32 ``(n_docs, dim)`` embeddings of the indexed documents."""
        if self._doc_matrix is None:
            raise RuntimeError("the retriever has no index yet: call index(docs) first")
        return self._doc_matrix

    def _index_texts(self, texts: list[str]) -> None:
        hook = CORPUS_EMBEDDER.get()
        if hook is not None:
            self._doc_matrix = hook(self, texts)
            return
        self._doc_matrix = self.embedder.embed(texts, prefix=self.passage_prefix)

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        """float32 ``(n_queries, dim)`` query embeddings (with the query prefix)."""
        return self.embedder.embed(queries, prefix=self.query_prefix, use_cache=self.cache_queries)

    def _encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.embed_queries(queries)

    def _score_block(self, encoded: np.ndarray) -> np.ndarray:
        return encoded @ self.doc_embeddings.T
