"""Numbers in free text: extraction (thousands separators, signs, scale words, percentages)
and the tolerance test, in exact rational arithmetic.

Rules (docs/freeform.md, "Numbers"):

* a number is digits with an optional decimal part (``3.5``, ``.5``) and exponent (``1e6``);
  groups of three digits after a comma, a no-break or thin space are thousands separators
  (``1,234,567``); a comma followed by another count of digits (``3,5``) is *not* read as a
  decimal comma: the text is flagged ``ambiguous`` and its numbers can pass a case but never
  fail it; a dot followed by exactly three digits (``1.000``) is read as a decimal point, and
  its other reading (a thousands dot: 1000) is kept on the number (``grouped``);
* a sign (``+``, ``-``, ``−``, or the word ``minus`` or ``negative`` before the number)
  counts only where it does not follow a letter, a digit or a dot (``3-5`` is 3 and 5,
  ``x -5`` is -5, ``minus 3`` is -3);
* a scale word after the number multiplies it: ``thousand`` 1e3, ``million`` 1e6,
  ``billion`` 1e9, ``trillion`` 1e12 (letter abbreviations like ``5k`` or ``2M`` are not
  read: ``m`` is a metre);
* ``%``, ``percent`` or ``per cent`` after the number marks a percentage (the value stays
  the written figure: ``12%`` is 12 with ``percent=True``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_DIGITS = 400
"""A run of more digits than this is not read as a number (no figure anyone means, and
Python refuses to convert integers of over 4300 digits)."""
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_SEP = ",\u00a0\u2009\u202f"
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[+\-\u2212]?|(?:minus|negative)\s+)"
    r"(?P<int>\d{1,3}(?:[" + _SEP + r"]\d{3})+(?!\d)|\d+)?"
    r"(?:(?<=\d)|(?=\.\d))(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][+\-]?\d+)?(?!\.?\d)"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion)\b)?"
    r"(?P<pct>\s*%|\s+per\s?cent\b)?",
    re.IGNORECASE,
)
_AMBIGUOUS = re.compile(r"\d,(?:\d{1,2}|\d{4,})(?!\d)")
# forms that write a figure this module does not read, so that its numbers must not fail a
# case: a scale abbreviation (5k, $1.2bn, 3M, 5m), thousands grouped by plain spaces
# (1 234 567), a fraction (1/2, ½)
_SCALE_ABBREVIATION = re.compile(r"\d\s?(?:k|K|m|M|MM|B|bn|mn|mln|tn)\b")
_SPACE_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?: \d{3})+(?![.,]?\d)")
_FRACTION = re.compile(r"\d\s*/\s*\d|[\u00bc-\u00be\u2150-\u215e]")


@dataclass(frozen=True)
class Number:
    """One number found in a text: its exact value, whether it is a percentage, and where
    it ends (a unit may follow)."""

    value: Fraction
    percent: bool
    start: int
    end: int
    text: str
    grouped: Fraction | None = None
    """The other reading of a dot followed by exactly three digits (``1.000``: 1, or 1000
    where a dot groups thousands), or None when the number has no such dot."""


def _value(m: re.Match) -> Fraction | None:
    whole = m["int"] or ""
    frac = m["frac"] or ""
    if not whole and not frac:
        return None
    digits = re.sub("[" + _SEP + "]", "", whole) or "0"
    if len(digits) + len(frac) > MAX_DIGITS:
        return None
    value = Fraction(digits + frac)
    if m["exp"]:
        if len(m["exp"].lstrip("eE+-")) > 4:  # 1e99999...: int() refuses over 4300 digits
            return None
        exp = int(m["exp"][1:])
        if abs(exp) > 400:  # beyond any float: not a figure anyone means
            return None
        value *= Fraction(10) ** exp
    if m["scale"]:
        value *= SCALES[m["scale"].lower()]
    if m["sign"] and m["sign"][0] in "-\u2212mMnN":  # -, −, minus, negative
        value = -value
    return value


def _grouped(m: re.Match, value: Fraction) -> Fraction | None:
    """``value`` read with its dot as a thousands separator, when the number is 1 to 3
    digits (not a lone 0), a dot and exactly three digits, without exponent (``1.000``,
    ``12.500``); None otherwise (``0.125``, ``1,234.567``, ``1.5``, ``1.000e3``)."""
    whole, frac = m["int"] or "", m["frac"] or ""
    if (len(frac) != 4 or m["exp"] or not whole.isdigit() or len(whole) > 3
            or whole.startswith("0")):
        return None
    return value * 1000


def extract_numbers(text: str, limit: int | None = None) -> list[Number]:
    """Every number in ``text``, in order (see the module's rules); at most ``limit``."""
    out: list[Number] = []
    for m in _NUMBER.finditer(text):
        value = _value(m)
        if value is None:
            continue
        out.append(Number(value, bool(m["pct"]), m.start(), m.end(), m.group(0),
                          _grouped(m, value)))
        if limit is not None and len(out) >= limit:
            break
    return out


def is_ambiguous(text: str) -> bool:
    """Whether ``text`` holds a digit comma that is not a thousands separator (``3,5``):
    it may be a decimal comma, so its numbers must not fail a case."""
    return _AMBIGUOUS.search(text) is not None


def ambiguity(text: str, *, scales: bool = True) -> str | None:
    """Why the numbers read from ``text`` may not be the figures it states (so they must
    not fail a case), or None: a comma that may be a decimal comma (``3,5``), a scale
    abbreviation (``5k``, ``$1.2bn``, ``3M``; only when ``scales``: a reference with a unit
    reads the word after a number as a unit), thousands grouped by plain spaces
    (``1 234 567``), a fraction (``1/2``, ``½``; leave dates out of ``text`` first)."""
    if is_ambiguous(text):
        return "a comma may be a decimal comma"
    if scales and _SCALE_ABBREVIATION.search(text):
        return "a number has a scale abbreviation (5k, 1.2bn, 3M)"
    if _SPACE_GROUPS.search(text):
        return "spaces may group thousands (1 234 567)"
    if _FRACTION.search(text):
        return "a number is written as a fraction"
    return None


def within(value: Fraction, reference: Fraction, *, abs_tol: float | None = None,
           rel_tol: float | None = None, slack: Fraction = Fraction(0)) -> bool:
    """``|value - reference| <= max(abs_tol, rel_tol * |reference|)`` (0 when not given),
    exactly; ``slack`` is a further relative allowance (the float rounding of a unit
    conversion)."""
    bound = max(Fraction(abs_tol or 0), Fraction(rel_tol or 0) * abs(reference))
    bound += slack * abs(reference)
    return abs(value - reference) <= bound
