"""A word after a number that pint cannot read is not the reference's unit (audit leftovers):
``3.5 kmh`` passed ``3.5 km`` (the number was taken in km). Each case failed before the fix."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.freeform import decide
from queryeval.metrics.freeform.units import NOT_UNITS, convert, parse_unit, unit_after


@pytest.mark.parametrize("answer, response", [
    ("3.5 km", "3.5 kmh"),        # was pass: kmh unread, taken as km
    ("3.5 km", "3.5kmh"),
    ("3.5 km", "3.5 kms"),        # km or km/s: unread, taken as km
    ("3.5 km", "3.5 mtrs"),
    ("3.5 km", "3.5 kmph"),       # pint: kilo-mph (1000 mi/h); a speed anyway
    ("3.5 km", "3.5 k m"),        # pint: Boltzmann's constant, another dimension
    ("3.5 km", "3.5km/h"),        # a speed, not a length
    ("3.5 km", "It is 3.5 kmh away"),
    ("90 km/h", "90 kmph"),       # was fail: 90 kilo-mph is 144 841 km/h
    ("4 km", "4 kms"),
])
def test_unread_unit_word_is_never_compared(answer, response):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (None, "inconclusive"), d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    ("3.5 km", "3.5 kilometres", "pass", "number"),
    ("3.5 km", "3500 metres away", "pass", "unit"),
    ("3.5 km", "It is 3500 in total", "fail", "unit"),   # `in` is not a unit word
    ("3.5 km", "3.5 km, 3 kmh faster", "pass", "number"),  # the kmh number is not a candidate
    ("90 km/h", "90 kph", "pass", "unit"),              # pint's kilometer_per_hour
    ("2 kWh", "2000 Wh", "pass", "unit"),               # a prefix on a plain unit stays
])
def test_read_units_and_plain_words_unchanged(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


_KM = parse_unit("km")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="bcdfghjklmnpqrstvwxzKMGH", min_size=1, max_size=5),
       st.sampled_from(["", " "]))
def test_no_pass_unless_pint_reads_a_length_equal_to_the_reference(word, gap):
    """Oracle: ``3.5 <word>`` may pass ``3.5 km`` only where pint reads ``word`` itself as a
    unit and 3.5 of it is 3.5 km (within the conversion slack); an unread word never
    stands for km."""
    d = decide("3.5 km", f"3.5{gap}{word}")
    if d.verdict != "pass" or word.lower() in NOT_UNITS:  # pm, PM: never a unit (docs)
        return
    unit, _ = unit_after(f"3.5{gap}{word}", 3)
    read = parse_unit(word)
    assert read is not None and unit == read, (word, d.detail)
    value = convert(Fraction(7, 2), read, _KM)
    assert value is not None and abs(value - Fraction(7, 2)) <= Fraction(7, 2) * Fraction(1, 10**9)
