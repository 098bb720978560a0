"""Incumbents of the column-mapping search (:mod:`queryeval.metrics.tables.search`), all
computed outside the node budget so a result always exists: the greedy mapping on pairwise
overlaps, the seeded greedy (best two-column pair by joint multiset overlap, then greedy by
refined tp), and the row votes (rows sharing a value multiset vote for the column pairs
whose values agree: a one-shot assignment and an iterative one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from queryeval.metrics.tables.encode import factorize
from queryeval.metrics.tables.search_base import _BATCH_MAX, _VOTE_ROUNDS, EPS, f1_from_sums

if TYPE_CHECKING:
    from queryeval.metrics.tables.encode import Encoded


class Incumbents:
    """Incumbent methods of :class:`~queryeval.metrics.tables.search._Search` (a mixin: the
    attributes below are set by its ``__init__``, the row-group methods come from
    :class:`~queryeval.metrics.tables.search_rows.RowGroups`)."""

    enc: Encoded
    g: int
    p: int
    V: int
    ov: np.ndarray
    sp: np.ndarray
    sr: np.ndarray
    order: list[int]
    nodes: int
    counting: bool
    best_tp: int
    best_ent: float
    best_map: tuple[int, ...]
    improved_at: int
    _refine: Callable[..., tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    _child: Callable[..., tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    _phase_root: Callable[..., tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    evaluate: Callable[[tuple[int, ...]], int]

    def _entity(self, mapping: tuple[int, ...]) -> float:
        psum = sum(self.sp[j, c] for j, c in enumerate(mapping))
        rsum = sum(self.sr[j, c] for j, c in enumerate(mapping))
        return f1_from_sums(psum, rsum, self.g)

    def _offer(self, mapping: tuple[int, ...], tp: int, ent: float) -> None:
        if tp > self.best_tp or (tp == self.best_tp and ent > self.best_ent + EPS):
            self.best_tp, self.best_ent, self.best_map = tp, ent, mapping
            self.improved_at = self.nodes

    def _incumbent(self) -> None:
        """Greedy mapping (search order, best free column by overlap then set precision +
        recall), evaluated outside the budget so a result always exists."""
        used: set[int] = set()
        mapping = [0] * self.g
        for j in self.order:
            c = max((x for x in range(self.p) if x not in used),
                    key=lambda x: (self.ov[j, x], self.sp[j, x] + self.sr[j, x], -x))
            mapping[j] = c
            used.add(c)
        m = tuple(mapping)
        self.counting = False
        try:
            self._offer(m, self.evaluate(m), self._entity(m))
        finally:
            self.counting = True

    def _seeded_incumbent(self) -> None:
        """A second greedy mapping that looks at rows, not single columns: the first two gold
        columns of the search order take the pair of predicted columns with the largest
        two-column multiset overlap (``p·(p-1)`` refinements), then each further gold
        column takes the free predicted column that keeps the most rows matched.

        Why: with few values per column every single-column overlap is about the same, so
        the first greedy is a guess; the joint distribution of two columns is not (a true
        pair of columns repeats the gold pair's sampling fluctuations, a wrong pair does
        not), and from two correct columns on, the refined tp separates the right column
        from the others. Costs ``O(p²)`` refinements outside the budget."""
        n_gold, n_pred = len(self.enc.gold_cols[0]), len(self.enc.pred_cols[0])
        root = (np.arange(n_gold), np.zeros(n_gold, dtype=np.int64),
                np.arange(n_pred), np.zeros(n_pred, dtype=np.int64))
        j1, j2 = self.order[0], self.order[1]

        def rank(j: int, c: int, tp: int) -> tuple[int, float, int]:
            return tp, self.sp[j, c] + self.sr[j, c], -c

        best = None
        for a in range(self.p):
            first = self._refine(*root, j1, a)
            for b in range(self.p):
                if b == a:
                    continue
                second = self._refine(*first[1:], j2, b)
                key = (second[0], self.sp[j1, a] + self.sr[j1, a] + self.sp[j2, b]
                       + self.sr[j2, b], -a, -b)
                if best is None or key > best[0]:
                    best = (key, a, b, second)
        if best is None:  # unreachable: p >= g >= 2
            return
        _, a, b, state = best
        mapping = [-1] * self.g
        mapping[j1], mapping[j2] = a, b
        used = {a, b}
        for j in self.order[2:]:
            options = []
            for c in range(self.p):
                if c not in used:
                    child = self._refine(*state[1:], j, c)
                    options.append((rank(j, c, child[0]), c, child))
            _, c, state = max(options, key=lambda o: o[0])
            mapping[j] = c
            used.add(c)
        m = tuple(mapping)
        self._offer(m, self.evaluate(m), self._entity(m))

    def _votes(self, state: tuple[Any, ...], gold_js: list[int], pred_cs: list[int]
               ) -> np.ndarray | None:
        """Votes of the row pairs sharing a group of ``state`` for each (gold column, predicted
        column) pair whose values agree, weighted ``1/max(a, b)`` for a group of ``a`` gold
        and ``b`` predicted rows, double-centred (row and column effects removed: they do not
        change an assignment, and the agreement expected from the columns' value frequencies
        is such an effect). ``None`` when no rows are left."""
        from scipy.sparse import csr_matrix

        _, gi, gk, pi, pk = state
        if len(gi) == 0 or len(pi) == 0:
            return None
        k = int(max(gk.max(), pk.max())) + 1
        weight = 1.0 / np.maximum(np.maximum(np.bincount(gk, minlength=k),
                                             np.bincount(pk, minlength=k)), 1)
        g, m = len(gold_js), len(pred_cs)
        gold_vals = np.stack([self.enc.gold_cols[j][gi] for j in gold_js])
        pred_vals = np.stack([self.enc.pred_cols[c][pi] for c in pred_cs])
        keys_g = (gk[None, :] * self.V + gold_vals).ravel()
        keys_p = (pk[None, :] * self.V + pred_vals).ravel()
        codes, n_keys = factorize(np.concatenate([keys_g, keys_p]))
        rows_g, rows_p = np.repeat(np.arange(g), len(gi)), np.repeat(np.arange(m), len(pi))
        weights = np.tile(weight[pk], m)
        if max(g, m) * n_keys <= _BATCH_MAX:  # dense histograms: no sparse index sorting
            hist_gd = np.bincount(rows_g * n_keys + codes[:len(keys_g)],
                                  minlength=g * n_keys).reshape(g, n_keys).astype(np.float64)
            hist_pd = np.bincount(rows_p * n_keys + codes[len(keys_g):], weights=weights,
                                  minlength=m * n_keys).reshape(m, n_keys)
            votes = hist_gd @ hist_pd.T
        else:
            hist_g = csr_matrix((np.ones(len(keys_g)), (rows_g, codes[:len(keys_g)])),
                                shape=(g, n_keys))
            hist_p = csr_matrix((weights, (rows_p, codes[len(keys_g):])), shape=(m, n_keys))
            votes = (hist_g @ hist_p.T).toarray()
        return (votes - votes.mean(axis=1, keepdims=True) - votes.mean(axis=0, keepdims=True)
                + votes.mean())

    def _vote_incumbent(self, root: tuple[Any, ...], subset: list[int]) -> None:
        """Incumbents from rows, not columns: gold and predicted rows whose value multisets
        agree (``root`` holds them, grouped by multiset) are likely the same row with its
        columns permuted, and every such pair votes for the column pairs whose values agree
        (:meth:`_votes`). Offered: (a) the assignment with most votes
        (``linear_sum_assignment``); (b) an iterative one: fix the single column pair whose
        vote stands out most from its row's runner-up, regroup the rows by bound 4 with that
        pair assigned (groups become much finer, so the votes much sharper), vote again on
        the rest, and so on. Outside the budget; ``g`` vote rounds of ``O(rows · g)``."""
        from scipy.optimize import linear_sum_assignment

        state = root
        free_g, free_p = list(range(self.g)), list(subset)
        mapping = [-1] * self.g
        first = True
        rounds = 0
        while free_g:
            scores = self._votes(state, free_g, free_p)
            if scores is None:  # no rows left: any completion has the same tp
                for j, c in zip(free_g, free_p, strict=False):
                    mapping[j] = c
                break
            rows, cols = linear_sum_assignment(scores, maximize=True)
            rounds += 1
            if rounds > _VOTE_ROUNDS:  # bounded work: the rest by this assignment
                for i, x in zip(rows, cols, strict=True):
                    mapping[free_g[int(i)]] = free_p[int(x)]
                break
            if first:
                one_shot = [0] * self.g
                for i, x in zip(rows, cols, strict=True):
                    one_shot[free_g[int(i)]] = free_p[int(x)]
                m1 = tuple(one_shot)
                self._offer(m1, self.evaluate(m1), self._entity(m1))
                first = False
            spread = float(scores.std()) or 1.0
            best: tuple[float, int, int] | None = None
            for i, x in zip(rows, cols, strict=True):
                others = np.delete(scores[i], x)
                margin = (scores[i, x] - (others.max() if len(others) else 0.0)) / spread
                if best is None or margin > best[0]:
                    best = (margin, int(i), int(x))
            assert best is not None  # rows is not empty while free_g is not
            j, c = free_g[best[1]], free_p[best[2]]
            mapping[j] = c
            state = self._child(*state[1:], j, c)
            free_g.remove(j)
            free_p.remove(c)
        m2 = tuple(mapping)
        self._offer(m2, self.evaluate(m2), self._entity(m2))

    def _late_vote(self, subsets: list[list[int]]) -> None:
        """The budget ran out before any row-vote incumbent was computed: compute it for the
        most promising subset (outside the budget) so the result is never worse for it."""
        self.counting = False
        try:
            best = max(((self._phase_root(sub), sub) for sub in subsets), key=lambda x: x[0][0])
            self._phase_root(best[1])
            self._vote_incumbent(best[0], best[1])
        finally:
            self.counting = True
