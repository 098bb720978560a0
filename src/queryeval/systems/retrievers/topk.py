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
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank_rows", "topk_rows"]


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
