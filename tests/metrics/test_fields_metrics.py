"""Field-value retrieval metrics (seed 004): hand-computed values and brute-force properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.fields import (
    FieldScore,
    QuestionScore,
    aggregate,
    depth_needed,
    ground_truth_ranks,
    join_ground_truth,
    mrr,
    passed,
    question_score,
    ranks_from_order,
    recall,
    recall_curve,
    recall_matrix,
    recall_matrix_from_hits,
    split_ground_truth,
)
from queryeval.metrics.ranking import NOT_FOUND

RANKING = ["Carrots", "Potatoes", "Onions", "Garlic", "Salt", "Pepper"]


# ------------------------------------------------------------------ ground-truth grammar


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("Carrots;Potatoes;Onions;Garlic", ["Carrots", "Potatoes", "Onions", "Garlic"]),
        ("a';b;c", ["a;b", "c"]),
        ("a';", ["a;"]),
        ("';", [";"]),
        ("';';", [";;"]),
        ("x;';", ["x", ";"]),
        ("O'Neil;x", ["O'Neil", "x"]),
        ("a'';b", ["a';b"]),
        (" a ; b ", ["a", "b"]),
        ("a;;b;", ["a", "b"]),
        ("a;b;a", ["a", "b"]),
        ("Cheap", ["Cheap"]),
        ("", []),
        ("  ", []),
        (";", []),
        (None, []),
    ],
)
def test_split_ground_truth(text, items):
    assert split_ground_truth(text) == items


def test_reference_escape_bug_is_fixed():
    # the reference splits "a';b" into ["a", "b"]; the escape must keep one item
    assert split_ground_truth("a';b") == ["a;b"]


@given(st.lists(st.text(alphabet="ab;' ", min_size=1).map(str.strip).filter(bool), max_size=5))
def test_join_then_split_round_trips(items):
    # items that end with "'" cannot be written before a separator (documented limit)
    items = [i for i in dict.fromkeys(items) if not i.endswith("'")]
    assert split_ground_truth(join_ground_truth(items)) == items


# ------------------------------------------------------------------ per question


def test_recall_hand_computed():
    gt = "Carrots;Onions;Garlic;Tomatoes"
    assert recall(gt, RANKING, 1) == 0.25
    assert recall(gt, RANKING, 2) == 0.25
    assert recall(gt, RANKING, 3) == 0.5
    assert recall(gt, RANKING, 4) == 0.75
    assert recall(gt, RANKING, 100) == 0.75
    assert recall(gt, RANKING, 0) == 0.0
    # default N = number of ground-truth items (4)
    assert recall(gt, RANKING) == 0.75


def test_recall_is_case_sensitive_and_exact():
    assert recall("carrots", RANKING, 6) == 0.0
    assert recall("Carrot", RANKING, 6) == 0.0
    assert recall("Carrots", RANKING, 6) == 1.0


def test_empty_ground_truth_rules():
    assert recall("", RANKING, 0) == 1.0
    assert recall([], [], 3) == 1.0
    assert mrr("", RANKING) == 1.0
    assert depth_needed("", RANKING) == 0
    assert passed("", RANKING, 0) is True


def test_duplicates_in_ground_truth_count_once():
    assert recall(["Salt", "Salt"], RANKING, 5) == 1.0
    assert mrr(["Salt", "Salt"], RANKING) == 0.2


def test_seed_mrr_line():
    # seed 004: "1 0.5 0.(3) 0.25" — items at ranks 1..4 contribute 1/rank each
    for rank, value in zip(range(1, 5), (1, 0.5, 1 / 3, 0.25), strict=True):
        assert mrr([RANKING[rank - 1]], RANKING) == pytest.approx(value, rel=1e-15)
    expected = (1 + 0.5 + 1 / 3 + 0.25) / 4
    assert mrr(RANKING[:4], RANKING) == pytest.approx(expected, rel=1e-15)


def test_mrr_absent_item_contributes_zero_and_cutoff():
    assert mrr("Potatoes;Tomatoes", RANKING) == 0.25  # (1/2 + 0) / 2
    assert mrr("Carrots;Pepper", RANKING) == pytest.approx((1 + 1 / 6) / 2)
    assert mrr("Carrots;Pepper", RANKING, n=3) == 0.5  # Pepper (rank 6) outside the cut-off


def test_depth_and_passed():
    assert depth_needed("Onions;Carrots", RANKING) == 3
    assert depth_needed("Onions;Tomatoes", RANKING) is None
    assert passed("Onions;Carrots", RANKING, 3) is True
    assert passed("Onions;Carrots", RANKING, 2) is False
    assert passed("Tomatoes", RANKING, 6) is False


def test_negative_n_is_an_error():
    with pytest.raises(ValueError):
        recall("Salt", RANKING, -1)
    with pytest.raises(ValueError):
        passed("Salt", RANKING, -1)


def test_ground_truth_ranks_first_occurrence_and_limit():
    ranking = ["a", "b", "a", "c"]
    assert ground_truth_ranks("a;c;z", ranking).tolist() == [1, 4, NOT_FOUND]
    assert ground_truth_ranks("a;c", ranking, limit=3).tolist() == [1, NOT_FOUND]


def test_ranks_from_order_matches_string_ranks():
    order = np.array([3, 0, 4, 1])  # a truncated ranking of 6 documents
    assert ranks_from_order(order, np.array([0, 1, 5]), 6).tolist() == [2, 4, NOT_FOUND]


# ------------------------------------------------------------------ vectorised == scalar

values_st = st.lists(st.sampled_from(list("abcdefgh")), unique=True, max_size=8)


@settings(max_examples=150, deadline=None)
@given(ranking=values_st, truths=st.lists(values_st, min_size=1, max_size=5),
       max_n=st.integers(0, 10))
def test_recall_matrix_equals_recall_per_n(ranking, truths, max_n):
    ranks = [ground_truth_ranks(gt, ranking) for gt in truths]
    matrix = recall_matrix(ranks, max_n)
    assert matrix.shape == (len(truths), max_n + 1)
    for q, gt in enumerate(truths):
        curve = recall_curve(ranks[q], max_n)
        for n in range(max_n + 1):
            expected = recall(gt, ranking, n)
            assert matrix[q, n] == expected
            assert curve[n] == expected
            assert passed(gt, ranking, n) == (expected == 1.0)
        depth = depth_needed(gt, ranking)
        first_full = next((n for n in range(len(ranking) + 1) if recall(gt, ranking, n) == 1.0),
                          None)
        assert depth == first_full


def test_recall_matrix_empty_inputs():
    assert recall_matrix([], 3).shape == (0, 4)
    assert recall_matrix([np.zeros(0, dtype=np.int64)], 2).tolist() == [[1.0, 1.0, 1.0]]


# ------------------------------------------------------------------ aggregates


def test_question_score_and_aggregate():
    q1 = question_score([FieldScore("item", 1.0, 0.5, True), FieldScore("type", 0.5, 1.0, False)])
    assert q1 == QuestionScore(recall=0.75, mrr=0.75, passed=False)
    q2 = question_score([FieldScore("item", 1.0, 1.0, True), FieldScore("type", 1.0, 0.25, True)])
    agg = aggregate([q1, q2])
    assert agg.passed == 1
    assert agg.questions == 2
    assert agg.pass_rate == 0.5
    assert agg.avg_recall == 0.875
    assert math.isclose(agg.mrr, (0.75 + 0.625) / 2)


def test_aggregate_of_nothing_is_explicit():
    agg = aggregate([])
    assert (agg.passed, agg.questions, agg.pass_rate, agg.avg_recall, agg.mrr) == (0, 0, None, None, None)
    with pytest.raises(ValueError):
        question_score([])


@settings(max_examples=100, deadline=None)
@given(ranking=values_st, truths=st.lists(values_st, min_size=1, max_size=5),
       max_n=st.integers(0, 8))
def test_recall_matrix_from_hits_equals_recall(ranking, truths, max_n):
    top = (ranking + [None] * max_n)[:max_n]
    hits = np.array([[v is not None and v in gt for v in top] for gt in truths],
                    dtype=bool).reshape(len(truths), max_n)
    sizes = np.array([len(gt) for gt in truths])
    curves = recall_matrix_from_hits(hits, sizes)
    for q, gt in enumerate(truths):
        for n in range(max_n + 1):
            assert curves[q, n] == recall(gt, ranking, n)
