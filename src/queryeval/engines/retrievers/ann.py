"""Approximate nearest-neighbour (HNSW) search for the dense retriever, and its recall.

``DenseRetriever(index="hnsw")`` builds an HNSW graph over the (unit) document vectors with
inner product as the metric (= cosine), and answers a query from the graph's candidates
instead of scanning every document. Two libraries implement it here, picked with
``ann_backend``: ``faiss`` (``faiss-cpu``, ``IndexHNSWFlat``; the default, chosen by the
measurement in docs/scale.md) and ``usearch``. Both are optional (``pip install
'queryeval[ann]'``).

The graph only proposes candidates: their scores are recomputed exactly from the vectors
(the same numbers as exact search gives those documents, up to the last float32 bit of the
BLAS kernel) and ranked with the shared tie-break, so an ANN run differs from an exact one
only where the graph missed a document. How often it does is measured, not assumed:
:func:`recall_against_exact` is the mean over queries of ``|ANN top k ∩ exact top k| /
|exact top k|``, and the built-in retrieval system reports it for the run's own questions
(``ann_recall`` in the batch file's ``evaluation_config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...io.atomic import atomic_path

__all__ = ["ANN_BACKENDS", "HNSWIndex", "recall_against_exact"]

ANN_BACKENDS = ("faiss", "usearch")


def recall_against_exact(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean over rows of the share of the exact top-k indices that the approximate row has.

    ``approx`` and ``exact`` are ``(queries, k)`` index arrays; ``-1`` marks no result (in
    ``approx``: a missed place; in ``exact``: no such document, not counted). A row whose
    exact top-k is empty counts 1.0. No rows: 1.0 (nothing was missed)."""
    approx, exact = np.asarray(approx), np.asarray(exact)
    if approx.shape[0] != exact.shape[0]:
        raise ValueError(f"{approx.shape[0]} approximate rows for {exact.shape[0]} exact rows")
    if exact.shape[0] == 0:
        return 1.0
    shares = []
    for a, e in zip(approx.tolist(), exact.tolist(), strict=True):
        want = {j for j in e if j >= 0}
        shares.append(len(want & {j for j in a if j >= 0}) / len(want) if want else 1.0)
    return float(np.mean(shares))


class HNSWIndex:
    """An HNSW graph over float32 vectors with inner product (``faiss`` or ``usearch``).

    ``m``: links per node; ``ef_construction``/``ef_search``: candidate-list sizes when
    building and searching (higher: better recall, slower). ``threads``: 0 lets the library
    use every core.
    """

    def __init__(self, backend: str = "faiss", *, m: int = 32, ef_construction: int = 200,
                 ef_search: int = 128, threads: int = 0) -> None:
        if backend not in ANN_BACKENDS:
            raise ConfigError(f"unknown ANN backend {backend!r}; choose one of {', '.join(ANN_BACKENDS)}")
        for name, value in (("m", m), ("ef_construction", ef_construction), ("ef_search", ef_search)):
            if int(value) < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        self.backend = backend
        self.m, self.ef_construction, self.ef_search = int(m), int(ef_construction), int(ef_search)
        self.threads = int(threads)
        self._index: Any = None
        self.n = 0

    @property
    def params(self) -> dict[str, Any]:
        """What identifies the graph (for the run log and the on-disk cache key)."""
        return {"backend": self.backend, "m": self.m, "ef_construction": self.ef_construction,
                "ef_search": self.ef_search}

    def _lib(self) -> Any:
        try:
            if self.backend == "faiss":
                import faiss

                return faiss
            from usearch import index as usearch_index

            return usearch_index
        except ImportError:
            pkg = "faiss-cpu" if self.backend == "faiss" else "usearch"
            raise ConfigError(f"index='hnsw' with ann_backend={self.backend!r} needs {pkg}: "
                              "pip install 'queryeval[ann]'") from None

    def build(self, vectors: np.ndarray, *, batch_rows: int = 65536) -> None:
        """Add every row of ``vectors`` (a memory-mapped matrix is read ``batch_rows`` at a time)."""
        lib = self._lib()
        n, dim = vectors.shape
        if self.backend == "faiss":
            if self.threads:
                lib.omp_set_num_threads(self.threads)
            index = lib.IndexHNSWFlat(dim, self.m, lib.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            for start in range(0, n, batch_rows):
                index.add(np.ascontiguousarray(vectors[start : start + batch_rows], dtype=np.float32))
        else:
            index = lib.Index(ndim=dim, metric="ip", dtype="f32", connectivity=self.m,
                              expansion_add=self.ef_construction, expansion_search=self.ef_search)
            for start in range(0, n, batch_rows):
                block = np.ascontiguousarray(vectors[start : start + batch_rows], dtype=np.float32)
                index.add(np.arange(start, start + len(block), dtype=np.uint64), block,
                          threads=self.threads)
        self._index, self.n = index, n

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """``(queries, k)`` int64 candidate indices, best first; ``-1`` where none was found."""
        if self._index is None:
            raise RuntimeError("the HNSW index is not built")
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(int(k), self.n)
        if k == 0 or len(q) == 0:
            return np.full((len(q), k), -1, dtype=np.int64)
        if self.backend == "faiss":
            self._index.hnsw.efSearch = max(self.ef_search, k)
            _, idx = self._index.search(q, k)
            return idx.astype(np.int64, copy=False)
        self._index.expansion_search = max(self.ef_search, k)
        found = self._index.search(q, k, threads=self.threads)
        keys = np.asarray(found.keys, dtype=np.int64).reshape(len(q), -1)
        counts = np.asarray(found.counts).reshape(len(q))
        out = np.full((len(q), k), -1, dtype=np.int64)
        for i, c in enumerate(counts.tolist()):
            out[i, :c] = keys[i, :c]
        return out

    # -- on-disk copy -------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the graph atomically (:func:`queryeval.io.atomic.atomic_path`)."""
        with atomic_path(path) as tmp:
            if self.backend == "faiss":
                self._lib().write_index(self._index, str(tmp))
            else:
                self._index.save(str(tmp))

    def load(self, path: Path, n: int, dim: int) -> bool:
        """Read a saved graph of ``n`` vectors of ``dim``; ``False`` (and no change) if unusable."""
        lib = self._lib()
        try:
            if self.backend == "faiss":
                index = lib.read_index(str(path))
                ok = index.ntotal == n and index.d == dim
            else:
                index = lib.Index.restore(str(path))
                ok = index is not None and len(index) == n and index.ndim == dim
        except (OSError, RuntimeError, ValueError):
            return False
        if not ok:
            return False
        self._index, self.n = index, n
        return True
