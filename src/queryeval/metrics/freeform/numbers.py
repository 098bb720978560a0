"""Numbers in free text: extraction (thousands separators, signs, scale words, percentages)
and the tolerance test, in exact rational arithmetic.

Rules (docs/freeform.md, "Numbers"):

* a number is digits with an optional decimal part (``3.5``, ``.5``) and exponent (``1e6``),
  or a vulgar fraction, alone or after digits (``½``, ``2½`` is 2.5);
  groups of three digits after a comma, a no-break or thin space are thousands separators
  (``1,234,567``); a comma followed by another count of digits (``3,5``) is *not* read as a
  decimal comma: the text is flagged ``ambiguous`` and its numbers can pass a case but never
  fail it; a dot followed by exactly three digits (``1.000``) is read as a decimal point, and
  its other reading (a thousands dot: 1000) is kept on the number (``grouped``);
* a sign (``+``, ``-``, every Unicode minus and short dash: ``−`` U+2212, ``‐`` U+2010,
  ``‑`` U+2011, ``‒`` U+2012, ``–`` U+2013, ``﹣`` U+FE63, ``－`` U+FF0D, ``⁻`` U+207B; or the
  word ``minus`` or ``negative`` before the number) counts only where it does not follow a
  letter, a digit or a dot (``3-5`` is 3 and 5, ``x -5`` is -5, ``–5`` is -5, ``minus 3``
  is -3);
* scale words after the number multiply it: ``hundred`` 100, ``dozen`` 12, ``thousand``
  1e3, ``lakh`` 1e5, ``million`` 1e6, ``crore`` 1e7, ``billion`` 1e9, ``trillion`` 1e12, one
  after another too (``5 hundred thousand``); letter abbreviations like ``5k`` or ``2M`` are
  not read (``m`` is a metre): :func:`ambiguity` names them;
* ``%``, ``percent`` or ``per cent`` after the number marks a percentage (the value stays
  the written figure: ``12%`` is 12 with ``percent=True``, ``per=100``); ``‰``, ``per
  mille`` (``per=1000``), ``‱``, ``bp``, ``bps``, ``basis points`` (``per=10000``) are the
  same with another base.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

MAX_DIGITS = 400
"""A run of more digits than this is not read as a number (no figure anyone means, and
Python refuses to convert integers of over 4300 digits)."""
SCALES = {"hundred": 10**2, "dozen": 12, "thousand": 10**3, "lakh": 10**5, "lakhs": 10**5,
          "million": 10**6, "crore": 10**7, "crores": 10**7, "billion": 10**9,
          "trillion": 10**12}
PER = {"%": 100, "\uff05": 100, "\ufe6a": 100, "percent": 100, "\u2030": 1000,
       "permille": 1000, "permil": 1000, "\u2031": 10**4, "bp": 10**4, "bps": 10**4,
       "basispoint": 10**4, "basispoints": 10**4}
"""The per-notations after a number (spaces left out) and their base (``12%``: 12/100)."""
MINUS_SIGNS = "-\u2212\u2010\u2011\u2012\u2013\ufe63\uff0d\u207b"
"""Every character read as a minus sign before a number: hyphen-minus, minus sign, hyphen,
non-breaking hyphen, figure dash, en dash, small and fullwidth hyphen-minus, superscript
minus."""
VULGAR = "\u00bc-\u00be\u2150-\u215e\u2189"
"""The vulgar fractions (``½``, ``⅔`` ...) as a character class."""
_SEP = ",\u00a0\u2009\u202f"
_SCALE_WORD = r"(?:hundred|dozen|thousand|lakhs?|million|crores?|billion|trillion)\b"
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[+" + re.escape(MINUS_SIGNS) + r"]?|(?:minus|negative)\s+)"
    r"(?P<int>\d{1,3}(?:[" + _SEP + r"]\d{3})+(?!\d)|\d+)?"
    r"(?:(?<=\d)|(?=\.\d)|(?=[" + VULGAR + r"]))(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][+\-]?\d+)?(?!\.?\d)"
    r"(?P<vulgar>[" + VULGAR + r"])?"
    r"(?P<scale>(?:\s*" + _SCALE_WORD + r")+)?"
    r"(?P<pct>\s*[%\uff05\ufe6a\u2030\u2031]|\s*per\s?(?:cent|mil(?:le)?)\b"
    r"|\s*bps?\b|\s*basis\s+points?\b)?",
    re.IGNORECASE,
)
_AMBIGUOUS = re.compile(r"\d,(?:\d{1,2}|\d{4,})(?!\d)")
# forms that write a figure this module does not read, so that its numbers must not fail a
# case: a scale abbreviation (5k, $1.2bn, 3M, 5m), thousands grouped by plain spaces
# (1 234 567), a fraction (1/2, 1⁄2)
_SCALE_ABBREVIATION = re.compile(r"\d\s?(?:k|K|m|M|MM|B|bn|mn|mln|tn)\b")
_SPACE_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?: \d{3})+(?![.,]?\d)")
_FRACTION = re.compile(r"\d\s*[/\u2044\u2215]\s*\d")


@dataclass(frozen=True)
class Number:
    """One number found in a text: its exact value, whether it has a per-notation
    (``percent``: ``%``, ``‰`` or basis points, whose base is ``per``), and where it ends (a
    unit may follow)."""

    value: Fraction
    percent: bool
    start: int
    end: int
    text: str
    grouped: Fraction | None = None
    """The other reading of a dot followed by exactly three digits (``1.000``: 1, or 1000
    where a dot groups thousands), or None when the number has no such dot."""
    per: int = 1
    """The base of its per-notation: 100 for a percentage, 1000 for per mille, 10000 for
    basis points; 1 when it has none (``percent`` is then False)."""


def _value(m: re.Match) -> Fraction | None:
    whole = m["int"] or ""
    frac = m["frac"] or ""
    if not whole and not frac and not m["vulgar"]:
        return None
    if m["vulgar"] and (frac or m["exp"]):  # 2.5½, 1e3½: no reading (ambiguity names it)
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
    if m["vulgar"]:
        value += vulgar_value(m["vulgar"])
    for word in re.findall(r"[a-z]+", (m["scale"] or "").lower()):
        value *= SCALES[word]
    if m["sign"] and m["sign"][0] in MINUS_SIGNS + "mMnN":  # a minus, minus, negative
        value = -value
    return value


def vulgar_value(char: str) -> Fraction:
    """The value of a vulgar fraction character (``½`` is 1/2), from its Unicode
    decomposition (``<fraction> 0031 2044 0032``): exact, unlike ``unicodedata.numeric``."""
    fields = unicodedata.decomposition(char).split()[1:]
    num, _, den = "".join(chr(int(f, 16)) for f in fields).partition("\u2044")
    return Fraction(int(num), int(den))


def _per(m: re.Match) -> int:
    if not m["pct"]:
        return 1
    return PER[re.sub(r"\s+", "", m["pct"].lower())]


def _grouped(m: re.Match, value: Fraction) -> Fraction | None:
    """``value`` read with its dot as a thousands separator, when the number is 1 to 3
    digits (not a lone 0), a dot and exactly three digits, without exponent (``1.000``,
    ``12.500``); None otherwise (``0.125``, ``1,234.567``, ``1.5``, ``1.000e3``)."""
    whole, frac = m["int"] or "", m["frac"] or ""
    if (len(frac) != 4 or m["exp"] or m["vulgar"] or not whole.isdigit() or len(whole) > 3
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
                          _grouped(m, value), _per(m)))
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
    (``1 234 567``), a fraction written with a slash (``1/2``; leave dates out of ``text``
    first; a vulgar fraction such as ``½`` is read)."""
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
