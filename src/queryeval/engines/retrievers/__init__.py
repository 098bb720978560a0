"""Built-in retrievers: lexical BM25 and dense sentence-transformers embeddings.

>>> from queryeval.engines.retrievers import BM25Retriever, Doc
>>> r = BM25Retriever()
>>> r.index([Doc("a", "carrots and potatoes"), Doc("b", "olive oil")])
>>> [h.doc_id for h in r.search(["cheap potatoes"], k=1)[0]]
['a']

Both engines share one protocol (:class:`Retriever`: ``index``, ``search``, ``rank_all``) and
one deterministic tie-break: score descending, then original document order. Heavy
dependencies (bm25s, sentence-transformers/torch) are imported only when used.
"""

from .base import Doc, Hit, Retriever, ScoringRetriever, docs_from_texts
from .bm25 import BM25_METHODS, BM25Retriever
from .cache import CacheSpace, EmbeddingCache, default_cache_dir, text_hash
from .dense import BGE_QUERY_INSTRUCTION, DenseRetriever, default_prefixes
from .embedder import Embedder, EmbedStats, normalize_rows
from .models import (
    DEFAULT_MODEL,
    Encoder,
    HashingEncoder,
    default_model_path,
    load_sentence_transformer,
    model_fingerprint,
    resolve_model_path,
)
from .topk import blocked_topk, plan_blocks, rank_rows, topk_rows

__all__ = [
    "BGE_QUERY_INSTRUCTION",
    "BM25_METHODS",
    "BM25Retriever",
    "CacheSpace",
    "DEFAULT_MODEL",
    "DenseRetriever",
    "Doc",
    "EmbedStats",
    "Embedder",
    "EmbeddingCache",
    "Encoder",
    "HashingEncoder",
    "Hit",
    "Retriever",
    "ScoringRetriever",
    "default_cache_dir",
    "default_model_path",
    "default_prefixes",
    "docs_from_texts",
    "load_sentence_transformer",
    "model_fingerprint",
    "normalize_rows",
    "rank_rows",
    "resolve_model_path",
    "text_hash",
    "topk_rows",
    "blocked_topk",
    "plan_blocks",
]


def make_retriever(kind: str, **options: object) -> Retriever:
    """A built-in retriever by name: ``"bm25"``, ``"dense"`` (exact search) or ``"dense-hnsw"``
    (dense with an HNSW index, see :mod:`.ann`); options go to its constructor."""
    from ...errors import ConfigError

    kinds = {"bm25": BM25Retriever, "dense": DenseRetriever, "dense-hnsw": DenseRetriever}
    if kind not in kinds:
        raise ConfigError(f"unknown retriever {kind!r}; choose one of {', '.join(kinds)}")
    if kind == "dense-hnsw":
        options = {"index": "hnsw", **options}
    return kinds[kind](**options)  # type: ignore[arg-type]


__all__.append("make_retriever")
