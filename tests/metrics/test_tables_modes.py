"""Comparison modes of the table metrics (issue 18) against brute force: row order (LCS),
numeric tolerance (classes of close numbers), several golds, columns that matter; and the
top-level ORDER BY detection for SQL and SPARQL."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.tables_property import oracle
from queryeval.metrics.tables import (
    Budget,
    Table,
    best_of_golds,
    clean_normalize,
    lcs_length,
    query_is_ordered,
    table_scores,
    tolerance_classes,
)

UNLIMITED = Budget(max_nodes=None, max_seconds=None)
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
VALUES = ["1", "1.0", "1.04", "1.1", "2", "-0.5", "-0.45", "0", "x", "X", None, "1e2", "99.5"]


def lcs_dp(a, b) -> int:
    """Textbook O(n·m) dynamic programme."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def f1(tp: int, n_pred: int, n_gold: int) -> float:
    p, r = tp / n_pred, tp / n_gold
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


@st.composite
def tables(draw, max_cols: int = 4, same_width: bool = False):
    values = st.sampled_from(VALUES)
    g = draw(st.integers(1, max_cols))
    p = g if same_width else draw(st.integers(g, g + 1))
    gold = Table([f"g{i}" for i in range(g)],
                 [tuple(draw(values) for _ in range(g)) for _ in range(draw(st.integers(0, 6)))])
    if gold.rows and draw(st.booleans()):  # a near copy: shuffled rows, some cells edited
        rows = [list(r) + [draw(values) for _ in range(p - g)] for r in gold.rows]
        rows = draw(st.permutations(rows))
        for r in rows:
            if draw(st.integers(0, 3)) == 0:
                r[draw(st.integers(0, p - 1))] = draw(values)
        pred = Table([f"p{i}" for i in range(p)], [tuple(r) for r in rows])
    else:
        pred = Table([f"p{i}" for i in range(p)],
                     [tuple(draw(values) for _ in range(p)) for _ in range(draw(st.integers(0, 6)))])
    return gold, pred


# --- LCS and ORDER -------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40))
def test_lcs_equals_dynamic_programme(a, b):
    assert lcs_length(a, b) == lcs_dp(a, b)


@SETTINGS
@given(tables(same_width=True))
def test_ordered_exact_match_is_lcs_of_positional_rows(pair):
    gold, pred = pair
    got = table_scores(gold, pred, ordered=True, budget=UNLIMITED)
    unordered = table_scores(gold, pred, budget=UNLIMITED)
    if not gold.rows or not pred.rows:
        assert got.exact_match_f1 == unordered.exact_match_f1
        return
    norm = [tuple(clean_normalize(v) for v in r) for r in gold.rows]
    pnorm = [tuple(clean_normalize(v) for v in r) for r in pred.rows]
    assert got.exact_match_f1 == pytest.approx(f1(lcs_dp(norm, pnorm), len(pnorm), len(norm)))
    assert got.exact_match_f1 <= unordered.exact_match_f1 + 1e-12
    # order never changes entity / row F1
    assert (got.row_matching_f1, got.entity_set_f1) == (unordered.row_matching_f1,
                                                        unordered.entity_set_f1)
    idx = [pred.columns.index(c) for c in got.mapping]
    projected = [tuple(clean_normalize(r[i]) for i in idx) for r in pred.rows]
    assert got.order_score == pytest.approx(lcs_dp(norm, projected) / max(len(norm), len(pnorm)))


def test_ordered_figures_by_hand():
    gold = Table(["n"], [("a",), ("b",), ("c",)])
    pred = Table(["n"], [("c",), ("a",), ("b",)])
    got = table_scores(gold, pred, ordered=True)
    assert got.exact_match_f1 == pytest.approx(2 / 3)  # LCS a, b: 2 of 3 rows
    assert got.order_score == pytest.approx(2 / 3)
    assert table_scores(gold, pred).exact_match_f1 == 1.0 and table_scores(gold, pred).order_score is None


@pytest.mark.parametrize(("query", "language", "expected"), [
    ("SELECT a FROM t ORDER BY a", "sql", True),
    ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3) x", "sql", False),
    ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "sql", True),
    ("SELECT 'ORDER BY x' AS a FROM t", "sql", False),
    ("SELECT a FROM t; SELECT b FROM t ORDER BY b", "sql", None),
    ("SELECT 'unterminated", "sql", None),
    ("SELECT " + "(" * 3000 + "1" + ")" * 3000, "sql", None),
    ("SELECT ?s WHERE { ?s ?p ?o } ORDER BY DESC(?o) LIMIT 3", "sparql", True),
    ("SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 1 } }", "sparql", False),
    ('SELECT ?s WHERE { ?s ?p "} ORDER BY ?s" }', "sparql", False),
    ("SELECT ?s WHERE { ?s ?p ?o } # ORDER BY ?s", "sparql", False),
    ("SELECT ?s WHERE { ?s ?p <urn:x> } order by ?s", "sparql", True),
    ("SELECT ?s WHERE { ?s ?p", "sparql", None),
])
def test_top_level_order_by(query, language, expected):
    assert query_is_ordered(query, language) is expected


# --- numeric tolerance --------------------------------------------------------------------------

def classes_brute(values, abs_tol, rel_tol):
    """Connected components of the closeness graph over all pairs (union-find)."""
    nums = sorted({v for v in values if v is not None and _num(v) is not None})
    parent = {v: v for v in nums}

    def find(v):
        while parent[v] != v:
            v = parent[v]
        return v

    for a, b in combinations(nums, 2):
        x, y = _num(a), _num(b)
        if abs(x - y) <= max(abs_tol, rel_tol * max(abs(x), abs(y))):
            parent[find(a)] = find(b)
    return [("#" + find(v)) if v in parent else v for v in values]


def _num(v):
    try:
        return float(v) if clean_normalize(v) == v and v.lower() not in ("nan", "inf") else None
    except ValueError:
        return None


TOLS = st.sampled_from([(0.0, 0.0), (0.05, 0.0), (0.1, 0.0), (0.0, 0.05), (0.01, 0.1), (1.0, 0.0)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([clean_normalize(v) for v in VALUES if v is not None]
                                + ["0.95", "1.15", "3", "-1"]), max_size=12), TOLS)
def test_tolerance_classes_equal_connected_components(values, tol):
    got = tolerance_classes(values, *tol)
    want = classes_brute(values, *tol)
    # same partition: equal in one iff equal in the other
    for i, j in combinations(range(len(values)), 2):
        assert (got[i] == got[j]) == (want[i] == want[j])


@SETTINGS
@given(tables(), TOLS)
def test_tolerance_figures_equal_brute_force_on_classed_values(pair, tol):
    gold, pred = pair
    got = table_scores(gold, pred, abs_tol=tol[0], rel_tol=tol[1], budget=UNLIMITED)
    flat = [clean_normalize(v) for t in (gold, pred) for r in t.rows for v in r]
    classed = dict(zip(flat, classes_brute(flat, *tol), strict=True))

    def cls(t: Table) -> Table:
        return Table(t.columns, [tuple(classed[clean_normalize(v)] if v is not None else None
                                       for v in r) for r in t.rows])

    ent, row = oracle(cls(gold), cls(pred), "clean")
    assert got.row_matching_f1 == pytest.approx(row, abs=1e-12)
    assert got.entity_set_f1 == pytest.approx(ent, abs=1e-9)


def test_tolerance_by_hand():
    gold = Table(["city", "pop"], [("a", "1000"), ("b", "2.5")])
    pred = Table(["city", "pop"], [("a", "1000.4"), ("b", "2.50001")])
    assert table_scores(gold, pred).row_matching_f1 == 0.0
    assert table_scores(gold, pred, abs_tol=0.5).row_matching_f1 == 1.0
    assert table_scores(gold, pred, rel_tol=1e-3).row_matching_f1 == 1.0
    assert table_scores(gold, pred, rel_tol=1e-7).row_matching_f1 == 0.0
    # strings stay exact: "A" is not "a" whatever the tolerance
    assert table_scores(Table(["c"], [("a",)]), Table(["c"], [("A",)]), abs_tol=1).row_matching_f1 == 0
    with pytest.raises(ValueError, match="rel_tol"):
        table_scores(gold, pred, rel_tol=1.0)
    with pytest.raises(ValueError, match="clean"):
        table_scores(gold, pred, abs_tol=0.1, rules="buildingqa")


# --- several golds ------------------------------------------------------------------------------

@SETTINGS
@given(tables(), tables(), st.tuples(st.booleans(), st.booleans()))
def test_best_of_golds_is_the_lexicographic_maximum(first, second, flags):
    (g1, pred), (g2, _) = first, second
    index, got = best_of_golds([g1, g2], pred, budget=UNLIMITED, ordered=list(flags))
    each = [table_scores(g, pred, budget=UNLIMITED, ordered=o)
            for g, o in zip((g1, g2), flags, strict=True)]
    keys = [(s.row_matching_f1, s.entity_set_f1, s.exact_match_f1, s.arity_f1) for s in each]
    assert keys[index] == max(keys)
    assert index == keys.index(max(keys))  # first gold wins ties
    assert got == each[index]


# --- columns that matter ------------------------------------------------------------------------

@SETTINGS
@given(tables(max_cols=4), st.data())
def test_required_columns_score_against_the_projected_gold(pair, data):
    gold, pred = pair
    keep = data.draw(st.sets(st.sampled_from(gold.columns), min_size=1))
    required = [c for c in gold.columns if c in keep]
    idx = [gold.columns.index(c) for c in required]
    projected = Table(required, [tuple(r[i] for i in idx) for r in gold.rows])
    got = table_scores(gold, pred, columns=sorted(keep), budget=UNLIMITED)
    ent, row = oracle(projected, pred, "clean")
    assert got.row_matching_f1 == pytest.approx(row, abs=1e-12)
    assert got.entity_set_f1 == pytest.approx(ent, abs=1e-9)
    p, g = len(pred.columns), len(gold.columns)  # tables() draws p >= g
    assert got.arity_f1 == (1.0 if p == g else 2 * g / (p + g))


def test_required_columns_by_hand():
    gold = Table(["name", "label"], [("a", "Alpha"), ("b", "Beta")])
    only_names = Table(["n"], [("b",), ("a",)])
    got = table_scores(gold, only_names, columns=["name"])
    assert (got.row_matching_f1, got.exact_match_f1, got.arity_f1) == (1.0, 1.0, 1.0)
    assert table_scores(gold, only_names).row_matching_f1 == 0.0  # too few columns without it
    both = Table(["n", "l"], [("a", "other"), ("b", "label")])
    got = table_scores(gold, both, columns=["name"])
    assert (got.row_matching_f1, got.exact_match_f1) == (1.0, 1.0)  # optional column ignored
    with pytest.raises(ValueError, match="not gold columns"):
        table_scores(gold, both, columns=["nope"])


@pytest.mark.parametrize(("query", "language", "expected"), [
    ("SELECT a FROM t LIMIT 2", "sql", True),
    ("SELECT a FROM (SELECT a FROM t LIMIT 2) x", "sql", False),
    ("SELECT a FROM t", "sql", False),
    ("SELECT ?s WHERE { ?s ?p ?o } OFFSET 5", "sparql", True),
    ("SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } LIMIT 1 } }", "sparql", False),
])
def test_top_level_limit(query, language, expected):
    from queryeval.metrics.tables.modes import query_has_limit

    assert query_has_limit(query, language) is expected
