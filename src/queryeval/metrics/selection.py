"""Term selection (seed 000) under the family name the Python API uses.

``score(target, selected)`` is :func:`queryeval.metrics.sets.score_selection` under the name
every family uses (ground truth first, then the system's output, then keyword options). The
kernels themselves live in :mod:`queryeval.metrics.sets`.
"""

from __future__ import annotations

from queryeval.metrics.sets import (
    DimensionScore,
    MicroCounts,
    SelectionScore,
    group_terms,
    micro_scores,
    precision,
    recall,
    score_selection,
    set_confusion,
)

__all__ = ["DimensionScore", "MicroCounts", "SelectionScore", "group_terms", "micro_scores",
           "precision", "recall", "score", "score_selection", "set_confusion"]


score = score_selection
"""``score(target, selected, *, include_extra=True)``: one turn's ``selected`` terms against
its ``target`` (both in the seed 000 shape ``[{dataset_id, dimensions: [{dimension_name,
values: [{id, name}]}]}]``): per-dimension TP/FP/FN, macro precision and recall.
``include_extra``: dimensions the target does not name count in the macro precision."""
