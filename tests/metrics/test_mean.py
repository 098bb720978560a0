"""``mean_of`` is ``float(numpy.mean(values))`` to the last bit, for every length."""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.mean import mean_of

# the floats a case's figures are made of (shares like 1/3, 0 and 1), and the rest of them:
# huge, tiny, subnormal, signed zeros, infinities, NaN
shares = st.builds(lambda a, b: a / b, st.integers(0, 9), st.integers(1, 9))
floats = st.one_of(shares, st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1.0, 5e-324, 1.7976931348623157e308]))


def _bits(x: float) -> bytes:
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


def _numpy(values: list) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf, an overflowing sum
        return float(np.mean(values))


@settings(max_examples=1000, deadline=None)
@given(st.lists(floats, min_size=1, max_size=12))
def test_the_mean_is_numpys_to_the_last_bit(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _bits(mean_of(values)) == _bits(_numpy(values))


@pytest.mark.parametrize("values, expected", [
    ([0.5], 0.5),
    ([1.0, 0.0, 0.5], 0.5),
    ([1 / 3, 1 / 3, 1 / 3], 1 / 3),  # (1/3 + 1/3) + 1/3 is 1.0 exactly
    ([0.1] * 7, ((((((0.1 + 0.1) + 0.1) + 0.1) + 0.1) + 0.1) + 0.1) / 7),
    ([1, 0], 0.5),  # not floats: numpy's
])
def test_hand_computed_means(values, expected):
    assert _bits(mean_of(values)) == _bits(expected) == _bits(_numpy(values))


def test_eight_values_or_more_are_numpys_pairwise_sum():
    """numpy's pairwise sum groups 8 values or more otherwise than one after another: such a
    list is handed to numpy, not summed here."""
    values = [1.0, 1e100, 1.0, -1e100] * 2 + [0.3]
    assert _bits(mean_of(values)) == _bits(_numpy(values))
    values = [0.1 * i for i in range(20)]
    assert _bits(mean_of(values)) == _bits(_numpy(values))


def test_an_empty_list_is_numpys_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(mean_of([]))
