"""An exact, order-independent mean in constant memory.

Every finite float is an integer multiple of ``2**-1074`` (the smallest subnormal), so a sum
of floats is kept exactly as one Python integer of scaled values, and the mean is that integer
divided by ``count * 2**1074`` with Python's correctly rounded integer division. The result is
the float nearest the true mean of the values: the same whatever the order of the values (a
resumed run that appended its records in another order gets the same metrics, to the last
bit), at least as accurate as ``np.mean``'s pairwise sum or ``math.fsum(xs) / n`` (which round
twice), and it keeps no value: a million cases cost one integer, not eight megabytes.

Zero division: the mean of no values is ``None`` (undefined, not 0). A NaN among the values
makes the mean NaN; infinities give ``inf``, ``-inf`` or NaN as IEEE arithmetic would.
"""

from __future__ import annotations

import math

_SHIFT = 1074


class ExactMean:
    """``add`` floats (or ints, bools); ``mean()`` is the correctly rounded mean, ``sum()``
    the correctly rounded sum, ``len()`` how many were added."""

    __slots__ = ("_count", "_special", "_total")

    def __init__(self) -> None:
        self._total = 0  # sum of value * 2**1074, exact
        self._count = 0
        self._special: float | None = None  # the IEEE sum of the non-finite values seen

    def add(self, value: float) -> None:
        self._count += 1
        x = float(value)
        if not math.isfinite(x):
            self._special = x if self._special is None else self._special + x
            return
        num, den = x.as_integer_ratio()  # den is a power of two, at most 2**1074
        self._total += num << (_SHIFT - den.bit_length() + 1)

    def __len__(self) -> int:
        return self._count

    def sum(self) -> float:
        if self._special is not None:
            return self._special
        try:
            return self._total / (1 << _SHIFT)
        except OverflowError:  # beyond the largest float, as IEEE addition would overflow
            return math.inf if self._total > 0 else -math.inf

    def mean(self) -> float | None:
        if not self._count:
            return None
        if self._special is not None:
            return self._special
        return self._total / (self._count << _SHIFT)


def mean_of(values: list[float]) -> float:
    """``float(numpy.mean(values))``, bit for bit, of a list of floats (a case's turns, a
    turn's dimensions, a table's gold columns). numpy adds fewer than 8 values one after
    another from 0.0, as ``sum`` does, and divides by their count, so such a list is summed
    here without numpy's call (4.5 µs against 0.1 µs); a longer list, one holding anything but
    floats, or an empty one (NaN and numpy's warning) goes to numpy (tests/metrics/test_mean.py
    holds the two equal for every length)."""
    n = len(values)
    if 0 < n < 8 and all(type(v) is float for v in values):
        return sum(values) / n
    import numpy as np

    return float(np.mean(values))
