"""The row groups of the column-mapping search (:mod:`queryeval.metrics.tables.search`):
refining them by one (gold column, predicted column) pair, by dense counting or hashing;
bound 1 for every candidate of a node in one batched count, and each child built from that
count; bound 4's grouping by the multiset of the values still to be assigned; the row tp of
a complete mapping."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from queryeval.metrics.tables.search_base import _BATCH_MAX, _DENSE_MIN, _MUL, _split_by_keys

if TYPE_CHECKING:
    from queryeval.metrics.tables.encode import Encoded


class RowGroups:
    """Row-group methods of :class:`~queryeval.metrics.tables.search._Search` (a mixin: the
    attributes below are set by its ``__init__``; ``_tick`` counts one node)."""

    enc: Encoded
    g: int
    p: int
    V: int
    pred_mat: np.ndarray
    allowed: list[bool]
    w_gold: list[np.ndarray]
    w_pred: list[np.ndarray]
    _tick: Callable[[], None]

    def _refine(self, gi: np.ndarray, gk: np.ndarray, pi: np.ndarray, pk: np.ndarray,
                j: int, c: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Split the row groups by gold column ``j`` / predicted column ``c``; return the new
        tp and the still-matchable rows with their new group ids."""
        if len(gi) == 0 or len(pi) == 0:
            return 0, gi[:0], gk[:0], pi[:0], pk[:0]
        self._tick()
        key_g = gk * self.V + self.enc.gold_cols[j][gi]
        key_p = pk * self.V + self.enc.pred_cols[c][pi]
        span = (int(max(gk.max(), pk.max())) + 1) * self.V
        if span <= max(_DENSE_MIN, 2 * (len(gi) + len(pi))):
            return self._refine_dense(gi, key_g, pi, key_p, span)
        return _split_by_keys(gi, key_g, pi, key_p)

    @staticmethod
    def _refine_dense(gi: np.ndarray, key_g: np.ndarray, pi: np.ndarray, key_p: np.ndarray,
                      span: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_refine` when the keys fit a small dense range (few groups, few values):
        counting by ``bincount`` instead of hashing. Only groups present on both sides are
        kept, renumbered densely, so the range stays small at the next level."""
        cnt_g = np.bincount(key_g, minlength=span)
        cnt_p = np.bincount(key_p, minlength=span)
        both = np.minimum(cnt_g, cnt_p)
        tp = int(both.sum())
        present = both > 0
        remap = np.cumsum(present) - 1
        keep_g = present[key_g]
        keep_p = present[key_p]
        return tp, gi[keep_g], remap[key_g[keep_g]], pi[keep_p], remap[key_p[keep_p]]

    def _multiset_filter(self, gi: np.ndarray, gk: np.ndarray, pi: np.ndarray,
                         pk: np.ndarray, rem_g: np.ndarray, rem_p: np.ndarray
                         ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Bound 4: split the groups further by the multiset of each row's values on the
        columns still to be assigned (gold: the unassigned gold columns; predicted: the free
        columns of the current subset), hashed as a sum of per-value random weights. Returns
        the tp of that finer grouping and the rows that still have a counterpart."""
        if len(gi) == 0 or len(pi) == 0:
            return 0, gi[:0], gk[:0], pi[:0], pk[:0]
        with np.errstate(over="ignore"):
            key_g = gk.astype(np.uint64) * _MUL + rem_g
            key_p = pk.astype(np.uint64) * _MUL + rem_p
        return _split_by_keys(gi, key_g, pi, key_p)

    def _child(self, gi: np.ndarray, gk: np.ndarray, pi: np.ndarray, pk: np.ndarray,
               j: int, c: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The child node's rows: :meth:`_refine`. Bound 4 needs no work below a subset's
        root: rows of one group there share their remaining multiset (hash ``h``), and a
        refinement keeps only rows of one group with one value ``v`` together, whose
        remaining multisets are then all ``h - w(v)`` again. Regrouping by it would split
        nothing (it was measured as 17% of the search's time on 5-value tables)."""
        return self._refine(gi, gk, pi, pk, j, c)

    def _batch_tp(self, gi: np.ndarray, gk: np.ndarray, pi: np.ndarray, pk: np.ndarray,
                  j: int, cands: list[int]) -> np.ndarray | None:
        """The tp :meth:`_refine` would return for each candidate ``c`` of gold column ``j``,
        all in one dense count (gold's histogram is shared; the predicted keys of all
        candidates are offset into disjoint ranges). ``None`` when the key range is not
        small, or there is nothing to count; then the caller refines one by one. Counts one
        node per candidate."""
        batch = self._batch(gi, gk, pi, pk, j, cands)
        return None if batch is None else batch[0]

    def _batch(self, gi: np.ndarray, gk: np.ndarray, pi: np.ndarray, pk: np.ndarray, j: int,
               cands: list[int]) -> tuple[np.ndarray, tuple[np.ndarray, ...]] | None:
        """:meth:`_batch_tp`, plus what :meth:`_batch_child` needs to build a candidate's
        child from the same counts instead of counting again."""
        if len(gi) == 0 or len(pi) == 0:
            return None
        span = (int(max(gk.max(), pk.max())) + 1) * self.V
        m = len(cands)
        if span > max(_DENSE_MIN, 2 * (len(gi) + len(pi))) or m * span > _BATCH_MAX:
            return None
        for _ in cands:
            self._tick()
        key_g = gk * self.V + self.enc.gold_cols[j][gi]
        hist_g = np.bincount(key_g, minlength=span)
        key_p = (pk * self.V)[None, :] + self.pred_mat[np.ix_(cands, pi)]  # m x rows
        offsets = np.arange(m, dtype=np.int64)[:, None] * span
        hist_p = np.bincount((offsets + key_p).ravel(), minlength=m * span).reshape(m, span)
        both = np.minimum(hist_p, hist_g[None, :])
        return both.sum(axis=1), (gi, key_g, pi, key_p, both)

    def _batch_child(self, ctx: tuple[np.ndarray, ...], i: int
                     ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The child :meth:`_refine_dense` would build for the ``i``-th candidate of a
        :meth:`_batch`, from its counts (same rows, same group ids; one node)."""
        self._tick()
        gi, key_g, pi, key_p, both = ctx
        present = both[i] > 0
        remap = np.cumsum(present) - 1
        keys = key_p[i]
        keep_g, keep_p = present[key_g], present[keys]
        return (int(both[i].sum()), gi[keep_g], remap[key_g[keep_g]], pi[keep_p],
                remap[keys[keep_p]])

    def evaluate(self, mapping: tuple[int, ...]) -> int:
        """Row tp of a complete mapping."""
        gi = np.arange(len(self.enc.gold_cols[0]) if self.g else 0)
        pi = np.arange(len(self.enc.pred_cols[0]) if self.p else 0)
        gk = np.zeros(len(gi), dtype=np.int64)
        pk = np.zeros(len(pi), dtype=np.int64)
        tp = min(len(gi), len(pi))
        for j, c in enumerate(mapping):
            tp, gi, gk, pi, pk = self._refine(gi, gk, pi, pk, j, c)
        return tp

    def _phase_root(self, subset: list[int]) -> tuple[int, np.ndarray, np.ndarray,
                                                      np.ndarray, np.ndarray]:
        """Set up bound 4 for one subset: every row's hash of its whole value multiset, and
        the root's rows grouped by it (rows without a counterpart dropped)."""
        n_gold, n_pred = len(self.enc.gold_cols[0]), len(self.enc.pred_cols[0])
        self.allowed = [False] * self.p
        for c in subset:
            self.allowed[c] = True
        with np.errstate(over="ignore"):
            rem_g = np.zeros(n_gold, dtype=np.uint64)
            for w in self.w_gold:
                rem_g += w
            rem_p = np.zeros(n_pred, dtype=np.uint64)
            for c in subset:
                rem_p += self.w_pred[c]
        return self._multiset_filter(np.arange(n_gold), np.zeros(n_gold, dtype=np.int64),
                                     np.arange(n_pred), np.zeros(n_pred, dtype=np.int64),
                                     rem_g, rem_p)
