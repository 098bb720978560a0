"""Deterministic ranking helpers: exact top-k with ties, against a brute-force oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from queryeval.engines.retrievers import rank_rows, topk_rows


def oracle(row: list[float], k: int) -> list[int]:
    """Sort by score descending (NaN as -inf), then by document index."""
    key = [(-(s if not math.isnan(s) else -math.inf), i) for i, s in enumerate(row)]
    return [i for _, i in sorted(key)][:k]


def test_ties_at_the_cut_keep_the_earliest_documents() -> None:
    scores = np.array([[1.0, 3.0, 2.0, 3.0, 2.0, 2.0]])
    # 3.0 at 1 and 3, then the 2.0s at 2, 4, 5: with k=3 only index 2 of the 2.0s fits.
    assert topk_rows(scores, 3).tolist() == [[1, 3, 2]]
    assert topk_rows(scores, 4).tolist() == [[1, 3, 2, 4]]
    assert rank_rows(scores).tolist() == [[1, 3, 2, 4, 5, 0]]


def test_nan_ranks_last_and_k_edge_cases() -> None:
    scores = np.array([[np.nan, 0.5, -np.inf, 0.5], [0.0, 0.0, 0.0, 0.0]])
    assert topk_rows(scores, 10).tolist() == [[1, 3, 0, 2], [0, 1, 2, 3]]
    assert topk_rows(scores, 0).shape == (2, 0)
    assert topk_rows(np.zeros((0, 5)), 3).shape == (0, 3)
    with pytest.raises(ValueError):
        topk_rows(scores, -1)
    with pytest.raises(TypeError):
        topk_rows(scores, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        topk_rows(np.zeros(3), 1)


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 4), st.integers(1, 30)),
        # few distinct values, so ties (and NaN) are common
        elements=st.sampled_from([0.0, 1.0, 2.0, 2.5, -1.0, np.nan, np.inf]),
    ),
    st.integers(0, 35),
)
def test_topk_equals_brute_force(scores: np.ndarray, k: int) -> None:
    expected = [oracle(row, k) for row in scores.tolist()]
    assert topk_rows(scores, k).tolist() == expected
    assert rank_rows(scores)[:, :k].tolist() == expected


@settings(max_examples=50, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 200)),
              elements=st.floats(-1, 1, width=32)), st.integers(1, 50))
def test_topk_float32_continuous(scores: np.ndarray, k: int) -> None:
    expected = [oracle(row, k) for row in scores.astype(np.float64).tolist()]
    assert topk_rows(scores, k).tolist() == expected
