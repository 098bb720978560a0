"""A deadline of its own for scoring one case (docs/execution.md).

Scoring runs in the case's own thread; :func:`scoring_deadline` sets a deadline for that
thread and the scorer's long loops call :func:`check` between steps -- per column when
cells are converted (engine rows to terms, terms to text), before and after a table is
encoded, every 32 nodes of the column-mapping search, between the steps of the explanation
and of the result sample -- so an overrun stops within one step, raising
:class:`ScoringOverrun`, which the task records as an error on the case (the run goes on).
Cooperative, not a kill: no step is unbounded (a step is one column or one search node, and
cells are bounded by the engines' row and byte limits and the task's cell budget), and no
thread or process is started for it. Without a deadline set (a library call of
``table_scores``) :func:`check` costs one attribute read.

:func:`gc_paused` pauses the cyclic garbage collector around the steps that build many
objects at once (a wide result's terms and bindings, its cells and row tuples, a ranking's
arrays): none of them is cyclic, and with a million live cells the collections their
allocations trigger cost as much as the step itself.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_STATE = threading.local()


class ScoringOverrun(Exception):
    """Scoring one case passed its deadline or its cell budget; ``kind`` says which
    (``"deadline"`` / ``"cells"``), ``str()`` is the sentence for the record."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class Deadline:
    """A budget of ``seconds`` of scoring for one case, spent only inside :meth:`active`
    blocks (the time between them -- a test-suite check running queries on neighbours,
    under its own timeouts -- does not count). ``None``: no deadline."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.spent = 0.0

    @contextmanager
    def active(self) -> Iterator[None]:
        """Within the block, :func:`check` raises once the budget is spent. Blocks nest;
        the inner one holds inside it."""
        before = getattr(_STATE, "deadline", None), getattr(_STATE, "until", None)
        start = time.monotonic()
        _STATE.deadline = self
        _STATE.until = None if self.seconds is None else start + self.seconds - self.spent
        try:
            yield
        finally:
            self.spent += time.monotonic() - start
            _STATE.deadline, _STATE.until = before


def scoring_deadline(seconds: float | None) -> Any:
    """``Deadline(seconds).active()``: one block with its own deadline."""
    return Deadline(seconds).active()


def check() -> None:
    """Raise :class:`ScoringOverrun` when this thread's scoring deadline has passed."""
    until = getattr(_STATE, "until", None)
    if until is not None and time.monotonic() > until:
        raise ScoringOverrun("deadline", f"scoring took longer than its deadline "
                                         f"({_STATE.deadline.seconds:g} s, score_timeout_s)")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while we allocate many objects, none of them
    cyclic (a collection they trigger scans every live object: with millions of live cells
    it costs more than the step itself). Left off when it was off. Where another thread's
    pause ends first, it turns collection back on: this block is then slower, never
    different."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
