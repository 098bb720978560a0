"""Exact choice of N per field: branch and bound over candidate cut-offs.

Objective (see :mod:`queryeval.tune.problem`): most questions passed, then highest mean recall,
then fewest tokens, subject to ``sum_f N_f * cost_f <= B`` and ``lo_f <= N_f <= max_n_f``
(``lo_f = min(min_n, max_n_f)``).

Why it is exact
---------------

**1. Candidate values.** For field f let ``R_f`` be the ranks of its ground-truth items that lie
in ``(lo_f, max_n_f]``; the candidates are ``C_f = {lo_f} | R_f``. Take any feasible plan and
lower each N_f to ``N'_f = max{c in C_f : c <= N_f}`` (it exists: ``lo_f <= N_f``). No rank of
field f lies in ``(N'_f, N_f]``, so every question finds the same items at N'_f as at N_f:
recall is unchanged; a question's depth on f is 0, a rank, or unreachable, so whether
``N_f >= max(depth, lo_f)`` holds is unchanged too: passed is unchanged. Tokens do not grow
(cost_f >= 0), so the plan stays within budget with an objective at least as good. Hence the
optimum over ``C_1 x ... x C_F`` equals the optimum over all integer plans.

**2. Search.** Depth-first search assigns fields in order of decreasing cost (the most
constrained first), each field's candidates from the largest affordable one down. A node fixes
N for fields ``0..i``; let R be the budget left. For any completion:

* passed <= ``|{q alive : sum_{g>i} need(g,q) * cost_g <= R}|`` where ``need(g,q) =
  max(depth(g,q), lo_g)`` (infinite when unreachable) and *alive* means q passes every field
  fixed so far: a passing question needs at least its own requirement on every open field;
* recall-sum <= fixed part + ``best[i+1][R]``, where ``best[j][r]`` is the exact maximum of
  the recall sums of fields ``j..F-1`` alone under budget r, ignoring the pass condition (a
  multiple-choice knapsack solved once by dynamic programming over integer budgets, because
  recall is a sum over fields while passing is not);
* tokens >= fixed part + ``sum_{g>i} lo_g * cost_g``.

Each component bounds its counterpart, so the tuple bound dominates every completion
lexicographically; a node whose bound is not strictly better than the incumbent cannot contain
a strictly better plan and is pruned. Leaves are compared on exact integers (recall sums over
the common denominator L = lcm of all ground-truth sizes). Without pruning the search visits
every candidate combination, so with pruning it returns an optimum.

When the integer budget is too large for the DP table the recall bound falls back to
``sum_{g>i} max S_g`` (still valid, weaker). If the search expands more than ``node_limit``
nodes it stops and returns the best plan found with ``optimal=False``.

Without a budget the search ends at once: passed and recall are non-decreasing in every N_f, and
recall strictly drops below the largest candidate, so ``N_f = max C_f`` is the optimum; the same
search finds it on its first dive and the bound closes every other branch.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from queryeval.metrics.fields import depth_from_ranks
from queryeval.tune.problem import FieldProblem, Objective, check_fields

DEFAULT_NODE_LIMIT = 500_000
DP_CELL_LIMIT = 60_000_000  # candidates x budget cells, beyond which the weak bound is used


class InfeasibleBudget(ValueError):
    """The budget is below the minimum spend sum_f lo_f * cost_f."""


@dataclass(frozen=True)
class Plan:
    """The chosen cut-offs (in the fields' input order) and their exact objective."""

    ns: tuple[int, ...]
    objective: Objective
    optimal: bool
    nodes: int
    method: str = "branch-and-bound"
    notes: tuple[str, ...] = field(default=())


@dataclass
class _Field:
    """Per-field tables over the candidate cut-offs (ascending)."""

    lo: int
    cand: list[int]
    tokens: list[int]
    snum: list[int]  # recall sum over questions x L, at each candidate
    ok: np.ndarray  # (candidates, questions) bool: question passes this field at the candidate
    need_cost: np.ndarray  # (questions,) float: need(f,q) * cost_f, inf when unreachable


def _prepare(f: FieldProblem, min_n: int, lcm: int) -> _Field:
    lo = min(min_n, f.max_n)
    items: list[tuple[int, int]] = []
    empties = 0
    need = np.empty(f.questions, dtype=np.float64)
    for q, ranks in enumerate(f.ranks):
        k = len(ranks)
        if k == 0:
            empties += 1
        else:
            w = lcm // k
            items.extend((int(r), w) for r in ranks if r <= f.max_n)
        d = depth_from_ranks(ranks)
        need[q] = math.inf if d is None or d > f.max_n else max(d, lo)
    items.sort()
    item_ranks = [r for r, _ in items]
    prefix = [empties * lcm]
    for _, w in items:
        prefix.append(prefix[-1] + w)
    cand = sorted({lo} | {r for r in item_ranks if r > lo})
    snum = [prefix[bisect_right(item_ranks, c)] for c in cand]
    ok = need[None, :] <= np.asarray(cand, dtype=np.float64)[:, None]
    return _Field(
        lo=lo,
        cand=cand,
        tokens=[c * f.cost for c in cand],
        snum=snum,
        ok=ok,
        need_cost=need * f.cost if f.cost else np.where(np.isinf(need), math.inf, 0.0),
    )


def _knapsack_tables(prep: list[_Field], budget: int, scale: int, big: bool) -> list[np.ndarray] | None:
    """best[j][r] for fields j.. (search order) under budget r, lexicographic (recall, -tokens).

    A value packs both as ``recall_sum * scale - tokens`` (scale > budget, so the packing is
    order-preserving); values below ``-(budget + 1)`` never occur, which marks infeasible cells.
    """
    cells = sum(len(p.cand) for p in prep) * (budget + 1)
    if cells > DP_CELL_LIMIT:
        return None
    dtype = object if big else np.int64
    neg = -(budget + 1)
    tables: list[np.ndarray] = [np.zeros(budget + 1, dtype=dtype)]
    for p in reversed(prep):
        nxt = tables[-1]
        cur = np.full(budget + 1, neg, dtype=dtype)
        for t, s in zip(p.tokens, p.snum, strict=True):
            if t > budget:
                break
            seg = nxt[: budget + 1 - t]
            val = np.where(seg > neg, seg + (s * scale - t), neg)
            cur[t:] = np.maximum(cur[t:], val)
        tables.append(cur)
    tables.reverse()
    return tables


def _pass_bound(
    alive: np.ndarray, need_stack: np.ndarray, need_suffix: np.ndarray, remaining: int,
    enough: int,
) -> int:
    """Upper bound on the questions of ``alive`` that can still pass (open fields = rows).

    First the individual bound (a passing question pays at least its own requirement on every
    open field). When that is still > ``enough`` (would not prune), the order-statistics bound:
    m questions can pass together only if sum over open fields g of the m-th smallest
    requirement on g fits, because N_g must cover the largest requirement among them.
    """
    feasible = alive & (need_suffix <= remaining)
    m1 = int(np.count_nonzero(feasible))
    if m1 <= enough or need_stack.shape[0] < 2:
        return m1
    sorted_needs = np.sort(need_stack[:, feasible], axis=1)
    totals = sorted_needs.sum(axis=0)
    return int(np.count_nonzero(totals <= remaining))


def _reduce(prep: list[_Field], ns: Sequence[int], limit: int) -> list[int] | None:
    """Candidate indices of plan ``ns`` lowered to candidates (step 1 of the proof);
    None when the plan (raised to lo where below) exceeds the budget."""
    idx = [bisect_right(p.cand, max(n, p.lo)) - 1 for p, n in zip(prep, ns, strict=True)]
    if sum(p.tokens[i] for p, i in zip(prep, idx, strict=True)) > limit:
        return None
    return idx


def _cheapest_first(prep: list[_Field], costs: list[int], limit: int, n_q: int) -> list[int]:
    """Heuristic start: add the question with the smallest extra price while it fits."""
    ns = [p.lo for p in prep]
    spent = sum(p.tokens[0] for p in prep)
    reqs = [
        [None if np.isinf(p.need_cost[q]) else p.cand[int(np.argmax(p.ok[:, q]))] for q in range(n_q)]
        for p in prep
    ]
    open_q = [q for q in range(n_q) if all(r[q] is not None for r in reqs)]
    while open_q:
        best_q, best_price = -1, None
        for q in open_q:
            price = sum(max(0, r[q] - n) * u for r, n, u in zip(reqs, ns, costs, strict=True))
            if best_price is None or price < best_price:
                best_q, best_price = q, price
        if best_price is None or spent + best_price > limit:
            break
        spent += best_price
        ns = [max(n, r[best_q]) for n, r in zip(ns, reqs, strict=True)]
        open_q.remove(best_q)
    return ns


def solve_exact(
    fields: Sequence[FieldProblem],
    budget: int | None = None,
    min_n: int = 1,
    node_limit: int = DEFAULT_NODE_LIMIT,
) -> Plan:
    """The lexicographically best plan (passed, recall, -tokens) within ``budget``.

    Raises :class:`InfeasibleBudget` when even ``N_f = lo_f`` everywhere exceeds the budget.
    The search starts from the better of two heuristic plans (the reference's first-fit greedy
    and a cheapest-question-first greedy), so even a search stopped by ``node_limit`` is never
    worse than the reference's plan restricted to N >= min_n.
    """
    from queryeval.tune.greedy import greedy_reference_plan

    n_q = check_fields(fields)
    if min_n < 0:
        raise ValueError(f"min_n must be >= 0, got {min_n}")
    sizes = {len(r) for f in fields for r in f.ranks if len(r)}
    lcm = math.lcm(*sizes) if sizes else 1
    by_input = [_prepare(f, min_n, lcm) for f in fields]
    min_spend = sum(p.tokens[0] for p in by_input)
    if budget is not None and min_spend > budget:
        raise InfeasibleBudget(
            f"budget {budget} is below the minimum spend {min_spend} (N = {min_n} on every field)"
        )
    cap = sum(p.tokens[-1] for p in by_input)
    limit = cap if budget is None else min(int(budget), cap)

    order = sorted(range(len(fields)), key=lambda i: (-fields[i].cost, len(by_input[i].cand)))
    prep = [by_input[i] for i in order]
    n_f = len(prep)
    scale = limit + 1
    big = (lcm * n_q * n_f + 1) * scale >= 2**62
    # With a budget that never binds (>= cap) the DP value is best_free: skip the table.
    tables = _knapsack_tables(prep, limit, scale, big) if limit < cap else None
    weak = tables is None and limit < cap

    # suffix tables over the search order (index j covers fields j..F-1)
    min_suffix = [0] * (n_f + 1)
    need_suffix = [np.zeros(n_q)] * (n_f + 1)
    best_free = [0] * (n_f + 1)
    for j in range(n_f - 1, -1, -1):
        min_suffix[j] = min_suffix[j + 1] + prep[j].tokens[0]
        need_suffix[j] = need_suffix[j + 1] + prep[j].need_cost
        best_free[j] = best_free[j + 1] + prep[j].snum[-1]
    need_stack = np.vstack([p.need_cost for p in prep]) if n_q else np.zeros((n_f, 0))

    def key_of(idx: Sequence[int]) -> tuple[int, int, int]:
        alive = np.ones(n_q, dtype=bool)
        for p, i in zip(prep, idx, strict=True):
            alive &= p.ok[i]
        return (
            int(np.count_nonzero(alive)),
            sum(p.snum[i] for p, i in zip(prep, idx, strict=True)),
            -sum(p.tokens[i] for p, i in zip(prep, idx, strict=True)),
        )

    incumbent: list = [(-1, -1, 0), None]  # key, candidate indices (search order)
    starts = [[p.lo for p in prep]]
    if budget is not None:
        greedy = greedy_reference_plan(fields, int(budget))
        starts.append([greedy[i] for i in order])
    starts.append(_cheapest_first(prep, [fields[i].cost for i in order], limit, n_q))
    for ns in starts:
        idx = _reduce(prep, ns, limit)
        if idx is not None and key_of(idx) > incumbent[0]:
            incumbent[0], incumbent[1] = key_of(idx), idx

    choice = [0] * n_f
    nodes = 0
    stopped = False

    def suffix_bound(j: int, remaining: int) -> tuple[int, int]:
        """(max recall-sum, fewest tokens at that recall) of fields j.. within ``remaining``."""
        if tables is None:
            return best_free[j], min_suffix[j]
        packed = int(tables[j][remaining])
        s_best = -((-packed) // scale)
        return s_best, s_best * scale - packed

    def dive(i: int, alive: np.ndarray, used: int, snum: int) -> None:
        """Expand field i: bound every affordable candidate, then recurse best bound first."""
        nonlocal nodes, stopped
        p = prep[i]
        room = limit - used - min_suffix[i + 1]
        top = bisect_right(p.tokens, room) - 1
        last = i == n_f - 1
        children = []
        for j in range(top, -1, -1):
            nodes += 1
            if nodes > node_limit:
                stopped = True
                break
            now_alive = alive & p.ok[j]
            now_used = used + p.tokens[j]
            now_snum = snum + p.snum[j]
            if last:
                key = (int(np.count_nonzero(now_alive)), now_snum, -now_used)
                if key > incumbent[0]:
                    choice[i] = j
                    incumbent[0] = key
                    incumbent[1] = list(choice)
                continue
            remaining = limit - now_used
            best = incumbent[0]
            # below the incumbent's passed count nothing under this child can win; the
            # order-statistics part of the bound is only computed when it could matter
            passed_ub = _pass_bound(
                now_alive, need_stack[i + 1 :], need_suffix[i + 1], remaining, best[0] - 1
            )
            if passed_ub < best[0]:
                continue
            s_rest, t_rest = suffix_bound(i + 1, remaining)
            bound = (passed_ub, now_snum + s_rest, -(now_used + t_rest))
            if bound > best:
                children.append((bound, j, now_alive, now_used, now_snum))
        children.sort(key=lambda c: c[0], reverse=True)
        for bound, j, now_alive, now_used, now_snum in children:
            if stopped or bound <= incumbent[0]:
                return  # sorted: every later child is bounded at least as low
            choice[i] = j
            dive(i + 1, now_alive, now_used, now_snum)

    dive(0, np.ones(n_q, dtype=bool), 0, 0)
    picks = incumbent[1]
    if picks is None:  # unreachable: N = lo everywhere is always feasible here
        raise RuntimeError("no feasible plan found")
    ns_search = [prep[k].cand[picks[k]] for k in range(n_f)]
    ns = [0] * n_f
    for k, i in enumerate(order):
        ns[i] = ns_search[k]
    key = incumbent[0]
    denominator = lcm * n_q * n_f
    objective = Objective(
        passed=key[0],
        recall=Fraction(key[1], denominator) if n_q else Fraction(1),
        tokens=-key[2],
    )
    notes: tuple[str, ...] = ()
    if weak:
        notes += ("budget too large for the recall DP: weaker recall bound used",)
    if stopped:
        notes += (f"node limit {node_limit} reached: best plan found so far, not proven optimal",)
    return Plan(ns=tuple(ns), objective=objective, optimal=not stopped, nodes=nodes, notes=notes)
