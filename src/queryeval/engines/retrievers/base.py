"""The retriever protocol and the shared machinery of the built-in engines.

A retriever is built once over a corpus (``index``) and then ranks documents for batches of
queries (``search`` for the top k, ``rank_all`` for the complete ranking that lets a caller
read every cut-off N from one pass).

Tie-break (all built-in retrievers): score descending, then original document order (the
position of the document in the sequence given to ``index``). NaN scores rank last. See
:mod:`queryeval.engines.retrievers.topk`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .topk import blocked_topk, plan_blocks, rank_rows, topk_rows

__all__ = ["Doc", "Hit", "Retriever", "ScoringRetriever", "docs_from_texts"]


@dataclass(frozen=True)
class Doc:
    """One retrievable document: a chunk, or a field value (plus its description)."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieved document: its id, the engine's score, and its 1-based rank."""

    doc_id: str
    score: float
    rank: int


def docs_from_texts(texts: Iterable[str]) -> list[Doc]:
    """Documents whose ids are their texts (field values are their own ids)."""
    return [Doc(doc_id=t, text=t) for t in texts]


@runtime_checkable
class Retriever(Protocol):
    """What the evaluation needs from a retrieval engine."""

    def index(self, docs: Sequence[Doc]) -> None:
        """Build the index over ``docs`` (replaces any previous index)."""

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top ``min(k, n_docs)`` hits per query, best first, ranks 1..k."""

    def rank_all(self, queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Full ranking per query: ``(order, scores)``, both shaped (queries, n_docs).

        ``order[i, j]`` is the index (into the indexed docs) of the document at rank
        ``j + 1`` for query ``i``; ``scores[i, j]`` is that document's score.
        """


def _check_queries(queries: Sequence[str]) -> list[str]:
    if isinstance(queries, (str, bytes)):
        raise TypeError("queries must be a list of strings, not a single string")
    out = list(queries)
    for i, q in enumerate(out):
        if not isinstance(q, str):
            raise TypeError(f"queries[{i}] must be a string, got {type(q).__name__}")
    return out


class ScoringRetriever(ABC):
    """Base for engines that can score every document for a block of queries.

    Subclasses implement ``_index_texts`` (build the engine over the texts),
    ``_encode_queries`` (turn all queries into the engine's representation, once) and
    ``_score_block`` (a dense ``(len(block), n_docs)`` score matrix). This class does the
    validation, the blocking that bounds memory, and the deterministic ranking.

    ``search`` holds at most ``max_block_scores`` scores at a time (:func:`plan_blocks`):
    up to ``query_block_size`` queries per block and, for an engine that can score a range
    of documents (``_score_range``, e.g. dense), as many documents as the rest of the budget
    allows, merged into a running exact top k (:func:`blocked_topk`); an engine that scores
    the whole corpus per query (BM25) gets fewer queries per block instead.
    """

    #: whether ``_score_range`` scores a slice of the documents (else the whole corpus)
    doc_blocks = False

    def __init__(self, *, query_block_size: int = 256, max_block_scores: int = 1 << 24) -> None:
        if query_block_size < 1:
            raise ValueError(f"query_block_size must be >= 1, got {query_block_size}")
        if max_block_scores < 1:
            raise ValueError(f"max_block_scores must be >= 1, got {max_block_scores}")
        self.query_block_size = int(query_block_size)
        self.max_block_scores = int(max_block_scores)
        self._docs: list[Doc] | None = None
        self._ids: list[str] | None = None  # doc ids in index order (also for a streamed index)

    # -- to implement ------------------------------------------------------------------
    @abstractmethod
    def _index_texts(self, texts: list[str]) -> None:
        """Build the engine over the document texts (called only when there are some)."""

    @abstractmethod
    def _encode_queries(self, queries: list[str]) -> Any:
        """All queries in the engine's representation; must support slicing."""

    @abstractmethod
    def _score_block(self, encoded: Any) -> np.ndarray:
        """Scores of every document for a slice of encoded queries, in document order."""

    def _score_range(self, encoded: Any, start: int, stop: int) -> np.ndarray:
        """Scores of documents ``start..stop-1`` (engines with ``doc_blocks = True``)."""
        raise NotImplementedError

    @property
    def n_docs(self) -> int:
        """How many documents are indexed."""
        return len(self.doc_ids)

    def block_plan(self, n_queries: int) -> tuple[int, int]:
        """``(query_block, doc_block)`` that ``search`` uses for ``n_queries`` queries."""
        return plan_blocks(n_queries, self.n_docs, self.max_block_scores,
                           max_query_block=self.query_block_size, doc_blocks=self.doc_blocks)

    def topk_indices(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top ``min(k, n_docs)`` per query: ``(doc indices int64, scores)``, rank order.

        Bounded memory (see the class docstring); equal to ``rank_all`` cut at k.
        """
        queries = _check_queries(queries)
        n = self.n_docs
        k = min(int(k), n)
        if not queries or k == 0:
            return np.empty((len(queries), 0), dtype=np.int64), np.empty((len(queries), 0))
        encoded = self._encode_queries(queries)
        qb, db = self.block_plan(len(queries))
        idx_parts: list[np.ndarray] = []
        score_parts: list[np.ndarray] = []
        for start in range(0, len(queries), qb):
            enc = encoded[start : start + qb]
            rows = min(qb, len(queries) - start)
            if self.doc_blocks and db < n:
                top, top_scores = blocked_topk(
                    lambda a, b, enc=enc: self._score_range(enc, a, b), rows, n, k, db)
            else:
                block = np.asarray(self._score_block(enc))
                top = topk_rows(block, k)
                top_scores = np.take_along_axis(block, top, axis=1)
            idx_parts.append(top)
            score_parts.append(top_scores)
        return np.concatenate(idx_parts), np.concatenate(score_parts)

    # -- public API --------------------------------------------------------------------
    @property
    def docs(self) -> list[Doc]:
        """The indexed documents, in index order (the order ties are broken by).

        A streamed index (``index_stream``) keeps only the ids: see ``doc_ids``."""
        if self._docs is None:
            if self._ids is not None:
                raise RuntimeError("a streamed index keeps only the doc ids: use doc_ids")
            raise RuntimeError("the retriever has no index yet: call index(docs) first")
        return self._docs

    @property
    def doc_ids(self) -> list[str]:
        """Ids of the indexed documents, in index order."""
        if self._ids is None:
            raise RuntimeError("the retriever has no index yet: call index(docs) first")
        return self._ids

    def index(self, docs: Sequence[Doc]) -> None:
        """Index ``docs``. Doc ids must be unique, or hits could not name a document."""
        docs = list(docs)
        seen: set[str] = set()
        for i, d in enumerate(docs):
            if not isinstance(d, Doc):
                raise TypeError(f"docs[{i}] must be a Doc, got {type(d).__name__}")
            if not isinstance(d.text, str):
                raise TypeError(f"docs[{i}].text must be a string, got {type(d.text).__name__}")
            if d.doc_id in seen:
                raise ValueError(f"duplicate doc_id {d.doc_id!r} (docs[{i}])")
            seen.add(d.doc_id)
        if docs:
            self._index_texts([d.text for d in docs])
        self._docs = docs
        self._ids = [d.doc_id for d in docs]

    def scores(self, queries: list[str]) -> np.ndarray:
        """The full ``(queries, n_docs)`` score matrix in document order (float64)."""
        queries = _check_queries(queries)
        n = self.n_docs
        out = np.zeros((len(queries), n), dtype=np.float64)
        if not queries or n == 0:
            return out
        encoded = self._encode_queries(queries)
        for start in range(0, len(queries), self.query_block_size):
            stop = start + self.query_block_size
            out[start:stop] = self._score_block(encoded[start:stop])
        return out

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top ``min(k, n_docs)`` hits for each query (see the module tie-break)."""
        queries = _check_queries(queries)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an integer, got {type(k).__name__}")
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        ids = self.doc_ids
        if not queries:
            return []
        if k == 0 or not ids:
            return [[] for _ in queries]
        top, top_scores = self.topk_indices(queries, k)
        return [
            [Hit(doc_id=ids[j], score=float(sc), rank=r)
             for r, (j, sc) in enumerate(zip(row_idx, row_scores, strict=True), start=1)
             if j >= 0]  # -1: a place an approximate index left empty
            for row_idx, row_scores in zip(top.tolist(), top_scores.tolist(), strict=True)
        ]

    def rank_all(self, queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Complete ranking per query: ``(order int64, scores float64)``, aligned by rank.

        Memory is ``queries x n_docs`` for the result; callers with huge products should
        call this per batch of queries.
        """
        s = self.scores(queries)
        order = rank_rows(s)
        return order, np.take_along_axis(s, order, axis=1)
