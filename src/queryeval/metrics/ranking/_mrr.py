"""Reciprocal rank, the package's one: :func:`reciprocal_rank` is ``1 / rank`` of a 1-based
rank, and every MRR is written with it.

* :func:`compute` (trec_eval ``recip_rank``; ``mrr@k``): per query, the reciprocal rank of
  the first relevant document if it is in the top k, else 0. With a cutoff it is
  ``recip_rank`` computed on the run truncated to its top k (trec_eval order). A query with
  no relevant document retrieved (or none judged) scores 0.
* :func:`mrr_from_ranks` (seed 004's MRR, the fields task and the tuner): one query from the
  1-based ranks of its distinct relevant items, the sum of their reciprocal ranks / the
  number of items, over the whole ranking unless a cutoff ``n`` is given (an absent item,
  :data:`~queryeval.metrics.ranking._recall.NOT_FOUND`, contributes 0). With one relevant
  item the two agree. Zero division: no relevant item scores ``zero_division`` (**1.0** by
  default: nothing to find).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from queryeval.metrics.ranking._recall import NOT_FOUND

if TYPE_CHECKING:
    from queryeval.metrics.ranking._hits import Hits


def reciprocal_rank(rank):  # noqa: ANN001, ANN201 - a float or a float array, as given
    """``1.0 / rank`` of a 1-based rank (a number or a numpy array of them)."""
    return 1.0 / rank


def mrr_from_ranks(ranks: np.ndarray, n: int | None = None, *,
                   zero_division: float = 1.0) -> float:
    """Sum of the reciprocal ranks of a query's relevant items / number of items;
    ``zero_division`` when there is none. Items ranked beyond ``n`` (when given) or absent
    contribute 0."""
    if len(ranks) == 0:
        return zero_division
    cutoff = NOT_FOUND - 1 if n is None else n
    if cutoff < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    found = ranks[ranks <= cutoff]
    return math.fsum(reciprocal_rank(float(r)) for r in found) / len(ranks)


def compute(hits: Hits, k: int | None) -> np.ndarray:
    first = (hits.nth == 0) & hits.within(k)
    out = np.zeros(hits.n_queries)
    out[hits.q[first]] = reciprocal_rank(hits.rank[first] + 1.0)
    return out
