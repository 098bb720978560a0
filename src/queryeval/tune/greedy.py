"""The reference's first-fit greedy choice of N (dial-xl ``GreedyAlgorithm``), for comparison.

What the reference does, reproduced here:

* every N starts at 0;
* a question's requirement on a field is the depth at which all its ground truth is retrieved
  on that field (0 for an empty ground truth); where the field never retrieves it all, the
  requirement on *that field* is 0 ("free"), the other fields' requirements still count;
* repeatedly, the first question (in table order) not yet taken whose extra price
  ``sum_f max(0, need(f,q) - N_f) * cost_f`` fits the budget left is taken, and
  ``N_f = max(N_f, need(f,q))``; the loop ends when no remaining question fits.

Questions are taken by position, not by value, so one early expensive question can crowd out
several cheap ones; :func:`queryeval.tune.exact.solve_exact` does not have that weakness.
"""

from __future__ import annotations

from collections.abc import Sequence

from queryeval.tune.problem import FieldProblem, check_fields

REFERENCE_BUDGET = 2000


def greedy_reference_plan(
    fields: Sequence[FieldProblem], budget: int = REFERENCE_BUDGET
) -> tuple[int, ...]:
    """The reference's plan: N per field (input order), total tokens <= ``budget``."""
    n_q = check_fields(fields)
    need = [[(f.depth(q) or 0) for f in fields] for q in range(n_q)]
    selected = [0] * len(fields)
    remaining = budget
    taken = [False] * n_q
    while True:
        pick = -1
        price_of_pick = 0
        for q in range(n_q):
            if taken[q]:
                continue
            price = sum(
                (n - s) * f.cost for n, s, f in zip(need[q], selected, fields, strict=True) if n > s
            )
            if price <= remaining:
                pick, price_of_pick = q, price
                break
        if pick < 0:
            break
        taken[pick] = True
        remaining -= price_of_pick
        selected = [max(s, n) for s, n in zip(selected, need[pick], strict=True)]
    return tuple(selected)
