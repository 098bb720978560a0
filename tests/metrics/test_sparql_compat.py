"""The seed's 20 unit tests (seed 003 notebook, section 1), same inputs and expected values;
only the import changed."""

from __future__ import annotations

import numpy as np
import pytest

from queryeval.metrics.sparql import (
    get_arity_matching_f1,
    get_entity_and_row_matching_f1,
    get_exact_match_f1,
)

gold_rows_base = [
    {"name": {"value": "Alice"}, "age": {"value": "30"}},
    {"name": {"value": "Bob"}, "age": {"value": "25"}},
    {"name": {"value": "Charlie"}, "age": {"value": "35"}},
]


def entity_set_f1(gt, pred):
    return get_entity_and_row_matching_f1(gt, pred)["entity_set_f1"]


def row_matching_f1(gt, pred):
    return get_entity_and_row_matching_f1(gt, pred)["row_matching_f1"]


all_test_cases = [
    # --- Tests for get_arity_matching_f1 ---
    {"name": "Arity F1: Correct SPARQL", "func": get_arity_matching_f1, "args": ["SELECT ?n ?a WHERE {}", gold_rows_base], "expected": 1.0},
    {"name": "Arity F1: Incorrect SPARQL", "func": get_arity_matching_f1, "args": ["SELECT ?n WHERE {}", gold_rows_base], "expected": 2/3},
    {"name": "Arity F1: Correct Table", "func": get_arity_matching_f1, "args": [gold_rows_base, gold_rows_base], "expected": 1.0},
    {"name": "Arity F1: Incorrect Table", "func": get_arity_matching_f1, "args": [[{"name": {"value": "A"}}], gold_rows_base], "expected": 2/3},
    {"name": "Arity F1: Both Empty", "func": get_arity_matching_f1, "args": [[], []], "expected": 1.0},

    # --- Tests for get_entity_set_f1 (No mapping provided) ---
    {"name": "Entity Set F1: Perfect Match", "func": entity_set_f1, "args": [gold_rows_base, gold_rows_base], "expected": 1.0},
    {"name": "Entity Set F1: Perfect Match (Mapped Names)", "func": entity_set_f1, "args": [gold_rows_base, [{"person": r["name"], "years": r["age"]} for r in gold_rows_base]], "expected": 1.0},
    {"name": "Entity Set F1: Superset Pred", "func": entity_set_f1, "args": [gold_rows_base, gold_rows_base + [{"name": {"value": "David"}, "age": {"value": "40"}}]], "expected": 0.857142},
    {"name": "Entity Set F1: Subset Pred", "func": entity_set_f1, "args": [gold_rows_base, gold_rows_base[:2]], "expected": 0.8},
    {"name": "Entity Set F1: No Match", "func": entity_set_f1, "args": [gold_rows_base, [{"name": {"value": "Z"}, "age": {"value": "99"}}]], "expected": 0.0},

    # --- Tests for get_row_matching_f1 (No mapping provided) ---
    {"name": "Row Match F1: Perfect Match", "func": row_matching_f1, "args": [gold_rows_base, gold_rows_base], "expected": 1.0},
    {"name": "Row Match F1: Perfect Match (Mapped Names)", "func": row_matching_f1, "args": [gold_rows_base, [{"p": r["name"], "a": r["age"]} for r in gold_rows_base]], "expected": 1.0},
    {"name": "Row Match F1: Shuffled Order (Mapped Names)", "func": row_matching_f1, "args": [gold_rows_base, [{"a": r["age"], "p": r["name"]} for r in reversed(gold_rows_base)]], "expected": 1.0},
    {"name": "Row Match F1: Subset Pred", "func": row_matching_f1, "args": [gold_rows_base, gold_rows_base[:1]], "expected": 0.5},
    {"name": "Row Match F1: Partial Content Mismatch", "func": row_matching_f1, "args": [gold_rows_base, [{"name": {"value": "Alice"}, "age": {"value": "30"}}, {"name": {"value": "Bob"}, "age": {"value": "99"}}]], "expected": 0.4},

    # --- Tests for get_exact_match_f1 ---
    {"name": "Exact Match F1: Perfect Match", "func": get_exact_match_f1, "args": [gold_rows_base, gold_rows_base], "expected": 1.0},
    {"name": "Exact Match F1: Shuffled Order", "func": get_exact_match_f1, "args": [gold_rows_base, [gold_rows_base[1], gold_rows_base[2], gold_rows_base[0]]], "expected": 1.0},
    {"name": "Exact Match F1: Schema Mismatch", "func": get_exact_match_f1, "args": [gold_rows_base, [{"person": {"value": "Alice"}, "years": {"value": "30"}}]], "expected": 0.5},
    {"name": "Exact Match F1: Subset Pred", "func": get_exact_match_f1, "args": [gold_rows_base, gold_rows_base[:2]], "expected": 0.8},
    {"name": "Exact Match F1: Both Empty", "func": get_exact_match_f1, "args": [[], []], "expected": 1.0},
]


def test_there_are_twenty_seed_cases():
    assert len(all_test_cases) == 20


@pytest.mark.parametrize("test", all_test_cases, ids=[t["name"] for t in all_test_cases])
def test_seed_case(test):
    actual = test["func"](*test["args"])
    # the seed's own comparison: numpy.isclose with its default tolerances
    assert np.isclose(actual, test["expected"]), (actual, test["expected"])
