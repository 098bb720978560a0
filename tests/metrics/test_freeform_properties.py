"""The freeform ladder's parsers by property tests: number extraction against a brute-force
token parser and the values the texts were built from, tolerances against an interval
oracle, unit conversions against exact factors, dates against the date they were written
from."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics.freeform import decide
from queryeval.metrics.freeform.dates import find_dates
from queryeval.metrics.freeform.numbers import extract_numbers, within

# words with no vowel cannot spell a number word, a scale word, "per cent" or an exponent;
# "bp" and "bps" (basis points) are a per-notation, read with the number before them
WORDS = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=1, max_size=6).filter(
    lambda w: w not in ("bp", "bps"))
SCALE_ABBREVIATIONS = {"k", "m", "bn", "mn", "mln", "tn", "bln", "trn"}  # ones WORDS can draw
# a function WORDS can draw before a number (sqrt 5, ln 5): never a rule's verdict either
FUNCTIONS = {"sqrt", "cbrt", "ln", "lg"}
# what WORDS can draw after a number that re-scales it (5x, 5 ppm): never a rule's verdict
RESCALING = {"x", "pp", "ppt", "ppts", "ppm", "ppb"}


@st.composite
def number_tokens(draw) -> tuple[str, Fraction, bool]:
    sign = draw(st.sampled_from(["", "-", "+", "\u2212"]))
    whole = draw(st.integers(0, 10**12))
    grouped = draw(st.booleans())
    frac = draw(st.one_of(st.just(""), st.text(alphabet="0123456789", min_size=1, max_size=4)))
    pct = draw(st.sampled_from(["", "%"]))
    body = f"{whole:,}" if grouped else str(whole)
    token = sign + body + (f".{frac}" if frac else "") + pct
    value = Fraction(f"{whole}.{frac}" if frac else str(whole))
    return token, (-value if sign in ("-", "\u2212") else value), bool(pct)


def brute_parse(text: str) -> list[tuple[Fraction, bool]]:
    """A token-by-token reading of a space-separated text: a token is a number when, less a
    final '%' and a leading sign, it is digits with commas between groups of three and an
    optional decimal part."""
    out = []
    for token in text.split(" "):
        pct = token.endswith("%")
        body = token[:-1] if pct else token
        neg = body[:1] in ("-", "\u2212")
        body = body[1:] if body[:1] in ("-", "+", "\u2212") else body
        whole, _, frac = body.partition(".")
        groups = whole.split(",")
        if not whole or not all(g.isdigit() for g in groups) or (frac and not frac.isdigit()):
            continue
        if len(groups) > 1 and not (1 <= len(groups[0]) <= 3
                                    and all(len(g) == 3 for g in groups[1:])):
            continue
        value = Fraction("".join(groups) + (f".{frac}" if frac else ""))
        out.append((-value if neg else value, pct))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(WORDS.map(lambda w: (w, None, None)), number_tokens()),
                min_size=1, max_size=8))
def test_number_extraction_matches_brute_force(parts):
    text = " ".join(p[0] for p in parts)
    got = [(n.value, n.percent) for n in extract_numbers(text)]
    built = [(v, pct) for _, v, pct in parts if v is not None]
    assert got == built == brute_parse(text)


def _interval_oracle(a: Fraction, b: Fraction, abs_tol: float, rel_tol: float) -> bool:
    """a lies in [b - t, b + t] for t the larger of the two bounds, tested bound by bound."""
    ta, tr = Fraction(abs_tol), Fraction(rel_tol) * abs(b)
    return (b - ta <= a <= b + ta) or (b - tr <= a <= b + tr)


DECIMALS = st.integers(-10**6, 10**6).map(lambda n: Fraction(n, 100))
TOLS = st.one_of(st.just(0.0), st.floats(0, 100, allow_nan=False))
RELS = st.one_of(st.just(0.0), st.floats(0, 0.5, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(DECIMALS, DECIMALS, TOLS, RELS)
def test_tolerance_against_interval_oracle(a, b, abs_tol, rel_tol):
    assert within(a, b, abs_tol=abs_tol, rel_tol=rel_tol) == _interval_oracle(a, b, abs_tol, rel_tol)


def _text(value: Fraction) -> str:
    return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


@settings(max_examples=200, deadline=None)
@given(DECIMALS, DECIMALS, st.sampled_from([0.0, 0.5, 3.0]), st.sampled_from([0.0, 0.01, 0.1]))
def test_number_rule_passes_exactly_within_tolerance(ref, said, abs_tol, rel_tol):
    d = decide(_text(ref), f"The value is {_text(said)} today.", abs_tol=abs_tol, rel_tol=rel_tol)
    expected = "pass" if _interval_oracle(said, ref, abs_tol, rel_tol) else "fail"
    assert d.verdict == expected and d.rule in ("number", "exact")


# (larger unit, smaller unit, exact factor)
UNIT_PAIRS = [("km", "m", 1000), ("m", "cm", 100), ("km", "mm", 10**6), ("kg", "g", 1000),
              ("h", "min", 60), ("min", "s", 60), ("hour", "seconds", 3600),
              ("ft", "inch", 12), ("mile", "yard", 1760), ("L", "mL", 1000)]
POSITIVE = st.integers(1, 10**6).map(lambda n: Fraction(n, 100))


@settings(max_examples=200, deadline=None)
@given(POSITIVE, st.sampled_from(UNIT_PAIRS), st.booleans())
def test_unit_conversion_passes_the_same_quantity(value, pair, big_reference):
    big, small, factor = pair
    if big_reference:
        answer, response = f"{_text(value)} {big}", f"it is {_text(value * factor)} {small}"
    else:
        answer, response = f"{_text(value * factor)} {small}", f"it is {_text(value)} {big}"
    d = decide(answer, response)
    assert (d.verdict, d.rule) == ("pass", "unit"), d.detail


@settings(max_examples=200, deadline=None)
@given(POSITIVE, st.sampled_from(UNIT_PAIRS), st.sampled_from([-1, 1]),
       st.integers(1, 1000))
def test_unit_conversion_fails_another_quantity(value, pair, direction, ppm):
    """Off by ``ppm`` millionths (far above the conversion's 1e-9 slack): a fail, and a
    pass once ``rel_tol`` covers it."""
    big, small, factor = pair
    said = value * factor * (1 + direction * Fraction(ppm, 10**6))
    answer, response = f"{_text(value)} {big}", f"{_text(said)} {small}"
    assert decide(answer, response).verdict == "fail"
    # 9.995 m: with a thousands dot 9995 m, off by far: the two readings disagree
    dot = re.fullmatch(r"[1-9]\d{0,2}\.\d{3} \w+", response) is not None
    assert decide(answer, response, rel_tol=ppm / 10**6 * 1.001).verdict == (
        None if dot else "pass")


DATES = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31))


@settings(max_examples=200, deadline=None)
@given(DATES, st.sampled_from(["iso", "dmy", "mdy", "num"]), st.booleans())
def test_dates_read_back_as_written(day, form, dayfirst):
    text = {
        "iso": day.isoformat(),
        "dmy": f"{day.day} {day:%B} {day.year}",
        "mdy": f"{day:%b} {day.day}, {day.year}",
        "num": (f"{day.day:02d}/{day.month:02d}/{day.year}" if dayfirst
                else f"{day.month:02d}/{day.day:02d}/{day.year}"),
    }[form]
    found = find_dates(f"It happened on {text}.", dayfirst=dayfirst)
    assert [d.iso for d in found] == [day.isoformat()]
    ambiguous = form == "num" and day.day <= 12 and day.day != day.month
    assert (found[0].other is not None) == ambiguous


def test_one_unit_registry_across_threads(monkeypatch):
    """Cases are scored on several threads: the first ones must share one pint registry
    (units of two registries cannot be compared; an lru_cache let two get built)."""
    import threading

    from queryeval.metrics.freeform import units

    monkeypatch.setattr(units, "_REGISTRY", [])
    barrier = threading.Barrier(6)
    got = []

    def work():
        barrier.wait()
        got.append(units.registry())

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and all(r is got[0] for r in got)


@settings(max_examples=300, deadline=None)
@given(DECIMALS, st.lists(DECIMALS, min_size=0, max_size=5), st.sampled_from([0.0, 1.0]),
       st.lists(WORDS, min_size=6, max_size=6))
def test_number_rule_against_the_every_candidate_oracle(ref, said, abs_tol, words):
    """Pass iff every number agrees, fail iff none does (and there is one), else
    inconclusive: the number rule against a direct reading of its definition."""
    text = " ".join(w for pair in zip(words, [*map(_text, said), ""], strict=False) for w in pair).strip()
    agree = [_interval_oracle(x, ref, abs_tol, 0.0) for x in said]
    expected = ("pass" if agree and all(agree) else "fail" if agree and not any(agree)
                else None)
    after = words[1:len(said) + 1]  # the word after each number
    before = words[:len(said)]  # and the word before it
    if any(w in SCALE_ABBREVIATIONS or w in RESCALING for w in after) or \
            any(w in FUNCTIONS for w in before):
        expected = None  # "5 k" may be 5000, "5 x" is a factor, "ln 5" a logarithm
    d = decide(_text(ref), text, abs_tol=abs_tol)
    if d.rule == "exact":  # the text is the number itself
        assert expected == "pass"
    else:
        assert d.verdict == expected, (text, d.detail)
