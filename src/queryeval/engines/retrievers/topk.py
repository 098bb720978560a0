"""Deterministic ranking of score matrices: full orderings and exact top-k.

Every built-in retriever ranks through these two functions so that all of them break ties
the same way:

* higher score first;
* among equal scores, the document indexed first comes first (a *stable* ordering by
  descending score);
* ``NaN`` scores rank after every real score (they are ordered as ``-inf``, and among
  themselves by document order). The reported score stays ``NaN``.

``topk_rows`` uses ``np.argpartition`` (linear time) and then sorts only the ``k`` selected
columns, but unlike a bare ``argpartition`` it resolves ties at the cut exactly: when several
documents share the k-th best score, the ones indexed first are kept. The result is
therefore always equal to the first ``k`` columns of ``rank_rows``.

``blocked_topk`` computes the same top k over a corpus too large for one score matrix: the
documents are scored a block of columns at a time and each block's top k merged into the
running one, so memory stays ``rows x (doc_block + 2k)`` scores (``plan_blocks`` picks the
blocks from a budget of scores).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["blocked_topk", "merge_topk", "plan_blocks", "rank_rows", "topk_rows"]


def _ordering_keys(scores: np.ndarray) -> np.ndarray:
    """Scores as a 2-D float array in which NaN is replaced by -inf (for ordering only)."""
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"scores must be a 2-D array (queries x documents), got shape {s.shape}")
    if not np.issubdtype(s.dtype, np.floating):
        s = s.astype(np.float64)
    if np.isnan(s).any():
        s = np.where(np.isnan(s), -np.inf, s)
    return s


def rank_rows(scores: np.ndarray) -> np.ndarray:
    """Full ranking of every row: document indices, best first, ties by document index.

    Returns an ``int64`` array of the same shape as ``scores``.
    """
    s = _ordering_keys(scores)
    # A stable sort of the negated scores keeps equal scores in document order.
    return np.argsort(-s, axis=1, kind="stable").astype(np.int64, copy=False)


def topk_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """The best ``min(k, n)`` document indices of every row, in rank order.

    Equal to ``rank_rows(scores)[:, :k]`` (same tie-break), computed in O(n + k log k)
    per row instead of O(n log n).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    s = _ordering_keys(scores)
    n_rows, n = s.shape
    k = min(int(k), n)
    if k == 0:
        return np.empty((n_rows, 0), dtype=np.int64)
    if k == n or n_rows == 0:
        return rank_rows(s)[:, :k]
    part = np.argpartition(-s, k - 1, axis=1)[:, :k]
    # The k-th best score of each row. When exactly k documents score at least that much
    # (the usual case), the partition is the answer; otherwise documents tied at the cut
    # compete for the last places and the ones indexed first win.
    threshold = np.take_along_axis(s, part, axis=1).min(axis=1, keepdims=True)
    cols = np.sort(part, axis=1)
    tied_rows = np.flatnonzero((s >= threshold).sum(axis=1) > k)
    if tied_rows.size:
        sub, thr = s[tied_rows], threshold[tied_rows]
        above = sub > thr
        tied = sub == thr
        need = k - above.sum(axis=1, keepdims=True)
        keep = above | (tied & (np.cumsum(tied, axis=1) <= need))
        # Every row keeps exactly k columns; np.nonzero walks rows in order and columns
        # ascending, so the reshaped indices are sorted by document index within each row.
        cols[tied_rows] = np.nonzero(keep)[1].reshape(tied_rows.size, k)
    # cols is sorted by document index, so a stable sort by descending score breaks ties
    # by document order.
    order = np.argsort(-np.take_along_axis(s, cols, axis=1), axis=1, kind="stable")
    return np.take_along_axis(cols, order, axis=1).astype(np.int64, copy=False)


def plan_blocks(
    n_queries: int, n_docs: int, max_scores: int, *, max_query_block: int = 256,
    doc_blocks: bool = True,
) -> tuple[int, int]:
    """``(query_block, doc_block)`` for a search holding at most ``max_scores`` scores at once.

    Queries come first (up to ``max_query_block`` of them, since one wide matrix product is
    faster than many narrow ones), then the document block takes what is left of the budget.
    Without ``doc_blocks`` (an engine that scores the whole corpus per query) the document
    block is the corpus and the query block shrinks to fit. Both are at least 1, and
    ``query_block * doc_block <= max_scores`` unless one query against one document block
    alone exceeds it (``doc_blocks=False`` with ``n_docs > max_scores``: one row at a time).
    """
    if max_scores < 1:
        raise ValueError(f"max_scores must be >= 1, got {max_scores}")
    if max_query_block < 1:
        raise ValueError(f"max_query_block must be >= 1, got {max_query_block}")
    n_queries, n_docs = max(int(n_queries), 1), max(int(n_docs), 1)
    if not doc_blocks:
        return max(1, min(n_queries, max_query_block, max_scores // n_docs)), n_docs
    query_block = min(n_queries, max_query_block, max_scores)
    return query_block, max(1, min(n_docs, max_scores // query_block))


def merge_topk(
    best_idx: np.ndarray, best_scores: np.ndarray, idx: np.ndarray, scores: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of two candidate sets per row, by the module's tie-break.

    ``best_idx``/``idx`` are document indices (any order within a row, no index in both),
    ``best_scores``/``scores`` their scores. Returns ``(indices, scores)`` in rank order.
    Candidates are first put in document order so that "first indexed wins" among equal
    scores, exactly as in :func:`rank_rows` over the whole corpus.
    """
    cand_idx = np.concatenate([best_idx, idx], axis=1)
    cand_scores = np.concatenate([best_scores, scores], axis=1)
    by_doc = np.argsort(cand_idx, axis=1, kind="stable")
    cand_idx = np.take_along_axis(cand_idx, by_doc, axis=1)
    cand_scores = np.take_along_axis(cand_scores, by_doc, axis=1)
    sel = topk_rows(cand_scores, k)
    return np.take_along_axis(cand_idx, sel, axis=1), np.take_along_axis(cand_scores, sel, axis=1)


def blocked_topk(
    score_range: Callable[[int, int], np.ndarray], n_rows: int, n_docs: int, k: int, doc_block: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over ``n_docs`` documents scored ``doc_block`` columns at a time.

    ``score_range(start, stop)`` returns the ``(n_rows, stop - start)`` scores of documents
    ``start..stop-1``. Each block's own top k is merged into the running top k
    (:func:`merge_topk`), so memory is ``n_rows x (doc_block + 2k)`` scores whatever
    ``n_docs`` is, and the result — indices and the scores as returned by ``score_range`` —
    equals ``rank_rows`` of the full matrix cut at k: a document in the global top k is in
    its block's top k under the same total order (score descending, NaN last, then index).
    """
    if doc_block < 1:
        raise ValueError(f"doc_block must be >= 1, got {doc_block}")
    k = min(int(k), int(n_docs))
    best_idx = np.empty((n_rows, 0), dtype=np.int64)
    best_scores: np.ndarray | None = None
    for start in range(0, n_docs, doc_block):
        stop = min(start + doc_block, n_docs)
        s = np.asarray(score_range(start, stop))
        if s.shape != (n_rows, stop - start):
            raise ValueError(f"score_range({start}, {stop}) returned shape {s.shape}, "
                             f"expected {(n_rows, stop - start)}")
        top = topk_rows(s, k)
        top_scores = np.take_along_axis(s, top, axis=1)
        if best_scores is None:
            best_idx, best_scores = top + start, top_scores
            continue
        best_idx, best_scores = merge_topk(best_idx, best_scores, top + start, top_scores, k)
    if best_scores is None:
        best_scores = np.empty((n_rows, 0), dtype=np.float64)
    return best_idx.astype(np.int64, copy=False), best_scores
