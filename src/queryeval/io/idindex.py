"""Compact indexes of string ids for runs too large to keep ids in Python sets and dicts.

A million case ids in a ``dict`` cost about 100 bytes each; here an id costs 16 bytes of
hash plus 8 bytes per value, in numpy arrays. An id is keyed by the 128-bit BLAKE2b digest
of its UTF-8 bytes (two ``uint64`` columns): two different ids share a key with probability
about ``n**2 / 2**129`` (below 1e-26 for a million ids), so keys are compared, not ids.
Lookups are binary searches (``np.searchsorted``).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable

import numpy as np


def id_key(value: str) -> tuple[int, int]:
    """The 128-bit key of an id, as two unsigned 64-bit integers."""
    d = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")


class KeyBuilder:
    """Collects ``(id, value)`` pairs in compact arrays; :meth:`build` sorts them."""

    def __init__(self) -> None:
        self.hi = array("Q")
        self.lo = array("Q")
        self.values = array("q")

    def add(self, value_id: str, value: int) -> None:
        hi, lo = id_key(value_id)
        self.hi.append(hi)
        self.lo.append(lo)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)

    def build(self) -> IdIndex:
        if not len(self.values):
            return IdIndex(np.empty(0, np.uint64), np.empty(0, np.uint64), np.empty(0, np.int64))
        return IdIndex(np.frombuffer(self.hi, dtype=np.uint64), np.frombuffer(self.lo, dtype=np.uint64),
                       np.frombuffer(self.values, dtype=np.int64))


class IdIndex:
    """Ids -> integer values (positions, byte offsets, line numbers), several values per id
    allowed. Build with :class:`KeyBuilder` or :meth:`from_ids`."""

    def __init__(self, hi: np.ndarray, lo: np.ndarray, values: np.ndarray) -> None:
        order = np.lexsort((values, lo, hi))  # by key, then by value (stable for equal keys)
        self.hi = hi[order]
        self.lo = lo[order]
        narrow = len(values) and values.min() >= 0 and values.max() < 2**31
        self.values = values[order].astype(np.int32) if narrow else values[order]
        """Each row's value (int32 when every value fits: 20 bytes a row in all)."""

    @classmethod
    def from_ids(cls, ids: Iterable[str]) -> IdIndex:
        """Each id -> its position in ``ids``."""
        b = KeyBuilder()
        for i, value_id in enumerate(ids):
            b.add(value_id, i)
        return b.build()

    def __len__(self) -> int:
        return len(self.values)

    def _range(self, value_id: str) -> tuple[int, int]:
        hi, lo = id_key(value_id)
        h = np.uint64(hi)
        search = self.hi.searchsorted  # the method: np.searchsorted's wrapper costs as much again
        start = int(search(h, "left"))
        end = int(search(h, "right"))
        if end - start > 1:  # same first half (rare): narrow by the second
            sub = self.lo[start:end]
            ll = np.uint64(lo)
            return start + int(sub.searchsorted(ll, "left")), start + int(sub.searchsorted(ll, "right"))
        if end > start and int(self.lo[start]) != lo:
            return start, start
        return start, end

    def get_all(self, value_id: str) -> list[int]:
        start, end = self._range(value_id)
        return self.values[start:end].tolist()

    def get(self, value_id: str, default: int | None = None) -> int | None:
        """The smallest value of ``value_id``, or ``default`` when it is absent."""
        start, end = self._range(value_id)
        return int(self.values[start]) if end > start else default

    def __contains__(self, value_id: str) -> bool:
        start, end = self._range(value_id)
        return end > start

    def lookup(self, hi: np.ndarray, lo: np.ndarray, missing: int = -1) -> np.ndarray:
        """Vectorised :meth:`get` for keys given as arrays: the smallest value of each key,
        or ``missing``."""
        out = np.full(len(hi), missing, dtype=np.int64)
        if not len(self) or not len(hi):
            return out
        pos = np.searchsorted(self.hi, hi, side="left")
        inside = pos < len(self)
        at = np.minimum(pos, len(self) - 1)
        same_hi = inside & (self.hi[at] == hi)
        hit = same_hi & (self.lo[at] == lo)
        out[hit] = self.values[at[hit]]
        for i in np.flatnonzero(same_hi & ~hit).tolist():  # first halves collide: look further
            j = int(pos[i])
            while j < len(self) and self.hi[j] == hi[i]:
                if self.lo[j] == lo[i]:
                    out[i] = self.values[j]
                    break
                j += 1
        return out

    def count_common(self, other: IdIndex) -> int:
        """How many distinct keys of ``other`` are also in this index (vectorised)."""
        if not len(self) or not len(other):
            return 0
        hi, lo = other.hi, other.lo
        if len(other) > 1:
            fresh = np.ones(len(other), dtype=bool)
            fresh[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
            hi, lo = hi[fresh], lo[fresh]
        missing = np.iinfo(np.int64).min
        return int(np.count_nonzero(self.lookup(hi, lo, missing=missing) != missing))

    def first_duplicate(self) -> tuple[int, int] | None:
        """For ids with several values (line numbers, say): ``(earlier, later)`` values of the
        pair whose later value is smallest (the duplicate a reader going in order meets
        first); ``None`` when every id is unique."""
        dups = self.duplicate_rows()
        if not len(dups):
            return None
        pos = int(dups[np.argmin(self.values[dups])])
        return int(self.values[pos - 1]), int(self.values[pos])

    def duplicate_rows(self) -> np.ndarray:
        """Row numbers whose key equals the previous row's key (the 2nd, 3rd... value of an
        id that occurs more than once)."""
        if len(self.values) < 2:
            return np.empty(0, dtype=np.int64)
        same = (self.hi[1:] == self.hi[:-1]) & (self.lo[1:] == self.lo[:-1])
        return np.nonzero(same)[0] + 1
