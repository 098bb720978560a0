"""Single-pass accumulators for the tasks' aggregates.

A task's :meth:`~queryeval.tasks.base.Task.aggregate` reads its records once, as a stream
(a run of a million cases is aggregated straight from its results file, without a list of
records in memory). What it keeps per case is compact: a float in an ``array('d')`` (8 bytes)
for each mean it reports, never the record. :class:`Values` gives the same mean as
``np.mean`` over a list of the same floats in the same order, to the last bit, so a streamed
aggregate equals the list-based one it replaced.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from queryeval.tasks.base import Task


class Values:
    """Floats kept in an ``array('d')``; :meth:`mean` is ``None`` when there are none."""

    __slots__ = ("_a",)

    def __init__(self) -> None:
        self._a = array("d")

    def add(self, value: float) -> None:
        self._a.append(value)

    def __len__(self) -> int:
        return len(self._a)

    def array(self) -> np.ndarray:
        return np.frombuffer(self._a, dtype=np.float64) if self._a else np.empty(0)

    def mean(self) -> float | None:
        """``np.mean`` of the values (pairwise summation), or ``None`` for no values (a mean
        over nothing is undefined, not 0)."""
        return float(np.mean(self.array())) if self._a else None

    def sum(self) -> float:
        return float(np.sum(self.array())) if self._a else 0.0


def means_by_group(ids: array, columns: Sequence[Values], n_groups: int) -> list[tuple[int, list[float | None]]]:
    """For each group ``g`` in ``range(n_groups)``: how many positions of ``ids`` hold ``g``,
    and for each column the mean of its values at those positions (``None`` for none).

    ``ids[i]`` is the group of the i-th value of every column (negative: in no group). A stable
    sort gathers each group's values in their original order, so a group's mean is ``np.mean``
    over the same floats in the same order as a list built record by record would hold: the
    same float to the last bit. Costs two temporary arrays of len(ids), never a per-value object.
    """
    id_arr = np.frombuffer(ids, dtype=np.dtype(f"i{ids.itemsize}")) if ids else np.empty(0, np.int32)
    if any(len(col) != len(id_arr) for col in columns):
        raise ValueError("every column needs one value per group id")
    if len(id_arr) and int(id_arr.max()) >= n_groups:
        raise ValueError(f"group id {int(id_arr.max())} out of range({n_groups})")
    order = np.argsort(id_arr, kind="stable")
    start = int(np.count_nonzero(id_arr < 0))
    counts = np.bincount(id_arr[id_arr >= 0], minlength=n_groups).tolist()
    out: list[tuple[int, list[float | None]]] = [(c, []) for c in counts]
    for col in columns:
        gathered = col.array()[order]
        pos = start
        for g, c in enumerate(counts):
            out[g][1].append(float(np.mean(gathered[pos:pos + c])) if c else None)
            pos += c
        del gathered
    return out


class Tally:
    """Counts every record and its errors while passing on the records that enter the means
    (the task's ``on_error`` option): ``for r in tally.counted(records): ...`` then
    :meth:`error_summary` and :attr:`total` once the loop is done."""

    def __init__(self, task: Task) -> None:
        self.skip_errors = task.options.on_error == "skip"
        self.total = 0
        self.counted_n = 0
        self.errors = 0
        self.kinds: Counter[str] = Counter()

    def counted(self, records: Iterable[dict]) -> Iterator[dict]:
        for r in records:
            self.total += 1
            error = r.get("status") == "error"
            if error:
                self.errors += 1
            self.kinds.update(r.get("error_kinds", []))
            if error and self.skip_errors:
                continue
            self.counted_n += 1
            yield r

    def error_summary(self) -> dict:
        """Same fields as :meth:`queryeval.tasks.base.Task.error_summary`."""
        return {"errors": self.errors, "errors_by_kind": dict(sorted(self.kinds.items()))}


class OnePass:
    """Wraps a list so that iterating it a second time raises: tests use it to check that an
    aggregate reads its records once (as it must to work on a stream)."""

    def __init__(self, items: Iterable) -> None:
        self._items = items
        self._used = False

    def __iter__(self) -> Iterator:
        if self._used:
            raise AssertionError("records iterated twice; an aggregate must read them once")
        self._used = True
        return iter(self._items)
