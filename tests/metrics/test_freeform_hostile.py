"""Hostile responses against the free-form ladder (metrics/freeform/): exponent bombs, pint
unit strings that evaluate a tower of powers, very long unit-like words. Each must give a
verdict (or inconclusive) without raising and return well within a generous bound (the
hanging ones are run in a child process so a regression fails instead of hanging)."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.freeform.ladder import decide
from queryeval.metrics.freeform.numbers import extract_numbers
from queryeval.metrics.freeform.units import parse_unit, unit_after

GRACE_S = 60  # generous: each call below takes about a second (pint's registry loads)


def decide_in_child(answer: str, response: str) -> dict:
    """``decide(answer, response)`` in a child python; fails (not hangs) past GRACE_S."""
    code = ("import json, sys\nfrom queryeval.metrics.freeform.ladder import decide\n"
            "a, r = json.loads(sys.stdin.read())\nd = decide(a, r)\n"
            "print(json.dumps([d.verdict, d.rule]))\n")
    try:
        out = subprocess.run([sys.executable, "-c", code], input=json.dumps([answer, response]),
                             capture_output=True, text=True, timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"decide({answer!r}, {response[:40]!r}...) ran past {GRACE_S} s") \
            from None
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_an_exponent_of_thousands_of_digits_is_no_number_and_no_crash():
    # int() refuses strings of over 4300 digits: the ladder raised ValueError
    bomb = "1e" + "9" * 5000
    assert extract_numbers(bomb) == []
    d = decide("42", f"the answer is {bomb}")
    assert (d.verdict, d.rule) == (None, "inconclusive")
    assert [n.value for n in extract_numbers("1e3 and 1e" + "1" * 5000 + " and 7")] == [1000, 7]


def test_a_tower_of_powers_is_never_evaluated_by_pint():
    # pint read m^9^9^9 as metre ** (9 ** (9 ** 9)) and computed the exponent forever
    for tower in ("m^9^9^9^9", "m**9**9**9", "km*s^9^9^9", "m^9²²²"):
        assert decide_in_child("3 km", f"5 {tower}") == [None, "inconclusive"], tower


def test_plain_powers_still_read():
    assert str(parse_unit("m^2")) == "meter ** 2"
    assert str(parse_unit("(m)**3")) == "meter ** 3"
    assert str(parse_unit("kg*m/s^2")) == "kilogram * meter / second ** 2"
    assert decide("3 km^2", "it is 3000000 m^2").verdict == "pass"
    assert decide("9 m^2", "3 square metres").verdict == "fail"


def test_a_huge_unit_like_word_is_unclear_and_fast():
    # a 200,000-letter word after a number: unit_like tried pint on each of its prefixes
    # (200,000 parses of up to 200,000 letters), and 'square <word>' handed pint the word
    for response in ("5 " + "k" * 200_000, "5 square " + "m" * 100_000):
        assert decide_in_child("3 km", response) == [None, "inconclusive"]
    unit, end = unit_after("5 " + "k" * 1000, 1)
    assert repr(unit) == "UNCLEAR" and end == 1002


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="0123456789eE+-.,^*²³/()m kgs%", max_size=40))
def test_no_response_over_unit_and_number_characters_raises(tail):
    d = decide("3 km", "5 " + tail)
    assert d.rule in ("missing", "exact", "number", "unit", "inconclusive")


def test_a_long_word_after_a_number_costs_a_bounded_number_of_pint_parses(monkeypatch):
    # unit_like parsed every prefix of the word: 1,000 numbers each before a 64-letter word
    # (69 KB) took 61,000 pint parses (12 s on the 2-core box); prefixes stop at 16 letters
    import random

    from queryeval.metrics.freeform import units

    reg = units.registry()
    calls = []
    real = reg.parse_units
    monkeypatch.setattr(reg, "parse_units", lambda text, *a, **k: calls.append(text) or real(
        text, *a, **k))
    units.parse_unit.cache_clear()
    rnd = random.Random(7)
    words = ["".join(rnd.choice("aeioubcdfg") for _ in range(60)) for _ in range(50)]
    decide("3 km", " ".join(f"{i + 10} {w}" for i, w in enumerate(words)))
    assert len(calls) <= 50 * 20, len(calls)
    assert units.unit_like("kilometros") and units.unit_like("mins")
    assert not units.unit_like("people")
