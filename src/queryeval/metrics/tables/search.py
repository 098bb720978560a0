"""Exact column-mapping search by branch and bound.

Problem. Gold has ``g`` columns, the prediction ``p >= g``. A mapping ``σ`` sends each gold
column ``j`` to a distinct predicted column ``σ(j)``; there are ``p!/(p-g)!`` of them. Its
score is the pair (row tp, entity F1), compared lexicographically: row tp is the multiset
intersection of the gold rows with the predicted rows projected through ``σ`` (row F1 is
``2·tp/(n_gold+n_pred)``, increasing in tp, so maximising tp maximises row F1), and entity
F1 is ``F1(P̄, R̄)`` with ``P̄ = (1/g)·Σ_j sp[j, σ(j)]``, ``R̄ = (1/g)·Σ_j sr[j, σ(j)]``.

Search. Depth-first over the gold columns in a fixed order; a node is a partial mapping of
the first ``d`` of them. For each node we keep the gold and predicted rows grouped by their
values on the assigned columns (integer group ids, refined one column at a time by
``factorize(group · V + value)``).

Bounds, and why they are admissible (never below the best completion's score):

1. ``tp(σ) <= tp(partial)``: projecting rows onto a subset of the gold columns can only
   merge groups, and for a group split into sub-groups ``Σ_i min(a_i, b_i) <= min(Σa_i,
   Σb_i)``. So the partial intersection bounds every completion (and it only decreases
   with depth). The same fact lets us drop rows whose group has no counterpart on the
   other side: they can never be matched deeper down.
2. ``tp(σ) <= overlap[j, σ(j)]`` for every ``j`` (bound 1 with the single column ``j``),
   hence ``tp(σ) <= min_{j unassigned} max_{c free} overlap[j, c]``.
3. Entity F1 is increasing in ``P̄`` and in ``R̄`` (``∂F1/∂P = 2R²/(P+R)² >= 0``), and
   ``P̄ <= (Σ_assigned sp + Σ_{j unassigned} max_{c free} sp[j, c]) / g`` (each term is
   maximised separately, dropping the distinct-columns constraint), likewise ``R̄``; so
   F1 of those two upper bounds bounds the entity F1 of every completion.

4. Multiset bound (while searching one subset ``S`` of ``g`` predicted columns): a row pair
   matched by a completion agrees on the assigned columns and, the completion being a
   bijection from the unassigned gold columns onto the free columns of ``S``, has equal
   value multisets on those. So grouping rows by (assigned values, remaining multiset) is a
   coarser grouping than any completion's, and bound 1's argument applies. Multisets are
   hashed as sums of random 64-bit weights per value; a collision merges groups, which can
   only raise ``Σ min``, so the bound stays admissible. With ``p > g`` each subset ``S`` is
   searched in turn (at most ``_MAX_SUBSETS`` of them; otherwise bound 4 is off).

A child is pruned when its bound pair is lexicographically at most the incumbent's
(``tp_ub < best_tp``, or equal tp and ``ent_ub <= best_ent + 1e-12``): it cannot improve
the figures (ties give equal figures, so dropping them loses nothing).

Symmetries (each preserves both figures, so one representative suffices): identical
predicted columns are interchangeable, so only the lowest-index free member of each class
of identical predicted columns is tried; identical gold columns can swap their predicted
columns, so their predicted indices must increase along the search order. Any mapping is
brought into this canonical form by swaps that keep its score and lexicographically
decrease its index sequence, so the canonical mappings include an optimum.

Incumbents (outside the budget): the greedy below; row votes per subset (rows sharing a
multiset vote for column pairs whose values agree; one-shot assignment and an iterative
one that fixes the most confident pair and regroups), for every subset before any search;
the seeded greedy after ``_PROBE_NODES`` nodes. Easy cases finish in the first
``_PROBE_NODES`` nodes of the plain search and never set up subsets.

Budget. Every group refinement counts as a node; past ``max_nodes`` nodes or
``max_seconds`` seconds the search stops and returns its incumbent with ``exact=False``.
The incumbent starts as a greedy mapping on the pairwise overlaps, evaluated outside the
budget, so a result always exists. When the search has not finished after
``_PROBE_NODES`` nodes, a second, seeded incumbent is computed (best two-column pair by
joint multiset overlap, then greedy by refined tp; ``O(p²)`` refinements, outside the
budget) and the search restarts with it: on low-cardinality columns the first greedy is a
guess and a poor incumbent prunes nothing.

Early stop and the ceiling left open. ``Budget.stall_nodes``: once the incumbent has not
improved for that many nodes and the progress estimate (each node's share of the search
space split evenly among its candidates; a settled candidate adds its share) projects more
than 1.25 times a limit for the whole search, the search stops with ``exact=False`` instead of
running into the limit. Either way an inexact result carries ``tp_bound``, a proven upper
bound on every mapping's tp: the search settles a part of the mapping space only by pruning
it against an incumbent (so below the best tp), and what is left open is covered by the
deepest open node's bound, the bounds of the unvisited children of the open nodes above it,
the root bounds (bound 4) of the subsets not searched yet, and ``min_j max_c overlap`` with
the row counts when nothing finer is known.

Batched children. Before refining the children of a node one by one, bound 1 is computed
for all of them in one dense count (gold's histogram over (group, value) is shared; the
predicted keys of the candidates are offset into disjoint ranges), and children it prunes
are never refined. The batch gives exactly the tp each refinement would (tested), so the
pruning is the same bound 1, only cheaper; each candidate still counts as one node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Any

import numpy as np

from queryeval.metrics.tables.encode import Encoded, factorize

EPS = 1e-12
_DENSE_MIN = 1 << 15  # dense counting is cheaper than hashing below this range
_PROBE_NODES = 64  # search nodes tried before computing the seeded incumbent
_BATCH_MAX = 1 << 22  # largest histogram of a batched child evaluation
_MAX_SUBSETS = 64  # p > g: largest number of predicted-column subsets searched one by one
_VOTE_ROUNDS = 12  # iterative vote: column pairs fixed one at a time, then one assignment
_VOTE_WORK = 200_000_000  # cell visits allowed for the up-front votes of all subsets
_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier combining a group id with a row hash


@dataclass(frozen=True)
class Budget:
    """Limits on the mapping search. ``None`` disables a limit. A node is one refinement of
    the row groups (one pass over the still-matchable rows). The defaults finish every real
    case we have seen exactly; a time limit makes results depend on machine speed, so set
    ``max_seconds=None`` where reproducibility matters more than latency."""

    max_nodes: int | None = 200_000
    max_seconds: float | None = 30.0
    stall_nodes: int | None = 5_000
    """Give up early (``exact=False``) once the incumbent has not improved for this many
    nodes *and* the search's progress estimate projects more than 1.25 x ``max_nodes`` nodes
    or ``max_seconds`` seconds for the whole search: such a search would run out anyway, so
    waiting for the limit gains nothing. No effect when both limits are ``None``; ``None``
    turns it off."""


@dataclass(frozen=True)
class SearchResult:
    """The best mapping found (predicted column index per gold column), its row tp, whether
    the search finished (``exact``) and how many nodes it explored."""

    mapping: tuple[int, ...]
    tp: int
    exact: bool
    nodes: int
    tp_bound: int = -1
    """A proven upper bound on the row tp of every mapping: ``tp`` when exact, otherwise the
    largest bound among the parts of the search left open (``-1``: not computed)."""


class _OutOfBudget(Exception):
    pass


# Early stop: the projected work must exceed a limit this many times. On 70 random planted
# searches that finish, the projection overestimated their size by at most 1.21x while they
# were stalled, mostly under 1.07x (bench/tables.py --stall-sweep 30 / 40 --seed 2).
_PROJECTION_MARGIN = 1.25


class _ProbeOver(Exception):
    pass


def f1_from_sums(psum: float, rsum: float, g: int) -> float:
    """Entity F1 from summed per-column precisions / recalls over ``g`` columns."""
    p, r = psum / g, rsum / g
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


class _Search:
    def __init__(self, enc: Encoded, budget: Budget) -> None:
        self.enc = enc
        self.budget = budget
        self.g = len(enc.gold_cols)
        self.p = len(enc.pred_cols)
        self.V = enc.n_values
        self.ov = enc.overlap
        self.sp = enc.set_precision
        self.sr = enc.set_recall
        self.nodes = 0
        self.counting = True
        self.probe_until: int | None = None
        self.start = time.perf_counter()
        self.order = self._gold_order()
        self.prev_twin = self._gold_twins()
        self.pred_class = self._pred_classes()
        self.pred_mat = (np.stack(enc.pred_cols) if self.p
                         else np.zeros((0, 0), dtype=np.int64))
        self.sigma = [-1] * self.g
        self.used = [False] * self.p
        self.best_tp = -1
        self.best_ent = -1.0
        self.best_map: tuple[int, ...] = ()
        # Multiset bound (bound 4): active while searching one subset of g predicted columns.
        self.allowed = [True] * self.p
        weights = np.random.default_rng(0x5EED).integers(
            1, np.iinfo(np.int64).max, size=max(self.V, 1), dtype=np.int64).astype(np.uint64)
        self.w_gold = [weights[col] for col in enc.gold_cols]
        self.w_pred = [weights[col] for col in enc.pred_cols]
        self.seeded = False
        self.voted = False
        # Upper bound left open when the budget runs out, and progress for the early stop.
        self.frames: list[list[Any]] = []  # per open DFS node: [own tp bound, unvisited bounds]
        n_rows = min(len(enc.gold_cols[0]), len(enc.pred_cols[0])) if self.g and self.p else 0
        self.static_bound = min(n_rows, int(self.ov.max(axis=1).min())) if self.g else n_rows
        self.outside: int | None = -1  # bound outside the current DFS (None: unknown)
        self.left_open = -1  # _open_tp_bound() when the budget ran out
        self.progress = 0.0  # share of the current search space settled, 0..1
        self.origin = (0, self.start)  # nodes and time when progress was last 0
        self.improved_at = 0  # node count at the last incumbent improvement

    # -- setup ---------------------------------------------------------------------------------

    def _gold_order(self) -> list[int]:
        """Fewest useful candidates first (small branching near the root), then the most
        distinct values (groups split fastest)."""
        cands = (self.ov > 0).sum(axis=1)
        distinct = [len(np.unique(col)) for col in self.enc.gold_cols]
        return sorted(range(self.g), key=lambda j: (cands[j], -distinct[j], j))

    def _gold_twins(self) -> list[int]:
        """For each gold column, the previous identical gold column in search order, or -1."""
        prev = [-1] * self.g
        last: dict[tuple[bytes, bytes], int] = {}
        for j in self.order:
            key = (self.enc.gold_cols[j].tobytes(), self.enc.gold_ent_cols[j].tobytes())
            if key in last:
                prev[j] = last[key]
            last[key] = j
        return prev

    def _pred_classes(self) -> list[int]:
        classes: dict[tuple[bytes, bytes], int] = {}
        out = []
        for c in range(self.p):
            key = (self.enc.pred_cols[c].tobytes(), self.enc.pred_ent_cols[c].tobytes())
            out.append(classes.setdefault(key, len(classes)))
        return out

    # -- primitives ----------------------------------------------------------------------------

    def _tick(self) -> None:
        if not self.counting:
            return
        self.nodes += 1
        if self.probe_until is not None and self.nodes > self.probe_until:
            raise _ProbeOver
        b = self.budget
        if ((b.max_nodes is not None and self.nodes > b.max_nodes)
                or (b.max_seconds is not None and self.nodes % 32 == 0
                    and time.perf_counter() - self.start > b.max_seconds)
                or (b.stall_nodes is not None and self.nodes % 64 == 0
                    and self.nodes - self.improved_at >= b.stall_nodes and self._hopeless())):
            self.left_open = self._open_tp_bound()
            raise _OutOfBudget

    def _open_tp_bound(self) -> int:
        """An upper bound on the tp of every mapping the search has not settled yet: the
        deepest open node's own bound (it covers the node being expanded), the bounds of the
        unvisited children of every open node above it, and ``outside`` for the parts of the
        mapping space the current depth-first search does not cover (unknown: the static
        bound). Settled parts were pruned against an incumbent, so ``max(best tp, this)``
        bounds every mapping."""
        out = self.static_bound if self.outside is None else self.outside
        last = len(self.frames) - 1
        for k, (own, pending) in enumerate(self.frames):
            if k == last or pending is None:
                out = max(out, own)
            elif pending:
                out = max(out, max(pending))
        return out

    def _hopeless(self) -> bool:
        """Whether the progress estimate projects the search to need more than
        ``_PROJECTION_MARGIN`` times a limit (nodes or seconds) in all."""
        b = self.budget
        share = max(self.progress, 1e-12)
        nodes0, time0 = self.origin
        if (b.max_nodes is not None
                and nodes0 + (self.nodes - nodes0) / share > _PROJECTION_MARGIN * b.max_nodes):
            return True
        now = time.perf_counter()
        return (b.max_seconds is not None and time0 - self.start + (now - time0) / share
                > _PROJECTION_MARGIN * b.max_seconds)

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

    def _entity(self, mapping: tuple[int, ...]) -> float:
        psum = sum(self.sp[j, c] for j, c in enumerate(mapping))
        rsum = sum(self.sr[j, c] for j, c in enumerate(mapping))
        return f1_from_sums(psum, rsum, self.g)

    def _offer(self, mapping: tuple[int, ...], tp: int, ent: float) -> None:
        if tp > self.best_tp or (tp == self.best_tp and ent > self.best_ent + EPS):
            self.best_tp, self.best_ent, self.best_map = tp, ent, mapping
            self.improved_at = self.nodes

    def _prunable(self, tp_ub: int, ent_ub: float) -> bool:
        return tp_ub < self.best_tp or (tp_ub == self.best_tp and ent_ub <= self.best_ent + EPS)

    # -- search --------------------------------------------------------------------------------

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

    def _remaining_bounds(self, depth: int, free: list[int], matrices: tuple[np.ndarray, ...]
                          ) -> list[np.ndarray] | None:
        """Bounds 2 and 3 for the gold columns after ``depth``, one entry per choice of
        ``free[k]`` for the current gold column (which removes it from the others' options):
        for each of ``matrices`` (overlap, set precision, set recall), each remaining gold
        column's best free column, per choice; ``None`` when no gold column remains."""
        rest = self.order[depth + 1:]
        if not rest:
            return None
        ix = np.ix_(rest, free)
        pick = np.arange(len(free))[None, :]
        out = []
        for matrix in matrices:
            sub = matrix[ix]
            arg = sub.argmax(axis=1)
            top1 = sub[np.arange(len(rest)), arg]
            masked = sub.copy()
            masked[np.arange(len(rest)), arg] = np.iinfo(np.int64).min if matrix is self.ov \
                else -np.inf
            top2 = masked.max(axis=1)  # free has more members than rest, so this exists
            out.append(np.where(arg[:, None] == pick, top2[:, None], top1[:, None]))
        return out

    def _rest_tp_bounds(self, depth: int, free: list[int], tp: int) -> np.ndarray | None:
        """Bound 2 per choice of ``free[k]`` (``None``: no bound). Skipped when every
        remaining overlap is at least the node's ``tp``: a child's tp never exceeds its
        parent's, so the bound could not lower any child's (the usual case on
        low-cardinality tables, where it saves a pass per node)."""
        rest = self.order[depth + 1:]
        if not rest or int(self.ov[np.ix_(rest, free)].min()) >= tp:
            return None
        return self._remaining_bounds(depth, free, (self.ov,))[0].min(axis=0)

    def _candidates(self, j: int) -> list[int]:
        lo = self.sigma[self.prev_twin[j]] if self.prev_twin[j] >= 0 else -1
        seen: set[int] = set()
        out = []
        for c in range(self.p):
            if self.used[c] or not self.allowed[c] or self.pred_class[c] in seen:
                continue
            seen.add(self.pred_class[c])  # lowest free member of each class only
            if c > lo:
                out.append(c)
        return out

    def _dfs(self, depth: int, tp: int, psum: float, rsum: float, gi: np.ndarray,
             gk: np.ndarray, pi: np.ndarray, pk: np.ndarray, ub: int | None = None,
             weight: float = 1.0) -> None:
        """Search below one node. ``ub``: its tp bound (``tp`` when ``None``), kept on
        :attr:`frames` while it is open; ``weight``: its share of the search space, added to
        :attr:`progress` once it is settled (a share of it per settled child before)."""
        start = self.progress
        if depth == self.g:
            self._offer(tuple(self.sigma), tp, f1_from_sums(psum, rsum, self.g))
            self.progress = start + weight
            return
        frame: list[Any] = [tp if ub is None else min(tp, ub), None]
        self.frames.append(frame)
        try:
            self._expand(depth, tp, psum, rsum, gi, gk, pi, pk, frame, weight)
        finally:
            self.frames.pop()
        self.progress = start + weight

    def _expand(self, depth: int, tp: int, psum: float, rsum: float, gi: np.ndarray,
                gk: np.ndarray, pi: np.ndarray, pk: np.ndarray, frame: list[Any],
                weight: float) -> None:
        j = self.order[depth]
        free = [x for x in range(self.p) if not self.used[x] and self.allowed[x]]
        tp_rest = self._rest_tp_bounds(depth, free, tp)
        position = {c: k for k, c in enumerate(free)}
        cands = self._candidates(j)
        share = weight / max(len(cands), 1)  # each candidate's share of the progress
        ent_rest: list[np.ndarray] = []

        def prunable(tp_ub: int, k: int, ps: float, rs: float) -> bool:
            """:meth:`_prunable` with bound 3 computed only when the tp bound ties the
            incumbent (the only case where it decides), once per node."""
            if tp_ub != self.best_tp:
                return tp_ub < self.best_tp
            if not ent_rest:
                sums = self._remaining_bounds(depth, free, (self.sp, self.sr))
                ent_rest.extend(np.zeros((2, len(free))) if sums is None
                                else (sums[0].sum(axis=0), sums[1].sum(axis=0)))
            return self._prunable(tp_ub, f1_from_sums(ps + ent_rest[0][k],
                                                      rs + ent_rest[1][k], self.g))

        inf = np.iinfo(np.int64).max
        live = []
        for c in cands:
            k = position[c]
            ps, rs = psum + self.sp[j, c], rsum + self.sr[j, c]
            rest_ub = inf if tp_rest is None else int(tp_rest[k])
            if prunable(min(tp, int(self.ov[j, c]), rest_ub), k, ps, rs):
                self.progress += share
                continue
            live.append((c, ps, rs, k, rest_ub))
        batch = self._batch(gi, gk, pi, pk, j, [x[0] for x in live]) if len(live) > 1 else None
        index: list[int | None] = [None] * len(live)  # each live child's row in the batch
        if batch is not None:  # bound 1 for every child, one pass; prune before refining
            kept = [(x, i) for i, (x, t) in enumerate(zip(live, batch[0], strict=True))
                    if not prunable(min(int(t), x[4]), x[3], x[1], x[2])]
            self.progress += share * (len(live) - len(kept))
            live, index = [x for x, _ in kept], [i for _, i in kept]
        children = []
        for (c, ps, rs, k, rest_ub), i in zip(live, index, strict=True):
            child = (self._child(gi, gk, pi, pk, j, c) if batch is None or i is None
                     else self._batch_child(batch[1], i))
            if prunable(min(child[0], rest_ub), k, ps, rs):
                self.progress += share
                continue
            children.append((child[0], ps + rs, c, ps, rs, k, rest_ub, child))
        del batch  # its counts are not needed below this node
        children.sort(key=lambda ch: (-ch[0], -ch[1], ch[2]))
        bounds = [min(ch[0], ch[6]) for ch in children]
        for i, (ctp, _, c, ps, rs, k, rest_ub, child) in enumerate(children):
            frame[1] = bounds[i + 1:]  # the children not visited yet
            if prunable(min(ctp, rest_ub), k, ps, rs):
                self.progress += share
                continue
            self.sigma[j], self.used[c] = c, True
            try:
                self._dfs(depth + 1, ctp, ps, rs, *child[1:], ub=rest_ub, weight=share)
            finally:
                self.sigma[j], self.used[c] = -1, False

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

    def _subsets(self) -> list[list[int]] | None:
        """The subsets of ``g`` predicted columns searched one by one under bound 4 (all
        ``p`` columns when ``p == g``); ``None`` when there are too many (then bound 4 is
        off and one search covers every mapping)."""
        if comb(self.p, self.g) > _MAX_SUBSETS:
            return None
        return [list(x) for x in combinations(range(self.p), self.g)]

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

    def _search_from(self, root: tuple[np.ndarray, ...], root_tp: int,
                     weight: float = 1.0) -> None:
        """Branch and bound from ``root`` (``weight``: its share of the progress); after
        ``_PROBE_NODES`` nodes without finishing, the seeded incumbent is computed once and
        the search starts over."""
        start = self.progress
        try:
            if not self.seeded and self.g >= 2:
                self.probe_until = self.nodes + _PROBE_NODES
            self._dfs(0, root_tp, 0.0, 0.0, *root, weight=weight)
        except _ProbeOver:
            self.probe_until = None
            self.progress = start
            self.sigma, self.used = [-1] * self.g, [False] * self.p
            self.seeded = True
            self.counting = False
            try:
                self._seeded_incumbent()
            finally:
                self.counting = True
            self._dfs(0, root_tp, 0.0, 0.0, *root, weight=weight)
        finally:
            self.probe_until = None

    def run(self) -> SearchResult:
        n_gold = len(self.enc.gold_cols[0])
        n_pred = len(self.enc.pred_cols[0])
        exact = True
        self._incumbent()
        subsets = self._subsets()
        root = (np.arange(n_gold), np.zeros(n_gold, dtype=np.int64),
                np.arange(n_pred), np.zeros(n_pred, dtype=np.int64))
        try:
            if subsets is not None and self.g >= 2:
                # Easy cases (distinguishable columns) finish in a few nodes of the plain
                # search; only when they do not are the subsets, bound 4 and the row-vote
                # incumbent worth setting up.
                try:
                    self.probe_until = self.nodes + _PROBE_NODES
                    self._dfs(0, min(n_gold, n_pred), 0.0, 0.0, *root)
                    return SearchResult(self.best_map, self.best_tp, True, self.nodes,
                                        self.best_tp)
                except _ProbeOver:
                    self.sigma, self.used = [-1] * self.g, [False] * self.p
                finally:
                    self.probe_until = None
            if subsets is None:
                self.progress, self.origin = 0.0, (self.nodes, time.perf_counter())
                self._search_from(root, min(n_gold, n_pred))
            else:
                self.outside = None  # until every subset's root bound is known
                phases = []
                for subset in subsets:
                    self._tick()
                    phases.append((self._phase_root(subset), subset))
                phases.sort(key=lambda ph: -ph[0][0])  # most promising subset first
                # Row votes for every subset first (outside the budget): the root bounds
                # hardly tell subsets apart on low-cardinality columns, and a search stuck in
                # a wrong subset must not keep the right one's incumbent from being seen.
                self.counting = False
                self.voted = True
                per_vote = (n_gold + n_pred) * self.g * (min(self.g, _VOTE_ROUNDS) + 1)
                votes_left = max(1, _VOTE_WORK // max(per_vote, 1))  # bounded work
                try:
                    for root, subset in phases[:votes_left]:
                        if (self.budget.max_seconds is not None
                                and time.perf_counter() - self.start > self.budget.max_seconds):
                            break  # the votes count against a time limit too
                        if root[0] >= self.best_tp:
                            self._phase_root(subset)
                            self._vote_incumbent(root, subset)
                finally:
                    self.counting = True
                # Every mapping uses one subset, so the subsets not searched yet are bounded
                # by their root bounds (bound 4).
                weight = 1.0 / len(phases)
                self.origin = (self.nodes, time.perf_counter())
                for k, (root, subset) in enumerate(phases):
                    self.progress = k * weight
                    self.outside = max((ph[0][0] for ph in phases[k + 1:]), default=-1)
                    if root[0] < self.best_tp:
                        continue  # bound 4 at the root: no mapping into it can improve
                    self._phase_root(subset)
                    self._search_from(root[1:], root[0], weight)
        except _OutOfBudget:
            exact = False
            if subsets is not None and not self.voted and self.g >= 2:
                self._late_vote(subsets)
        bound = max(self.best_tp, min(self.left_open, self.static_bound)) if not exact \
            else self.best_tp
        return SearchResult(self.best_map, self.best_tp, exact, self.nodes, bound)

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


def best_mapping(enc: Encoded, budget: Budget | None = None) -> SearchResult:
    """The mapping maximising (row tp, entity F1), by branch and bound (module docstring).

    Requires at least one gold column, ``p >= g`` and rows on both sides.
    """
    if not enc.gold_cols or len(enc.pred_cols) < len(enc.gold_cols):
        raise ValueError("the search needs 1 <= gold columns <= predicted columns")
    return _Search(enc, budget or Budget()).run()


def positional_tp(enc: Encoded) -> int:
    """Row tp of the positional mapping (gold column i -> predicted column i)."""
    search = _Search(enc, Budget(max_nodes=None, max_seconds=None))
    return search.evaluate(tuple(range(len(enc.gold_cols))))


def _split_by_keys(gi: np.ndarray, key_g: np.ndarray, pi: np.ndarray, key_p: np.ndarray
                   ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group gold and predicted rows by their keys: the tp of that grouping (per key, the
    smaller count) and the rows that still have a counterpart, with their new group ids."""
    codes, k = factorize(np.concatenate([key_g, key_p]))
    cg, cp = codes[:len(gi)], codes[len(gi):]
    cnt_g = np.bincount(cg, minlength=k)
    cnt_p = np.bincount(cp, minlength=k)
    tp = int(np.minimum(cnt_g, cnt_p).sum())
    keep_g = cnt_p[cg] > 0
    keep_p = cnt_g[cp] > 0
    return tp, gi[keep_g], cg[keep_g], pi[keep_p], cp[keep_p]
