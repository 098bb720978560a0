"""Hand-computed cases for the native result-table API: input shapes, both rule sets, the
normalisations, arity, every empty / zero-division case, the mapping choice and the
budget."""

from __future__ import annotations

import pytest

from queryeval.errors import InputError
from queryeval.metrics.tables import (
    Budget,
    Table,
    arity_f1,
    as_table,
    buildingqa_arity,
    buildingqa_normalize,
    canonical_number,
    clean_normalize,
    entity_set_f1,
    exact_match_f1,
    row_matching_f1,
    sparql_arity,
    table_scores,
)


def b(**cells):
    """One SPARQL JSON binding."""
    return {k: {"type": "literal", "value": v} for k, v in cells.items()}


# --- input shapes --------------------------------------------------------------------------


def test_sparql_json_columns_come_from_head_vars():
    result = {"head": {"vars": ["x", "y"]},
              "results": {"bindings": [b(x="1"), b(x="2", y="b")]}}
    assert as_table(result) == Table(["x", "y"], [("1", None), ("2", "b")])


def test_buildingqa_columns_come_from_the_first_row():
    result = {"head": {"vars": ["x", "y"]},
              "results": {"bindings": [b(x="1"), b(x="2", y="b"), {"y": {"value": "c"}}]}}
    # ?y is unbound in the first row: it drops out; a row without ?x is unbound there
    assert as_table(result, rules="buildingqa") == Table(["x"], [("1",), ("2",), (None,)])
    # a cell without "value" reads as "" (the reference's .get('value', ''))
    assert as_table([{"x": {"type": "uri"}}], rules="buildingqa").rows == [("",)]


def test_bare_bindings_take_every_key_in_order_of_appearance():
    assert as_table([b(y="1"), b(x="2", y="3")]) == Table(["y", "x"], [("1", None), ("3", "2")])
    assert as_table([]) == Table([], [])


def test_header_and_rows_shapes():
    expected = Table(["a", "b"], [("1", None), ("true", "2.5")])
    assert as_table((["a", "b"], [(1, None), (True, 2.5)])) == expected
    assert as_table({"columns": ["a", "b"], "rows": [[1, None], [True, 2.5]]}) == expected


def test_dataframe_and_missing_values():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, float("nan")], "b": ["x", None]})
    assert as_table(frame) == Table(["a", "b"], [("1.0", "x"), (None, None)])
    # the same content from a DataFrame and from tuples scores identically
    tuples = (["a", "b"], [(1, "x"), (None, None)])
    assert table_scores(tuples, frame).row_matching_f1 == 1.0


def test_pyoxigraph_terms_are_read_by_value():
    ox = pytest.importorskip("pyoxigraph")
    table = as_table((["s", "n"], [(ox.NamedNode("http://e/x"), ox.Literal("5"))]))
    assert table.rows == [("http://e/x", "5")]


@pytest.mark.parametrize("bad", [
    "not a table",
    [("a", "b")],  # rows without a header
    {"head": {}, "boolean": True},  # an ASK result
    {"something": 1},
    42,
])
def test_unreadable_inputs_raise_input_error(bad):
    with pytest.raises(InputError):
        as_table(bad)


def test_ragged_rows_are_rejected():
    with pytest.raises(InputError, match="row 1 has 1 cells"):
        Table(["a", "b"], [("1", "2"), ("3",)])


def test_unknown_rules_are_rejected():
    with pytest.raises(ValueError, match="rules"):
        table_scores([], [], rules="fuzzy")


# --- normalisation -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("500", "500"), ("500.0", "500"), ("+500", "500"), ("5.0E2", "500"), ("0500", "500"),
    ("0.10", "0.1"), ("-0.0", "0"), (".5", "0.5"), ("-1.250", "-1.25"), ("1e-3", "0.001"),
    ("1e999999", "1E+999999"), ("abc", None), ("1.2.3", None), ("NaN", None), ("1_000", None),
    ("", None),
])
def test_canonical_number(text, expected):
    assert canonical_number(text) == expected


def test_clean_normalisation_keeps_case_and_unbound():
    assert clean_normalize("  Alice ") == "Alice"
    assert clean_normalize(" 500.0") == "500"
    assert clean_normalize("e\u0301") == "\u00e9"  # NFC
    assert clean_normalize(None) is None


@pytest.mark.parametrize(("raw", "expected"), [
    ("  Alice ", "alice"),
    ('"Bob"', "bob"),
    ('"5"^^<http://www.w3.org/2001/XMLSchema#int>', '"5"'),  # quotes kept: quirk
    ("chat@fr", "chat"),
    ("ann@ab-cd", "ann"),
    ("x@english", "x@english"),
    ("a^^b^^c", "a"),
    ('"', '"'),
])
def test_buildingqa_normalisation(raw, expected):
    assert buildingqa_normalize(raw) == expected


# --- arity ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "clean", "bqa"), [
    ("SELECT ?a ?b WHERE { ?a ?p ?b }", 2, 2),
    ("SELECT DISTINCT ?a (COUNT(?b) AS ?n) WHERE { ?a ?p ?b } GROUP BY ?a", 2, 2),
    ("SELECT * WHERE { ?s ?p ?o }", 3, 1),
    ("SELECT ?x ?y { ?x ?p ?y }", 2, 0),  # no WHERE keyword
    ("SELECT ?s WHERE { ?s a brick:AHU }", 1, 1),  # undeclared prefix
    ("ASK { ?s ?p ?o }", 1, 0),
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", 3, 0),
    ("SELECT ?s WHERE { SERVICE <http://198.51.100.1/sparql> { ?s ?p ?o } }", 1, 1),
])
def test_query_arity(query, clean, bqa):
    assert sparql_arity(query) == clean
    assert buildingqa_arity(query) == bqa


@pytest.mark.parametrize("bad", ["SELECT WHERE {", "INSERT DATA { <a:b> <a:c> <a:d> }", ""])
def test_unparseable_query_has_no_arity(bad):
    assert sparql_arity(bad) is None


def test_arity_f1():
    assert arity_f1("SELECT ?a ?p ?o WHERE {?a ?p ?o}", "SELECT ?a WHERE {?a ?p ?o}") == 0.5
    assert arity_f1((["a", "b"], []), "SELECT ?x ?y { ?x ?p ?y }") == 1.0
    one_row = (["a", "b"], [("1", "2")])
    assert arity_f1(one_row, "SELECT ?x ?y { ?x ?p ?y }", rules="buildingqa") == 0.0
    assert arity_f1([], []) == 1.0
    assert arity_f1((["a"], []), "not sparql") == 0.0
    # clean: an empty result still has its head's columns; buildingqa: a row-less result has 0
    empty = {"head": {"vars": ["a", "b", "c"]}, "results": {"bindings": []}}
    assert arity_f1((["a", "b"], []), empty) == pytest.approx(0.8)
    assert arity_f1([b(a="1", b="2")], empty, rules="buildingqa") == 0.0


# --- entity / row / exact ------------------------------------------------------------------

GOLD = (["name", "age"], [("Alice", "30"), ("Bob", "25"), ("Charlie", "35")])


def test_empty_cases():
    empty = (["a", "b"], [])
    for rules in ("clean", "buildingqa"):
        both = table_scores(empty, empty, rules=rules)
        assert (both.entity_set_f1, both.row_matching_f1, both.exact_match_f1) == (1.0, 1.0, 1.0)
        one = table_scores(GOLD, empty, rules=rules)
        assert (one.entity_set_f1, one.row_matching_f1, one.exact_match_f1) == (0.0, 0.0, 0.0)
        other = table_scores(empty, GOLD, rules=rules)
        assert (other.entity_set_f1, other.row_matching_f1) == (0.0, 0.0)
        assert other.mapping is None and other.exact


def test_gold_without_columns_scores_zero():
    no_columns = Table([], [(), ()])
    assert table_scores(no_columns, no_columns).row_matching_f1 == 0.0
    assert table_scores(no_columns, no_columns).exact_match_f1 == 0.0


def test_fewer_predicted_columns_score_zero_and_extra_columns_are_dropped():
    fewer = (["n"], [("Alice",), ("Bob",), ("Charlie",)])
    assert row_matching_f1(GOLD, fewer) == 0.0 and entity_set_f1(GOLD, fewer) == 0.0
    extra = (["id", "a", "n"], [("1", "30", "Alice"), ("2", "25", "Bob"), ("3", "35", "Charlie")])
    got = table_scores(GOLD, extra)
    assert (got.entity_set_f1, got.row_matching_f1) == (1.0, 1.0)
    assert got.mapping == ("n", "a")
    assert got.exact_match_f1 == 0.0  # different column count
    assert got.arity_f1 == pytest.approx(0.8)


def test_rows_are_multisets():
    gold = (["a"], [("x",), ("x",), ("y",)])
    pred = (["a"], [("x",), ("x",), ("x",), ("z",)])
    # tp = min(2,3) + min(1,0) = 2; P = 2/4, R = 2/3 -> F1 = 2*2/(4+3)
    assert row_matching_f1(gold, pred) == pytest.approx(4 / 7)
    assert exact_match_f1(gold, pred) == pytest.approx(4 / 7)
    # sets of values: {x, z} vs {x, y}: P = R = 1/2
    assert entity_set_f1(gold, pred) == pytest.approx(0.5)


def test_entity_f1_is_f1_of_mean_precision_and_mean_recall():
    gold = (["a", "b"], [("a1", "b1"), ("a2", "b1")])
    pred = (["a", "b"], [("a1", "b1"), ("a1", "z1"), ("a1", "z2"), ("a1", "z3")])
    # column a: {a1} vs {a1,a2}: P = 1, R = 1/2; column b: {b1,z1,z2,z3} vs {b1}: P = 1/4, R = 1
    # mean P = 5/8, mean R = 3/4 -> F1 = 2*(5/8)*(3/4)/(11/8) = 15/22 (mean of F1s: 8/15)
    assert entity_set_f1(gold, pred) == pytest.approx(15 / 22)


def test_mapping_maximises_row_f1_before_entity_f1():
    gold = (["x", "y"], [("a", "b"), ("a", "a")])
    pred = (["u", "v"], [("a", "a"), ("a", "b"), ("b", "c")])
    # x->u, y->v: tp 2, row 2*2/5 = 0.8, entity F1(7/12, 1) = 14/19
    # x->v, y->u: tp 1, row 0.4, entity F1(2/3, 1) = 0.8  (higher entity, lower row)
    got = table_scores(gold, pred)
    assert got.mapping == ("u", "v")
    assert got.row_matching_f1 == pytest.approx(0.8)
    assert got.entity_set_f1 == pytest.approx(14 / 19)


def test_row_f1_ties_are_broken_by_entity_f1():
    gold = (["x", "y"], [("a", "b")])
    pred = (["u", "v"], [("c", "a")])
    # no mapping matches a row: x->v, y->u has entity P = (1 + 0)/2, R = (1 + 0)/2 -> 0.5
    got = table_scores(gold, pred)
    assert got.row_matching_f1 == 0.0
    assert got.entity_set_f1 == pytest.approx(0.5)
    assert got.mapping == ("v", "u")


def test_exact_match_is_positional_and_ignores_row_order():
    swapped = (["age", "name"], [("30", "Alice"), ("25", "Bob"), ("35", "Charlie")])
    renamed = (["n", "a"], [("Charlie", "35"), ("Alice", "30"), ("Bob", "25")])
    assert exact_match_f1(GOLD, swapped) == 0.0
    assert row_matching_f1(GOLD, swapped) == 1.0
    assert exact_match_f1(GOLD, renamed) == 1.0


def test_clean_and_buildingqa_rules_differ():
    gold = {"head": {"vars": ["n", "v"]},
            "results": {"bindings": [b(n="Alice", v="500.0"), b(n="Bob", v="2")]}}
    pred = {"head": {"vars": ["n", "v"]},
            "results": {"bindings": [b(n="alice", v="500"), b(n="Bob", v="2")]}}
    clean = table_scores(gold, pred)
    # clean: case kept, numbers canonical -> Bob row and 500 match, Alice does not
    assert clean.row_matching_f1 == pytest.approx(0.5)
    # sets: n {alice,Bob} vs {Alice,Bob}: 1/2, 1/2; v {500, 2} equal: 1, 1 -> 3/4
    assert clean.entity_set_f1 == pytest.approx(0.75)
    bqa = table_scores(gold, pred, rules="buildingqa")
    # buildingqa rows: lower-cased, numbers not canonical -> only the Bob row
    assert bqa.row_matching_f1 == pytest.approx(0.5)
    # buildingqa entity sets are raw strings: n 1/2, v {500,2} vs {500.0,2}: 1/2 -> 0.5
    assert bqa.entity_set_f1 == pytest.approx(0.5)
    assert table_scores(pred, pred, rules="buildingqa").exact_match_f1 == 1.0


def test_case_differences_only():
    gold = (["n"], [("Alice",)])
    pred = (["n"], [("ALICE",)])
    assert row_matching_f1(gold, pred) == 0.0
    assert row_matching_f1(gold, pred, rules="buildingqa") == 1.0
    assert entity_set_f1(gold, pred, rules="buildingqa") == 0.0  # raw strings


def test_unbound_cells():
    gold = {"head": {"vars": ["a", "b"]}, "results": {"bindings": [b(a="1"), b(a="2", b="")]}}
    pred = {"head": {"vars": ["a", "b"]}, "results": {"bindings": [b(a="1", b=""), b(a="2")]}}
    # clean: unbound matches only unbound; "" is a value -> no row matches
    assert row_matching_f1(gold, pred) == 0.0
    # sets: a equal; b {""} vs {""} (unbound is not an entity) -> 1.0
    assert entity_set_f1(gold, pred) == 1.0
    # buildingqa: the first gold row lacks b, so gold has only column a -> both rows match
    assert row_matching_f1(gold, pred, rules="buildingqa") == 1.0


def test_numbers_from_different_engines_match_under_clean_rules():
    gold = (["v"], [("500",), ("0.5",)])
    pred = (["v"], [(500.0,), ("5E-1",)])
    assert table_scores(gold, pred).exact_match_f1 == 1.0
    assert table_scores(gold, pred, rules="buildingqa").exact_match_f1 == 0.0


def test_budget_exhaustion_is_reported():
    cols = [f"c{i}" for i in range(6)]
    rows = [tuple("ab"[(i >> k) & 1] for k in range(6)) for i in range(40)]
    pred_rows = [tuple(reversed(r)) for r in rows[:30]] + [("a",) * 6] * 10
    tight = table_scores((cols, rows), (cols, pred_rows), budget=Budget(max_nodes=1, max_seconds=None))
    full = table_scores((cols, rows), (cols, pred_rows), budget=Budget(max_nodes=None, max_seconds=None))
    assert not tight.exact and tight.nodes <= 2
    assert full.exact and full.nodes > tight.nodes
    assert full.row_matching_f1 >= tight.row_matching_f1
    # reversed columns match the 30 reversed rows (the 11 all-"a" rows match gold's one):
    # tp = 30 -> 2*30/(40+40)
    assert full.row_matching_f1 == pytest.approx(0.75)
    assert table_scores((cols, rows), (cols, pred_rows)).row_matching_f1 == pytest.approx(0.75)
