"""The retrieval aggregate's 0/1 shortcut leaves every mean exactly as ``Values`` would."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from queryeval.tasks.accum import Values
from queryeval.tasks.retrieval.aggregate import _Binaryish

_VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 0, 1, True, False, 0.5, 1.0 / 3, math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-300, max_value=1e-300),
)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@given(st.lists(_VALUES, max_size=40))
def test_binaryish_matches_values_bit_for_bit(values):
    fast, ref = _Binaryish(), Values()
    for v in values:
        fast.add(v)
        ref.add(v)
    assert len(fast) == len(ref) == len(values)
    assert _same(fast.mean(), ref.mean())
    assert _same(fast.sum(), ref.sum())


def test_binaryish_hand_computed():
    acc = _Binaryish()
    for v in (1.0, 0.0, 1.0, 0.5):
        acc.add(v)
    assert acc.mean() == 0.625
    assert len(acc) == 4


def test_binaryish_rejects_what_values_rejects():
    import pytest

    for bad in (None, "x"):
        with pytest.raises((TypeError, ValueError)):
            Values().add(bad)
        with pytest.raises((TypeError, ValueError)):
            _Binaryish().add(bad)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.lists(_VALUES, min_size=3, max_size=3),
                          _VALUES, st.booleans(), st.one_of(st.none(), _VALUES)), max_size=30))
def test_run_figures_merged_from_its_datasets_equal_adding_every_question(rows):
    """The run's figures are its datasets' accumulators merged (DatasetAcc.merged): each mean
    is, bit for bit, the one of an accumulator given every question in record order."""
    from queryeval.tasks.retrieval.aggregate import DatasetAcc

    whole, parts = DatasetAcc(3), {}
    for ds, values, recall, hit, best in rows:
        whole.add(values, recall, hit, best)
        parts.setdefault(ds, DatasetAcc(3)).add(values, recall, hit, best)
    merged = DatasetAcc.merged(parts.values(), 3)
    assert (merged.size, merged.correct, merged.missed) == (whole.size, whole.correct, whole.missed)
    for got, want in zip([*merged.cols, merged.recall, merged.wrong],
                         [*whole.cols, whole.recall, whole.wrong], strict=True):
        assert len(got) == len(want)
        assert _same(got.mean(), want.mean())
        assert _same(got.sum(), want.sum())
