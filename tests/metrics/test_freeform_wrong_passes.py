"""Wrong answers a red team found the ladder passing (docs/freeform.md, "What a rule can
prove"): each is now inconclusive -- no rule proves it -- and the plain right answers beside
them still pass. Every case below passed on the code before."""

from __future__ import annotations

import pytest

from queryeval.metrics.freeform.ladder import decide

UNPROVEN = [
    # a function, power or root of the figure
    ("5", "√5"), ("5", "sqrt 5"), ("5", "log 5"), ("5", "ln 5"), ("5", "e^5"),
    ("5", "5 squared"), ("5", "5 cubed"), ("5", "5 factorial"),
    # a fraction named by its denominator, a scale word or abbreviation
    ("5", "5 tenths"), ("5", "5 hundredths"), ("5", "5 sixths"), ("5", "5 millionths"),
    ("5", "5 quadrillion"), ("5", "5 milliard"), ("5", "5 lakh"), ("5", "5 Mn"),
    ("5", "5 MN"), ("5", "5 Mln"), ("5", "5 bln"), ("5", "5 Bn"), ("5", "5 BN"),
    ("5", "5 bil"), ("5", "5 mil"), ("5", "5 thou"), ("5", "5 lac"), ("5", "5 T"),
    ("5", "5 Tn"), ("5", "5 trn"), ("5", "5 G"),
    # a range, a negation or a hedge the lists missed
    ("5", "5..6"), ("5", "5...6"), ("5", "5 is a lie"), ("5", "bogus 5"), ("5", "fake 5"),
    ("5", "nay 5"), ("5", "5 hypothetically"), ("5", "in theory 5"), ("5", "guessing 5"),
    ("5", "5 tops"), ("5", "5 downwards"),
    # a date qualified: another era, an offset, another day, an event that did not happen
    ("2020-03-04", "4 March 2020 BC"), ("2020-03-04", "4 March 2020 + 1 day"),
    ("2020-03-04", "4 March 2020, or the next day"), ("2020-03-04", "4 March 2020 (postponed)"),
    ("2020-03-04", "4 March 2020 (cancelled)"), ("2020-03-04", "the week of 4 March 2020"),
    ("5%", "5 basis"),
    # a sign outside parentheses, an accounting negative
    ("-5", "-(-5)"), ("5", "(5)"),
    # the exact rule: signs inside the text, an answer the normalisation empties
    ("C", "C#"), ("C", "C++"), ("B+", "B-"), ("A-", "A+"), ("A", "The"), ("A", "."),
    # a unit that is not read, or read only in part
    ("20 degC", "20 \u2109"), ("20 degC", "20 \u00b0R\u00e9"), ("5 km", "5\u2033"),
    ("5 km", "5 '"), ("5 km", "5 pm"), ("5 km", "5 km / h"), ("5 km", "5 km an hour"),
    ("5 km", "5 km hourly"), ("5 km", "5 km\u207b\u00b9"),
]


@pytest.mark.parametrize(("answer", "response"), UNPROVEN)
def test_a_wrong_answer_the_rules_cannot_prove_is_not_passed(answer, response):
    d = decide(answer, response)
    assert d.verdict != "pass", (answer, response, d)


def test_a_capitalised_unit_name_is_read():
    """``20 Fahrenheit`` was read as a bare 20 and passed against 20 °C; now it is read as
    20 °F and fails, as ``20 fahrenheit`` did."""
    assert decide("20 degC", "20 Fahrenheit").verdict == "fail"
    assert decide("20 degC", "20 Celsius").verdict == "pass"


@pytest.mark.parametrize(("answer", "response", "rule"), [
    ("5", "It is 5", "number"), ("5", "5 people", "number"), ("12", "12 months", "number"),
    ("5", "The answer is 5.", "number"), ("42", "42!", "exact"), ("Paris", "Paris.", "exact"),
    ("Paris", "**Paris**", "exact"), ("Paris", '"Paris"', "exact"),
    ("the Eiffel Tower", "Eiffel Tower", "exact"), ("1234567", "1,234,567", "exact"),
    ("B+", "b+", "exact"), ("C#", "C#", "exact"), ("20 degC", "20 \u00b0C", "number"),
    ("20 degC", "20 degrees", "number"), ("5 km", "It is 5 km from here", "number"),
    ("5 km", "5000 m", "unit"), ("3.5 km", "It is 3.5 away.", "number"),
    ("2020-03-04", "It was on 4 March 2020.", "date"), ("3", "3 days", "number"),
])
def test_the_plain_right_answers_still_pass(answer, response, rule):
    d = decide(answer, response)
    assert (d.verdict, d.rule) == ("pass", rule), d


@pytest.mark.parametrize(("answer", "response"), [
    ("0.05", "0.05%"), ("0.98", "0.98%"), ("1", "1%"), ("-0.3", "-0.3%"), ("0.5%", "0.5"),
    ("0.05%", "0.05"), ("0.98", "0.98 percent")])
def test_a_percentage_against_a_plain_fraction_by_its_figure_alone_is_not_proven(answer, response):
    """A plain number of at most 1 may be a fraction (0.98 = 98%): read as a percentage
    with its sign left out it matches ``0.98%``, read as a fraction it does not, and no rule
    can tell which the reference meant (both ``98%`` and ``0.98%`` passed against 0.98)."""
    d = decide(answer, response)
    assert d.verdict is None and d.rule == "inconclusive", d
    assert "fraction" in d.detail and "percent" in d.detail, d.detail


@pytest.mark.parametrize(("answer", "response", "verdict"), [
    ("0.98", "98%", "pass"), ("0.05", "5%", "pass"), ("12%", "0.12", "pass"),
    ("12%", "12", "pass"), ("45", "45%", "pass"), ("3.5", "3.5%", "pass"), ("0", "0%", "pass"),
    ("-12", "-12%", "pass"), ("0.05", "7%", "fail"), ("0.05", "0.07%", "fail"),
    ("0.5%", "0.6", "fail")])
def test_a_percentage_beside_a_plain_number_the_readings_agree_on(answer, response, verdict):
    """The fraction (``p% = p/100``) always reads; the figure with its sign left out reads
    when the plain number is not a fraction (beyond -1..1) or when both readings agree."""
    assert decide(answer, response).verdict == verdict
