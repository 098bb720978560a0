"""The compiled reader's score parser (``_trecread.c``: ``mul_pow10``, one 64x128-bit product
per decimal of up to 19 digits with |exponent| <= 27, strtod when the product sits too close
to a halfway point) against Python's correctly rounded ``float()`` and the exact reader's
``c_strtod``, bit for bit: every exponent the fast path takes and its edges, every digit
count, signs and leading zeros, and decimals at, just above and just below the midpoint
between two doubles (where a rounding mistake would show)."""

from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.suite import trec, trec_readers

MOD = trec.native_reader()
pytestmark = pytest.mark.skipif(MOD is None,
                                reason="compiled reader not built (or QUERYEVAL_NO_EXT)")


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _same(text: str) -> None:
    got = MOD.score(text.encode())
    want, whole = trec_readers.c_strtod(text)
    assert got is not None, text
    assert _bits(got[0]) == _bits(want), (text, got[0], want)
    assert got[1] == whole, text
    if whole:
        assert _bits(got[0]) == _bits(float(text)), text


def _decimal(m: int, q: int, point: int, sign: str, zeros: int, upper: bool) -> str:
    """m * 10^q written with the decimal point ``point`` digits from the right of m's digits
    (the exponent makes up the rest), ``zeros`` leading zeros, a sign."""
    digits = str(m)
    point = min(point, len(digits))
    body = digits[: len(digits) - point] + "." + digits[len(digits) - point:]
    exp = q + point
    return sign + "0" * zeros + body + (("E" if upper else "e") + str(exp) if exp else "")


@settings(max_examples=3000, deadline=None)
@given(m=st.one_of(st.integers(1, 10**19 - 1), st.integers(2**53 - 3, 2**53 + 3),
                   st.integers(10**18, 10**19 - 1), st.integers(2**63, 10**19 - 1)),
       q=st.integers(-30, 30), point=st.integers(0, 22), sign=st.sampled_from(["", "-", "+"]),
       zeros=st.integers(0, 3), upper=st.booleans())
def test_decimals_equal_float(m, q, point, sign, zeros, upper) -> None:
    _same(_decimal(m, q, point, sign, zeros, upper))


@settings(max_examples=1500, deadline=None)
@given(bits=st.integers(1, 2**63 - 2**52 - 1), digits=st.integers(15, 19),
       nudge=st.sampled_from([-1, 0, 1]))
def test_near_halfway_between_two_doubles(bits, digits, nudge) -> None:
    """The midpoint between a double and the next one, rounded to 15-19 significant digits
    and moved by one unit in its last digit: the product's tail then lies next to the half,
    where only a correct decision (or the strtod fallback) gives float()'s answer."""
    x = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if not math.isfinite(x) or not 1e-27 < x < 1e46:
        return
    with localcontext() as ctx:
        ctx.prec = 80
        mid = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        sig, exp = mid.as_tuple().digits, mid.adjusted()
        m = int("".join(map(str, sig[:digits]))) + nudge
    if m <= 0:
        return
    _same(f"{m}e{exp - digits + 1}")


def test_exact_halfway_integers_round_to_even() -> None:
    """Exact ties (the exponent >= 0 products are exact): round half to even, as float()."""
    for k in range(53, 64):
        for odd in (1, 3, 5, 7):
            n = 2**k + odd * 2 ** (k - 53)  # halfway between two doubles
            if n < 10**19:
                _same(str(n))
                _same(str(n) + ".000")
                _same(f"{n // 10**3}.{n % 10**3:03d}e3")


def test_every_exponent_of_the_fast_path_and_its_edges() -> None:
    for q in range(-29, 30):
        for m in (1, 7, 9007199254740993, 12345678901234567, 9999999999999999999,
                  10**18, 2**63, 2**64 - 1 if 2**64 - 1 < 10**19 else 10**19 - 1):
            _same(f"{m}e{q}")
            _same(f"-{m}e{q}")


def _plain(text: str) -> None:
    """``text`` read as a field (``score``, the scan's own path) and inside a run file, bit for
    bit float()'s value."""
    _same(text)
    data = f"q1 Q0 d1 1 {text} t\n".encode()
    out = MOD.scan(data, 1, True, False)
    assert out is not None, text
    (value,) = struct.unpack("<d", bytes(out[-1]))
    assert _bits(value) == _bits(float(text)), text


@settings(max_examples=1500, deadline=None)
@given(x=st.floats(0, 10, exclude_max=True), digits=st.integers(1, 19),
       nudge=st.sampled_from([-1, 0, 1]), sign=st.sampled_from(["", "-"]))
def test_one_digit_point_fraction_near_halfway(x, digits, nudge, sign) -> None:
    """The scan's fast form ``[-]d.f`` (one integer digit, 1-18 fraction digits; 19 go the
    general way): the midpoint between a double below 10 and the next one, written with
    ``digits`` fraction digits and moved by one unit in the last, and repr()'s own form."""
    with localcontext() as ctx:
        ctx.prec = 80
        mid = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        m = int(mid.scaleb(digits).to_integral_value()) + nudge
    if not 0 <= m < 10 ** (digits + 1):
        return
    text = f"{m:0{digits + 1}d}"
    _plain(f"{sign}{text[0]}.{text[1:]}")
    r = repr(x)
    if "e" not in r:
        _plain(sign + r)


def test_one_digit_point_fraction_edges() -> None:
    for text in ["0.0", "-0.0", "0.000000000000000001", "9.999999999999999999",
                 "9.99999999999999999999", "1.5", "5.000000000000000000", "0.1", "0.30000000000000004",
                 "8.999999999999999112", "2.0000000000000002220446049250313"]:
        _plain(text)
