"""Term selection (seed 000) under the family name the Python API uses.

``score(target, selected)`` is :func:`queryeval.metrics.sets.score_selection` with the
uniform argument order of every family's ``score`` (ground truth first, then the system's
output, then keyword options). The kernels themselves live in :mod:`queryeval.metrics.sets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def score(target: Iterable[Mapping] | None, selected: Iterable[Mapping] | None, *,
          include_extra: bool = True) -> SelectionScore:
    """Score one turn's ``selected`` terms against its ``target`` (both in the seed 000 shape
    ``[{dataset_id, dimensions: [{dimension_name, values: [{id, name}]}]}]``): per-dimension
    TP/FP/FN, macro precision and recall. ``include_extra``: dimensions the target does not
    name count in the macro precision."""
    return score_selection(selected, target, include_extra=include_extra)
