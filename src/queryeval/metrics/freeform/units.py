"""Units with pint: the unit written after a number, and conversion into the reference's
unit (``3.5 km`` is ``3500 m``).

pint reads many short English words as units (``in`` is an inch, ``a`` a year, ``at`` an
atmosphere, ``t`` a tonne): a word in :data:`NOT_UNITS` is never taken for a unit after a
number. A unit is read only where the reference has one (docs/freeform.md, "Units").
"""

from __future__ import annotations

import re
import threading
from fractions import Fraction
from functools import lru_cache
from typing import Any

NOT_UNITS = frozenset({
    "a", "an", "am", "and", "are", "as", "at", "be", "by", "do", "for", "from", "had",
    "has", "he", "if", "in", "is", "it", "me", "my", "no", "not", "of", "on", "or", "pm",
    "so", "than", "that", "the", "this", "to", "up", "us", "was", "we", "were", "with",
})
# a unit token: letters (and µ, °, Ω), then letters, digits, powers, '/', '·', '*', '^'
_UNIT = re.compile(r"\s*(?P<unit>[^\W\d_]|[µμ°Ω])(?:[\w°µμ²³·*^/]|(?<=\^)-)*")

MAX_UNIT_CHARS = 64
"""A word after a number longer than this is no unit (pint's longest name has 41 letters):
it is :data:`UNCLEAR`, never handed to pint, whose parser is slow on long names."""
# a power raised again (m^9^9^9: pint evaluates 9^9^9, a number no machine holds), or an
# exponent of four digits or more: never a unit anyone writes, never handed to pint
_POWERS = re.compile(r"(?:\^|\*\*|[²³]).*?(?:\^|\*\*|[²³])|(?:\^|\*\*)\s*[-+]?\d{4}")
_FACTORS = re.compile(r"(?<!\*)\*(?!\*)|[/·()]")

CONVERSION_SLACK = Fraction(1, 10**9)
"""The relative allowance added after a unit conversion: pint converts in floating point,
so ``1 mi`` in ``km`` can be off by a rounding step."""


_REGISTRY: list[Any] = []
_REGISTRY_LOCK = threading.Lock()


def registry() -> Any:
    """pint's default registry, built once per process under a lock (cases are scored on
    several threads, and units of two registries cannot be compared); it reads pint's
    bundled definitions: offline."""
    if not _REGISTRY:
        with _REGISTRY_LOCK:
            if not _REGISTRY:
                import pint

                _REGISTRY.append(pint.UnitRegistry(autoconvert_offset_to_baseunit=True))
    return _REGISTRY[0]


@lru_cache(maxsize=4096)
def parse_unit(text: str) -> Any | None:
    """The pint unit ``text`` names, or None (not a unit, or a word of :data:`NOT_UNITS`)."""
    text = text.strip().rstrip(".,;:")
    if not text or text.lower() in NOT_UNITS or len(text) > 2 * MAX_UNIT_CHARS + 16 \
            or not _tame(text):
        return None
    try:
        unit = registry().parse_units(text)
    except Exception:  # noqa: BLE001 - pint raises several kinds for a non-unit
        return None
    return None if unit.dimensionless else unit


def _tame(text: str) -> bool:
    """Whether every factor of ``text`` (split at ``*``, ``/``, ``·`` and parentheses) has
    at most one power, of at most three digits: pint evaluates ``m^9^9^9`` as 9^(9^9)."""
    return not any(_POWERS.search(f) for f in _FACTORS.split(text))


_DEGREES = re.compile(r"\s*(?:degrees?|deg\.?)\s+(?:(?P<c>celsius|centigrade)|(?P<f>fahrenheit)"
                      r"|(?P<k>kelvins?)|(?-i:(?P<c1>C)|(?P<f1>F)|(?P<k1>K)))\b", re.IGNORECASE)
"""``degrees Fahrenheit``, ``deg. C``: pint reads ``degrees`` alone as an angle (no unit), so
the scale after it would be lost."""
_POWER = re.compile(r"\s*(?P<word>square|sq\.?|cubic|cu\.?)\s+", re.IGNORECASE)
_PER = re.compile(r"\s+per\s+(?P<word>[^\W\d_]+)", re.IGNORECASE)


def _token(text: str, pos: int) -> tuple[str, int] | None:
    m = _UNIT.match(text, pos)
    if not m:
        return None
    # a final '*' is markdown bold closing the unit (**3.5 km**): a power ends in digits
    token = (m["unit"] + text[m.end("unit"):m.end()]).rstrip(".,;:*")
    return token, m.start("unit") + len(token)


def unit_after(text: str, pos: int) -> tuple[Any | None, int]:
    """The unit written at ``text[pos:]`` (after a number) and where it ends; ``(None, pos)``
    when none. ``degrees Celsius``/``Fahrenheit``/``Kelvin`` (and ``deg. C``, ``degrees F``)
    name a temperature; ``square``/``sq``/``cubic``/``cu`` before a unit raise it to a power, and
    ``per <unit>`` after it divides (``3 square metres``, ``90 kilometres per hour``); a word
    pint does not read followed by one it does is a two-word unit (``3.5 nautical miles``)
    or, when pint has no such unit, :data:`UNCLEAR` (``3 US gallons``); so is a word pint
    does not read that is written as a unit (:func:`unit_like`: ``3.5 kmh``, ``3.5 kms``)
    and one pint reads only as a prefix on a compound unit (``kmph``: kilo-mph)."""
    degrees = _DEGREES.match(text, pos)
    if degrees:
        scale = ("degC" if degrees["c"] or degrees["c1"] else
                 "degF" if degrees["f"] or degrees["f1"] else "kelvin")
        return parse_unit(scale), degrees.end()
    power = _POWER.match(text, pos)
    start = power.end() if power else pos
    found = _token(text, start)
    if found is None:
        return None, pos
    token, end = found
    if len(token) > MAX_UNIT_CHARS:
        return UNCLEAR, end
    if power:
        token = f"({token})**{2 if power['word'].lower().startswith(('square', 'sq')) else 3}"
    per = _PER.match(text, end)
    if per and parse_unit(per["word"]) is not None:
        token, end = f"({token})/({per['word']})", per.end()
    unit = parse_unit(token)
    if unit is None and len(token) > 3 and token[:1].isupper() and token[1:].islower():
        unit = parse_unit(token.lower())  # a unit's name capitalised: Fahrenheit, Kelvin
    if unit is None and not power and not per and found[0] not in NOT_UNITS:  # US, not us
        two = _two_words(text, found[0], found[1], pos)
        if two[0] is None and unit_like(found[0]):
            return UNCLEAR, found[1]
        return two
    if unit is None:
        return None, pos
    if not power and not per and _misprefixed(token):
        return UNCLEAR, end
    return unit, end


_VOWEL = re.compile(r"[aeiouyàáâãäåèéêëìíîïòóôõöùúûüýÿ]", re.IGNORECASE)


def unit_like(word: str) -> bool:
    """Whether ``word``, which pint does not read, is still written as a unit (so a number
    before it is in *some* unit, never the reference's): a word with no vowel (``kmh``,
    ``kms``, ``mtrs``, ``4th``) or whose first three letters or more pint reads as a unit
    (``mins``, ``secs``, ``kilometros``). ``people``, ``away``, ``total`` are not."""
    word = word.rstrip(".,;:")
    if not word or word.lower() in NOT_UNITS:
        return False
    if len(word) > MAX_UNIT_CHARS:
        return True
    if not _VOWEL.search(word):
        return True
    # prefixes of at most 16 letters (kilometros, millimetres): each is a pint parse
    return any(parse_unit(word[:i]) is not None for i in range(min(len(word) - 1, 16), 2, -1))


def _misprefixed(token: str) -> bool:
    """Whether pint reads ``token`` only as a metric prefix on a compound unit (``kmph`` is
    kilo-``mph``, a thousand miles per hour, not km/h): no one writes such a unit."""
    try:
        readings = registry().parse_unit_name(token)
    except Exception:  # noqa: BLE001 - a product or a power: not one name
        return False
    return bool(readings) and all(pre and "_per_" in name for pre, name, _ in readings)


class _Unclear:
    """A unit after a number that pint does not read (``3 US gallons``, ``3.5 kmh``): the
    number is in *some* unit, so never in the reference's."""

    def __repr__(self) -> str:
        return "UNCLEAR"


UNCLEAR = _Unclear()
""":func:`unit_after`'s unit for ``3 US gallons``: :func:`convert` gives None for it."""


def _two_words(text: str, first: str, end: int, pos: int) -> tuple[Any | None, int]:
    """A unit of two words (``nautical miles``, ``light years``, ``short tons``: pint's
    ``nautical_mile``...), or :data:`UNCLEAR` when the second word alone is a unit."""
    second = _token(text, end)
    if second is None or second[0].lower() in NOT_UNITS:
        return None, pos
    joined = parse_unit(f"{first}_{second[0]}")
    if joined is not None:
        return joined, second[1]
    if parse_unit(second[0]) is not None:
        return UNCLEAR, second[1]
    return None, pos


def convert(value: Fraction, unit: Any, to: Any) -> Fraction | None:
    """``value`` in ``unit`` expressed in ``to``; None when the dimensions differ."""
    reg = registry()
    try:
        if reg.Unit(unit).dimensionality != reg.Unit(to).dimensionality:
            return None
        out = reg.Quantity(float(value), unit).to(to).magnitude
    except Exception:  # noqa: BLE001 - an offset unit in a product, an overflow
        return None
    try:
        return Fraction(out)
    except (ValueError, OverflowError):
        return None


def unit_text(unit: Any) -> str:
    """A unit as pint abbreviates it (``km``, ``m / s``)."""
    return f"{unit:~}" if unit is not None else ""
