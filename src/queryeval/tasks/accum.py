"""Single-pass accumulators for the tasks' aggregates.

A task's :meth:`~queryeval.tasks.base.Task.aggregate` reads its records once, as a stream
(a run of a million cases is aggregated straight from its results file, without a list of
records in memory). It keeps no record and nothing per case: each mean it reports is a
:class:`Values`, an exact running sum (one integer) whose mean is the correctly rounded mean
of every value added, in whatever order (:mod:`queryeval.metrics.mean`), and each group (a
dataset, a tag, a dimension) has its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from queryeval.metrics.mean import ExactMean

if TYPE_CHECKING:
    from queryeval.tasks.base import Task


class Values(ExactMean):
    """A score's running mean over cases: exact, order-independent, constant memory (see
    :mod:`queryeval.metrics.mean`); ``mean()`` is ``None`` when there are no values."""

    __slots__ = ()


def skipped_cases(on_error: str, attempts: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The cases ``on_error`` leaves out of every mean, from each attempt's ``(case_id,
    status)``: under ``skip`` every case with a failed attempt (all of its attempts are left
    out, so each counted case is the mean of all its N attempts); else none. THE rule of
    ``on_error=skip`` (docs/repeats.md): the metrics file
    (:func:`queryeval.run.repeats.aggregate_attempts`) and the per-case population
    (``RunResults.counted()``) read it."""
    if on_error != "skip":
        return frozenset()
    return frozenset(cid for cid, status in attempts if status == "error")


SKIPPED_CASE = "_skipped_case"
"""Set (True) on an in-memory copy of an attempt that did not fail but whose case is left out
of the means (``on_error=skip`` and another attempt of the case failed:
:func:`skipped_cases`); never written to a run log."""


def enters_means(record: dict, skip_errors: bool) -> bool:
    """Whether a record enters the task's means: not when ``skip_errors`` and its call failed,
    nor when its case is skipped (:data:`SKIPPED_CASE`)."""
    if record.get(SKIPPED_CASE) is True:
        return False
    return not (skip_errors and record.get("status") == "error")


class Tally:
    """Counts every record and its errors while passing on the records that enter the means
    (the task's ``on_error`` option, :func:`enters_means`): ``for r in tally.counted(records):
    ...`` then :meth:`error_summary` and :attr:`total` once the loop is done."""

    def __init__(self, task: Task) -> None:
        self.skip_errors = task.options.on_error == "skip"
        self.total = 0
        self.counted_n = 0
        self.errors = 0
        self.kinds: Counter[str] = Counter()

    def counted(self, records: Iterable[dict]) -> Iterator[dict]:
        count = self.count
        for r in records:
            if count(r):
                yield r

    def count(self, r: dict) -> bool:
        """:meth:`counted` one record at a time (an aggregate fed record by record): counts
        it and says whether it enters the means."""
        self.total += 1
        if r.get("status") == "error":
            self.errors += 1
        kinds = r.get("error_kinds", [])
        if kinds:
            self.kinds.update(kinds)
        if not enters_means(r, self.skip_errors):
            return False
        self.counted_n += 1
        return True

    def error_summary(self) -> dict:
        """Same fields as :meth:`queryeval.tasks.base.Task.error_summary`."""
        return {"errors": self.errors, "errors_by_kind": dict(sorted(self.kinds.items()))}
