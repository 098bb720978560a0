"""Defects a newcomer's audit found in the freeform ladder (each test failed on the code
before its fix): hand-computed verdicts."""

from __future__ import annotations

import pytest

from queryeval.metrics.freeform import decide


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # a percentage is not a length: 350% (or 3.5%) used to pass "3.5 km" by the percent rule
    ("3.5 km", "The grade is 350%", None, "inconclusive"),
    ("3.5 km", "The grade is 3.5%", None, "inconclusive"),
    ("3.5 km", "3.5 km, a 12% grade", "pass", "number"),
    ("3.5 km", "3 km, a 3.5% grade", "fail", "unit"),
    ("3.5", "3.5 %", None, "inconclusive", ),
])
def test_percentage_is_not_a_candidate_for_a_unit_reference(answer, response, verdict, rule):
    opts = {"unit": "km"} if answer == "3.5" else {}
    d = decide(answer, response, **opts)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@pytest.mark.parametrize("answer, response", [
    # a scale written as a letter abbreviation: the right figure, read as 5 or 1.2
    ("5000", "about 5k"),
    ("5000", "about 5 K"),
    ("1200000000", "$1.2bn in revenue"),
    ("1200000000", "1.2B dollars"),
    ("3000000", "3M users"),
    ("1000000", "1mn"),
    # thousands grouped by plain spaces (French, SI style): 1, 234 and 567
    ("1234567", "There were 1 234 567 visitors."),
    ("12500", "12 500"),
    # a fraction: 1 and 2, or 5 and 10 (a vulgar fraction, 1½, is read: claims tests)
    ("0.5", "1/2"),
    ("0.5", "5 / 10"),
])
def test_a_right_figure_written_otherwise_is_never_failed(answer, response):
    """Each response states the reference's figure in a form the number rule does not read:
    the rule must not fail it (it used to: '5 differs from 5000')."""
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (None, "inconclusive"), d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # what still fails: a wrong figure with no such form, a unit reference's other unit,
    # a date's slashes
    ("42", "There are 41 stations.", "fail", "number"),
    ("3.5 km", "3 m", "fail", "unit"),
    ("42", "On 01/02/2024 there were 41", "fail", "number"),
    ("42", "It was 41 km", "fail", "number"),
    ("5000", "about 5k, precisely 5000", None, "inconclusive"),  # 5 differs, 5000 matches
    ("5000", "5000", "pass", "exact"),
])
def test_what_the_ambiguity_rules_leave_alone(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@pytest.mark.parametrize("answer, response, options, verdict, rule", [
    # an ambiguous reference: 01/02/2024 is read 2024-01-02 (month first); a response that
    # gives its other reading (1 February 2024) was failed
    ("01/02/2024", "It launched on 1 February 2024.", {}, None, "inconclusive"),
    ("01/02/2024", "It launched on 2 January 2024.", {}, "pass", "date"),
    ("01/02/2024", "It launched on 1 February 2024.", {"dayfirst": True}, "pass", "date"),
    ("01/02/2024", "It launched on 2 January 2024.", {"dayfirst": True}, None, "inconclusive"),
    ("01/02/2024", "It launched on 3 March 2024.", {}, "fail", "date"),  # neither reading
    ("13/02/2024", "It launched on 13 February 2024.", {}, "pass", "date"),  # not ambiguous
])
def test_an_ambiguous_reference_date_never_fails_its_other_reading(answer, response, options,
                                                                   verdict, rule):
    d = decide(answer, response, **options)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # the exact rule folds case, and a unit's case is its meaning: 5 Mm (megametres) passed
    # "5 mm" (millimetres) as the same text
    ("5 mm", "5 Mm", "fail", "unit"),
    ("5 ms", "5 Ms", "fail", "unit"),
    ("5 m", "5 M", None, "inconclusive"),  # M is not a length
    ("The rod is 5 mm long", "the rod is 5 Mm long", None, "inconclusive"),  # a text answer
    # what stays exact: the same unit in another case pint does not tell apart, or none
    ("3.5 km", "3.5 km.", "pass", "exact"),
    ("5 mm", "5 MM", None, "inconclusive"),  # pint reads MM as megamolar: not a length
    ("Paris", "PARIS", "pass", "exact"),
    ("42 people", "42 People", "pass", "exact"),
])
def test_the_exact_rule_keeps_a_units_case(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@pytest.mark.parametrize("answer, response, verdict", [
    ("-3", "minus 3", "pass"),  # was failed: '3 differs from -3'
    ("-3", "It is negative 3 degrees.", "pass"),
    ("-3", "It is 4.", "fail"),
    ("3", "minus 3", "fail"),  # was passed: '3 matches 3'
    ("3", "Minus 3 is the answer", "fail"),
    ("2", "5 minus 3 is 2", None),  # 5, -3 and 2: which is the answer?
])
def test_a_sign_written_in_words_is_read(answer, response, verdict):
    d = decide(answer, response)
    assert d.verdict == verdict, d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # "degrees" alone is pint's angle (dimensionless, so no unit): the scale after it was
    # dropped, and 68 degrees Fahrenheit was read as 68 degC (a fail of 20 degC) and 20
    # degrees Fahrenheit as 20 degC (a pass)
    ("20 degC", "68 degrees Fahrenheit", "pass", "unit"),
    ("20 degC", "It was 68 degrees F.", "pass", "unit"),
    ("20 degC", "68 deg. F", "pass", "unit"),
    ("20 degC", "20 degrees Fahrenheit", "fail", "unit"),
    ("20 degC", "20 Degrees Celsius", "pass", "number"),
    ("20 degC", "21 degrees centigrade", "fail", "unit"),
    ("68 degF", "20 degrees C", "pass", "unit"),
    ("293.15 K", "20 degrees Celsius", "pass", "unit"),
    ("20 degC", "20 degrees", "pass", "number"),  # no scale: the reference's
])
def test_degrees_with_a_scale(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


@pytest.mark.parametrize("answer, response, verdict, rule", [
    # a two-word unit: the first word is no unit, so the number was taken in the
    # reference's unit and passed (3.5 nautical miles is 6.482 km)
    ("3.5 km", "3.5 nautical miles", "fail", "unit"),
    ("6.482 km", "3.5 nautical miles", "pass", "unit"),
    ("5 km", "5 light years", "fail", "unit"),
    ("3 t", "3 short tons", "fail", "unit"),
    ("3 t", "3 metric tons", "pass", "number"),  # pint's metric_ton is t
    ("3 L", "3 imperial gallons", "fail", "unit"),
    # a unit one word further that pint does not join: unclear, never the reference's
    ("3 L", "3 US gallons", None, "inconclusive"),
    ("5 km", "5 statute miles", None, "inconclusive"),
    # what stays: no unit after the number at all, or a unit right after it
    ("5 km", "it is 5 in all", "pass", "number"),
    ("5 km", "5 km in all", "pass", "number"),
])
def test_a_unit_two_words_long_is_not_the_references(answer, response, verdict, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail
