"""The N/model tuner: exactness against brute force, the greedy counterexample, the pipeline."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queryeval.metrics.fields import passed, recall
from queryeval.metrics.ranking import NOT_FOUND
from queryeval.tune import (
    FieldInput,
    FieldProblem,
    InfeasibleBudget,
    choose_model,
    evaluate_plan,
    greedy_reference_plan,
    mean_mrr,
    solve_exact,
    tune,
)


def field(name, cost, max_n, ranks):
    return FieldProblem(name, cost, max_n, tuple(np.array(r, dtype=np.int64) for r in ranks))


# ------------------------------------------------------------------ the greedy counterexample


def counterexample():
    """Budget 5, cost 1 per value on both fields. Question 0 needs (A=4, B=1); questions 1
    and 2 need (A=1, B=3). First-fit takes question 0 first (price 5), leaving nothing for the
    other two; N = (1, 3) passes both of them for 4 tokens."""
    a = field("A", 1, 10, [[4], [1], [1]])
    b = field("B", 1, 10, [[1], [3], [3]])
    return [a, b]


def test_first_fit_greedy_passes_fewer_than_exact():
    fields = counterexample()
    greedy = greedy_reference_plan(fields, budget=5)
    assert greedy == (4, 1)
    g = evaluate_plan(fields, greedy)
    assert (g.passed, g.tokens) == (1, 5)

    plan = solve_exact(fields, budget=5)
    assert plan.optimal
    assert plan.ns == (1, 3)
    assert plan.objective.passed == 2
    assert plan.objective.tokens == 4
    # recall: A finds all at N=1 for q1,q2 but not q0 (rank 4): (0+1+1 + 1+1+1) / 6
    assert plan.objective.recall == Fraction(5, 6)
    assert plan.objective.passed > g.passed


def test_greedy_reference_semantics():
    # q0 can never be answered on A (item absent): free on A, still raises B to 2.
    # q1 has empty ground truth on both fields: needs nothing.
    a = field("A", 2, 10, [[NOT_FOUND], [], [3]])
    b = field("B", 1, 10, [[2], [], [6]])
    assert greedy_reference_plan([a, b], budget=2) == (0, 2)
    assert greedy_reference_plan([a, b], budget=12) == (3, 6)
    # first fit in table order, re-scanning after each pick: q2 (price 12) does not fit in 11
    assert greedy_reference_plan([a, b], budget=11) == (0, 2)


# ------------------------------------------------------------------ exact vs brute force


def brute_force(rankings, truths, costs, budget, min_n):
    """Independent oracle: every N combination, scored with the string-level metrics."""
    n_f = len(rankings)
    n_q = len(truths[0])
    ranges = [range(min(min_n, len(rankings[f][0])), len(rankings[f][0]) + 1) for f in range(n_f)]
    best = None
    for ns in itertools.product(*ranges):
        tokens = sum(n * c for n, c in zip(ns, costs, strict=True))
        if budget is not None and tokens > budget:
            continue
        n_passed = sum(
            all(passed(truths[f][q], rankings[f][q], ns[f]) for f in range(n_f))
            for q in range(n_q)
        )
        rec = sum(
            Fraction(recall(truths[f][q], rankings[f][q], ns[f])).limit_denominator(1000)
            for f in range(n_f) for q in range(n_q)
        ) / (n_f * n_q)
        key = (n_passed, rec, -tokens)
        if best is None or key > best:
            best = key
    return best


@st.composite
def instances(draw):
    n_f = draw(st.integers(1, 3))
    n_q = draw(st.integers(1, 5))
    letters = "abcdefg"
    rankings, truths, costs = [], [], []
    for _ in range(n_f):
        n_values = draw(st.integers(0, 5))
        values = list(letters[:n_values])
        per_q = [draw(st.permutations(values)) for _ in range(n_q)]
        # ground truth may name values the field does not have ("g")
        gts = [draw(st.lists(st.sampled_from(letters), unique=True, max_size=3)) for _ in range(n_q)]
        rankings.append(per_q)
        truths.append(gts)
        costs.append(draw(st.integers(0, 4)))
    budget = draw(st.one_of(st.none(), st.integers(0, 30)))
    min_n = draw(st.integers(0, 2))
    return rankings, truths, costs, budget, min_n


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_exact_equals_brute_force(inst):
    rankings, truths, costs, budget, min_n = inst
    problems = [
        FieldProblem.from_rankings(f"f{i}", rankings[i], truths[i], costs[i],
                                   max_n=len(rankings[i][0]))
        for i in range(len(rankings))
    ]
    oracle = brute_force(rankings, truths, costs, budget, min_n)
    if oracle is None:
        with pytest.raises(InfeasibleBudget):
            solve_exact(problems, budget, min_n)
        return
    plan = solve_exact(problems, budget, min_n)
    assert plan.optimal
    assert plan.objective.key() == oracle
    assert evaluate_plan(problems, plan.ns) == plan.objective
    if budget is not None:
        assert plan.objective.tokens <= budget
        greedy = evaluate_plan(problems, greedy_reference_plan(problems, budget))
        if min_n == 0:
            assert plan.objective.key() >= greedy.key()


def test_without_budget_takes_the_deepest_useful_n():
    a = field("A", 3, 50, [[2, 9], [NOT_FOUND], [4]])
    b = field("B", 1, 50, [[1], [7, 30]])  # different question count is rejected below
    plan = solve_exact([a], budget=None)
    assert plan.ns == (9,)
    assert plan.objective.passed == 2
    with pytest.raises(ValueError, match="disagree"):
        solve_exact([a, b])


def test_infeasible_budget():
    a = field("A", 5, 10, [[1]])
    with pytest.raises(InfeasibleBudget):
        solve_exact([a], budget=4)
    assert solve_exact([a], budget=4, min_n=0).ns == (0,)


def test_ranks_beyond_max_n_are_unreachable():
    a = field("A", 1, 3, [[2, 5]])
    plan = solve_exact([a], budget=100)
    assert plan.ns == (2,)
    assert plan.objective.passed == 0
    assert plan.objective.recall == Fraction(1, 2)


def test_node_limit_flags_and_keeps_a_good_plan():
    rng = np.random.default_rng(3)
    fields = [
        field(f"f{i}", int(rng.integers(1, 6)), 400,
              [sorted(set(rng.integers(1, 300, size=int(rng.integers(1, 4))).tolist()))
               for _ in range(40)])
        for i in range(6)
    ]
    plan = solve_exact(fields, budget=600, node_limit=50)
    assert not plan.optimal
    assert any("node limit" in n for n in plan.notes)
    greedy = evaluate_plan(fields, greedy_reference_plan(fields, 600))
    assert plan.objective.passed >= greedy.passed


def test_twenty_fields():
    """A typical 20-field instance (retriever finds most items early) is proven optimal."""
    rng = np.random.default_rng(11)
    fields = []
    for i in range(20):
        ranks = []
        for _q in range(30):
            k = int(rng.integers(0, 3))
            ranks.append(sorted(set(np.minimum(rng.geometric(0.6, size=k), 60).tolist())))
        fields.append(field(f"f{i}", int(rng.integers(1, 10)), 60, ranks))
    plan = solve_exact(fields, budget=300)
    assert plan.optimal
    assert plan.objective.tokens <= 300
    greedy = evaluate_plan(fields, greedy_reference_plan(fields, 300))
    assert plan.objective.passed > greedy.passed
    assert evaluate_plan(fields, plan.ns) == plan.objective


def test_passed_count_matches_milp():
    """Cross-check the primary objective against scipy's MILP (HiGHS) on a 5-field instance:
    x[f,j] picks candidate N_j of field f, y[q] = 1 only if every field covers q's need."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    rng = np.random.default_rng(5)
    n_f, n_q, max_n, budget = 5, 25, 40, 150
    fields = [
        field(f"f{i}", int(rng.integers(1, 5)), max_n,
              [sorted(set(rng.integers(1, max_n + 1, size=int(rng.integers(1, 3))).tolist()))
               for _ in range(n_q)])
        for i in range(n_f)
    ]
    plan = solve_exact(fields, budget=budget)
    assert plan.optimal

    ns_range = list(range(1, max_n + 1))
    n_x = n_f * max_n
    c = np.concatenate([np.zeros(n_x), -np.ones(n_q)])
    rows, lo, hi = [], [], []
    for f in range(n_f):  # exactly one N per field
        row = np.zeros(n_x + n_q)
        row[f * max_n:(f + 1) * max_n] = 1
        rows.append(row); lo.append(1); hi.append(1)  # noqa: E702
    row = np.zeros(n_x + n_q)  # budget
    for f in range(n_f):
        row[f * max_n:(f + 1) * max_n] = [n * fields[f].cost for n in ns_range]
    rows.append(row); lo.append(0); hi.append(budget)  # noqa: E702
    for q in range(n_q):  # y_q <= sum of x[f, N] with N >= depth(f, q)
        for f in range(n_f):
            d = fields[f].depth(q)
            row = np.zeros(n_x + n_q)
            row[n_x + q] = 1
            if d is not None:
                for j, n in enumerate(ns_range):
                    if n >= d:
                        row[f * max_n + j] = -1
            rows.append(row); lo.append(-np.inf); hi.append(0)  # noqa: E702
    res = milp(c, constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=np.ones(n_x + n_q), bounds=Bounds(0, 1),
               options={"mip_rel_gap": 0})
    assert res.success
    assert round(-res.fun) == plan.objective.passed


# ------------------------------------------------------------------ model choice and pipeline


def test_choose_model_highest_mrr_ties_to_first():
    assert choose_model({"a": 0.5, "b": 0.7, "c": 0.7}) == "b"
    assert choose_model({"a": 0.7, "b": 0.7}) == "a"
    # float noise is a tie, not a win
    assert choose_model({"a": 0.3, "b": 0.1 + 0.2}) == "a"
    with pytest.raises(ValueError):
        choose_model({})


def test_mean_mrr():
    ranks = [np.array([1, 2]), np.array([4]), np.array([], dtype=np.int64)]
    assert mean_mrr(ranks) == pytest.approx(((1 + 0.5) / 2 + 0.25 + 1.0) / 3)


def test_tune_pipeline_rows():
    good = [np.array([1]), np.array([2]), np.array([1, 3])]
    bad = [np.array([5]), np.array([NOT_FOUND]), np.array([2, 9])]
    types = [np.array([1]), np.array([], dtype=np.int64), np.array([2])]
    inputs = [
        FieldInput("item", cost=2, max_n=10, ranks_by_model={"bm25": bad, "minilm": good}),
        FieldInput("type", cost=1, max_n=4, ranks_by_model={"bm25": types}),
    ]
    result = tune(inputs, budget=8)
    assert result.mrr_by_field["item"]["minilm"] == pytest.approx((1 + 0.5 + (1 + 1 / 3) / 2) / 3)
    rows = [r.as_record() for r in result.rows]
    # item N=3 (6 tokens) + type N=2 (2 tokens) = 8 passes all three questions
    assert rows == [
        {"Field Name": "item", "N": 3, "Model": "minilm", "recall": 1.0, "passed": 3, "tokens": 6},
        {"Field Name": "type", "N": 2, "Model": "bm25", "recall": 1.0, "passed": 3, "tokens": 2},
    ]
    assert (result.passed, result.recall, result.tokens, result.optimal) == (3, 1.0, 8, True)
    assert result.greedy is not None
    assert result.summary()["greedy_reference"]["passed"] == 3
