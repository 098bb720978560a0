"""Property tests: the branch-and-bound mapping search against brute force over every
ordered choice of predicted columns, on small low-cardinality tables (ties and partial
matches are frequent), for both rule sets; and the compatibility functions against a
literal re-implementation of the reference's pairwise algorithm."""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.tables_property import (  # noqa: E402,F401
    MISSING,
    _value_functions,
    bqa_norm,
    f1,
    first_row_columns,
    oracle,
    table_pairs,
)
from queryeval.metrics.sparql import get_entity_and_row_matching_f1, get_exact_match_f1
from queryeval.metrics.tables import Budget, Table, table_scores

UNLIMITED = Budget(max_nodes=None, max_seconds=None)
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def perm_figures(gold: Table, pred: Table, perm, rules: str):
    """(entity F1, row F1) of one mapping: gold column j -> predicted column perm[j]."""
    row_value, ent_value = _value_functions(rules)
    g = len(gold.columns)
    gold_counter = Counter(tuple(row_value(x) for x in r) for r in gold.rows)
    pred_counter = Counter(tuple(row_value(r[c]) for c in perm) for r in pred.rows)
    tp = sum((gold_counter & pred_counter).values())
    row = f1(tp / len(pred.rows), tp / len(gold.rows))
    precs, recs = [], []
    for j, c in enumerate(perm):
        gset = {ent_value(r[j]) for r in gold.rows} - {MISSING}
        pset = {ent_value(r[c]) for r in pred.rows} - {MISSING}
        inter = len(gset & pset)
        precs.append(inter / len(pset) if pset else 1.0)
        recs.append(inter / len(gset) if gset else 1.0)
    return f1(sum(precs) / g, sum(recs) / g), row


def mapping_figures(gold: Table, pred: Table, names, rules: str):
    """Figures of one given mapping (pred column names in gold order)."""
    if rules == "buildingqa":
        gold, pred = first_row_columns(gold), first_row_columns(pred)
    return perm_figures(gold, pred, [pred.columns.index(n) for n in names], rules)


def _check(gold: Table, pred: Table, rules: str) -> None:
    got = table_scores(gold, pred, rules=rules, budget=UNLIMITED)
    ent, row = oracle(gold, pred, rules)
    assert got.exact
    assert got.row_matching_f1 == pytest.approx(row, abs=1e-12)
    assert got.entity_set_f1 == pytest.approx(ent, abs=1e-9)
    if got.mapping is not None:
        assert mapping_figures(gold, pred, got.mapping, rules) == pytest.approx(
            (got.entity_set_f1, got.row_matching_f1), abs=1e-9)


@SETTINGS
@given(table_pairs("clean"))
def test_search_equals_brute_force_clean(pair):
    gold, pred = pair
    _check(gold, pred, "clean")


@SETTINGS
@given(table_pairs("buildingqa"))
def test_search_equals_brute_force_buildingqa(pair):
    gold, pred = pair
    _check(gold, pred, "buildingqa")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table_pairs("clean", max_cols=6), st.integers(0, 5))
def test_out_of_budget_result_is_a_real_mapping(pair, max_nodes):
    """With a tiny budget the figures are those of the returned mapping and never exceed
    the optimum; ``exact`` is False only when the budget ran out."""
    gold, pred = pair
    got = table_scores(gold, pred, budget=Budget(max_nodes=max_nodes, max_seconds=None))
    ent, row = oracle(gold, pred, "clean")
    assert (got.row_matching_f1, got.entity_set_f1) <= (row + 1e-12, ent + 1e-9) or \
        got.row_matching_f1 < row
    if got.mapping is not None:
        assert mapping_figures(gold, pred, got.mapping, "clean") == pytest.approx(
            (got.entity_set_f1, got.row_matching_f1), abs=1e-9)
    assert got.nodes <= max_nodes + 1 or got.exact


# --- the compatibility functions against a literal re-implementation of the reference -----


def ref_scores_for_mapping(gold_rows, pred_rows, mapping):
    """One mapping {pred key: gold key}, scored the reference's way: raw entity sets, rows
    matched pairwise (greedy, one-to-one) on sorted (key, normalised value) tuples."""
    precs, recs = [], []
    for pk, gk in mapping.items():
        gv = {str(r.get(gk, {}).get("value", "")) for r in gold_rows}
        pv = {str(r.get(pk, {}).get("value", "")) for r in pred_rows}
        tp = len(gv & pv)
        precs.append(tp / len(pv) if pv else 1.0)
        recs.append(tp / len(gv) if gv else 1.0)
    ent = f1(sum(precs) / len(precs), sum(recs) / len(recs))
    keys = set(mapping.values())

    def tup(row):
        return tuple(sorted((k, bqa_norm(v.get("value", ""))) for k, v in row.items() if k in keys))

    renamed = [{mapping[k]: v for k, v in r.items() if k in mapping} for r in pred_rows]
    used, tp = set(), 0
    for g in gold_rows:
        for i, p in enumerate(renamed):
            if i not in used and tup(g) == tup(p):
                used.add(i)
                tp += 1
                break
    return ent, f1(tp / len(pred_rows), tp / len(gold_rows))


def ref_entity_row(gold_rows, pred_rows):
    if not gold_rows or not pred_rows:
        s = 1.0 if not gold_rows and not pred_rows else 0.0
        return s, s
    gcols, pcols = list(gold_rows[0]), list(pred_rows[0])
    if len(pcols) < len(gcols) or not gcols:
        return 0.0, 0.0
    best = None
    for perm in permutations(pcols, len(gcols)):
        ent, row = ref_scores_for_mapping(gold_rows, pred_rows, dict(zip(perm, gcols, strict=True)))
        if best is None or (row, ent) > (best[1], best[0]):
            best = (ent, row)
    return best


def ref_exact(gold_rows, pred_rows):
    if not gold_rows and not pred_rows:
        return 1.0
    if not gold_rows or not pred_rows:
        return 0.0
    gcols, pcols = list(gold_rows[0]), list(pred_rows[0])
    if len(gcols) != len(pcols) or not gcols:
        return 0.0
    return ref_scores_for_mapping(gold_rows, pred_rows, dict(zip(pcols, gcols, strict=True)))[1]


@st.composite
def bindings_pairs(draw):
    values = st.sampled_from(["x", "X", '"x"', "y", "", "y@en", "y^^xsd:string"])

    def rows(names):
        out = []
        for _ in range(draw(st.integers(0, 6))):
            keys = draw(st.permutations(names))  # key order varies, keys may be missing
            out.append({k: {"value": draw(values)} for k in keys if draw(st.integers(0, 5))})
        return out

    g = draw(st.integers(1, 4))
    p = draw(st.integers(1, 5))
    return rows([f"g{i}" for i in range(g)]), rows([f"p{i}" for i in range(p)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bindings_pairs())
def test_compat_equals_reference_algorithm(pair):
    gold_rows, pred_rows = pair
    got = get_entity_and_row_matching_f1(gold_rows, pred_rows)
    ent, row = ref_entity_row(gold_rows, pred_rows)
    assert got["row_matching_f1"] == pytest.approx(row, abs=1e-12)
    assert got["entity_set_f1"] == pytest.approx(ent, abs=1e-9)
    assert get_exact_match_f1(gold_rows, pred_rows) == pytest.approx(
        ref_exact(gold_rows, pred_rows), abs=1e-12)
