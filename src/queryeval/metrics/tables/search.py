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
from itertools import combinations
from math import comb
from typing import Any

import numpy as np

from queryeval.metrics.deadline import check
from queryeval.metrics.tables.encode import Encoded

# Budget, SearchResult and f1_from_sums stay importable from here (this module's API)
from queryeval.metrics.tables.search_base import (
    _MAX_SUBSETS,
    _PROBE_NODES,
    _PROJECTION_MARGIN,
    _VOTE_ROUNDS,
    _VOTE_WORK,
    EPS,
    Budget,
    SearchResult,
    _OutOfBudget,
    _ProbeOver,
    f1_from_sums,
)
from queryeval.metrics.tables.search_incumbents import Incumbents
from queryeval.metrics.tables.search_rows import RowGroups


class _Search(RowGroups, Incumbents):
    """One search (module docstring): its state, the bounds, the depth-first search and
    :meth:`run`; the row groups are :class:`RowGroups`' and the incumbents
    :class:`Incumbents`'."""

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
        distinct = self.enc.gold_distinct
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
        check()  # the case's scoring deadline (metrics/deadline.py), in and out of the budget
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

    def _prunable(self, tp_ub: int, ent_ub: float) -> bool:
        return tp_ub < self.best_tp or (tp_ub == self.best_tp and ent_ub <= self.best_ent + EPS)

    # -- search --------------------------------------------------------------------------------

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

    def _subsets(self) -> list[list[int]] | None:
        """The subsets of ``g`` predicted columns searched one by one under bound 4 (all
        ``p`` columns when ``p == g``); ``None`` when there are too many (then bound 4 is
        off and one search covers every mapping)."""
        if comb(self.p, self.g) > _MAX_SUBSETS:
            return None
        return [list(x) for x in combinations(range(self.p), self.g)]

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
