"""A dot followed by exactly three digits (``1.000``) is 1 or, where a dot groups
thousands, 1000 (audit leftovers): when one reading agrees with the reference and the other
does not, the case is inconclusive. ``1.000`` failed ``1000`` before the fix."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.freeform import decide
from queryeval.metrics.freeform.numbers import extract_numbers


@pytest.mark.parametrize("answer, response, kw", [
    ("1000", "1.000", {}),                    # was fail: 1.000 differs from 1000
    ("1000", "It costs 1.000 dollars", {}),
    ("1500", "1.500", {}),
    ("-1000", "-1.000", {}),
    ("1000", "1.001", {"abs_tol": 1}),        # 1001 within 1 of 1000
    ("1 km", "1.000 m", {}),                  # 1000 m with a thousands dot
    ("1", "1.000", {}),                       # was pass: 1.000 may be 1000
    ("1000 m", "1.000 km", {}),               # was pass: 1.000 km may be 1000 km
])
def test_two_readings_one_agreeing_is_inconclusive(answer, response, kw):
    d = decide(answer, response, **kw)
    assert (d.verdict, d.rule) == (None, "inconclusive"), d.detail
    assert "thousands dot" in d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    ("2000", "1.500", "fail", "number"),       # neither 1.5 nor 1500 is 2000
    ("1000", "1.0000", "fail", "number"),      # four digits: a decimal point only
    ("125", "0.125", "fail", "number"),        # 0.125 has no thousands reading
    ("1000", "-1.000", "fail", "number"),      # -1 or -1000
    ("1234567", "1,234.567", "fail", "number"),  # a comma groups, so the dot is decimal
    ("3.125", "The value is 3.125", "pass", "number"),  # the reference reads the dot so
    ("0.5", "0.500", "pass", "number"),
])
def test_unambiguous_or_both_readings_decide(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 999), st.integers(0, 999), st.integers(0, 2_000_000))
def test_dot_three_never_fails_a_reference_one_reading_matches(whole, frac, ref):
    """Oracle: readings whole + frac/1000 and whole*1000 + frac of ``whole.fff``; the ladder
    passes only when both agree with the integer reference, fails only when neither does."""
    text = f"{whole}.{frac:03d}"
    readings = (Fraction(whole) + Fraction(frac, 1000), Fraction(whole * 1000 + frac))
    assert [n.grouped for n in extract_numbers(text)] == [readings[1]]
    agree = [r == ref for r in readings]
    d = decide(str(ref), f"It is {text}")
    expected = "pass" if all(agree) else "fail" if not any(agree) else None
    assert d.verdict == expected, d.detail
