"""The freeform ladder rule by rule, on hand-computed cases (docs/freeform.md's examples)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from queryeval.metrics.freeform import decide, reference_number
from queryeval.metrics.freeform.dates import as_date, find_dates
from queryeval.metrics.freeform.numbers import extract_numbers, is_ambiguous, within

# (answer, response, options) -> (verdict, rule)
LADDER = [
    # missing
    ("Paris", None, {}, "fail", "missing"),
    ("Paris", "   ", {}, "fail", "missing"),
    # exact: case, punctuation, articles, whitespace
    ("Paris", "paris.", {}, "pass", "exact"),
    ("The Eiffel Tower", "eiffel   tower!", {}, "pass", "exact"),
    ("1,234,567", "1234567", {}, "pass", "exact"),
    # exact refuses texts whose numbers differ although SQuAD's normalisation makes them equal
    ("3.5", "35", {}, "fail", "number"),
    ("5", "-5", {}, "fail", "number"),
    # aliases
    ("United States", "USA", {"aliases": ["USA", "U.S."]}, "pass", "alias"),
    ("United States", "u.s.", {"aliases": ["USA", "U.S."]}, "pass", "alias"),
    # text never fails deterministically
    ("Paris", "The capital is Paris.", {}, None, "inconclusive"),
    ("Paris", "Lyon", {}, None, "inconclusive"),
    # numbers
    ("42", "There are 42 stations.", {}, "pass", "number"),
    ("42", "In 2023 there were 42 of them", {}, None, "inconclusive"),  # 42 or 2023?
    ("42", "In 2023 there were 42 of them", {"question": "How many in 2023?"}, "pass",
     "number"),  # a number the question states is context
    ("42", "On 2024-02-01 there were 42", {}, "pass", "number"),  # numbers of a date too
    ("42", "41 or 42", {}, None, "inconclusive"),
    ("42", "42, or 42.0 to be exact", {}, "pass", "number"),  # every candidate agrees
    ("42", "42 or 43", {"question": "Is it 42 or 43?"}, None, "inconclusive"),
    ("1234567", "In 2020 it was 1,234,567.", {"question": "Population in 2020?"}, "pass",
     "number"),
    ("42", "In 2023 there were 41 of them", {}, "fail", "number"),  # none agrees
    ("42", "There are 41 stations.", {}, "fail", "number"),
    ("42", "forty-two", {}, None, "inconclusive"),
    ("42", "41, or forty-two", {}, None, "inconclusive"),
    ("3.5", "3,5", {}, None, "inconclusive"),
    ("1234567", "1,234,567 people", {}, "pass", "number"),
    ("1234567", "1.2 million", {}, "fail", "number"),
    ("1234567", "1.23 million", {"rel_tol": 0.01}, "pass", "number"),
    ("1234567", "1.2 million", {"rel_tol": 0.01}, "fail", "number"),
    # a hedge qualifies the figure: neither verdict is proven, even within the tolerance
    ("1234567", "about 1.2 million", {}, None, "inconclusive"),
    ("1234567", "about 1.23 million", {"rel_tol": 0.01}, None, "inconclusive"),
    ("10", "10.4", {"abs_tol": 0.5}, "pass", "number"),
    ("10", "10.6", {"abs_tol": 0.5}, "fail", "number"),
    ("10", "10.5", {"abs_tol": 0.5}, "pass", "number"),  # the bound is inclusive
    ("-3", "It fell by −3 points", {}, "pass", "number"),
    ("-3", "pages 2-3", {}, "fail", "number"),  # a hyphen after a digit is not a sign
    # percentages: p% matches p and p/100
    ("12%", "grew by 12 percent", {}, "pass", "number"),
    ("12%", "grew by 0.12", {}, "pass", "number"),
    ("12%", "grew by 12", {}, "pass", "number"),
    ("12%", "grew by 13%", {}, "fail", "number"),
    ("12%", "grew by 0.12%", {}, "fail", "number"),
    ("0.12", "12%", {}, "pass", "number"),
    ("12%", "12.3 per cent", {"abs_tol": 0.5}, "pass", "number"),
    # units
    ("3.5 km", "It is 3500 m away.", {}, "pass", "unit"),
    ("3.5 km", "It is 3,500 metres away.", {}, "pass", "unit"),
    ("3.5 km", "3.5km", {}, "pass", "number"),  # same unit: no conversion
    ("3.5", "3500 m", {"unit": "km"}, "pass", "unit"),
    ("3.5", "about 3500 m", {"unit": "km"}, None, "inconclusive"),
    ("3.5 km", "It is 3 km away.", {}, "fail", "unit"),
    ("3.5 km", "It is 3.5 away.", {}, "pass", "number"),  # a bare number is in the reference's unit
    ("3.5 km", "It takes 3 hours.", {}, None, "inconclusive"),  # no comparable number
    ("3.5 km", "3.5 km (3500 m)", {}, "pass", "unit"),
    ("3.5 km", "3.5 kilometers per hour", {}, None, "inconclusive"),  # a speed
    ("90 km/h", "25 metres per second", {}, "pass", "unit"),
    ("2 km^2", "2000000 square metres", {}, "pass", "unit"),
    ("2 km^2", "an area of 2,000,000 m^2", {}, "pass", "unit"),  # the 2 of m^2 is the unit's
    ("2 km^2", "2 km", {}, None, "inconclusive"),  # a length is not an area
    ("3.5 km", "3.5 km, about 2.2 miles", {}, None, "inconclusive"),  # 2.2 mi is 3.54 km
    ("3.5 km", "3.5 km, 2 hours away", {}, "pass", "number"),  # hours: another dimension
    ("3.5 km", "It is 3500 in total", {}, "fail", "unit"),  # "in" is not an inch
    ("100 degC", "212 °F", {}, "pass", "unit"),
    ("1 mile", "1.609344 km", {}, "pass", "unit"),
    ("60 km/h", "1000 m/min", {}, "pass", "unit"),
    # dates
    ("2024-02-01", "It launched on February 1, 2024.", {}, "pass", "date"),
    ("2024-02-01", "1st of Feb. 2024", {}, "pass", "date"),
    ("2024-02-01", "2024/2/1", {}, "pass", "date"),
    ("2024-02-01", "On 2 March 2024", {}, "fail", "date"),
    ("2024-02-01", "last February", {}, None, "inconclusive"),
    ("2024-02-01", "On 01/02/2024", {}, None, "inconclusive"),  # the other reading
    ("2024-02-01", "On 01/02/2024", {"dayfirst": True}, "pass", "date"),
    ("2024-01-02", "On 01/02/2024", {}, "pass", "date"),
    ("2024-02-13", "On 13/02/2024", {}, "pass", "date"),  # 13 can only be the day
    ("2024-02-01", "On 02/02/2024", {}, "fail", "date"),  # both readings are 2 February
    ("2024-02-01", "from 1 February 2024 to 3 March 2024", {}, None, "inconclusive"),
    ("2024-02-01", "It was 1 Feb 2024; 2 Feb 2024 was the plan",
     {"question": "Was it 2 Feb 2024?"}, "pass", "date"),  # the question's date is context
    # a negation anywhere leaves it to the judge, even one of the question's date
    ("2024-02-01", "Not 2 Feb 2024 but 1 Feb 2024", {"question": "Was it 2 Feb 2024?"},
     None, "inconclusive"),
    ("2024-02-01", "1 Feb 2024 or 2 Feb 2024", {"question": "1 Feb 2024 or 2 Feb 2024?"},
     None, "inconclusive"),
]


@pytest.mark.parametrize(("answer", "response", "opts", "verdict", "rule"), LADDER)
def test_ladder_rule_by_rule(answer, response, opts, verdict, rule):
    d = decide(answer, response, **opts)
    assert (d.verdict, d.rule) == (verdict, rule), d.detail


def test_squad_figures_are_the_best_over_answer_and_aliases():
    # "USA" vs ["United States", "USA"]: EM 1 against the alias
    d = decide("United States", "USA", aliases=["USA"])
    assert (d.exact_match, d.token_f1) == (1.0, 1.0)
    # "the capital is paris" vs "Paris": tokens capital, is, paris (article dropped):
    # precision 1/3, recall 1 -> F1 = 2 * (1/3) / (4/3) = 0.5
    d = decide("Paris", "The capital is Paris.")
    assert (d.exact_match, d.token_f1) == (0.0, 0.5)
    # SQuAD's EM is reported as it is, even where the exact rule refuses (3.5 vs 35)
    assert decide("3.5", "35").exact_match == 1.0


def test_details_name_what_decided():
    assert decide("3.5 km", "3500 m").detail == "3500 m = 3.5 km"
    assert decide("42", "41 or 42").detail == "42 matches, but 41 differs: which is the answer?"
    assert decide("42", "41 or 40").detail == "41, 40 differ from 42"
    assert decide("42", "41").detail == "41 differs from 42"
    assert "ambiguous" in decide("2024-02-01", "01/02/2024").detail


def test_reference_number_forms():
    assert reference_number("42") == reference_number("42.")
    r = reference_number("1.2 million")
    assert (r.value, r.percent, r.unit) == (1200000, False, None)
    r = reference_number("12%")
    assert (r.value, r.percent) == (12, True)
    assert str(reference_number("3.5 km").unit) == "kilometer"
    assert str(reference_number("3.5", "km").unit) == "kilometer"
    assert reference_number("3500 m", "km").unit is not None  # the written unit wins
    for text in ("42 people", "about 42", "3 to 5", "Paris", "2 km 3 m"):
        assert reference_number(text) is None, text


def test_number_extraction_by_hand():
    got = [(n.value, n.percent) for n in extract_numbers(
        "In 2023, revenue was $1,234.50 (+3.5%), down −2 from 1.5e3; 10-12 items, .5 of v1.2.3")]
    assert got == [(2023, False), (Fraction("1234.50"), False), (Fraction("3.5"), True),
                   (-2, False), (1500, False), (10, False), (12, False),
                   (Fraction(1, 2), False)]
    assert [n.value for n in extract_numbers("2 thousand and 1.5 billion")] == [2000, 1500000000]
    assert is_ambiguous("3,5") and is_ambiguous("1,2345") and not is_ambiguous("1,234")


def test_within_is_inclusive_and_exact():
    assert within(Fraction("0.3"), Fraction("0.1") + Fraction("0.2"))
    assert within(Fraction(105), Fraction(100), rel_tol=0.05)
    assert not within(Fraction(10501, 100), Fraction(100), rel_tol=0.05)
    assert within(Fraction(12), Fraction(10), abs_tol=2, rel_tol=0.01)  # the larger bound


def test_dates_by_hand():
    assert [d.iso for d in find_dates("from 2024-03-05 to 7 April 2024")] == [
        "2024-03-05", "2024-04-07"]
    assert find_dates("30 February 2024") == []
    assert find_dates("March 2024") == []
    d = find_dates("01/02/2024")[0]
    assert (d.iso, d.other) == ("2024-01-02", "2024-02-01")
    d = find_dates("01/02/2024", dayfirst=True)[0]
    assert (d.iso, d.other) == ("2024-02-01", "2024-01-02")
    assert as_date("2024") is None and as_date("1 Feb 2024.").iso == "2024-02-01"


def test_hostile_responses_stay_bounded():
    """A 5000-digit run is no number (Python refuses to convert it); a response with more
    than 1000 numbers or dates that match none is inconclusive, with a short detail."""
    assert decide("3.5 km", "1" * 5000).rule == "inconclusive"
    assert decide("3.5 km", "3.5 km " + "1" * 5000).verdict == "pass"
    d = decide("3.5 km", "12 km " * 1500)
    assert (d.verdict, d.detail) == (None, "more than 1000 numbers in the response")
    assert decide("3.5 km", "12 km " * 1000 + "3500 m").rule == "inconclusive"
    assert decide("3.5 km", "12 km " * 1000).verdict == "fail"  # 1000 numbers, all differ
    d = decide("42", " ".join(str(i) for i in range(50, 60)))
    assert d.detail == "50, 51, 52, 53, 54 and 5 more differ from 42"
    assert decide("2024-02-01", "2024-01-01 " * 1001).rule == "inconclusive"
