"""The free-form answer ladder's pure functions: numbers, units (pint), dates (dateutil)
and the ladder that runs them (:func:`decide`). See docs/freeform.md."""

from __future__ import annotations

from queryeval.metrics.freeform.ladder import RULES, Decision, decide, reference_number

__all__ = ["RULES", "Decision", "decide", "reference_number"]
